package fetch

import (
	"crypto/tls"
	"errors"
	"fmt"
	"time"
)

// DefaultUserAgent is the User-Agent sent when Config.UserAgent is empty.
const DefaultUserAgent = "spider/0.1 (+https://github.com/spider-crawler/spider)"

// robotsMaxBody caps robots.txt bodies: parsers read 500 KiB (RFC 9309 §2.5
// asks for at least 500 KiB), this leaves room.
const robotsMaxBody = 512 << 10

// robotsMaxRedirects is RFC 9309 §2.3.1.2's "at least five" hops.
const robotsMaxRedirects = 5

// Config configures a Client. The zero value is usable: every zero field
// takes the default written beside it. Negative values are errors.
type Config struct {
	// UserAgent is sent on every request. Default DefaultUserAgent.
	UserAgent string
	// Resolve holds curl-style "HOST:PORT:ADDR" overrides (see
	// ParseResolve), consulted before DNS.
	Resolve []string
	// AllowPrivate permits connecting to loopback, private (RFC 1918,
	// fc00::/7), link-local, CGNAT (100.64.0.0/10), multicast, unspecified
	// and reserved addresses. Default false: such connections fail with an
	// error wrapping ErrForbiddenAddress.
	AllowPrivate bool
	// ConnectTimeout bounds one TCP connect and, separately, one TLS
	// handshake. Default 10s.
	ConnectTimeout time.Duration
	// FirstByteTimeout bounds the wait for response headers after the
	// request is written. Default 30s.
	FirstByteTimeout time.Duration
	// TotalTimeout bounds a whole Fetch: every redirect hop and reading the
	// body. Default 60s.
	TotalTimeout time.Duration
	// MaxBodyBytes caps a body after content decoding; a longer body is cut
	// there and the Response marked Truncated. Default 10 MiB, at most
	// MaxBodyLimit. Memory for a body follows the bytes received: the
	// server's Content-Length pre-sizes at most 1 MiB.
	MaxBodyBytes int64
	// KeepRaw keeps a content-coded body as transferred beside the decoded
	// one (Response.Raw), for WARC: up to MaxBodyBytes more per answer.
	// Default false: Raw is nil for such a body.
	KeepRaw bool
	// DNSCacheTTL is how long resolved addresses are reused. Default 5m.
	DNSCacheTTL time.Duration
	// DNSNegativeTTL is how long a failed look-up is remembered. Default 30s.
	DNSNegativeTTL time.Duration
	// DNSMaxInFlight bounds concurrent DNS look-ups. Default 64.
	DNSMaxInFlight int
	// MaxIdleConnsPerHost is the number of kept-alive idle connections per
	// host. Default 4.
	MaxIdleConnsPerHost int
	// DisableHTTP2 restricts the client to HTTP/1.1. Default false: HTTP/2
	// is negotiated over TLS when the server offers it.
	DisableHTTP2 bool
	// TLSConfig, if not nil, is cloned and used for TLS connections (custom
	// root CAs, for example). Default: system roots.
	TLSConfig *tls.Config
	// Lookup replaces the system DNS resolver (see LookupFunc). Default nil:
	// the system resolver.
	Lookup LookupFunc
}

// MaxBodyLimit is the largest Config.MaxBodyBytes accepted (1 GiB): one
// body is held in memory whole, so a larger cap would let one server
// exhaust the crawler's memory.
const MaxBodyLimit = 1 << 30

// CheckHeaderValue reports whether v can be sent as an HTTP header value:
// no control characters, tab included (CR and LF would split the header and inject
// others; NUL and the rest are refused by servers) and no DEL. what names
// the value in the error, e.g. "--user-agent".
func CheckHeaderValue(what, v string) error {
	for i := 0; i < len(v); i++ {
		if b := v[i]; b < 0x20 || b == 0x7f {
			return fmt.Errorf("%s contains the control character %q at byte %d: header values must be one line of printable text", what, string(rune(b)), i)
		}
	}
	return nil
}

// withDefaults returns c with defaults filled in, or an error naming the
// first invalid field.
func (c Config) withDefaults() (Config, error) {
	var errs []error
	neg := func(name string, v int64) {
		if v < 0 {
			errs = append(errs, fmt.Errorf("%s is %d: use 0 for the default or a positive value", name, v))
		}
	}
	neg("ConnectTimeout", int64(c.ConnectTimeout))
	neg("FirstByteTimeout", int64(c.FirstByteTimeout))
	neg("TotalTimeout", int64(c.TotalTimeout))
	neg("MaxBodyBytes", c.MaxBodyBytes)
	neg("DNSCacheTTL", int64(c.DNSCacheTTL))
	neg("DNSNegativeTTL", int64(c.DNSNegativeTTL))
	neg("DNSMaxInFlight", int64(c.DNSMaxInFlight))
	neg("MaxIdleConnsPerHost", int64(c.MaxIdleConnsPerHost))
	if c.MaxBodyBytes > MaxBodyLimit {
		errs = append(errs, fmt.Errorf("MaxBodyBytes is %d: use at most %d (1 GiB)", c.MaxBodyBytes, MaxBodyLimit))
	}
	if err := CheckHeaderValue("UserAgent", c.UserAgent); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return c, fmt.Errorf("cannot configure the fetcher: %w", err)
	}
	if c.UserAgent == "" {
		c.UserAgent = DefaultUserAgent
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = 10 * time.Second
	}
	if c.FirstByteTimeout == 0 {
		c.FirstByteTimeout = 30 * time.Second
	}
	if c.TotalTimeout == 0 {
		c.TotalTimeout = 60 * time.Second
	}
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = 10 << 20
	}
	if c.DNSCacheTTL == 0 {
		c.DNSCacheTTL = 5 * time.Minute
	}
	if c.DNSNegativeTTL == 0 {
		c.DNSNegativeTTL = 30 * time.Second
	}
	if c.DNSMaxInFlight == 0 {
		c.DNSMaxInFlight = 64
	}
	if c.MaxIdleConnsPerHost == 0 {
		c.MaxIdleConnsPerHost = 4
	}
	return c, nil
}
