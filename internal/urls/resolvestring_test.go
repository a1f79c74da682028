package urls

import (
	"net/url"
	"testing"
)

// TestResolveString: ResolveString gives Resolve's URL and its String().
func TestResolveString(t *testing.T) {
	base, _ := url.Parse("http://Example.com:80/a/b/c.html?x=1")
	n := &Normalizer{SortQuery: true}
	for _, ref := range []string{"", "d.html", "../d?b=2&a=1", "/e f", "//other.test/%7euser/", "?q", "#frag",
		"HTTP://X.TEST:8080/./a/../b", "mailto:a@b", "http://[::1]:443/", "  \t/t\nab  "} {
		u, err := n.Resolve(base, ref)
		u2, s, err2 := n.ResolveString(base, ref)
		if (err == nil) != (err2 == nil) {
			t.Fatalf("%q: Resolve error %v, ResolveString error %v", ref, err, err2)
		}
		if err != nil {
			continue
		}
		if u.String() != u2.String() || s != u.String() {
			t.Errorf("%q: Resolve %s, ResolveString %s %q", ref, u, u2, s)
		}
	}
}
