package urls

import (
	"net/url"
	"strings"
	"testing"
)

func mustParse(t testing.TB, raw string) *url.URL {
	t.Helper()
	u, err := Parse(raw)
	if err != nil {
		t.Fatalf("Parse(%q): %v", raw, err)
	}
	return u
}

func TestSURT(t *testing.T) {
	cases := []struct{ in, want string }{
		// SPEC §4's example, with the path "/" the canonical form always has.
		{"http://www.baidu.com", "http://(com,baidu,www,)/"},
		{"http://www.d0.test:8080/a", "http://(test,d0,www,:8080)/a"},
		{"https://www.d0.test:443/a", "https://(test,d0,www,)/a"},
		{"https://user:pw@a.example/x?q", "https://(example,a,@user:pw)/x?q"},
		{"http://user@a.example:81/", "http://(example,a,:81@user)/"},
		{"http://localhost/", "http://(localhost,)/"},
		{"http://192.168.0.1:81/", "http://(192.168.0.1,:81)/"},
		{"http://[2001:db8::1]/", "http://([2001:db8::1],)/"},
		{"http://[2001:db8::1]:8080/", "http://([2001:db8::1],:8080)/"},
		{"http://bücher.example/ü?a=1&b", "http://(example,xn--bcher-kva,)/%C3%BC?a=1&b"},
		{"http://example.com/a%2Fb", "http://(com,example,)/a%2Fb"},
	}
	for _, tc := range cases {
		if got := SURT(mustParse(t, tc.in)); got != tc.want {
			t.Errorf("SURT(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
}

func TestSURTNonCanonical(t *testing.T) {
	cases := []struct {
		u    *url.URL
		want string
	}{
		{&url.URL{Scheme: "HTTP", Host: "WWW.Example.COM.:80"}, "http://(com,example,www,)/"},
		{&url.URL{Scheme: "http", Host: "a.example", Path: "/x", Fragment: "f y"}, "http://(example,a,)/x#f%20y"},
		{&url.URL{Scheme: "http", Host: "a.example", Path: "/x", RawQuery: ""}, "http://(example,a,)/x"},
		{&url.URL{Scheme: "mailto", Opaque: "a@b.c"}, "mailto:a@b.c"},
		{&url.URL{Scheme: "file", Path: "/etc/passwd"}, "file:///etc/passwd"},
	}
	for _, tc := range cases {
		if got := SURT(tc.u); got != tc.want {
			t.Errorf("SURT(%#v) = %q; want %q", tc.u, got, tc.want)
		}
	}
}

func TestSURTPrefix(t *testing.T) {
	cases := []struct {
		pattern, want string
		match         []string
		noMatch       []string
	}{
		{
			pattern: "http://example.com",
			want:    "http://(com,example,",
			match:   []string{"http://example.com/", "http://www.example.com:8080/x", "http://a.b.example.com/?q"},
			noMatch: []string{"https://example.com/", "http://example.community/", "http://notexample.com/"},
		},
		{
			pattern: "example.com",
			want:    "http://(com,example,",
			match:   []string{"http://www.example.com/"},
		},
		{
			pattern: "http://www.example.com/",
			want:    "http://(com,example,www,)/",
			match:   []string{"http://www.example.com/", "http://www.example.com/a/b?c"},
			noMatch: []string{"http://example.com/", "http://x.www.example.com/", "http://www.example.com:81/"},
		},
		{
			pattern: "http://example.com/news/",
			want:    "http://(com,example,)/news/",
			match:   []string{"http://example.com/news/", "http://example.com/news/a.html"},
			noMatch: []string{"http://example.com/news", "http://example.com/newsletter"},
		},
		{
			pattern: "http://example.com:8080",
			want:    "http://(com,example,:8080)/",
			match:   []string{"http://example.com:8080/x"},
			noMatch: []string{"http://example.com:808/", "http://www.example.com:8080/", "http://example.com/"},
		},
		{
			pattern: "HTTP://(COM,Example,)/News",
			want:    "http://(com,example,)/News",
			match:   []string{"http://example.com/News/1"},
			noMatch: []string{"http://example.com/news/1"},
		},
		{
			pattern: "http://(org,",
			want:    "http://(org,",
			match:   []string{"http://a.org/", "http://b.a.org:81/x"},
			noMatch: []string{"http://a.org.uk/"},
		},
	}
	for _, tc := range cases {
		got, err := SURTPrefix(tc.pattern)
		if err != nil {
			t.Errorf("SURTPrefix(%q): %v", tc.pattern, err)
			continue
		}
		if got != tc.want {
			t.Errorf("SURTPrefix(%q) = %q; want %q", tc.pattern, got, tc.want)
		}
		for _, m := range tc.match {
			if !HasSURTPrefix(mustParse(t, m), got) {
				t.Errorf("HasSURTPrefix(%q, %q) = false; want true", m, got)
			}
		}
		for _, m := range tc.noMatch {
			if HasSURTPrefix(mustParse(t, m), got) {
				t.Errorf("HasSURTPrefix(%q, %q) = true; want false", m, got)
			}
		}
	}
	if _, err := SURTPrefix("mailto:a@b.c"); err == nil {
		t.Error("SURTPrefix(mailto:) succeeded; want error")
	}
}

func TestRegistrableDomain(t *testing.T) {
	cases := []struct{ in, want string }{
		{"www.example.com", "example.com"},
		{"WWW.Example.COM.", "example.com"},
		{"example.com", "example.com"},
		{"www.news.bbc.co.uk", "bbc.co.uk"},
		{"a.b.github.io", "b.github.io"},
		{"www.d0.test", "d0.test"},
		{"co.uk", "co.uk"},
		{"com", "com"},
		{"localhost", "localhost"},
		{"192.168.0.1", "192.168.0.1"},
		{"[2001:db8::1]", "[2001:db8::1]"},
		{"2001:db8::1", "2001:db8::1"},
		{"xn--bcher-kva.example", "xn--bcher-kva.example"},
		{"", ""},
	}
	for _, tc := range cases {
		if got := RegistrableDomain(tc.in); got != tc.want {
			t.Errorf("RegistrableDomain(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
}

func TestHostPort(t *testing.T) {
	cases := []struct {
		u    *url.URL
		want string
	}{
		{mustParse(t, "http://Example.com/"), "example.com"},
		{mustParse(t, "https://example.com:8443/"), "example.com:8443"},
		{mustParse(t, "http://[::1]:8080/"), "[::1]:8080"},
		{mustParse(t, "http://[::1]/"), "[::1]"},
		{&url.URL{Scheme: "http", Host: "EXAMPLE.com:80"}, "example.com"},
		{&url.URL{Scheme: "https", Host: "example.com:443"}, "example.com"},
		{&url.URL{Scheme: "https", Host: "example.com:80"}, "example.com:80"},
	}
	for _, tc := range cases {
		if got := HostPort(tc.u); got != tc.want {
			t.Errorf("HostPort(%q) = %q; want %q", tc.u, got, tc.want)
		}
	}
}

func FuzzSURT(f *testing.F) {
	for _, tc := range parseCases {
		f.Add(tc.in)
	}
	f.Add("http://www.baidu.com")
	f.Add("http://user:p%40ss@[::1]:8080/a?b#c")
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := (&Normalizer{KeepFragment: true}).Parse(raw)
		if err != nil {
			return
		}
		s := SURT(u)
		if !strings.HasPrefix(s, u.Scheme+"://(") {
			t.Fatalf("SURT(%q) = %q: no scheme://( prefix", u, s)
		}
		if SURT(u) != s {
			t.Fatalf("SURT(%q) not deterministic", u)
		}
		// The authority part ends at the first ')' and holds no '/'.
		close := strings.IndexByte(s, ')')
		if close < 0 || strings.ContainsAny(s[len(u.Scheme)+4:close], "/?#") {
			t.Fatalf("SURT(%q) = %q: malformed authority", u, s)
		}
		if !strings.HasSuffix(s, u.String()[len(u.Scheme)+3+len(authority(u)):]) {
			t.Fatalf("SURT(%q) = %q: path, query or fragment changed", u, s)
		}
		// A URL is inside the SURT prefix of its own host and of itself.
		hostPrefix, err := SURTPrefix(u.Scheme + "://" + u.Hostname())
		if err == nil && !HasSURTPrefix(u, hostPrefix) && u.User == nil {
			t.Fatalf("%q not under prefix %q of its host", u, hostPrefix)
		}
		if self, err := SURTPrefix(s); err != nil || self != s {
			t.Fatalf("SURTPrefix(SURT(%q)) = %q, %v; want %q", u, self, err, s)
		}
	})
}

// authority returns the authority of u as written in u.String().
func authority(u *url.URL) string {
	if u.User != nil {
		return u.User.String() + "@" + u.Host
	}
	return u.Host
}
