package fetch

import (
	"fmt"
	"net/netip"
	"syscall"
)

var (
	cgnat        = netip.MustParsePrefix("100.64.0.0/10")   // RFC 6598 shared address space
	thisNetwork  = netip.MustParsePrefix("0.0.0.0/8")       // RFC 1122 "this network"
	reserved4    = netip.MustParsePrefix("240.0.0.0/4")     // RFC 1112 reserved, incl. broadcast
	ietfProto    = netip.MustParsePrefix("192.0.0.0/24")    // RFC 6890 IETF protocol assignments
	benchmarking = netip.MustParsePrefix("198.18.0.0/15")   // RFC 2544 benchmarking
	siteLocal6   = netip.MustParsePrefix("fec0::/10")       // RFC 3879 deprecated site-local
	discard6     = netip.MustParsePrefix("100::/64")        // RFC 6666 discard-only
	nat64        = netip.MustParsePrefix("64:ff9b::/96")    // RFC 6052 NAT64, embeds an IPv4 address
	nat64Local   = netip.MustParsePrefix("64:ff9b:1::/48")  // RFC 8215 local-use NAT64 (any embedding)
	siit         = netip.MustParsePrefix("::ffff:0:0:0/96") // RFC 2765 IPv4-translated (SIIT)
	v4compat     = netip.MustParsePrefix("::/96")           // RFC 4291 §2.5.5.1 IPv4-compatible (deprecated)
	sixToFour    = netip.MustParsePrefix("2002::/16")       // RFC 3056 6to4: 2002:V4ADDR::/48
	teredo       = netip.MustParsePrefix("2001::/32")       // RFC 4380 Teredo: server and obfuscated client IPv4
)

// forbiddenReason says why a is not to be connected to without
// --allow-private, or returns "" when a is a public address.
//
// An IPv6 address that carries an IPv4 address a network may deliver to
// (IPv4-mapped ::ffff:a.b.c.d, SIIT ::ffff:0:a.b.c.d, IPv4-compatible
// ::a.b.c.d, NAT64 64:ff9b::a.b.c.d, 6to4 2002:aabb:ccdd::, Teredo
// 2001:0:SERVER::CLIENT with the client inverted) is judged by the IPv4
// address inside it, so that no spelling of 127.0.0.1 or 10.0.0.1 gets
// through. The local-use NAT64 prefix 64:ff9b:1::/48 (RFC 8215) may embed
// an IPv4 address at any of several offsets and is refused whole, as are
// IPv4-compatible addresses, which are deprecated and never public.
func forbiddenReason(a netip.Addr) string {
	a = a.Unmap() // ::ffff:a.b.c.d
	if !a.IsValid() {
		return "invalid"
	}
	if a.Is6() {
		b := a.As16()
		embedded := func(via string, off int) string {
			if r := forbiddenReason(netip.AddrFrom4([4]byte(b[off : off+4]))); r != "" {
				return r + " (via " + via + ")"
			}
			return ""
		}
		switch {
		case a.IsLoopback():
			return "loopback"
		case a.IsUnspecified():
			return "unspecified"
		case nat64.Contains(a):
			return embedded("NAT64", 12)
		case siit.Contains(a):
			return embedded("SIIT", 12)
		case v4compat.Contains(a):
			if r := embedded("IPv4-compatible", 12); r != "" {
				return r
			}
			return "reserved (IPv4-compatible)"
		case sixToFour.Contains(a):
			return embedded("6to4", 2)
		case teredo.Contains(a):
			if r := embedded("Teredo server", 4); r != "" {
				return r
			}
			for i := 12; i < 16; i++ {
				b[i] ^= 0xff // the client address is stored inverted
			}
			return embedded("Teredo client", 12)
		}
	}
	switch {
	case a.IsLoopback():
		return "loopback"
	case a.IsPrivate():
		return "private"
	case a.IsLinkLocalUnicast(), a.IsLinkLocalMulticast():
		return "link-local"
	case a.IsMulticast(), a.IsInterfaceLocalMulticast():
		return "multicast"
	case a.IsUnspecified():
		return "unspecified"
	case cgnat.Contains(a):
		return "carrier-grade NAT"
	case thisNetwork.Contains(a), reserved4.Contains(a), ietfProto.Contains(a), benchmarking.Contains(a),
		siteLocal6.Contains(a), discard6.Contains(a), nat64Local.Contains(a):
		return "reserved"
	}
	return ""
}

// guard is a net.Dialer Control function: it runs on the address actually
// being connected (after DNS, for every redirect hop and every retry), so
// it cannot be bypassed by DNS rebinding or redirects. policy returns a
// non-empty reason for addresses to refuse.
func guard(policy func(netip.Addr) string) func(network, address string, _ syscall.RawConn) error {
	return func(network, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("cannot check address %q before connecting: %w", address, ErrForbiddenAddress)
		}
		if reason := policy(ap.Addr()); reason != "" {
			return fmt.Errorf("cannot connect to %s: %s address (pass --allow-private to crawl private networks): %w",
				address, reason, ErrForbiddenAddress)
		}
		return nil
	}
}
