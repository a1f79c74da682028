package urls

import (
	"fmt"
	"net/netip"
	"net/url"
	"strings"

	"golang.org/x/net/publicsuffix"
)

// SURT returns the Sort-friendly URI Reordering Transform of u (SPEC §4):
//
//	scheme://(label_n,…,label_2,label_1,[:port][@userinfo])path[?query][#fragment]
//
// The host labels are written in reverse order, each followed by a comma, so
// that all URLs of a domain and of its subdomains share a prefix:
//
//	http://www.baidu.com           → http://(com,baidu,www,)/
//	http://www.d0.test:8080/a      → http://(test,d0,www,:8080)/a
//	https://user:pw@a.example/x?q  → https://(example,a,@user:pw)/x?q
//	http://192.168.0.1:81/         → http://(192.168.0.1,:81)/
//	http://[2001:db8::1]/          → http://([2001:db8::1],)/
//
// Scheme and host are lower-cased and a trailing dot of the host is dropped;
// the default port (80 for http, 443 for https) is omitted; IP addresses are
// one component and are not reversed; the path is u's escaped path ("/" if
// empty); the query is written if non-empty and the fragment if present. For a
// URL without an authority (opaque, such as "mailto:x") SURT returns
// u.String() unchanged. For canonical URLs (see Normalizer) SURT is one-to-one.
func SURT(u *url.URL) string {
	if u.Opaque != "" || u.Host == "" && u.User == nil {
		return u.String()
	}
	var b strings.Builder
	scheme := strings.ToLower(u.Scheme)
	b.Grow(len(u.Host) + len(u.Path) + len(u.RawQuery) + 16)
	b.WriteString(scheme)
	b.WriteString("://(")
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if addr, err := netip.ParseAddr(host); err == nil {
		if addr.Is6() {
			b.WriteString("[" + host + "]")
		} else {
			b.WriteString(host)
		}
		b.WriteByte(',')
	} else if host != "" {
		for rest := host; ; {
			i := strings.LastIndexByte(rest, '.')
			b.WriteString(rest[i+1:])
			b.WriteByte(',')
			if i < 0 {
				break
			}
			rest = rest[:i]
		}
	}
	if port := u.Port(); port != "" && !isDefaultPort(scheme, port) {
		b.WriteByte(':')
		b.WriteString(port)
	}
	if u.User != nil {
		b.WriteByte('@')
		b.WriteString(u.User.String())
	}
	b.WriteByte(')')
	if p := u.EscapedPath(); p != "" {
		b.WriteString(p)
	} else {
		b.WriteByte('/')
	}
	if u.RawQuery != "" {
		b.WriteByte('?')
		b.WriteString(u.RawQuery)
	}
	if u.Fragment != "" || u.RawFragment != "" {
		b.WriteByte('#')
		b.WriteString(u.EscapedFragment())
	}
	return b.String()
}

// SURTPrefix returns the SURT prefix denoted by pattern, for matching with
// HasSURTPrefix (topic patterns, SURT scopes). pattern is either
//
//   - already a SURT or SURT prefix (it contains "://("): it is returned with
//     its scheme, host and port lower-cased, otherwise unchanged;
//   - a URL (a missing scheme means http://): it is canonicalised with Parse
//     and converted with SURT. If the URL has nothing after its host (no path,
//     query or fragment, not even "/") and no port or userinfo, the prefix
//     stops after the host's last comma, so that it also covers every
//     subdomain and port: "http://example.com" → "http://(com,example,",
//     which matches http://www.example.com:8080/x but not
//     http://example.community/. Otherwise the prefix is the full SURT:
//     "http://example.com/news/" → "http://(com,example,)/news/",
//     "http://example.com:8080" → "http://(com,example,:8080)/".
//
// Errors are those of Parse.
func SURTPrefix(pattern string) (string, error) {
	p := strings.TrimSpace(pattern)
	if i := strings.Index(p, "://("); i >= 0 {
		// Scheme, host and port are case-insensitive; userinfo and path
		// are not.
		end := strings.IndexAny(p[i:], "@)")
		if end < 0 {
			return strings.ToLower(p), nil
		}
		return strings.ToLower(p[:i+end]) + p[i+end:], nil
	}
	if schemeEnd(p) < 0 {
		p = "http://" + p
	}
	u, err := Parse(p)
	if err != nil {
		return "", fmt.Errorf("cannot make a SURT prefix of %s: %w", short(pattern), err)
	}
	s := SURT(u)
	rest := p[schemeEnd(p)+1:]
	rest = strings.TrimLeft(rest, `/\`)
	hostOnly := strings.IndexAny(rest, `/?#\`) < 0
	if hostOnly && u.Port() == "" && u.User == nil {
		return s[:strings.IndexByte(s, ')')], nil
	}
	return s, nil
}

// HasSURTPrefix reports whether the SURT of u starts with prefix (as returned
// by SURTPrefix).
func HasSURTPrefix(u *url.URL, prefix string) bool {
	return strings.HasPrefix(SURT(u), prefix)
}

// RegistrableDomain returns the registrable domain (eTLD+1) of host, using
// the public suffix list of golang.org/x/net/publicsuffix (ICANN and private
// sections): "www.news.bbc.co.uk" → "bbc.co.uk", "a.b.github.io" →
// "b.github.io", "www.d0.test" → "d0.test" (an unlisted TLD counts as a public
// suffix). host must not carry a port; it is lower-cased and a trailing dot is
// dropped. IP addresses (with or without brackets), public suffixes
// themselves ("co.uk") and single-label hosts ("localhost") are returned
// as they are (lower-cased).
func RegistrableDomain(host string) string {
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	if _, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")); err == nil {
		return h
	}
	d, err := publicsuffix.EffectiveTLDPlusOne(h)
	if err != nil {
		return h
	}
	return d
}

// HostPort returns the politeness key of u: its lower-case host, with the
// port appended as ":port" unless it is absent or the scheme's default (80 for
// http, 443 for https). IPv6 hosts keep their brackets: "[::1]:8080".
// http://a.example/ and https://a.example/ thus share a key, as they share a
// server.
func HostPort(u *url.URL) string {
	host := strings.ToLower(u.Hostname())
	if strings.IndexByte(host, ':') >= 0 {
		host = "[" + host + "]"
	}
	if port := u.Port(); port != "" && !isDefaultPort(strings.ToLower(u.Scheme), port) {
		if h := u.Host; len(h) == len(host)+1+len(port) && h[:len(host)] == host && h[len(host)] == ':' {
			return h // already host:port (a canonical URL's Host): no allocation
		}
		return host + ":" + port
	}
	return host
}

func isDefaultPort(scheme, port string) bool {
	return scheme == "http" && port == "80" || scheme == "https" && port == "443"
}
