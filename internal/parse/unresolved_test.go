package parse

import (
	"net/url"
	"os"
	"path/filepath"
	"testing"
)

// checkUnresolved: Options.Unresolved gives the same links as the default
// mode, in the same order, with Raw cleaned (CleanHref) and no URL: each
// resolved link's URL is Raw resolved against Page.Base; the references
// the default mode could not parse are the extra ones, in place.
func checkUnresolved(t *testing.T, base *url.URL, body []byte, opt Options) {
	t.Helper()
	res, err := Parse(base, body, opt)
	if err != nil {
		t.Fatal(err)
	}
	opt.Unresolved = true
	un, err := Parse(base, body, opt)
	if err != nil {
		t.Fatal(err)
	}
	if un.Refresh != nil || un.Title != res.Title || un.Text != res.Text || un.MetaRobots != res.MetaRobots ||
		un.Base.String() != res.Base.String() || un.Truncated != res.Truncated {
		t.Fatalf("unresolved page differs beyond its links:\n%+v\n%+v", un, res)
	}
	j := 0
	for _, l := range un.Links {
		if l.URL != nil {
			t.Fatalf("unresolved link %q has a URL", l.Raw)
		}
		u, err := un.Base.Parse(l.Raw)
		if err != nil {
			continue // the default mode skipped it
		}
		if j >= len(res.Links) {
			t.Fatalf("unresolved link %q beyond the %d resolved links", l.Raw, len(res.Links))
		}
		r := res.Links[j]
		j++
		if u.String() != r.URL.String() || l.Raw != CleanHref(r.Raw) || l.Tag != r.Tag || l.Attr != r.Attr ||
			l.Text != r.Text || l.Rel != r.Rel || l.NoFollow != r.NoFollow {
			t.Fatalf("link %d: unresolved %+v (%s), resolved %+v", j-1, l, u, r)
		}
	}
	if j != len(res.Links) {
		t.Fatalf("%d resolved links, %d unresolved ones resolve", len(res.Links), j)
	}
}

func TestUnresolvedMatchesResolved(t *testing.T) {
	inputs, err := filepath.Glob("testdata/golden/*.html")
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no golden inputs: %v", err)
	}
	base := mustURL(t, goldenBase)
	for _, in := range inputs {
		body, err := os.ReadFile(in)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(filepath.Base(in), func(t *testing.T) { checkUnresolved(t, base, body, Options{}) })
	}
	for i, s := range fuzzSeeds {
		t.Run("seed"+string(rune('a'+i%26)), func(t *testing.T) { checkUnresolved(t, base, []byte(s), Options{}) })
	}
}

func FuzzUnresolved(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	base := mustURL(f, "http://fuzz.example/a/b?c#d")
	f.Fuzz(func(t *testing.T, body []byte) {
		checkUnresolved(t, base, body, Options{MaxLinks: 50, MaxTextBytes: 4096})
	})
}
