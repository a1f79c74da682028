package websim

import (
	"bytes"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// visibleText is the text of a page's body: what a crawler fingerprints.
func visibleText(body []byte) string {
	z := html.NewTokenizer(bytes.NewReader(body))
	var b strings.Builder
	inBody := false
	for {
		switch z.Next() {
		case html.ErrorToken:
			return strings.Join(strings.Fields(b.String()), " ")
		case html.StartTagToken:
			if n, _ := z.TagName(); string(n) == "body" {
				inBody = true
			}
		case html.TextToken:
			if inBody {
				b.Write(z.Text())
				b.WriteByte(' ')
			}
		}
	}
}

var dateLine = regexp.MustCompile(`Updated [0-9]+ November 2026 `)

func TestNearDupPages(t *testing.T) {
	srv, c := startWeb(t, Config{NearDups: true})
	checked := map[int]bool{}
	for m := 1; m <= 8; m++ {
		art := "/s/1/a/" + strconv.Itoa(m) + ".html"
		a, _ := fetch(t, c, srv.URL("www.d0.test", art))
		if a.status != 200 {
			continue // the section has fewer articles
		}
		checked[m%4] = true
		mir := mustFetch(t, c, srv.URL("www.d0.test", "/mirror"+art))
		dat := mustFetch(t, c, srv.URL("www.d0.test", "/dated"+art))
		prn := mustFetch(t, c, srv.URL("www.d0.test", "/print"+art))
		if visibleText(mir.body) != visibleText(a.body) {
			t.Errorf("%s: the mirror's text differs from the article's", art)
		}
		da, ad := visibleText(dat.body), visibleText(a.body)
		if loc := dateLine.FindStringIndex(da); loc == nil || da[:loc[0]]+da[loc[1]:] != ad {
			t.Errorf("%s: the dated copy is not the article with a date line", art)
		}
		if got := prn.header.Get("Link"); got != "<"+art+`>; rel="canonical"` {
			t.Errorf("%s: print view's Link header %q", art, got)
		}
		var want string
		switch m % 4 {
		case 0:
			want = `<link rel="canonical" href="` + art + `">`
		case 1:
			want = `<link rel="canonical" href="/missing/` + strconv.Itoa(m) + `.html">`
		case 2:
			want = `<link rel="canonical" href="http://www.d1.test:`
		case 3:
			want = `<link rel="canonical" href="/dated` + art + `">`
			if !bytes.Contains(dat.body, []byte(`<link rel="canonical" href="/mirror`+art+`">`)) {
				t.Errorf("%s: the dated copy does not name the mirror canonical (the loop)", art)
			}
		}
		if !bytes.Contains(mir.body, []byte(want)) {
			t.Errorf("%s: the mirror lacks %s", art, want)
		}
		if bytes.Contains(a.body, []byte(`rel="canonical"`)) {
			t.Errorf("%s: the article names a canonical URL", art)
		}
	}
	if len(checked) != 4 {
		t.Fatalf("articles checked cover %v of the four canonical cases", checked)
	}
	// Off by default: no copies, no links to them.
	srv2, c2 := startWeb(t, Config{})
	if r, _ := fetch(t, c2, srv2.URL("www.d0.test", "/mirror/s/1/a/1.html")); r.status != 404 {
		t.Errorf("/mirror/ served without NearDups: %d", r.status)
	}
}

func TestNearDupTruth(t *testing.T) {
	w, err := New(Config{NearDups: true, Enable: FeatureNoise, Hosts: 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, canonical := range []bool{false, true} {
		tr, err := w.Truth(TruthRules{MaxDepth: 3, Canonical: canonical})
		if err != nil {
			t.Fatal(err)
		}
		kinds := map[string]int{}
		for u, d := range tr.Duplicates {
			kinds[d.Why]++
			if tr.Final[u] != "200" || tr.Final[d.Of] != "200" {
				t.Errorf("%s labelled a copy of %s, but they end %s and %s", u, d.Of, tr.Final[u], tr.Final[d.Of])
			}
			want := map[string]string{"mirror": DupExact, "session": DupExact, "dated": DupNear, "print": DupNear}[d.Why]
			if d.Kind != want {
				t.Errorf("%s: kind %s for a %s copy", u, d.Kind, d.Why)
			}
		}
		for _, why := range []string{"mirror", "dated", "print", "session"} {
			if kinds[why] == 0 {
				t.Errorf("canonical=%v: no %s copies in the truth (%v)", canonical, why, kinds)
			}
		}
		// Canonical targets: the same host's are fetched at the page's depth with
		// Canonical, never another host's.
		var missing int
		for p, target := range tr.Canonicals {
			tu, _ := url.Parse(target)
			pu, _ := url.Parse(p)
			d, fetched := tr.Depth[target]
			switch {
			case tu.Host != pu.Host:
				if canonical && fetched && tr.Depth[target] <= tr.Depth[p] {
					// reachable by links of its own, never through the canonical
				}
			case canonical && (!fetched || d > tr.Depth[p]):
				t.Errorf("canonical=%v: %s names %s, fetched %v at depth %d > %d", canonical, p, target, fetched, d, tr.Depth[p])
			}
			if strings.Contains(target, "/missing/") {
				missing++
				if canonical && tr.Final[target] != "404" {
					t.Errorf("%s: canonical 404 %s ends %q", p, target, tr.Final[target])
				}
			}
		}
		if missing == 0 {
			t.Errorf("canonical=%v: no canonical link to a 404 page was fetched", canonical)
		}
	}
}
