// Package fetch is the crawler's HTTP fetcher and DNS cache (SPEC §3
// "Fetcher" and "DNS").
//
// A Client sends GET requests over one shared keep-alive http.Transport
// (HTTP/1.1, and HTTP/2 over TLS unless disabled), decodes gzip, brotli and
// deflate bodies itself under a size cap, detects the body's charset and
// classifies failures into a small set of outcomes (Classify, StatusOutcome)
// for the per-node result tables of SPEC §3.
//
// Every connection is dialled through a Resolver: a DNS cache with a TTL,
// short negative caching, one look-up per name in flight (single-flight) and
// a bound on concurrent look-ups; curl-style --resolve entries are consulted
// first. Unless Config.AllowPrivate is set, the dialler's Control function
// refuses loopback, private, link-local, CGNAT, multicast, unspecified and
// reserved addresses on the address actually being connected, so neither
// DNS rebinding nor a redirect can reach the local network. An IPv6 address
// that embeds an IPv4 one (IPv4-mapped, SIIT, IPv4-compatible, NAT64, 6to4,
// Teredo) is judged by the IPv4 address inside it.
//
// Sizes a server announces are not trusted: a body's buffer is pre-sized
// from Content-Length by at most 1 MiB and grows with the bytes received,
// up to Config.MaxBodyBytes (at most MaxBodyLimit, 1 GiB), after decoding.
//
// Typical use:
//
//	c, err := fetch.New(fetch.Config{}, logger, prometheus.NewRegistry())
//	...
//	resp, err := c.Fetch(ctx, &fetch.Request{URL: u, FollowRedirects: 5})
//	if err != nil {
//		outcome := fetch.Classify(err) // "timeout", "dns", ...
//	}
//	if resp.IsHTML() {
//		body, _ := resp.UTF8()
//		...
//	}
package fetch
