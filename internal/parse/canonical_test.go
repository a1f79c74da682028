package parse

import (
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestLinkHeaderCanonical(t *testing.T) {
	tests := []struct {
		name   string
		values []string
		want   string
	}{
		{"none", nil, ""},
		{"quoted rel", []string{`<https://a.test/x>; rel="canonical"`}, "https://a.test/x"},
		{"bare rel, upper case", []string{`<https://a.test/x>; REL=Canonical`}, "https://a.test/x"},
		{"relative", []string{`</x?y=1>; rel="canonical"`}, "/x?y=1"},
		{"several rel types", []string{`<https://a.test/x>; rel="alternate canonical"`}, "https://a.test/x"},
		{"second link", []string{`<https://a.test/next>; rel="next", <https://a.test/c>; rel="canonical"`}, "https://a.test/c"},
		{"second header line", []string{`<https://a.test/next>; rel="next"`, `<https://a.test/c>; rel=canonical`}, "https://a.test/c"},
		{"comma inside quotes", []string{`<https://a.test/p>; title="a, b"; rel="preload", <https://a.test/c>; rel="canonical"`}, "https://a.test/c"},
		{"escaped quote", []string{`<https://a.test/p>; title="a\", b"; rel="canonical"`}, "https://a.test/p"},
		{"other rel only", []string{`<https://a.test/x>; rel="canonicalish"`}, ""},
		{"anchor param kept", []string{`<https://a.test/x>; anchor="#a"; rel="canonical"`}, "https://a.test/x"},
		{"not a link", []string{`https://a.test/x; rel="canonical"`}, ""},
		{"unterminated", []string{`<https://a.test/x; rel="canonical"`}, ""},
		{"unterminated quote", []string{`<https://a.test/x>; rel="canonical`}, ""},
		{"garbage param", []string{`<https://a.test/x> junk; rel="canonical"`}, ""},
		{"white space in target", []string{"< https://a.test/x\t>; rel=canonical"}, "https://a.test/x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := LinkHeaderCanonical(tt.values); got != tt.want {
				t.Errorf("LinkHeaderCanonical(%q) = %q, want %q", tt.values, got, tt.want)
			}
		})
	}
}

// A huge Link header is read up to 64 KiB, in time linear in that.
func TestLinkHeaderCanonicalHuge(t *testing.T) {
	huge := strings.Repeat(`<https://a.test/x>; rel="next", `, 1<<16) + `<https://a.test/c>; rel="canonical"`
	start := time.Now()
	if got := LinkHeaderCanonical([]string{huge}); got != "" {
		t.Errorf("canonical beyond 64 KiB found: %q", got)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("a 2 MB header took %v", d)
	}
	if got := LinkHeaderCanonical([]string{`<https://a.test/c>; rel="canonical"`, huge}); got != "https://a.test/c" {
		t.Errorf("got %q", got)
	}
}

func TestPageCanonical(t *testing.T) {
	base, _ := url.Parse("http://a.test/dir/page?s=1")
	tests := []struct {
		name, html, want string
		unresolved       bool
	}{
		{"none", `<html><head><title>x</title></head><body><a href="/y">y</a></body></html>`, "", false},
		{"resolved", `<head><link rel="canonical" href="/dir/page"></head>`, "http://a.test/dir/page", false},
		{"unresolved", `<head><link rel="canonical" href=" /dir/page "></head>`, "/dir/page", true},
		{"first wins", `<link rel="Canonical" href="/one"><link rel="canonical" href="/two">`, "http://a.test/one", false},
		{"not an anchor", `<a rel="canonical" href="/a">a</a>`, "", false},
		{"rel list", `<link rel="alternate canonical" href="/x">`, "http://a.test/x", false},
		{"base applies", `<base href="http://a.test/other/"><link rel="canonical" href="p">`, "http://a.test/other/p", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse(base, []byte(tt.html), Options{Unresolved: tt.unresolved})
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Canonical(); got != tt.want {
				t.Errorf("Canonical() = %q, want %q", got, tt.want)
			}
		})
	}
}

// FuzzLinkHeaderCanonical: any header value parses without panic, in
// bounded time, and what it returns is a substring of the input between
// angle brackets (cleaned), never invented.
func FuzzLinkHeaderCanonical(f *testing.F) {
	for _, s := range []string{
		`<https://a.test/x>; rel="canonical"`,
		`<a>; rel=next, <b>; rel=canonical`,
		`<a>; title="x\"y, z"; rel="canonical"`,
		`<`, `<>;`, `<a>; rel="`, `;;;,,,<<>>`, "<\x00>; rel=canonical",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := LinkHeaderCanonical([]string{s, s})
		if got == "" {
			return
		}
		if !strings.Contains(s, "<") || strings.ContainsAny(got, "<>") && !strings.Contains(s, got) {
			t.Fatalf("LinkHeaderCanonical(%q) = %q: not a target of the input", s, got)
		}
		if strings.ContainsAny(got, "\t\n\r") {
			t.Fatalf("LinkHeaderCanonical(%q) = %q: not cleaned", s, got)
		}
	})
}
