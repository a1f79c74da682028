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
