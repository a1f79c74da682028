package websim

import (
	"errors"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestCanonical(t *testing.T) {
	base, _ := url.Parse("http://www.d0.test:8080/s/1/a/2.html?x=1")
	cases := []struct{ ref, want string }{
		{"", "http://www.d0.test:8080/s/1/a/2.html?x=1"},
		{"#frag", "http://www.d0.test:8080/s/1/a/2.html?x=1"},
		{"?q=1", "http://www.d0.test:8080/s/1/a/2.html?q=1"},
		{"3.html", "http://www.d0.test:8080/s/1/a/3.html"},
		{"./3.html#c", "http://www.d0.test:8080/s/1/a/3.html"},
		{"../../", "http://www.d0.test:8080/s/"},
		{"../../../../../x", "http://www.d0.test:8080/x"},
		{"//WWW.D1.TEST:8080/s/./2/", "http://www.d1.test:8080/s/2/"},
		{"HTTP://Blog.D0.Test:80", "http://blog.d0.test/"},
		{"https://a.test:443/b", "https://a.test/b"},
		{"/a;jsessionid=ab?utm_source=x&b=1", "http://www.d0.test:8080/a;jsessionid=ab?utm_source=x&b=1"},
		{"http://user:pw@a.test/", "http://a.test/"},
	}
	for _, tc := range cases {
		u, ok := Canonical(base, tc.ref)
		if !ok || u.String() != tc.want {
			t.Errorf("Canonical(%q) = %v, %v; want %s", tc.ref, u, ok, tc.want)
		}
	}
	for _, bad := range []string{"javascript:void(0)", "mailto:a@b.test", "data:image/gif;base64,AA", "ftp://x.test/", "http://[::1"} {
		if u, ok := Canonical(base, bad); ok {
			t.Errorf("Canonical(%q) = %v, want not followed", bad, u)
		}
	}
	if _, ok := Canonical(nil, "/relative"); ok {
		t.Error("a relative URL without base is canonical")
	}
}

func TestTruthRulesErrors(t *testing.T) {
	w := mustNew(t, Config{Port: 8080, Enable: FeatureTraps, TroubleShare: 1})
	if _, err := w.Truth(TruthRules{Seeds: []string{"http://elsewhere.test/"}}); err == nil {
		t.Error("seed outside the web accepted")
	}
	if _, err := w.Truth(TruthRules{Seeds: []string{"/relative"}}); err == nil {
		t.Error("relative seed accepted")
	}
	if _, err := w.Truth(TruthRules{Scope: "planet"}); err == nil {
		t.Error("unknown scope accepted")
	}
	_, err := w.Truth(TruthRules{MaxDepth: -1, MaxURLs: 500})
	if !errors.Is(err, ErrUnbounded) {
		t.Errorf("unlimited depth with traps: %v", err)
	}
}

func TestTruthDepthsAndRedirects(t *testing.T) {
	w := mustNew(t, Config{Port: 8080, Hosts: 3, Enable: FeatureRedirects | FeatureLongRedirects | FeatureRedirectLoops})
	seed := w.URL("www.d0.test", "/")
	t0, err := w.Truth(TruthRules{Seeds: []string{seed}, MaxDepth: 0})
	if err != nil {
		t.Fatal(err)
	}
	if len(t0.MustFetch) != 1 || t0.MustFetch[0] != seed || t0.Depth[seed] != 0 {
		t.Fatalf("depth 0: %v", t0.MustFetch)
	}
	for u, r := range t0.MustNotFetch {
		if r != ReasonDepth && r != ReasonSuffix && r != ReasonScope && r != ReasonNofollow {
			t.Errorf("depth 0: %s excluded by %s", u, r)
		}
	}
	// A 3-hop chain seeded directly, with MaxRedirects 2: three URLs fetched, the third
	// ends too-many-redirects, the fourth is excluded.
	chain := w.URL("www.d0.test", "/x/r/307/3/9")
	tr, err := w.Truth(TruthRules{Seeds: []string{chain}, MaxDepth: 0, MaxRedirects: 2})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{w.URL("www.d0.test", "/x/r/307/1/9"), w.URL("www.d0.test", "/x/r/307/2/9"), chain}
	if !slices.Equal(tr.MustFetch, want) {
		t.Fatalf("chain fetches %v", tr.MustFetch)
	}
	if tr.Final[want[0]] != FinalTooManyRedirects || tr.Final[chain] != "307" {
		t.Errorf("finals %v", tr.Final)
	}
	target := w.URL("www.d0.test", string(appendPath(nil, w.shape.pageRoute(9))))
	if tr.MustNotFetch[target] != ReasonRedirects {
		t.Errorf("chain target %s: %q", target, tr.MustNotFetch[target])
	}
	// With the default 5 hops the target is fetched at the seed's depth.
	tr, _ = w.Truth(TruthRules{Seeds: []string{chain}, MaxDepth: 0})
	if tr.Final[target] != "200" || tr.Depth[target] != 0 {
		t.Errorf("chain target: final %q depth %d", tr.Final[target], tr.Depth[target])
	}
	// A loop: both URLs fetched once, both end 302.
	loop := w.URL("www.d0.test", "/x/loop/0/a")
	tr, _ = w.Truth(TruthRules{Seeds: []string{loop}, MaxDepth: 0})
	if len(tr.MustFetch) != 2 || tr.Final[loop] != "302" || tr.Final[w.URL("www.d0.test", "/x/loop/0/b")] != "302" {
		t.Errorf("loop: %v %v", tr.MustFetch, tr.Final)
	}
}

func TestTruthNofollowScopeAndTopics(t *testing.T) {
	w := mustNew(t, Config{Port: 8080, Hosts: 8, Domains: 2, Seed: 11})
	base := TruthRules{Seeds: w.SeedURLs(1), MaxDepth: 3}
	plain, _ := w.Truth(base)
	base.FollowNofollow = true
	follow, _ := w.Truth(base)
	user := w.URL("www.d0.test", "/user/0/")
	if plain.MustNotFetch[user] != ReasonNofollow || follow.Final[user] != "200" {
		t.Errorf("nofollow link %s: %q without, %q with FollowNofollow", user, plain.MustNotFetch[user], follow.Final[user])
	}
	var sizes []int
	for _, scope := range []string{ScopeHost, ScopeSeeds, ScopeDomain, ScopeAny} {
		tr, err := w.Truth(TruthRules{Seeds: w.SeedURLs(1), MaxDepth: 3, Scope: scope})
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, len(tr.MustFetch))
		for _, u := range tr.MustFetch {
			p, _ := url.Parse(u)
			switch scope {
			case ScopeHost, ScopeSeeds:
				if p.Hostname() != "www.d0.test" {
					t.Errorf("%s scope fetches %s", scope, u)
				}
			case ScopeDomain:
				if !strings.HasSuffix(p.Hostname(), "d0.test") {
					t.Errorf("domain scope fetches %s", u)
				}
			}
		}
		for u, topics := range tr.Topics {
			if len(topics) == 0 || len(topics) > 2 || tr.Final[u] != "200" {
				t.Errorf("topics of %s: %v", u, topics)
			}
		}
	}
	if sizes[0] != sizes[1] || sizes[2] <= sizes[1] || sizes[3] <= sizes[2] {
		t.Errorf("fetch counts host/seeds/domain/any = %v", sizes)
	}
}

func TestTinyWebs(t *testing.T) {
	for _, dims := range [][2]int{{1, 1}, {1, 2}, {2, 3}, {3, 5}} {
		w := mustNew(t, Config{Hosts: dims[0], PagesPerHost: dims[1], Profile: ProfileHostile, TroubleShare: 1, Port: 8080})
		tr, err := w.Truth(TruthRules{MaxDepth: 4, Scope: ScopeAny, FollowNofollow: true})
		if err != nil {
			t.Fatalf("%v: %v", dims, err)
		}
		for _, u := range tr.MustFetch {
			if strings.Contains(u, "/x/hang/") || strings.Contains(u, "/x/busy/") || strings.Contains(u, "/x/reset/") {
				continue
			}
			code, _, _ := get(t, w, u)
			if f := tr.Final[u]; f != FinalTooManyRedirects && f != itoaStatus(code) {
				t.Errorf("%v: %s answers %d, truth says %s", dims, u, code, f)
			}
		}
	}
}

func itoaStatus(code int) string { return strconv.Itoa(code) }
