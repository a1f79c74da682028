package fetch

import (
	"fmt"
	"net/netip"
	"syscall"
)

var (
	cgnat        = netip.MustParsePrefix("100.64.0.0/10")  // RFC 6598 shared address space
	thisNetwork  = netip.MustParsePrefix("0.0.0.0/8")      // RFC 1122 "this network"
	reserved4    = netip.MustParsePrefix("240.0.0.0/4")    // RFC 1112 reserved, incl. broadcast
	ietfProto    = netip.MustParsePrefix("192.0.0.0/24")   // RFC 6890 IETF protocol assignments
	benchmarking = netip.MustParsePrefix("198.18.0.0/15")  // RFC 2544 benchmarking
	siteLocal6   = netip.MustParsePrefix("fec0::/10")      // RFC 3879 deprecated site-local
	nat64        = netip.MustParsePrefix("64:ff9b::/96")   // RFC 6052 NAT64, embeds an IPv4 address
	nat64Local   = netip.MustParsePrefix("64:ff9b:1::/48") // RFC 8215 local-use NAT64
)

// forbiddenReason says why a is not to be connected to without
// --allow-private, or returns "" when a is a public address.
func forbiddenReason(a netip.Addr) string {
	a = a.Unmap()
	if nat64.Contains(a) {
		b := a.As16()
		if r := forbiddenReason(netip.AddrFrom4([4]byte(b[12:]))); r != "" {
			return r + " (via NAT64)"
		}
		return ""
	}
	switch {
	case !a.IsValid():
		return "invalid"
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
		siteLocal6.Contains(a), nat64Local.Contains(a):
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
