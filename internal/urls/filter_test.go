package urls

import (
	"errors"
	"net/url"
	"strings"
	"testing"
)

// check runs f and returns "" for accept, the filter name for a Rejection, or
// "error" for another error.
func check(t *testing.T, f Filter, raw string, depth int) string {
	t.Helper()
	err := f.Check(mustParse(t, raw), depth)
	if err == nil {
		return ""
	}
	if r, ok := AsRejection(err); ok {
		if !strings.HasPrefix(r.Error(), "rejected by "+r.Filter+" filter: ") || r.Reason == "" {
			t.Errorf("bad rejection message %q", r.Error())
		}
		return r.Filter
	}
	return "error"
}

func TestSuffixFilter(t *testing.T) {
	cases := []struct {
		f    *SuffixFilter
		url  string
		want string
	}{
		{&SuffixFilter{}, "http://e.com/a.html", ""},
		{&SuffixFilter{}, "http://e.com/", ""},
		{&SuffixFilter{}, "http://e.com/logo.png", "suffix"},
		{&SuffixFilter{}, "http://e.com/a/LOGO.PNG", "suffix"},
		{&SuffixFilter{}, "http://e.com/x.tar.gz", "suffix"},
		{&SuffixFilter{}, "http://e.com/f.woff2", "suffix"},
		{&SuffixFilter{}, "http://e.com/app.js?v=1", "suffix"},
		{&SuffixFilter{}, "http://e.com/page?file=a.png", ""},
		{&SuffixFilter{}, "http://e.com/a.json", ""},
		{&SuffixFilter{}, "http://e.com/a%2Epdf", "suffix"},
		{&SuffixFilter{Deny: []string{}}, "http://e.com/logo.png", ""},
		{&SuffixFilter{Deny: []string{".PHP", ""}}, "http://e.com/index.php", "suffix"},
		{&SuffixFilter{Deny: []string{".php"}}, "http://e.com/logo.png", ""},
	}
	for _, tc := range cases {
		if got := check(t, tc.f, tc.url, 0); got != tc.want {
			t.Errorf("SuffixFilter%v(%q) = %q; want %q", tc.f.Deny, tc.url, got, tc.want)
		}
	}
	d := DefaultDenySuffixes()
	if len(d) != 17 {
		t.Fatalf("DefaultDenySuffixes has %d entries; want 17", len(d))
	}
	d[0] = ".html"
	if DefaultDenySuffixes()[0] != ".png" {
		t.Fatal("DefaultDenySuffixes returned shared storage")
	}
}

func TestHostFilter(t *testing.T) {
	cases := []struct {
		f    *HostFilter
		url  string
		want string
	}{
		{&HostFilter{}, "http://any.example/", ""},
		{&HostFilter{Allow: []string{"example.com"}}, "http://example.com:8080/", ""},
		{&HostFilter{Allow: []string{"example.com"}}, "http://www.example.com/", "host"},
		{&HostFilter{Allow: []string{"*.example.com"}}, "http://www.example.com/", ""},
		{&HostFilter{Allow: []string{"*.example.com"}}, "http://a.b.example.com/", ""},
		{&HostFilter{Allow: []string{"*.example.com"}}, "http://example.com/", "host"},
		{&HostFilter{Allow: []string{"*.example.com"}}, "http://badexample.com/", "host"},
		{&HostFilter{Allow: []string{"*.example.com", "example.com"}}, "http://example.com/", ""},
		{&HostFilter{Allow: []string{"EXAMPLE.com."}}, "http://example.com/", ""},
		{&HostFilter{Deny: []string{"ads.example.com"}}, "http://ads.example.com/", "host"},
		{&HostFilter{Deny: []string{"*.ads.example"}}, "http://x.ads.example/", "host"},
		{&HostFilter{Deny: []string{"*.ads.example"}}, "http://ads.example/", ""},
		{&HostFilter{Allow: []string{"*"}, Deny: []string{"b.example"}}, "http://b.example/", "host"},
		{&HostFilter{Allow: []string{"*"}, Deny: []string{"b.example"}}, "http://c.example/", ""},
		{&HostFilter{Allow: []string{"b.example"}, Deny: []string{"*"}}, "http://b.example/", "host"},
	}
	for _, tc := range cases {
		if got := check(t, tc.f, tc.url, 0); got != tc.want {
			t.Errorf("HostFilter%+v(%q) = %q; want %q", *tc.f, tc.url, got, tc.want)
		}
	}
}

func TestScopeFilter(t *testing.T) {
	seeds := []*url.URL{mustParse(t, "http://www.d0.test/"), mustParse(t, "https://shop.example.co.uk:8443/x"), nil}
	cases := []struct {
		mode, re string
		url      string
		want     string
	}{
		{"host", "", "http://www.d0.test/a", ""},
		{"host", "", "https://www.d0.test/a", ""},
		{"host", "", "http://www.d0.test:8080/a", "scope"},
		{"host", "", "http://d0.test/", "scope"},
		{"host", "", "https://shop.example.co.uk:8443/y", ""},
		{"host", "", "http://shop.example.co.uk/y", "scope"},
		{"", "", "http://www.d0.test/a", ""},
		{"domain", "", "http://img.d0.test:81/a", ""},
		{"domain", "", "http://d0.test/", ""},
		{"domain", "", "http://d1.test/", "scope"},
		{"domain", "", "http://other.example.co.uk/", ""},
		{"domain", "", "http://example.co.uk/", ""},
		{"domain", "", "http://co.uk/", "scope"},
		{"seeds", "", "http://www.d0.test:8080/", ""},
		{"seeds", "", "http://shop.example.co.uk/", ""},
		{"seeds", "", "http://img.d0.test/", "scope"},
		{"regexp", `https?://[a-z]+\.d0\.test/.*`, "http://img.d0.test/x", ""},
		{"regexp", `https?://[a-z]+\.d0\.test/.*`, "http://img.d0.test.evil/x", "scope"},
		{"regexp", `http://www\.d0\.test/`, "http://www.d0.test/x", "scope"},
		{"any", "", "http://anything.example/", ""},
	}
	for _, tc := range cases {
		f, err := NewScope(tc.mode, seeds, tc.re)
		if err != nil {
			t.Fatalf("NewScope(%q): %v", tc.mode, err)
		}
		if got := check(t, f, tc.url, 3); got != tc.want {
			t.Errorf("scope %q %q (%q) = %q; want %q", tc.mode, tc.re, tc.url, got, tc.want)
		}
	}
	if f, _ := NewScope("", seeds, ""); f.Mode() != ScopeHost {
		t.Errorf("default mode = %q; want host", f.Mode())
	}
	bad := []struct {
		mode  string
		seeds []*url.URL
		re    string
	}{
		{"host", nil, ""},
		{"domain", []*url.URL{nil}, ""},
		{"seeds", nil, ""},
		{"regexp", nil, ""},
		{"regexp", nil, "("},
		{"planet", seeds, ""},
	}
	for _, b := range bad {
		if _, err := NewScope(b.mode, b.seeds, b.re); err == nil || !strings.HasPrefix(err.Error(), "cannot ") {
			t.Errorf("NewScope(%q, %v, %q) = %v; want a \"cannot …\" error", b.mode, b.seeds, b.re, err)
		}
	}
}

func TestDepthFilter(t *testing.T) {
	cases := []struct {
		max, depth int
		want       string
	}{
		{-1, 1000, ""},
		{0, 0, ""},
		{0, 1, "depth"},
		{2, 2, ""},
		{2, 3, "depth"},
	}
	for _, tc := range cases {
		if got := check(t, &DepthFilter{Max: tc.max}, "http://e.com/", tc.depth); got != tc.want {
			t.Errorf("DepthFilter{%d}(depth %d) = %q; want %q", tc.max, tc.depth, got, tc.want)
		}
	}
}

func TestLengthFilter(t *testing.T) {
	long := "http://e.com/" + strings.Repeat("a", 100)
	cases := []struct {
		f    *LengthFilter
		url  string
		want string
	}{
		{&LengthFilter{}, long, ""},
		{&LengthFilter{Max: 50}, long, "length"},
		{&LengthFilter{Max: len(long)}, long, ""},
		{&LengthFilter{MaxSegments: 3}, "http://e.com/a/b/c", ""},
		{&LengthFilter{MaxSegments: 3}, "http://e.com/a/b/c/", "length"},
		{&LengthFilter{MaxSegments: 3}, "http://e.com/a/b/a/b/a/b", "length"},
	}
	for _, tc := range cases {
		if got := check(t, tc.f, tc.url, 0); got != tc.want {
			t.Errorf("LengthFilter%+v(%q) = %q; want %q", *tc.f, tc.url, got, tc.want)
		}
	}
	huge := &url.URL{Scheme: "http", Host: "e.com", Path: "/" + strings.Repeat("a", MaxLength)}
	if err := (&LengthFilter{}).Check(huge, 0); err == nil {
		t.Error("LengthFilter{} accepted a URL longer than MaxLength")
	}
}

func TestChain(t *testing.T) {
	ioErr := errors.New("robots: cannot fetch")
	var calls []string
	robots := FilterFunc(func(u *url.URL, depth int) error {
		calls = append(calls, u.String())
		switch u.Path {
		case "/private":
			return &Rejection{Filter: "robots", Reason: "Disallow: /private"}
		case "/down":
			return ioErr
		}
		return nil
	})
	scope, err := NewScope("host", []*url.URL{mustParse(t, "http://e.com/")}, "")
	if err != nil {
		t.Fatal(err)
	}
	c := Chain{&SuffixFilter{}, scope, &DepthFilter{Max: 2}, &LengthFilter{}, robots}
	cases := []struct {
		url   string
		depth int
		want  string
	}{
		{"http://e.com/a", 1, ""},
		{"http://e.com/a.png", 1, "suffix"},
		{"http://other.com/a.png", 1, "suffix"}, // first rejection wins
		{"http://other.com/a", 1, "scope"},
		{"http://e.com/a", 3, "depth"},
		{"http://e.com/private", 0, "robots"},
		{"http://e.com/down", 0, "error"},
	}
	for _, tc := range cases {
		if got := check(t, c, tc.url, tc.depth); got != tc.want {
			t.Errorf("Chain(%q, %d) = %q; want %q", tc.url, tc.depth, got, tc.want)
		}
	}
	// The robots filter ran only for URLs that passed the earlier filters.
	if len(calls) != 3 {
		t.Errorf("robots filter ran %d times (%v); want 3", len(calls), calls)
	}
	if err := c.Check(mustParse(t, "http://e.com/down"), 0); !errors.Is(err, ioErr) {
		t.Errorf("Chain passed %v; want the filter's own error", err)
	}
	if err := Chain(nil).Check(mustParse(t, "http://x.y/a.png"), 99); err != nil {
		t.Errorf("empty chain rejected: %v", err)
	}
}

// TestCheckStringSameAsCheck: every filter and a chain give the same
// answer from CheckString (with u.String()) as from Check, on URLs that
// each filter refuses and accepts. Fails if CheckString drifts from Check
// (the crawl's links use CheckString, redirects and seeds use Check).
func TestCheckStringSameAsCheck(t *testing.T) {
	scope, err := NewScope(ScopeRegexp, nil, `https?://e\.com/.*`)
	if err != nil {
		t.Fatal(err)
	}
	hostScope, err := NewScope(ScopeHost, []*url.URL{mustParse(t, "http://e.com:8081/")}, "")
	if err != nil {
		t.Fatal(err)
	}
	filters := []Filter{
		&LengthFilter{}, &LengthFilter{Max: 24}, &LengthFilter{MaxSegments: 2},
		&SuffixFilter{}, &SuffixFilter{Deny: []string{".PHP", "", "X", ".ſ", "K"}},
		scope, hostScope, &DepthFilter{Max: 1}, &HostFilter{Deny: []string{"*.bad"}},
	}
	filters = append(filters, Chain(filters))
	for _, raw := range []string{"http://e.com/", "http://e.com:8081/a/b/c.html", "http://e.com/index.PHP",
		"http://e.com/a.png", "http://E.COM:8081/x", "https://e.com/" + strings.Repeat("a", 40), "http://x.bad/",
		"http://e.com/a.ſ", "http://e.com/a.ſx", "http://e.com/\u212a", "http://e.com/k", "http://e.com/ax",
		"http://[::1]:8081/", "http://other.com/a?x=1"} {
		u := mustParse(t, raw)
		for _, f := range filters {
			sf, ok := f.(interface {
				CheckString(*url.URL, string, int) error
			})
			if !ok {
				continue
			}
			for depth := range 3 {
				want, got := f.Check(u, depth), sf.CheckString(u, u.String(), depth)
				if (want == nil) != (got == nil) || want != nil && want.Error() != got.Error() {
					t.Errorf("%T %q depth %d: Check %v, CheckString %v", f, raw, depth, want, got)
				}
			}
		}
	}
}

// TestSuffixFilterFold: the last-byte shortcut of SuffixFilter never refuses
// what strings.EqualFold on the path's tail accepts, nor the reverse, for
// ASCII and non-ASCII suffixes and paths.
func TestSuffixFilterFold(t *testing.T) {
	deny := []string{".png", ".PNG", ".ſ", "ſ", "K", "\u212a", ".tar.gz", "é", "É", "x"}
	paths := []string{"/a.png", "/a.PnG", "/a.s", "/a.S", "/a.ſ", "/k", "/K", "/\u212a", "/a.TAR.GZ", "/é", "/É", "/X", "/"}
	for _, d := range deny {
		f := &SuffixFilter{Deny: []string{d}}
		for _, p := range paths {
			want := len(p) >= len(d) && strings.EqualFold(p[len(p)-len(d):], d)
			got := f.Check(&url.URL{Scheme: "http", Host: "e.com", Path: p}, 0) != nil
			if got != want {
				t.Errorf("Deny %q path %q: refused %v, want %v", d, p, got, want)
			}
		}
	}
}

// TestHostPortNoAlloc: HostPort of a canonical URL with a port returns
// u.Host without allocating, and the same string as before otherwise.
func TestHostPortNoAlloc(t *testing.T) {
	for raw, want := range map[string]string{"http://e.com:8081/": "e.com:8081", "http://E.com:8081/": "e.com:8081",
		"http://e.com:80/": "e.com", "https://[::1]:8443/": "[::1]:8443", "http://e.com/": "e.com"} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if got := HostPort(u); got != want {
			t.Errorf("HostPort(%q) = %q; want %q", raw, got, want)
		}
	}
	u := mustParse(t, "http://e.com:8081/")
	if n := testing.AllocsPerRun(100, func() { _ = HostPort(u) }); n != 0 {
		t.Errorf("HostPort of a canonical URL: %v allocations; want 0", n)
	}
}
