package fetch

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"testing"
)

func TestParseResolve(t *testing.T) {
	addrs := func(ss ...string) []netip.Addr {
		var out []netip.Addr
		for _, s := range ss {
			out = append(out, netip.MustParseAddr(s))
		}
		return out
	}
	tests := []struct {
		in      string
		want    ResolveEntry
		wantErr string // substring; "" = success
	}{
		{in: "example.com:443:192.0.2.1", want: ResolveEntry{Host: "example.com", Port: "443", Addrs: addrs("192.0.2.1")}},
		{in: "Example.COM.:80:192.0.2.1", want: ResolveEntry{Host: "example.com", Port: "80", Addrs: addrs("192.0.2.1")}},
		{in: "*.test:*:127.0.0.1", want: ResolveEntry{Host: "*.test", Port: "*", Addrs: addrs("127.0.0.1")}},
		{in: "*:*:127.0.0.1", want: ResolveEntry{Host: "*", Port: "*", Addrs: addrs("127.0.0.1")}},
		{in: "v6.example:443:[2001:db8::1]", want: ResolveEntry{Host: "v6.example", Port: "443", Addrs: addrs("2001:db8::1")}},
		{in: "v6.example:443:2001:db8::1", want: ResolveEntry{Host: "v6.example", Port: "443", Addrs: addrs("2001:db8::1")}},
		{in: "multi.example:8080:192.0.2.1,[2001:db8::2], 192.0.2.3", want: ResolveEntry{Host: "multi.example", Port: "8080",
			Addrs: addrs("192.0.2.1", "2001:db8::2", "192.0.2.3")}},
		{in: "[::1]:80:127.0.0.1", want: ResolveEntry{Host: "::1", Port: "80", Addrs: addrs("127.0.0.1")}},
		{in: "mapped.example:80:::ffff:192.0.2.9", want: ResolveEntry{Host: "mapped.example", Port: "80", Addrs: addrs("192.0.2.9")}},
		{in: "", wantErr: "missing ':' after host"},
		{in: "example.com", wantErr: "missing ':' after host"},
		{in: "example.com:443", wantErr: "missing ':' after port"},
		{in: "example.com:443:", wantErr: "no address"},
		{in: ":443:192.0.2.1", wantErr: "empty host"},
		{in: "example.com:0:192.0.2.1", wantErr: "port \"0\""},
		{in: "example.com:65536:192.0.2.1", wantErr: "port \"65536\""},
		{in: "example.com:+80:192.0.2.1", wantErr: "port \"+80\""},
		{in: "example.com:http:192.0.2.1", wantErr: "port \"http\""},
		{in: "example.com:80:999.0.0.1", wantErr: "not an IPv4 or IPv6 address"},
		{in: "example.com:80:example.org", wantErr: "not an IPv4 or IPv6 address"},
		{in: "example.com:80:192.0.2.1,", wantErr: "not an IPv4 or IPv6 address"},
		{in: "example.com:80:[fe80::1%eth0]", wantErr: "zone"},
		{in: "a*.example.com:80:192.0.2.1", wantErr: "use '*' only"},
		{in: "*.*.example:80:192.0.2.1", wantErr: "use '*' only"},
		{in: "*.:80:192.0.2.1", wantErr: "empty host"},
		{in: "a..b:80:192.0.2.1", wantErr: "empty or over-long label"},
		{in: "*.192.0.2.1:80:192.0.2.1", wantErr: "cannot apply to an IP address"},
		{in: "[example.com]:80:192.0.2.1", wantErr: "not an IPv6 address"},
		{in: "[::1:80:192.0.2.1", wantErr: "unclosed"},
		{in: "[::1]80:192.0.2.1", wantErr: "missing ':' after host"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseResolve(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseResolve(%q) error = %v, want one containing %q", tt.in, err, tt.wantErr)
				}
				if !strings.Contains(err.Error(), "HOST:PORT:ADDR") {
					t.Errorf("error %q does not show the expected form", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseResolve(%q): %v", tt.in, err)
			}
			if got.Host != tt.want.Host || got.Port != tt.want.Port || !slices.Equal(got.Addrs, tt.want.Addrs) {
				t.Fatalf("ParseResolve(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
			again, err := ParseResolve(got.String())
			if err != nil || again.String() != got.String() {
				t.Fatalf("round trip of %q via %q: %+v, %v", tt.in, got.String(), again, err)
			}
		})
	}
}

func TestResolveMatching(t *testing.T) {
	var entries []ResolveEntry
	for _, s := range []string{
		"*:*:192.0.2.1",
		"*.example.com:*:192.0.2.2",
		"*.deep.example.com:*:192.0.2.3",
		"exact.example.com:*:192.0.2.4",
		"exact.example.com:8443:192.0.2.5",
		"*:*:192.0.2.99", // never chosen: the first "*:*" wins ties
	} {
		e, err := ParseResolve(s)
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, e)
	}
	tests := []struct{ host, port, want string }{
		{"other.org", "80", "192.0.2.1"},
		{"a.example.com", "80", "192.0.2.2"},
		{"a.b.example.com", "443", "192.0.2.2"},
		{"example.com", "80", "192.0.2.1"}, // a wildcard does not match its own apex
		{"x.deep.example.com", "80", "192.0.2.3"},
		{"exact.example.com", "80", "192.0.2.4"},
		{"exact.example.com", "8443", "192.0.2.5"},
		{"exact.example.com", "", "192.0.2.5"}, // empty port matches any: the exact-port entry is more specific
		{"notexample.com", "80", "192.0.2.1"},
	}
	table := newResolveTable(entries)
	for _, tt := range tests {
		e, ok := bestResolve(entries, tt.host, tt.port)
		if !ok || e.Addrs[0].String() != tt.want {
			t.Errorf("bestResolve(%q, %q) = %v, %v; want %s", tt.host, tt.port, e, ok, tt.want)
		}
		if te, tok := table.best(tt.host, tt.port); tok != ok || te.String() != e.String() {
			t.Errorf("resolveTable.best(%q, %q) = %v, %v; bestResolve gives %v, %v", tt.host, tt.port, te, tok, e, ok)
		}
	}
	only, _ := ParseResolve("site.test:80:192.0.2.1")
	if _, ok := bestResolve([]ResolveEntry{only}, "site.test", "443"); ok {
		t.Error("entry for port 80 matched port 443")
	}
	if _, ok := bestResolve([]ResolveEntry{only}, "other.test", "80"); ok {
		t.Error("entry for site.test matched other.test")
	}
}

// TestResolveTableMatchesScan: the indexed look-up gives what a scan of
// every entry gives, on random tables with exact names, suffix wildcards,
// "*", repeated hosts and mixed ports.
func TestResolveTableMatchesScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	hosts := []string{"a.test", "b.a.test", "c.b.a.test", "x.test", "*.a.test", "*.b.a.test", "*.test", "*"}
	ports := []string{"80", "443", "*"}
	for round := range 200 {
		var entries []ResolveEntry
		for i := range 1 + rng.IntN(12) {
			e, err := ParseResolve(fmt.Sprintf("%s:%s:192.0.2.%d", hosts[rng.IntN(len(hosts))], ports[rng.IntN(len(ports))], i+1))
			if err != nil {
				t.Fatal(err)
			}
			entries = append(entries, e)
		}
		table := newResolveTable(entries)
		for _, h := range []string{"a.test", "b.a.test", "c.b.a.test", "d.c.b.a.test", "x.test", "y.test", "other.org"} {
			for _, p := range []string{"80", "443", "8080", ""} {
				want, wok := bestResolve(entries, h, p)
				got, gok := table.best(h, p)
				if gok != wok || got.String() != want.String() {
					t.Fatalf("round %d: %v: best(%q, %q) = %v, %v; the scan gives %v, %v", round, entries, h, p, got, gok, want, wok)
				}
			}
		}
	}
}

// BenchmarkResolveOverrides: one look-up in a 100,000-entry resolve table
// (a websim of 100,000 hosts), indexed against a scan.
func BenchmarkResolveOverrides(b *testing.B) {
	var entries []ResolveEntry
	for i := range 100_000 {
		e, _ := ParseResolve(fmt.Sprintf("site%d.d%d.test:80:127.0.0.1", i, i%7))
		entries = append(entries, e)
	}
	table := newResolveTable(entries)
	b.Run("table", func(b *testing.B) {
		for i := range b.N {
			table.best(fmt.Sprintf("site%d.d%d.test", i%100_000, (i%100_000)%7), "80")
		}
	})
	b.Run("scan", func(b *testing.B) {
		for i := range b.N {
			bestResolve(entries, fmt.Sprintf("site%d.d%d.test", i%100_000, (i%100_000)%7), "80")
		}
	})
}

// bestResolve is the reference the table is checked against: pickResolve
// over every entry.
func bestResolve(entries []ResolveEntry, host, port string) (ResolveEntry, bool) {
	all := make([]int, len(entries))
	for i := range all {
		all[i] = i
	}
	return pickResolve(entries, all, host, port)
}

func FuzzParseResolve(f *testing.F) {
	for _, s := range []string{
		"example.com:443:192.0.2.1", "*.test:*:127.0.0.1", "*:*:[::1]", "a:1:1.2.3.4,[2001:db8::1]",
		"[::1]:80:127.0.0.1", "", ":", "::", ":::", "[", "a:b:c", "*.:1:1.1.1.1", "x:65535:::ffff:1.2.3.4",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := ParseResolve(s)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "cannot parse resolve entry") {
				t.Fatalf("error %q does not start with the standard prefix", err)
			}
			return
		}
		if len(e.Addrs) == 0 || e.Host == "" || e.Port == "" {
			t.Fatalf("ParseResolve(%q) = %+v: accepted an incomplete entry", s, e)
		}
		again, err := ParseResolve(e.String())
		if err != nil {
			t.Fatalf("ParseResolve(%q).String() = %q does not parse: %v", s, e.String(), err)
		}
		if again.String() != e.String() {
			t.Fatalf("round trip %q -> %q -> %q", s, e.String(), again.String())
		}
	})
}
