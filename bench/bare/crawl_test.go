package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/websim"
)

func mustURL(t testing.TB, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestExtractLinks(t *testing.T) {
	page := "http://h.test:8/dir/page.html"
	for _, tc := range []struct {
		name, body string
		want       []string
	}{
		{"anchor forms", `<a href="a.html">x</a><a href="/b">y</a><a href="//o.test:8/c">z</a><a href="http://P.TEST:8/d#frag">w</a>`,
			[]string{"http://h.test:8/dir/a.html", "http://h.test:8/b", "http://o.test:8/c", "http://p.test:8/d"}},
		{"dot segments", `<a href="../up/./x.html">x</a><a href="./">y</a>`,
			[]string{"http://h.test:8/up/x.html", "http://h.test:8/dir/"}},
		{"every followed tag", `<link rel="next" href="l"><area href="ar"><iframe src="if"></iframe><frameset><frame src="fr"></frameset>`,
			[]string{"http://h.test:8/dir/l", "http://h.test:8/dir/ar", "http://h.test:8/dir/if", "http://h.test:8/dir/fr"}},
		{"nofollow skipped", `<a rel="external NoFollow" href="n">n</a><area rel=nofollow href="m"><a href="k">k</a>`,
			[]string{"http://h.test:8/dir/k"}},
		{"base href", `<head><base href="http://b.test:8/base/"></head><a href="x">x</a><a href="/y">y</a>`,
			[]string{"http://b.test:8/base/x", "http://b.test:8/y"}},
		{"meta refresh", `<meta http-equiv="Refresh" content="0; URL='/next/'"><meta name="x" content="0; url=/no">`,
			[]string{"http://h.test:8/next/"}},
		{"non-http skipped", `<a href="javascript:x()">j</a><a href="mailto:a@b">m</a><a href="data:,x">d</a><a href="ftp://f/">f</a>`,
			nil},
		{"ignored tags", `<img src="i.png"><script src="s.js"></script><a name="top">t</a><div href="no">d</div>`,
			nil},
		{"empty href is the page", `<a href="">self</a>`, []string{"http://h.test:8/dir/page.html"}},
		{"first attribute wins", `<a href="one" href="two">x</a>`, []string{"http://h.test:8/dir/one"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, u := range extractLinks(mustURL(t, page), []byte(tc.body)) {
				got = append(got, u.String())
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("links = %q, want %q", got, tc.want)
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
		{"5;URL = 'b.html'", "b.html", true},
		{`0, url="c"`, "c", true},
		{"0", "", false},
		{"0; /a", "", false},
		{"0; url=", "", false},
		{"0; urx=/a", "", false},
	} {
		got, ok := refreshURL(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("refreshURL(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestReadResolve(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     map[string]string
		wantErr  bool
	}{
		{"entries", "# comment\nWWW.A.test:80:127.0.0.1\n\nb.test:8080:[::1]\n",
			map[string]string{"www.a.test:80": "127.0.0.1:80", "b.test:8080": "[::1]:8080"}, false},
		{"missing address", "a.test:80\n", nil, true},
		{"bad port", "a.test:http:127.0.0.1\n", nil, true},
		{"not an IP", "a.test:80:localhost\n", nil, true},
		{"empty host", ":80:127.0.0.1\n", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readResolve(strings.NewReader(tc.in))
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if !tc.wantErr && !equalMaps(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestCrawlMatchesTruth runs the bare loop against websim through the
// command's flags and checks that it fetches exactly the ground truth (the
// clean profile has no robots.txt rules, so the bare loop's lack of robots
// support does not show), each URL once.
func TestCrawlMatchesTruth(t *testing.T) {
	ctx := context.Background()
	srv, err := websim.Start(ctx, websim.Config{Seed: 3, Hosts: 20, PagesPerHost: 15})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	seeds := srv.SeedURLs(2)
	truth, err := srv.Truth(websim.TruthRules{Seeds: seeds, MaxDepth: 3, Scope: websim.ScopeAny})
	if err != nil {
		t.Fatal(err)
	}
	resolve := filepath.Join(t.TempDir(), "resolve.txt")
	if err := os.WriteFile(resolve, []byte(strings.Join(srv.Resolve(), "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	args := append([]string{"--resolve-file", resolve, "--max-depth", "3", "--parallelism", "4", "--timeout", "10s"}, seeds...)
	if err := run(ctx, args, &out, &errOut); err != nil {
		t.Fatalf("run: %v\n%s", err, errOut.String())
	}
	var rep report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("cannot parse the report %q: %v", out.String(), err)
	}
	if rep.Crawler != "bare" || rep.Pages != int64(len(truth.MustFetch)) || rep.Errors != 0 {
		t.Errorf("report %+v, want %d pages and no error", rep, len(truth.MustFetch))
	}
	var got []string
	for _, e := range srv.Log().Entries() {
		u, ok := websim.Canonical(nil, e.URL)
		if !ok {
			t.Fatalf("cannot canonicalise %s", e.URL)
		}
		got = append(got, u.String())
	}
	slices.Sort(got)
	if !slices.Equal(got, truth.MustFetch) {
		t.Errorf("fetched %d URLs, the truth has %d", len(got), len(truth.MustFetch))
	}
}

func TestRunRejectsBadUse(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, args := range [][]string{
		{},                                  // no seed
		{"--parallelism", "0", "http://a/"}, // no worker
		{"--resolve-file", "/nonexistent", "http://a/"},
		{"ftp://a/"}, // not http
	} {
		var out, errOut bytes.Buffer
		if err := run(ctx, args, &out, &errOut); err == nil {
			t.Errorf("run(%q) succeeded, want an error", args)
		}
	}
}

func FuzzExtractLinks(f *testing.F) {
	for _, s := range []string{
		`<a href="x">`, `<base href="//b/"><a href="y">`, `<meta http-equiv=refresh content="0;url=z">`,
		`<frame src="../../f">`, `<a href="%zz">`, `<a href="http://[::1">`, "<a href=\"\x00\">",
	} {
		f.Add(s)
	}
	page, _ := url.Parse("http://h.test/d/p.html")
	f.Fuzz(func(t *testing.T, body string) {
		for _, u := range extractLinks(page, []byte(body)) {
			if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" || u.Fragment != "" || u.Path == "" {
				t.Errorf("extractLinks gave %q", u)
			}
		}
	})
}

func FuzzReadResolve(f *testing.F) {
	for _, s := range []string{"a:80:127.0.0.1", "a:80:[::1]\n#x\n", "a:80", ":::", "a:8:1.2.3.4:5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		m, err := readResolve(strings.NewReader(in))
		if err != nil {
			return
		}
		for k, v := range m {
			if k == "" || v == "" || k != strings.ToLower(k) {
				t.Errorf("entry %q → %q", k, v)
			}
		}
	})
}
