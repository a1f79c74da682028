package websim

import (
	"bytes"
	"errors"
	"net/url"
	"regexp"
	"testing"
)

var hrefRE = regexp.MustCompile(`href="([^"]*)"`)

func hrefs(body []byte) []string {
	var out []string
	for _, m := range hrefRE.FindAllSubmatch(body, -1) {
		out = append(out, string(m[1]))
	}
	return out
}

func TestExtraLinksValidation(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want error
	}{{-1, ErrBadConfig}, {0, nil}, {1000, nil}, {1001, ErrBadConfig}} {
		_, err := New(Config{ExtraLinks: tc.n})
		if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Errorf("ExtraLinks %d: New: %v, want %v", tc.n, err, tc.want)
		}
	}
}

// TestExtraLinks checks the large-frontier knob: exactly ExtraLinks more
// links on an article, absolute, spread over many hosts, deterministic;
// other pages unchanged; and the ground truth follows them.
func TestExtraLinks(t *testing.T) {
	const n = 40
	base := Config{Seed: 3, Hosts: 2000, PagesPerHost: 100, Port: 8080}
	more := base
	more.ExtraLinks = n
	w0, w1, w2 := mustNew(t, base), mustNew(t, more), mustNew(t, more)
	article := "http://www.d0.test:8080/s/2/a/3.html"
	_, _, b0 := get(t, w0, article)
	_, _, b1 := get(t, w1, article)
	_, _, b2 := get(t, w2, article)
	if !bytes.Equal(b1, b2) {
		t.Fatal("same Config gave different article bodies")
	}
	h0, h1 := hrefs(b0), hrefs(b1)
	if len(h1)-len(h0) != n {
		t.Fatalf("article has %d links with ExtraLinks %d, %d without: want %d more", len(h1), n, len(h0), n)
	}
	hosts := map[string]bool{}
	for _, h := range h1 {
		u, err := url.Parse(h)
		if err == nil && u.IsAbs() {
			hosts[u.Hostname()] = true
		}
	}
	if len(hosts) < n/2 {
		t.Errorf("links reach %d distinct hosts, want at least %d (uniform choice over 2000 hosts)", len(hosts), n/2)
	}
	for _, p := range []string{"http://www.d0.test:8080/", "http://www.d0.test:8080/s/2/", "http://www.d0.test:8080/about.html"} {
		_, _, a := get(t, w0, p)
		_, _, b := get(t, w1, p)
		if !bytes.Equal(a, b) {
			t.Errorf("%s changed with ExtraLinks: only articles get extra links", p)
		}
	}
	rules := TruthRules{Seeds: []string{article}, MaxDepth: 1, Scope: ScopeAny}
	t0, err := w0.Truth(rules)
	if err != nil {
		t.Fatal(err)
	}
	t1, err := w1.Truth(rules)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(t1.MustFetch) - len(t0.MustFetch); got < n-5 {
		t.Errorf("truth fetches %d URLs with ExtraLinks %d, %d without: want about %d more", len(t1.MustFetch), n, len(t0.MustFetch), n)
	}
}
