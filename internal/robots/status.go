package robots

import (
	"fmt"
	"net/url"
)

// FromResponse returns the rules for a robots.txt fetch that ended with HTTP
// status and body (RFC 9309 §2.3.1). The fetcher follows redirects itself
// (at least five hops, §2.3.1.2) and reports network failures as Unreachable.
func FromResponse(status int, body []byte) *Robots {
	switch {
	case status >= 200 && status <= 299:
		// §2.3.1.1: "If the crawler successfully downloads the robots.txt
		// file, the crawler MUST follow the parseable rules."
		return Parse(body)
	case status >= 300 && status <= 399:
		// §2.3.1.2: "If there are more than five consecutive redirects,
		// crawlers MAY assume that the robots.txt file is unavailable."
		// A 3xx reaching this point is a redirect the fetcher could not or
		// would not follow: unavailable, as a 4xx.
		return AllowAll()
	case status == 429:
		// §2.3.1.3 puts 429 among the 4xx ("unavailable": allow all), but
		// Google treats 429 Too Many Requests as a server error, and so do
		// we: a server asking us to slow down must not be read as "crawl
		// everything". §2.3.1.4: "the crawler MUST assume complete
		// disallow".
		return Unreachable()
	case status >= 400 && status <= 499:
		// §2.3.1.3: "If a server status code indicates that the robots.txt
		// file is unavailable to the crawler, then the crawler MAY access any
		// resources on the server." (400-499 in HTTP.)
		return AllowAll()
	default:
		// §2.3.1.4: "If the robots.txt file is unreachable due to server or
		// network errors, this means the robots.txt file is undefined and the
		// crawler MUST assume complete disallow." (500-599 in HTTP.) Any
		// other status (1xx, or outside 100-599) is no answer either.
		return Unreachable()
	}
}

// Unreachable returns rules that disallow everything (except /robots.txt)
// for every agent, for a robots.txt that could not be fetched (RFC 9309
// §2.3.1.4). Its Kind is KindUnreachable.
func Unreachable() *Robots {
	return &Robots{kind: KindUnreachable, fallback: &Group{disallowAll: true}}
}

// AllowAll returns rules that allow everything for every agent, for an
// unavailable robots.txt (RFC 9309 §2.3.1.3). Its Kind is KindUnavailable.
func AllowAll() *Robots {
	return &Robots{kind: KindUnavailable, fallback: &Group{}}
}

// Check parses body as a robots.txt and decides whether agent may fetch
// rawURL, which is an absolute URL or a path starting with "/". It returns the
// decision and the deciding rule as written ("Disallow: /private"), or "" if
// no rule matched. It is the engine of the "spider robots" command. The error
// is non-nil only when rawURL cannot be read.
func Check(body []byte, agent, rawURL string) (allowed bool, matched string, err error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return false, "", fmt.Errorf("cannot check URL %q: %w", rawURL, err)
	}
	if u.Opaque != "" || (!u.IsAbs() && u.Host == "" && !(len(u.Path) > 0 && u.Path[0] == '/')) {
		return false, "", fmt.Errorf("cannot check URL %q: want an absolute URL or a path starting with /", rawURL)
	}
	allowed, matched = Parse(body).Group(agent).Match(PathQuery(u))
	return allowed, matched, nil
}
