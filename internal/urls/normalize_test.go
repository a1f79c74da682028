package urls

import (
	"errors"
	"net/url"
	"strings"
	"testing"
)

var parseCases = []struct {
	in   string
	want string // canonical form; "" when err is set
	err  error
}{
	// Case, default port, dot segments, fragment.
	{"HTTP://WWW.Example.COM:80/a/./b/../c?x=1#top", "http://www.example.com/a/c?x=1", nil},
	{"HTTPS://EXAMPLE.com/A?B#C", "https://example.com/A?B", nil},
	{"https://example.com:443", "https://example.com/", nil},
	{"http://example.com:443/", "http://example.com:443/", nil},
	{"https://example.com:80/", "https://example.com:80/", nil},
	{"http://example.com:8080/", "http://example.com:8080/", nil},
	{"http://example.com:/", "http://example.com/", nil},
	{"http://example.com:0080/x", "http://example.com/x", nil},
	{"http://example.com:08080/x", "http://example.com:8080/x", nil},
	{"http://example.com", "http://example.com/", nil},
	{"http://example.com?q", "http://example.com/?q", nil},
	{"http://example.com#f", "http://example.com/", nil},
	{"http://example.com./a", "http://example.com/a", nil},
	{"http://example.com/a/b/..", "http://example.com/a/", nil},
	{"http://example.com/a/%2e%2E/b", "http://example.com/b", nil},
	{"http://example.com/../../a", "http://example.com/a", nil},
	{"http://example.com//a//b", "http://example.com//a//b", nil},
	// Query kept as is (not sorted by default), empty query removed.
	{"http://example.com/?b=2&a=1", "http://example.com/?b=2&a=1", nil},
	{"http://example.com/?", "http://example.com/", nil},
	{"http://example.com/a?x=%7e%2f&y=a+b", "http://example.com/a?x=~%2F&y=a+b", nil},
	{"http://example.com/a?u=http://b.c/?d", "http://example.com/a?u=http://b.c/?d", nil},
	// Percent-encoding normalisation.
	{"http://example.com/%7euser/%2fa%2Fb/%41%5a", "http://example.com/~user/%2Fa%2Fb/AZ", nil},
	{"http://example.com/a b/ü?q=ü v", "http://example.com/a%20b/%C3%BC?q=%C3%BC%20v", nil},
	{"http://example.com/100%/x%", "http://example.com/100%25/x%25", nil},
	{"http://example.com/%zz%4", "http://example.com/%25zz%254", nil},
	{"http://example.com/%c3%bc", "http://example.com/%C3%BC", nil},
	{"http://example.com/a\"<>`{}|^", "http://example.com/a%22%3C%3E%60%7B%7D%7C%5E", nil},
	{"http://example.com/[a]!$&'()*+,;=:@?[b]", "http://example.com/[a]!$&'()*+,;=:@?[b]", nil},
	{"http://example.com/\x01\x7f", "http://example.com/%01%7F", nil},
	{"http://example.com/\xff", "http://example.com/%FF", nil},
	// Browser leniencies.
	{"  http://example.com/\n a \t", "http://example.com/%20a", nil},
	{"\thttp://exa\nmple.com/a\r\nb ", "http://example.com/ab", nil},
	{`http:\\example.com\a\b?x=\`, "http://example.com/a/b?x=%5C", nil},
	{"http:/example.com/a", "http://example.com/a", nil},
	{"http:///example.com/a", "http://example.com/a", nil},
	{"http:example.com", "http://example.com/", nil},
	// Hosts: IDN, IP literals, percent-encoding, underscores.
	{"http://bücher.example/", "http://xn--bcher-kva.example/", nil},
	{"http://BÜCHER.example/", "http://xn--bcher-kva.example/", nil},
	{"http://例え.テスト/", "http://xn--r8jz45g.xn--zckzah/", nil},
	{"http://xn--bcher-kva.example/", "http://xn--bcher-kva.example/", nil},
	{"http://%65xample.com/", "http://example.com/", nil},
	{"http://ex_ample.com/", "http://ex_ample.com/", nil},
	{"http://192.168.0.1:81/", "http://192.168.0.1:81/", nil},
	{"http://[2001:DB8:0:0::1]:8080/", "http://[2001:db8::1]:8080/", nil},
	{"http://[::1]/", "http://[::1]/", nil},
	{"http://[::FFFF:1.2.3.4]/", "http://[::ffff:1.2.3.4]/", nil},
	// Userinfo.
	{"http://user:pass@Example.com/", "http://user:pass@example.com/", nil},
	{"http://us%65r@example.com/", "http://user@example.com/", nil},
	{"http://user:@example.com/", "http://user:@example.com/", nil},
	{"http://@example.com/", "http://example.com/", nil},
	{"http://a@b@example.com/", "http://a%40b@example.com/", nil},
	// Refused schemes.
	{"", "", ErrScheme},
	{"   ", "", ErrScheme},
	{"javascript:alert(1)", "", ErrScheme},
	{"JavaScript:void(0)", "", ErrScheme},
	{"mailto:a@b.c", "", ErrScheme},
	{"data:text/plain,hi", "", ErrScheme},
	{"ftp://example.com/", "", ErrScheme},
	{"example.com/a", "", ErrScheme},
	{"/relative", "", ErrScheme},
	{"1http://example.com/", "", ErrScheme},
	// Bad hosts and ports.
	{"http://", "", ErrHost},
	{"http:///", "", ErrHost},
	{"http://:80/", "", ErrHost},
	{"http://user@/", "", ErrHost},
	{"http://a b.com/", "", ErrHost},
	{"http://exa$mple.com/", "", ErrHost},
	{"http://a..b.com/", "", ErrHost},
	{"http://.a.com/", "", ErrHost},
	{"http://example.com../", "", ErrHost},
	{"http://" + strings.Repeat("a", 64) + ".com/", "", ErrHost},
	{"http://" + strings.Repeat("abcdefghi.", 26) + "com/", "", ErrHost},
	{"http://example.com:99999/", "", ErrHost},
	{"http://example.com:0/", "", ErrHost},
	{"http://example.com:8o/", "", ErrHost},
	{"http://example.com:-1/", "", ErrHost},
	{"http://[fe80::1%25eth0]/", "", ErrHost},
	{"http://[::1/", "", ErrHost},
	{"http://[::1]x/", "", ErrHost},
	{"http://[1.2.3.4]/", "", ErrHost},
	{"http://%zz.com/", "", ErrHost},
	{"http://a\u00a0b.com/", "", ErrHost},
	// Length.
	{"http://example.com/" + strings.Repeat("a", MaxLength), "", ErrTooLong},
	{"http://example.com/" + strings.Repeat("ü", 1000), "", ErrTooLong},
}

func TestParse(t *testing.T) {
	for _, tc := range parseCases {
		t.Run(tc.in, func(t *testing.T) {
			u, err := Parse(tc.in)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("Parse(%q) = %v, %v; want error %v", tc.in, u, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.in, err)
			}
			if got := u.String(); got != tc.want {
				t.Fatalf("Parse(%q) = %q; want %q", tc.in, got, tc.want)
			}
			// Idempotent.
			u2, err := Parse(u.String())
			if err != nil || u2.String() != tc.want {
				t.Fatalf("Parse(Parse(%q)) = %v, %v; want %q", tc.in, u2, err, tc.want)
			}
			// The standard library reads it back the same.
			u3, err := url.Parse(tc.want)
			if err != nil || u3.String() != tc.want || u3.Path != u.Path || u3.Host != u.Host {
				t.Fatalf("url.Parse(%q) = %#v, %v", tc.want, u3, err)
			}
		})
	}
}

func TestParseLongestAccepted(t *testing.T) {
	in := "http://example.com/" + strings.Repeat("a", MaxLength-len("http://example.com/"))
	u, err := Parse(in)
	if err != nil || u.String() != in {
		t.Fatalf("Parse(%d bytes) = %v; want it unchanged", len(in), err)
	}
}

// TestResolveRFC3986 runs the reference resolution examples of RFC 3986
// §5.4.1 and §5.4.2 (base "http://a/b/c/d;p?q"), fragments removed.
func TestResolveRFC3986(t *testing.T) {
	base, err := url.Parse("http://a/b/c/d;p?q")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ ref, want string }{
		// §5.4.1 Normal Examples.
		{"g", "http://a/b/c/g"},
		{"./g", "http://a/b/c/g"},
		{"g/", "http://a/b/c/g/"},
		{"/g", "http://a/g"},
		{"//g", "http://g/"},
		{"?y", "http://a/b/c/d;p?y"},
		{"g?y", "http://a/b/c/g?y"},
		{"#s", "http://a/b/c/d;p?q"},
		{"g#s", "http://a/b/c/g"},
		{"g?y#s", "http://a/b/c/g?y"},
		{";x", "http://a/b/c/;x"},
		{"g;x", "http://a/b/c/g;x"},
		{"g;x?y#s", "http://a/b/c/g;x?y"},
		{".", "http://a/b/c/"},
		{"./", "http://a/b/c/"},
		{"..", "http://a/b/"},
		{"../", "http://a/b/"},
		{"../g", "http://a/b/g"},
		{"../..", "http://a/"},
		{"../../", "http://a/"},
		{"../../g", "http://a/g"},
		// §5.4.2 Abnormal Examples.
		{"../../../g", "http://a/g"},
		{"../../../../g", "http://a/g"},
		{"/./g", "http://a/g"},
		{"/../g", "http://a/g"},
		{"g.", "http://a/b/c/g."},
		{".g", "http://a/b/c/.g"},
		{"g..", "http://a/b/c/g.."},
		{"..g", "http://a/b/c/..g"},
		{"./../g", "http://a/b/g"},
		{"./g/.", "http://a/b/c/g/"},
		{"g/./h", "http://a/b/c/g/h"},
		{"g/../h", "http://a/b/c/h"},
		{"g;x=1/./y", "http://a/b/c/g;x=1/y"},
		{"g;x=1/../y", "http://a/b/c/y"},
		{"g?y/./x", "http://a/b/c/g?y/./x"},
		{"g?y/../x", "http://a/b/c/g?y/../x"},
		{"g#s/./x", "http://a/b/c/g"},
		{"g#s/../x", "http://a/b/c/g"},
		// "http:g": browsers (WHATWG) resolve it relative to a same-scheme base.
		{"http:g", "http://a/b/c/g"},
		{"https:g", "https://g/"},
	}
	for _, tc := range cases {
		got, err := Resolve(base, tc.ref)
		if err != nil {
			t.Errorf("Resolve(%q): %v", tc.ref, err)
			continue
		}
		if got.String() != tc.want {
			t.Errorf("Resolve(%q) = %q; want %q", tc.ref, got, tc.want)
		}
	}
}

func TestResolve(t *testing.T) {
	cases := []struct {
		base, ref, want string
		err             error
	}{
		{"http://example.com/a/b.html", "c.html", "http://example.com/a/c.html", nil},
		{"http://example.com/a/b.html", "  ../C.HTML#x ", "http://example.com/C.HTML", nil},
		{"http://example.com/a/b.html", "//OTHER.example:80/x", "http://other.example/x", nil},
		{"https://example.com/a/", "//other.example/x", "https://other.example/x", nil},
		{"http://example.com/a/", "HTTPS://Other.Example/x", "https://other.example/x", nil},
		{"http://example.com/a/", `\x\y`, "http://example.com/x/y", nil},
		{"http://example.com/a/", "ü b", "http://example.com/a/%C3%BC%20b", nil},
		{"http://u:p@example.com:8080/a/b", "c", "http://u:p@example.com:8080/a/c", nil},
		{"http://example.com", "x", "http://example.com/x", nil},
		{"http://example.com/a?q=1", "?", "http://example.com/a", nil},
		{"http://example.com/a?q=1", "#f", "http://example.com/a?q=1", nil},
		{"http://example.com/a/", "http:/x", "http://example.com/x", nil},
		{"http://example.com/a/", "", "", ErrScheme},
		{"http://example.com/a/", "  ", "", ErrScheme},
		{"http://example.com/a/", "javascript:void(0)", "", ErrScheme},
		{"http://example.com/a/", "mailto:x@example.com", "", ErrScheme},
		{"http://example.com/a/", "data:image/png;base64,AAAA", "", ErrScheme},
		{"http://example.com/a/", "tel:+123", "", ErrScheme},
		{"http://example.com/a/", "//", "", ErrHost},
		{"http://example.com/a/", "//bad host/", "", ErrHost},
		{"ftp://example.com/a/", "b", "", ErrScheme},
		{"", "b", "", ErrInvalid},
		{"", "http://example.com", "http://example.com/", nil},
	}
	for _, tc := range cases {
		var base *url.URL
		if tc.base != "" {
			var err error
			if base, err = url.Parse(tc.base); err != nil {
				t.Fatal(err)
			}
		}
		got, err := Resolve(base, tc.ref)
		if tc.err != nil {
			if !errors.Is(err, tc.err) {
				t.Errorf("Resolve(%q, %q) = %v, %v; want error %v", tc.base, tc.ref, got, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("Resolve(%q, %q): %v", tc.base, tc.ref, err)
			continue
		}
		if got.String() != tc.want {
			t.Errorf("Resolve(%q, %q) = %q; want %q", tc.base, tc.ref, got, tc.want)
		}
	}
}

func TestNormalizerOptions(t *testing.T) {
	cases := []struct {
		name string
		n    Normalizer
		in   string
		want string
	}{
		{"sort", Normalizer{SortQuery: true}, "http://e.com/?b=2&a=1&b=1&&c", "http://e.com/?a=1&b=2&b=1&c"},
		{"sort encoded keys", Normalizer{SortQuery: true}, "http://e.com/?%62=1&a=2", "http://e.com/?a=2&b=1"},
		{"drop", Normalizer{DropParams: []string{"utm_*", "SID"}},
			"http://e.com/?utm_source=x&a=1&sid=3&UTM_medium=y&sidx=4", "http://e.com/?a=1&sidx=4"},
		{"drop encoded key", Normalizer{DropParams: []string{"utm_source"}}, "http://e.com/?utm%5Fsource=x&b", "http://e.com/?b"},
		{"drop all", Normalizer{DropParams: []string{"*"}}, "http://e.com/x?a=1&b=2", "http://e.com/x"},
		{"drop glob middle", Normalizer{DropParams: []string{"*session*"}}, "http://e.com/?jsessionid=1&phpsessid=2&q=3", "http://e.com/?phpsessid=2&q=3"},
		{"drop and sort", Normalizer{SortQuery: true, DropParams: []string{"ref"}}, "http://e.com/?z=1&ref=x&a=2", "http://e.com/?a=2&z=1"},
		{"keep fragment", Normalizer{KeepFragment: true}, "http://e.com/a#%7efrag", "http://e.com/a#~frag"},
		{"keep fragment encodes", Normalizer{KeepFragment: true}, "http://e.com/a#b#c d/?x", "http://e.com/a#b%23c%20d/?x"},
		{"keep empty fragment", Normalizer{KeepFragment: true}, "http://e.com/a#", "http://e.com/a"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u, err := tc.n.Parse(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if u.String() != tc.want {
				t.Fatalf("Parse(%q) = %q; want %q", tc.in, u, tc.want)
			}
			u2, err := tc.n.Normalize(u)
			if err != nil || u2.String() != tc.want {
				t.Fatalf("Normalize(%q) = %v, %v; not idempotent", u, u2, err)
			}
		})
	}
}

func TestNormalizeNil(t *testing.T) {
	var n Normalizer
	if _, err := n.Normalize(nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Normalize(nil) = %v; want ErrInvalid", err)
	}
}

func TestGlobMatch(t *testing.T) {
	cases := []struct {
		pattern, s string
		want       bool
	}{
		{"", "", true},
		{"", "a", false},
		{"*", "", true},
		{"*", "abc", true},
		{"utm_*", "utm_source", true},
		{"utm_*", "utm", false},
		{"*id", "sessionid", true},
		{"a*b*c", "axxbyyc", true},
		{"a*b*c", "axxbyy", false},
		{"a**c", "ac", true},
		{"abc", "abc", true},
		{"abc", "abcd", false},
	}
	for _, tc := range cases {
		if got := globMatch(tc.pattern, tc.s); got != tc.want {
			t.Errorf("globMatch(%q, %q) = %v; want %v", tc.pattern, tc.s, got, tc.want)
		}
	}
}

func FuzzNormalize(f *testing.F) {
	for _, tc := range parseCases {
		f.Add(tc.in, "../x?y#z")
	}
	for _, ref := range []string{"", "g", "//g", "?y", "#s", "../../g", "http:g", `\a\b`, "%zz", "ü", "javascript:x"} {
		f.Add("http://a/b/c/d;p?q", ref)
	}
	normalizers := []Normalizer{{}, {SortQuery: true, DropParams: []string{"utm_*", "*id"}, KeepFragment: true}}
	f.Fuzz(func(t *testing.T, raw, ref string) {
		for _, n := range normalizers {
			u, err := n.Parse(raw)
			if err != nil {
				if !errors.Is(err, ErrScheme) && !errors.Is(err, ErrHost) && !errors.Is(err, ErrTooLong) {
					t.Fatalf("Parse(%q): unexpected error class: %v", raw, err)
				}
				u, _ = url.Parse("http://a/b/c/d;p?q")
			} else {
				checkCanonical(t, &n, raw, u)
			}
			r, err := n.Resolve(u, ref)
			if err == nil {
				checkCanonical(t, &n, ref, r)
			}
		}
	})
}

// checkCanonical checks the invariants of a URL returned by n.
func checkCanonical(t *testing.T, n *Normalizer, in string, u *url.URL) {
	t.Helper()
	s := u.String()
	if len(s) > MaxLength {
		t.Fatalf("%q: canonical form longer than MaxLength: %d", in, len(s))
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" || !strings.HasPrefix(u.EscapedPath(), "/") {
		t.Fatalf("%q: bad canonical URL %q", in, s)
	}
	again, err := n.Parse(s)
	if err != nil {
		t.Fatalf("%q: canonical %q does not re-parse: %v", in, s, err)
	}
	if again.String() != s {
		t.Fatalf("%q: not idempotent: %q then %q", in, s, again)
	}
	std, err := url.Parse(s)
	if err != nil {
		t.Fatalf("%q: net/url cannot parse canonical %q: %v", in, s, err)
	}
	if std.String() != s {
		t.Fatalf("%q: net/url round trip of %q gives %q", in, s, std)
	}
}
