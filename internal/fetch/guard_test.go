package fetch

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestForbiddenReason(t *testing.T) {
	tests := []struct {
		addr, want string
	}{
		{"127.0.0.1", "loopback"},
		{"127.255.0.9", "loopback"},
		{"::1", "loopback"},
		{"::ffff:127.0.0.1", "loopback"},
		{"10.1.2.3", "private"},
		{"172.16.0.1", "private"},
		{"172.31.255.255", "private"},
		{"192.168.1.1", "private"},
		{"fc00::1", "private"},
		{"fd12:3456::1", "private"},
		{"169.254.169.254", "link-local"},
		{"fe80::1", "link-local"},
		{"224.0.0.1", "link-local"}, // link-local multicast
		{"239.1.2.3", "multicast"},
		{"ff05::1", "multicast"},
		{"0.0.0.0", "unspecified"},
		{"::", "unspecified"},
		{"100.64.0.1", "carrier-grade NAT"},
		{"100.127.255.255", "carrier-grade NAT"},
		{"0.1.2.3", "reserved"},
		{"255.255.255.255", "reserved"},
		{"198.18.0.1", "reserved"},
		{"fec0::1", "reserved"},
		{"64:ff9b::7f00:1", "loopback (via NAT64)"},
		{"64:ff9b::808:808", ""},
		{"8.8.8.8", ""},
		{"172.32.0.1", ""},
		{"100.128.0.1", ""},
		{"192.0.2.1", ""}, // documentation range: public as far as the guard cares
		{"2001:4860:4860::8888", ""},
	}
	for _, tt := range tests {
		if got := forbiddenReason(netip.MustParseAddr(tt.addr)); got != tt.want {
			t.Errorf("forbiddenReason(%s) = %q, want %q", tt.addr, got, tt.want)
		}
	}
}

func TestGuardControl(t *testing.T) {
	control := guard(forbiddenReason)
	tests := []struct {
		address string
		allowed bool
	}{
		{"93.184.216.34:80", true},
		{"[2606:2800:220:1:248:1893:25c8:1946]:443", true},
		{"127.0.0.1:8080", false},
		{"[::1]:443", false},
		{"[fe80::1%eth0]:80", false},
		{"not-an-address", false},
	}
	for _, tt := range tests {
		err := control("tcp", tt.address, nil)
		if tt.allowed != (err == nil) {
			t.Errorf("control(%q) = %v, allowed want %v", tt.address, err, tt.allowed)
		}
		if err != nil {
			if !errors.Is(err, ErrForbiddenAddress) || Classify(err) != OutcomeForbiddenAddress {
				t.Errorf("control(%q) error %v does not wrap ErrForbiddenAddress", tt.address, err)
			}
			if tt.address != "not-an-address" && !strings.Contains(err.Error(), "--allow-private") {
				t.Errorf("control(%q) error %q does not mention --allow-private", tt.address, err)
			}
		}
	}
}

// ssrfMatrix is every address form the guard must refuse by default, with
// the reason it must give, and public addresses it must allow (reason "").
// README/RELIABILITY quote this table as the SSRF matrix.
var ssrfMatrix = []struct {
	form, addr, want string
}{
	// IPv4 special ranges.
	{"loopback", "127.0.0.1", "loopback"},
	{"loopback /8", "127.1.2.3", "loopback"},
	{"private 10/8", "10.0.0.1", "private"},
	{"private 172.16/12", "172.20.1.1", "private"},
	{"private 192.168/16", "192.168.0.1", "private"},
	{"link-local (cloud metadata)", "169.254.169.254", "link-local"},
	{"CGNAT 100.64/10", "100.64.0.1", "carrier-grade NAT"},
	{"this network 0/8", "0.1.2.3", "reserved"},
	{"unspecified", "0.0.0.0", "unspecified"},
	{"IETF protocol 192.0.0/24", "192.0.0.8", "reserved"},
	{"benchmarking 198.18/15", "198.19.255.1", "reserved"},
	{"reserved 240/4", "240.0.0.1", "reserved"},
	{"broadcast", "255.255.255.255", "reserved"},
	{"multicast", "239.255.255.250", "multicast"},
	{"link-local multicast", "224.0.0.251", "link-local"},
	// IPv6 special ranges.
	{"IPv6 loopback", "::1", "loopback"},
	{"IPv6 unspecified", "::", "unspecified"},
	{"IPv6 link-local", "fe80::1", "link-local"},
	{"IPv6 unique-local", "fd00::1", "private"},
	{"IPv6 unique-local fc00::/7", "fc00::1", "private"},
	{"IPv6 site-local (deprecated)", "fec0::1", "reserved"},
	{"IPv6 multicast", "ff02::1", "link-local"},
	{"IPv6 global multicast", "ff0e::1", "multicast"},
	{"IPv6 discard-only", "100::1", "reserved"},
	// IPv6 forms that embed a forbidden IPv4 address.
	{"IPv4-mapped loopback", "::ffff:127.0.0.1", "loopback"},
	{"IPv4-mapped private", "::ffff:10.1.2.3", "private"},
	{"IPv4-mapped metadata", "::ffff:169.254.169.254", "link-local"},
	{"SIIT loopback", "::ffff:0:127.0.0.1", "loopback (via SIIT)"},
	{"SIIT private", "::ffff:0:192.168.1.1", "private (via SIIT)"},
	{"IPv4-compatible loopback", "::127.0.0.1", "loopback (via IPv4-compatible)"},
	{"IPv4-compatible private", "::10.0.0.1", "private (via IPv4-compatible)"},
	{"IPv4-compatible public (deprecated form)", "::8.8.8.8", "reserved (IPv4-compatible)"},
	{"6to4 of loopback", "2002:7f00:1::", "loopback (via 6to4)"},
	{"6to4 of loopback, host part", "2002:7f00:1:0:1::1", "loopback (via 6to4)"},
	{"6to4 of 10/8", "2002:a00::1", "private (via 6to4)"},
	{"6to4 of 10/8 elsewhere", "2002:0aff:ffff::1", "private (via 6to4)"},
	{"6to4 of metadata", "2002:a9fe:a9fe::", "link-local (via 6to4)"},
	{"6to4 of 0.0.0.0", "2002::1", "unspecified (via 6to4)"},
	{"NAT64 of loopback", "64:ff9b::7f00:1", "loopback (via NAT64)"},
	{"NAT64 of loopback, dotted", "64:ff9b::127.0.0.1", "loopback (via NAT64)"},
	{"NAT64 of private", "64:ff9b::192.168.0.1", "private (via NAT64)"},
	{"local-use NAT64 /48", "64:ff9b:1::7f00:1", "reserved"},
	{"local-use NAT64 /48, public v4", "64:ff9b:1:0808:0808::", "reserved"},
	{"Teredo client loopback", "2001:0:4136:e378:8000:63bf:80ff:fffe", "loopback (via Teredo client)"},
	{"Teredo client private", "2001:0:4136:e378:8000:63bf:f5ff:fffe", "private (via Teredo client)"},
	{"Teredo server private", "2001:0:a00:1::", "private (via Teredo server)"},
	// Public addresses: allowed.
	{"public IPv4", "8.8.8.8", ""},
	{"public IPv4 near 172.16/12", "172.32.0.1", ""},
	{"public IPv4 near CGNAT", "100.128.0.1", ""},
	{"documentation IPv4 (public to the guard)", "192.0.2.1", ""},
	{"public IPv6", "2001:4860:4860::8888", ""},
	{"IPv4-mapped public", "::ffff:8.8.8.8", ""},
	{"NAT64 of public", "64:ff9b::808:808", ""},
	{"6to4 of public", "2002:808:808::1", ""},
	{"Teredo with public server and client", "2001:0:4136:e378:8000:63bf:3fff:fdd2", ""},
}

func TestSSRFMatrix(t *testing.T) {
	control := guard(forbiddenReason)
	for _, tt := range ssrfMatrix {
		t.Run(tt.form, func(t *testing.T) {
			a := netip.MustParseAddr(tt.addr)
			if got := forbiddenReason(a); got != tt.want {
				t.Errorf("forbiddenReason(%s) = %q, want %q", tt.addr, got, tt.want)
			}
			err := control("tcp", netip.AddrPortFrom(a, 80).String(), nil)
			if (err == nil) != (tt.want == "") {
				t.Errorf("dial control for %s: %v, want refused %v", tt.addr, err, tt.want != "")
			}
		})
	}
}

// embeddings returns every IPv6 spelling the guard must judge by the IPv4
// address v inside it.
func embeddings(v [4]byte) map[string]netip.Addr {
	at := func(prefix []byte, off int, x [4]byte) netip.Addr {
		var b [16]byte
		copy(b[:], prefix)
		copy(b[off:], x[:])
		return netip.AddrFrom16(b)
	}
	inv := [4]byte{^v[0], ^v[1], ^v[2], ^v[3]}
	pub := [4]byte{65, 54, 227, 120} // a public Teredo server
	return map[string]netip.Addr{
		"IPv4-mapped":     at([]byte{10: 0xff, 11: 0xff}, 12, v),
		"SIIT":            at([]byte{8: 0xff, 9: 0xff}, 12, v),
		"IPv4-compatible": at(nil, 12, v),
		"NAT64":           at([]byte{0x00, 0x64, 0xff, 0x9b}, 12, v),
		"local-use NAT64": at([]byte{0x00, 0x64, 0xff, 0x9b, 0x00, 0x01}, 6, v),
		"6to4":            at([]byte{0x20, 0x02}, 2, v),
		"Teredo server":   at([]byte{0x20, 0x01}, 4, v),
		"Teredo client":   at([]byte{0x20, 0x01, 0, 0, pub[0], pub[1], pub[2], pub[3]}, 12, inv),
	}
}

// TestEmbeddedForbiddenIPv4 walks one address of every forbidden IPv4
// range through every embedding: all must be refused.
func TestEmbeddedForbiddenIPv4(t *testing.T) {
	for _, tt := range ssrfMatrix {
		a := netip.MustParseAddr(tt.addr)
		if !a.Is4() || tt.want == "" {
			continue
		}
		for form, e := range embeddings(a.As4()) {
			if forbiddenReason(e) == "" {
				t.Errorf("%s %s embedded as %s (%s) is allowed", tt.form, tt.addr, form, e)
			}
		}
	}
}

// FuzzGuard checks, for any address the dialler could be handed, that the
// guard never panics, and that no IPv6 embedding of a forbidden IPv4
// address is allowed.
func FuzzGuard(f *testing.F) {
	f.Add("127.0.0.1:80", []byte{127, 0, 0, 1})
	f.Add("[::ffff:0:7f00:1]:443", []byte{10, 0, 0, 1})
	f.Add("[2002:7f00:1::]:80", []byte{169, 254, 169, 254})
	f.Add("[fe80::1%eth0]:80", []byte{8, 8, 8, 8})
	f.Add("not an address", []byte{})
	control := guard(forbiddenReason)
	f.Fuzz(func(t *testing.T, address string, v4 []byte) {
		err := control("tcp", address, nil)
		if ap, perr := netip.ParseAddrPort(address); perr == nil && err == nil && forbiddenReason(ap.Addr()) != "" {
			t.Fatalf("%s allowed though forbidden", address)
		}
		if err != nil && !errors.Is(err, ErrForbiddenAddress) {
			t.Fatalf("%s: error %v does not wrap ErrForbiddenAddress", address, err)
		}
		if len(v4) < 4 {
			return
		}
		v := [4]byte(v4[:4])
		if forbiddenReason(netip.AddrFrom4(v)) == "" {
			return
		}
		for form, e := range embeddings(v) {
			if forbiddenReason(e) == "" {
				t.Fatalf("forbidden %v embedded as %s (%s) is allowed", v, form, e)
			}
		}
	})
}
