package urls

import (
	"net/url"
	"reflect"
	"strings"
	"testing"
)

// resolverBases are the bases of the differential tests: plain, with a
// port, userinfo, a query, an IDN host, an empty path, an IPv6 literal, a
// relative path with dot segments, and a base whose scheme is not http.
var resolverBases = []string{
	"http://a/b/c/d;p?q",
	"http://Example.COM:80/x/y.html?z=1#f",
	"https://user:pw@host.test:8443/dir/",
	"http://bücher.example/a/b",
	"http://example.com",
	"http://[::1]:8080/p/",
	"http://a.test/%7euser/../x/./y",
	"ftp://a.test/x/",
}

// resolverRefs are the references resolved against each base: RFC 3986
// §5.4's examples, the parse cases (absolute URLs, bad hosts and ports),
// and refs to other hosts in between, so that the host cache changes hands.
func resolverRefs() []string {
	refs := []string{"g:h", "g", "./g", "g/", "/g", "//g", "?y", "g?y", "#s", "g#s", "g?y#s", ";x", "g;x",
		"g;x?y#s", "", ".", "./", "..", "../", "../g", "../..", "../../", "../../g", "../../../g",
		"/./g", "/../g", "g.", ".g", "g..", "..g", "./../g", "./g/.", "g/./h", "g/../h", "g;x=1/./y",
		"http:g", "https:g", `\a\b?c\d`, " \t/t\nab ", "%zz", "ü", "javascript:x", "mailto:a@b",
		"//other.test:80/", "//user@other.test/", "//OTHER.test", "//a:99999/", "//a..b/", "//[::1/",
		"/again", "//other.test/x", "/back-home"}
	for _, tc := range parseCases {
		refs = append(refs, tc.in, "/after")
	}
	return refs
}

// checkSame fails unless the Resolver's answer equals the reference
// implementation's (URL fields, string and error text).
func checkSame(t *testing.T, base, ref string, u *url.URL, s string, err error, wu *url.URL, ws string, werr error) {
	t.Helper()
	if (err == nil) != (werr == nil) || err != nil && err.Error() != werr.Error() {
		t.Fatalf("base %q ref %q: error %v; reference gives %v", base, ref, err, werr)
	}
	if err != nil {
		return
	}
	if s != ws || !reflect.DeepEqual(u, wu) {
		t.Fatalf("base %q ref %q: %q %#v; reference gives %q %#v", base, ref, s, u, ws, wu)
	}
	if s != u.String() {
		t.Fatalf("base %q ref %q: string %q is not u.String() %q", base, ref, s, u.String())
	}
}

// TestResolverMatchesReference: one Resolver per base, every reference in
// turn, gives what the resolver before the Resolver gave (refresolve_test.go)
// and what Normalizer.ResolveString gives. Fails when the host cache answers
// for another host or scheme, when the base's parts are taken wrongly, or
// when the string built without url.URL.String differs from it.
func TestResolverMatchesReference(t *testing.T) {
	normalizers := []Normalizer{{}, {SortQuery: true, DropParams: []string{"utm_*"}, KeepFragment: true}}
	for _, n := range normalizers {
		for _, b := range resolverBases {
			base, err := url.Parse(b)
			if err != nil {
				t.Fatal(err)
			}
			r := n.Resolver(base)
			for _, ref := range resolverRefs() {
				u, s, err := r.ResolveString(ref)
				wu, ws, werr := n.refResolveString(base, ref, true)
				checkSame(t, b, ref, u, s, err, wu, ws, werr)
				u, s, err = n.ResolveString(base, ref)
				checkSame(t, b, ref, u, s, err, wu, ws, werr)
			}
		}
		r := n.Resolver(nil)
		for _, ref := range resolverRefs() {
			u, s, err := r.ResolveString(ref)
			wu, ws, werr := n.refResolveString(nil, ref, true)
			checkSame(t, "<nil>", ref, u, s, err, wu, ws, werr)
		}
	}
}

// TestStringForm: the string Parse computes is u.String() for every parse
// case (fails if the direct concatenation in build drifts from net/url).
func TestStringForm(t *testing.T) {
	n := Normalizer{KeepFragment: true}
	for _, tc := range parseCases {
		for _, in := range []string{tc.in, tc.in + "#frag%41", tc.in + "?q=%7e"} {
			u, s, err := n.resolveString(nil, in, false)
			if err == nil && s != u.String() {
				t.Errorf("%q: string %q, u.String() %q", in, s, u.String())
			}
		}
	}
}

// FuzzResolverDiff is the differential fuzz target of the Resolver: three
// references resolved in turn by one Resolver (so the host cache carries
// over) must give what the reference implementation gives for each.
func FuzzResolverDiff(f *testing.F) {
	refs := resolverRefs()
	for i, b := range resolverBases {
		f.Add(b, refs[i%len(refs)], refs[(i*7+3)%len(refs)], refs[(i*13+5)%len(refs)])
	}
	f.Add("http://a/b", "//B:80/x", "//b/y", "http://b:0080/z")
	f.Add("https://a/b", "//a:443/", "http://a:443/", "/c")
	normalizers := []Normalizer{{}, {SortQuery: true, DropParams: []string{"*id"}, KeepFragment: true}}
	f.Fuzz(func(t *testing.T, b, r1, r2, r3 string) {
		base, err := url.Parse(b)
		if err != nil || strings.ContainsAny(b, "\x00") {
			base = nil
		}
		for _, n := range normalizers {
			r := n.Resolver(base)
			for _, ref := range []string{r1, r2, r1, r3} {
				u, s, err := r.ResolveString(ref)
				wu, ws, werr := n.refResolveString(base, ref, true)
				checkSame(t, b, ref, u, s, err, wu, ws, werr)
			}
		}
		for _, s := range []string{b, r1, r2, r3} {
			if got, want := clean(s), refClean(s); got != want {
				t.Fatalf("clean(%q) = %q; reference %q", s, got, want)
			}
		}
		for _, p := range []string{r1, "/" + r1, "/" + r2} {
			if got, want := removeDotSegments(p), refRemoveDotSegments(p); got != want {
				t.Fatalf("removeDotSegments(%q) = %q; reference %q", p, got, want)
			}
		}
	})
}

// TestCleanShortcut: clean gives what it gave before its shortcut for
// plain references, on references with and without the bytes it removes.
func TestCleanShortcut(t *testing.T) {
	for _, s := range []string{"", "a", "/a/b?c#d", " a", "a ", "a\tb", "a\\b?c\\d", "\x00a\x7f", "ü\xff", "\x01", "a\rb\nc",
		"http://x/\u00a0", "?\\", "#\\x"} {
		if got, want := clean(s), refClean(s); got != want {
			t.Errorf("clean(%q) = %q; reference %q", s, got, want)
		}
	}
}

// TestRemoveDotSegmentsShortcut: paths with and without dot segments give
// what the reference gives (for a path starting with '/', exactly).
func TestRemoveDotSegmentsShortcut(t *testing.T) {
	for _, p := range []string{"", "/", "/.", "/..", "/./", "/../", "/a/.", "/a/..", "/a/./b", "/a/../b", "/.a", "/..a",
		"/a/.b/..c", "/a.", "/a/...", "/a/.../b", "//.", "/a//../b", "/.well-known/x", "/a/b/.htaccess",
		"./////.a", "../a/.b", "a/./b", "../a", ".."} {
		if got, want := removeDotSegments(p), refRemoveDotSegments(p); got != want {
			t.Errorf("removeDotSegments(%q) = %q; reference %q", p, got, want)
		}
	}
}

// BenchmarkResolver resolves a documentation page's table of contents (400
// links on the page's host, a few elsewhere) with a Resolver and, for
// comparison, with Normalizer.ResolveString per link.
func BenchmarkResolver(b *testing.B) {
	base, _ := url.Parse("http://127.0.0.11:8081/s/3/b/12.html")
	var refs []string
	for i := range 400 {
		refs = append(refs, "/s/"+string(rune('0'+i%10))+"/a/"+strings.Repeat("x", i%7)+".html")
		if i%50 == 0 {
			refs = append(refs, "http://127.0.0.12:8081/other.html", "../up.html?q=1")
		}
	}
	var n Normalizer
	b.Run("resolver", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			r := n.Resolver(base)
			for _, ref := range refs {
				if _, _, err := r.ResolveString(ref); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("per-link", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, ref := range refs {
				if _, _, err := n.ResolveString(base, ref); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("before", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, ref := range refs {
				if _, _, err := n.refResolveString(base, ref, true); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
