package fetch

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// ResolveEntry is one curl-style --resolve override: connections to Host on
// Port go to Addrs instead of what DNS says.
type ResolveEntry struct {
	// Host is a lower-case host name without a trailing dot, "*" (any host)
	// or "*.suffix" (any name ending in ".suffix", not suffix itself).
	Host string
	// Port is a decimal port number or "*" (any port).
	Port string
	// Addrs are tried in order; never empty.
	Addrs []netip.Addr
}

// ParseResolve parses a curl-style "HOST:PORT:ADDR[,ADDR...]" entry, e.g.
// "example.com:443:192.0.2.1", "*.test:*:127.0.0.1" or
// "example.com:80:[2001:db8::1]". HOST may be a name, "*" or "*.suffix"
// (an IPv6 literal host must be bracketed); PORT is 1–65535 or "*"; each
// ADDR is IPv4 or IPv6 (bracketed or not). The error says which part is
// wrong.
func ParseResolve(s string) (ResolveEntry, error) {
	fail := func(format string, args ...any) (ResolveEntry, error) {
		return ResolveEntry{}, fmt.Errorf("cannot parse resolve entry %q: %s; want HOST:PORT:ADDR, e.g. example.com:443:192.0.2.1",
			s, fmt.Sprintf(format, args...))
	}
	rest := strings.TrimSpace(s)
	var host string
	if strings.HasPrefix(rest, "[") {
		end := strings.IndexByte(rest, ']')
		if end < 0 {
			return fail("unclosed '[' in host")
		}
		a, err := netip.ParseAddr(rest[1:end])
		if err != nil || !a.Is6() {
			return fail("bracketed host %q is not an IPv6 address", rest[1:end])
		}
		host, rest = a.String(), rest[end+1:]
		if !strings.HasPrefix(rest, ":") {
			return fail("missing ':' after host")
		}
		rest = rest[1:]
	} else {
		i := strings.IndexByte(rest, ':')
		if i < 0 {
			return fail("missing ':' after host")
		}
		host, rest = rest[:i], rest[i+1:]
	}
	if host == "*." {
		return fail("empty host after '*.'")
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if err := checkResolveHost(host); err != nil {
		return fail("%v", err)
	}
	i := strings.IndexByte(rest, ':')
	if i < 0 {
		return fail("missing ':' after port")
	}
	port, addrList := rest[:i], rest[i+1:]
	if port != "*" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port {
			return fail("port %q is not a number 1-65535 or '*'", port)
		}
	}
	if addrList == "" {
		return fail("no address")
	}
	var addrs []netip.Addr
	for _, a := range strings.Split(addrList, ",") {
		a = strings.TrimSpace(a)
		if strings.HasPrefix(a, "[") && strings.HasSuffix(a, "]") {
			a = a[1 : len(a)-1]
		}
		ip, err := netip.ParseAddr(a)
		if err != nil {
			return fail("address %q is not an IPv4 or IPv6 address", a)
		}
		if ip.Zone() != "" {
			return fail("address %q has a zone, which is not supported", a)
		}
		addrs = append(addrs, ip.Unmap())
	}
	return ResolveEntry{Host: host, Port: port, Addrs: addrs}, nil
}

func checkResolveHost(h string) error {
	if h == "*" {
		return nil
	}
	name := h
	if rest, ok := strings.CutPrefix(h, "*."); ok {
		name = rest
	}
	if name == "" {
		return fmt.Errorf("empty host")
	}
	if _, err := netip.ParseAddr(name); err == nil {
		if name != h {
			return fmt.Errorf("wildcard %q cannot apply to an IP address", h)
		}
		return nil
	}
	for _, label := range strings.Split(name, ".") {
		if label == "" || len(label) > 63 {
			return fmt.Errorf("host %q has an empty or over-long label", h)
		}
		for _, c := range []byte(label) {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return fmt.Errorf("host %q contains %q; use '*' only as the whole host or as a leading '*.'", h, c)
			}
		}
	}
	return nil
}

// String formats e the way ParseResolve reads it.
func (e ResolveEntry) String() string {
	parts := make([]string, len(e.Addrs))
	for i, a := range e.Addrs {
		if a.Is6() {
			parts[i] = "[" + a.String() + "]"
		} else {
			parts[i] = a.String()
		}
	}
	host := e.Host
	if a, err := netip.ParseAddr(host); err == nil && a.Is6() {
		host = "[" + host + "]"
	}
	return host + ":" + e.Port + ":" + strings.Join(parts, ",")
}

// Matches reports whether e applies to host (lower-case, no trailing dot) on
// port. An empty port matches every entry's port.
func (e ResolveEntry) Matches(host, port string) bool {
	return e.hostRank(host) > 0 && (port == "" || e.Port == "*" || e.Port == port)
}

// hostRank is 0 when e does not match host, otherwise larger for more
// specific entries: exact names beat longer suffixes beat shorter suffixes
// beat "*".
func (e ResolveEntry) hostRank(host string) int {
	switch {
	case e.Host == host:
		return 1 << 20
	case e.Host == "*":
		return 1
	case strings.HasPrefix(e.Host, "*.") && strings.HasSuffix(host, e.Host[1:]) && len(host) > len(e.Host)-1:
		return 1 + len(e.Host)
	}
	return 0
}

// pickResolve returns the most specific of the entries at idx (in
// increasing order) matching host and port: the highest host rank, then an
// exact port over "*", then the earliest.
func pickResolve(entries []ResolveEntry, idx []int, host, port string) (ResolveEntry, bool) {
	best, bestScore := -1, 0
	for _, i := range idx {
		e := entries[i]
		if !e.Matches(host, port) {
			continue
		}
		score := e.hostRank(host) * 2
		if e.Port != "*" {
			score++
		}
		if score > bestScore {
			best, bestScore = i, score
		}
	}
	if best < 0 {
		return ResolveEntry{}, false
	}
	return entries[best], true
}

// resolveTable answers bestResolve without scanning every entry: a
// benchmark web maps 100,000 host names, one entry each, and a scan per new
// connection was a quarter of the crawl's CPU. An exact host name always
// outranks every wildcard, so the entries for the exact name decide when
// one of them matches the port; only the wildcard entries are scanned
// otherwise.
type resolveTable struct {
	entries []ResolveEntry
	exact   map[string][]int // host name → indices of its entries, in order
	wild    []int            // indices of "*" and "*.suffix" entries, in order
}

func newResolveTable(entries []ResolveEntry) *resolveTable {
	t := &resolveTable{entries: entries, exact: make(map[string][]int)}
	for i, e := range entries {
		if e.Host == "*" || strings.HasPrefix(e.Host, "*.") {
			t.wild = append(t.wild, i)
		} else {
			t.exact[e.Host] = append(t.exact[e.Host], i)
		}
	}
	return t
}

// best is pickResolve over all of t.entries, without reading them all.
func (t *resolveTable) best(host, port string) (ResolveEntry, bool) {
	if idx := t.exact[host]; len(idx) > 0 {
		if e, ok := pickResolve(t.entries, idx, host, port); ok {
			return e, true
		}
	}
	return pickResolve(t.entries, t.wild, host, port)
}
