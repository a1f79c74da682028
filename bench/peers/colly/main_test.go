package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// site serves a small web on one listener for the host names site.test and
// other.test, and records every request as "host path".
type site struct {
	mu   sync.Mutex
	reqs []string
}

func (s *site) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	host, port, _ := net.SplitHostPort(r.Host)
	s.mu.Lock()
	s.reqs = append(s.reqs, host+" "+r.URL.Path)
	s.mu.Unlock()
	if r.Header.Get("User-Agent") != "spider/0.1 (+https://github.com/spider-crawler/spider)" {
		http.Error(w, "unexpected agent", http.StatusBadRequest)
		return
	}
	page := func(body string) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, "<html><head>"+body)
	}
	switch host + r.URL.Path {
	case "site.test/robots.txt":
		// The "spider" group must be chosen; "*" would forbid everything.
		fmt.Fprint(w, "User-agent: *\nDisallow: /\n\nUser-agent: spider\nDisallow: /private/\n")
	case "site.test/":
		page(`<meta http-equiv="refresh" content="0; url=/r.html"><link rel="next" href="/l.html"></head><body>
<a href="/a.html">a</a> <a href="a.html#frag">same page</a> <a rel="nofollow" href="/nf.html">nf</a>
<iframe src="/if.html"></iframe> <a href="/img.PNG">img</a> <a href="/private/p.html">private</a>
<a href="http://other.test:` + port + `/">other</a> <a href="mailto:x@y">mail</a>`)
	case "site.test/a.html":
		page(`</head><a href="/deep.html">too deep</a>`)
	case "site.test/l.html", "site.test/if.html", "site.test/r.html", "other.test/", "site.test/deep.html":
		page(`</head><p>leaf</p>`)
	case "other.test/robots.txt":
		http.NotFound(w, r)
	default:
		http.NotFound(w, r)
	}
}

func TestCrawl(t *testing.T) {
	s := &site{}
	srv := httptest.NewServer(s)
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	resolve := filepath.Join(t.TempDir(), "resolve.txt")
	entries := fmt.Sprintf("# test web\nsite.test:%s:127.0.0.1\nOTHER.test:%s:127.0.0.1\n", port, port)
	if err := os.WriteFile(resolve, []byte(entries), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	args := []string{"--resolve-file", resolve, "--max-depth", "1", "--parallelism", "3", "http://site.test:" + port + "/"}
	if err := run(context.Background(), args, &out, &errOut); err != nil {
		t.Fatalf("run: %v\n%s", err, errOut.String())
	}
	var rep report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("cannot parse the report %q: %v", out.String(), err)
	}
	want := []string{
		"other.test /", "other.test /robots.txt",
		"site.test /", "site.test /a.html", "site.test /if.html", "site.test /l.html", "site.test /r.html",
		"site.test /robots.txt",
	}
	s.mu.Lock()
	got := slices.Clone(s.reqs)
	s.mu.Unlock()
	slices.Sort(got)
	// Colly may fetch a robots.txt twice when two requests race to a new
	// host; pages must be fetched once.
	got = slices.CompactFunc(got, func(a, b string) bool { return a == b && strings.HasSuffix(a, "/robots.txt") })
	if !slices.Equal(got, want) {
		t.Errorf("requests\n%q\nwant\n%q", got, want)
	}
	if rep.Crawler != "colly" || rep.Pages != 6 || rep.Errors != 0 {
		t.Errorf("report %+v, want 6 pages, no error", rep)
	}
}

// TestProgress checks the --progress lines the frontier benchmark reads: the
// last one holds the final counts (6 pages; 6 URLs accepted: the seed, four
// links of its page within depth 1 and other.test's index).
func TestProgress(t *testing.T) {
	s := &site{}
	srv := httptest.NewServer(s)
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	resolve := filepath.Join(t.TempDir(), "resolve.txt")
	if err := os.WriteFile(resolve, []byte(fmt.Sprintf("site.test:%s:127.0.0.1\nother.test:%s:127.0.0.1\n", port, port)), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	args := []string{"--resolve-file", resolve, "--max-depth", "1", "--progress", "1ms", "http://site.test:" + port + "/"}
	if err := run(context.Background(), args, &out, &errOut); err != nil {
		t.Fatalf("run: %v\n%s", err, errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(errOut.String()), "\n")
	var last progressLine
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil || !last.Progress {
		t.Fatalf("last stderr line %q is not a progress line: %v", lines[len(lines)-1], err)
	}
	if last.Pages != 6 || last.Discovered != 6 {
		t.Errorf("final progress %+v, want 6 pages and 6 discovered", last)
	}
}

func TestRunRejectsBadUse(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"--parallelism", "0", "http://a.test/"},
		{"--resolve-file", "/nonexistent", "http://a.test/"},
	} {
		var out, errOut bytes.Buffer
		if err := run(context.Background(), args, &out, &errOut); err == nil {
			t.Errorf("run(%q) succeeded, want an error", args)
		}
	}
}

func TestReadResolveFile(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     map[string]string
		wantErr  bool
	}{
		{"entries", "A.test:80:127.0.0.1\n\n# c\nb.test:81:[::1]\n", map[string]string{"a.test:80": "127.0.0.1:80", "b.test:81": "[::1]:81"}, false},
		{"no address", "a.test:80\n", nil, true},
		{"not an IP", "a.test:80:host\n", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "r")
			if err := os.WriteFile(p, []byte(tc.in), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := readResolveFile(p)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s → %q, want %q", k, got[k], v)
				}
			}
		})
	}
}

func TestRefreshURL(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"0; url=/a", "/a", true},
		{"3;URL='b'", "b", true},
		{"0", "", false},
		{"0; x=/a", "", false},
	} {
		if got, ok := refreshURL(tc.in); got != tc.want || ok != tc.ok {
			t.Errorf("refreshURL(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func FuzzRefreshURL(f *testing.F) {
	for _, s := range []string{"0; url=/a", "5,URL=\"b\"", "url=", ";", "0;url='"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, ok := refreshURL(in)
		if ok != (got != "") {
			t.Errorf("refreshURL(%q) = %q, %v", in, got, ok)
		}
	})
}
