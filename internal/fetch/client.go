package fetch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Header values sent on every request (Request.Header may replace them).
const (
	acceptHeader         = "text/html,application/xhtml+xml,*/*;q=0.8"
	acceptEncodingHeader = "gzip, br"
)

// Log attribute keys.
const (
	logURL      = "url"
	logStatus   = "status"
	logBytes    = "bytes"
	logDuration = "duration"
	logOutcome  = "outcome"
	logErr      = "err"
)

// discardLimit is how much of an unused body (a followed redirect's) is
// read so its connection can be reused; longer bodies close the connection.
const discardLimit = 64 << 10

// Request is one fetch to perform.
type Request struct {
	// URL is the absolute http or https URL to GET. Its fragment is not
	// sent.
	URL *url.URL
	// FollowRedirects is the most redirects (301, 302, 303, 307, 308 with a
	// Location) to follow. 0 (or negative) does not follow: a 3xx is
	// returned as is with Response.Location set. A longer chain fails with
	// an error wrapping ErrTooManyRedirects.
	FollowRedirects int
	// Header holds extra request headers; they replace the defaults of the
	// same name (User-Agent, Accept, Accept-Encoding). Authorization,
	// Cookie and similar credentials are dropped on redirects to another
	// host.
	Header http.Header
	// CheckHop, if not nil, is called with each redirect target before it
	// is requested; an error stops the fetch and is wrapped in the error
	// Fetch returns.
	CheckHop func(*url.URL) error
}

// Client fetches URLs (SPEC §3 fetcher). It is safe for concurrent use by
// many workers and shares one keep-alive connection pool and one Resolver
// among them. Create it with New.
type Client struct {
	cfg      Config
	log      *slog.Logger
	resolver *Resolver
	dialer   *net.Dialer
	tr       *http.Transport
	m        *metrics
	// policy gives the reason an address is forbidden ("" = allowed); it
	// is only consulted when cfg.AllowPrivate is false.
	policy func(netip.Addr) string
}

// New returns a Client for cfg (zero fields take their documented
// defaults). logger may be nil (no logging); reg may be nil (no metrics),
// otherwise the spider_fetch_* collectors are registered on it, so one
// registry serves one Client. It fails on invalid Config values or Resolve
// entries.
func New(cfg Config, logger *slog.Logger, reg prometheus.Registerer) (*Client, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	overrides := make([]ResolveEntry, 0, len(cfg.Resolve))
	for _, s := range cfg.Resolve {
		e, err := ParseResolve(s)
		if err != nil {
			return nil, fmt.Errorf("cannot configure the fetcher: %w", err)
		}
		overrides = append(overrides, e)
	}
	res, err := NewResolver(ResolverConfig{
		TTL:         cfg.DNSCacheTTL,
		NegativeTTL: cfg.DNSNegativeTTL,
		MaxInFlight: cfg.DNSMaxInFlight,
		Overrides:   overrides,
		Lookup:      cfg.Lookup,
	})
	if err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	c := &Client{cfg: cfg, log: logger, resolver: res, policy: forbiddenReason}
	c.m, err = newMetrics(reg, res)
	if err != nil {
		return nil, err
	}
	c.dialer = &net.Dialer{Timeout: cfg.ConnectTimeout, KeepAlive: 30 * time.Second}
	if !cfg.AllowPrivate {
		c.dialer.Control = guard(func(a netip.Addr) string { return c.policy(a) })
	}
	var protos http.Protocols
	protos.SetHTTP1(true)
	protos.SetHTTP2(!cfg.DisableHTTP2)
	c.tr = &http.Transport{
		Proxy:                  nil, // a proxy would defeat the address guard
		DialContext:            c.dial,
		TLSClientConfig:        cfg.TLSConfig.Clone(),
		TLSHandshakeTimeout:    cfg.ConnectTimeout,
		ResponseHeaderTimeout:  cfg.FirstByteTimeout,
		DisableCompression:     true, // gzip and br are decoded here, under the cap
		MaxIdleConns:           1024,
		MaxIdleConnsPerHost:    cfg.MaxIdleConnsPerHost,
		IdleConnTimeout:        90 * time.Second,
		MaxResponseHeaderBytes: 1 << 20,
		ForceAttemptHTTP2:      !cfg.DisableHTTP2,
		Protocols:              &protos,
	}
	return c, nil
}

// Resolver returns the DNS cache the Client dials through, so that callers
// can compute per-IP keys from the same answers.
func (c *Client) Resolver() *Resolver { return c.resolver }

// CloseIdleConnections closes kept-alive connections not in use. The Client
// stays usable.
func (c *Client) CloseIdleConnections() { c.tr.CloseIdleConnections() }

// dial resolves address through the Resolver and connects to its addresses
// in order, returning the first connection made or the last error. The
// dialer's Control function refuses forbidden addresses.
func (c *Client) dial(ctx context.Context, network, address string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, fmt.Errorf("cannot split %q into host and port: %w", address, err)
	}
	addrs, err := c.resolver.LookupIP(ctx, host, port)
	if err != nil {
		return nil, err
	}
	var last error
	for _, a := range addrs {
		conn, err := c.dialer.DialContext(ctx, network, net.JoinHostPort(a.String(), port))
		if err == nil {
			return conn, nil
		}
		last = err
		if ctx.Err() != nil {
			break
		}
	}
	return nil, last
}

// Fetch GETs req.URL, following redirects as req says, and returns the final
// answer with its body read (see Response). Any HTTP status is a Response,
// not an error. Errors are *Error values: classify them with Classify. The
// whole call, redirects and body included, is bounded by
// Config.TotalTimeout and by ctx.
func (c *Client) Fetch(ctx context.Context, req *Request) (*Response, error) {
	if req == nil || req.URL == nil {
		return nil, &Error{Outcome: OutcomeOther, Op: "fetch", Err: errors.New("no URL given")}
	}
	return c.fetch(ctx, req, c.cfg.MaxBodyBytes, false)
}

// RobotsFetch fetches a robots.txt URL for the robots cache: up to 5
// redirects followed (RFC 9309 §2.3.1.2), body capped at 512 KiB. It
// returns the final status and body; a chain longer than 5 redirects
// returns its last 3xx status with nil error, which RFC 9309 lets the caller
// treat as "unavailable" (like 4xx). Network failures are *Error values.
func (c *Client) RobotsFetch(ctx context.Context, u *url.URL) (status int, body []byte, err error) {
	if u == nil {
		return 0, nil, &Error{Outcome: OutcomeOther, Op: "fetch robots.txt", Err: errors.New("no URL given")}
	}
	resp, err := c.RobotsResponse(ctx, u)
	if err != nil {
		return 0, nil, err
	}
	return resp.Status, resp.Body, nil
}

// RobotsResponse is RobotsFetch returning the whole final answer (its
// header, request header and Raw body, for a WARC record of it); redirects
// followed are not in it.
func (c *Client) RobotsResponse(ctx context.Context, u *url.URL) (*Response, error) {
	if u == nil {
		return nil, &Error{Outcome: OutcomeOther, Op: "fetch robots.txt", Err: errors.New("no URL given")}
	}
	return c.fetch(ctx, &Request{URL: u, FollowRedirects: robotsMaxRedirects}, robotsMaxBody, true)
}

// fetch implements Fetch. With lastOnLimit, a too-long redirect chain
// returns its last 3xx response instead of an error.
func (c *Client) fetch(ctx context.Context, req *Request, maxBody int64, lastOnLimit bool) (*Response, error) {
	op := "fetch " + req.URL.Redacted()
	if err := checkURL(req.URL); err != nil {
		return nil, &Error{Outcome: OutcomeOther, Op: op, Err: err}
	}
	started := time.Now()
	ctx, cancel := context.WithTimeout(ctx, c.cfg.TotalTimeout)
	defer cancel()
	u, h, loc, redirects, err := c.follow(ctx, op, req, lastOnLimit)
	if err != nil {
		return nil, err
	}
	return c.finish(ctx, op, req, u, h, loc, redirects, started, maxBody)
}

// follow sends req and follows its redirects (at most req.FollowRedirects,
// each target checked by checkURL and req.CheckHop) up to the answer that
// is not followed: its hop (body unread), URL and Location, and the number
// of redirects taken. With lastOnLimit a too-long chain ends at its last
// 3xx instead of an error. Fetch and Stream share it; ctx bounds it.
func (c *Client) follow(ctx context.Context, op string, req *Request, lastOnLimit bool) (u *url.URL, h *hop, loc *url.URL, redirects int, err error) {
	follow := max(req.FollowRedirects, 0)
	u = req.URL
	for redirects = 0; ; redirects++ {
		h, err = c.send(ctx, u, req.Header, sameHost(u, req.URL))
		if err != nil {
			c.m.observe(string(Classify(err)), 0, time.Since(h.start))
			c.log.Debug("fetch failed", logURL, u.Redacted(), logOutcome, Classify(err), logErr, err)
			return nil, nil, nil, 0, newError(op, ctxCause(ctx, err))
		}
		loc = location(u, h.resp)
		if follow == 0 || loc == nil || !isRedirect(h.resp.StatusCode) || (redirects >= follow && lastOnLimit) {
			return u, h, loc, redirects, nil
		}
		h.discard(c.m)
		if redirects >= follow {
			return nil, nil, nil, 0, &Error{Outcome: OutcomeTooManyRedirects, Op: op,
				Err: fmt.Errorf("more than %d redirects (next to %s): %w", follow, loc.Redacted(), ErrTooManyRedirects)}
		}
		if err := checkURL(loc); err != nil {
			return nil, nil, nil, 0, &Error{Outcome: OutcomeOther, Op: op, Err: fmt.Errorf("cannot follow redirect: %w", err)}
		}
		if req.CheckHop != nil {
			if err := req.CheckHop(loc); err != nil {
				return nil, nil, nil, 0, &Error{Outcome: classifyCause(err), Op: op,
					Err: fmt.Errorf("redirect to %s refused: %w", loc.Redacted(), err)}
			}
		}
		u = loc
	}
}

// hop is one request/response exchange whose body is not read yet.
type hop struct {
	resp   *http.Response
	sent   http.Header
	start  time.Time
	remote string
	ttfb   time.Duration
}

// send performs one GET of u and returns once the response headers are in.
// includeCredentials is false on redirects to another host.
func (c *Client) send(ctx context.Context, u *url.URL, extra http.Header, includeCredentials bool) (*hop, error) {
	h := &hop{start: time.Now()}
	var mu sync.Mutex
	trace := &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) {
			mu.Lock()
			h.remote = info.Conn.RemoteAddr().String()
			mu.Unlock()
		},
		GotFirstResponseByte: func() {
			mu.Lock()
			h.ttfb = time.Since(h.start)
			mu.Unlock()
		},
	}
	hreq := &http.Request{
		Method:     http.MethodGet,
		URL:        u,
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header:     make(http.Header, 3+len(extra)),
		Host:       u.Host,
	}
	hreq.Header.Set("User-Agent", c.cfg.UserAgent)
	hreq.Header.Set("Accept", acceptHeader)
	hreq.Header.Set("Accept-Encoding", acceptEncodingHeader)
	for k, vs := range extra {
		k = http.CanonicalHeaderKey(k)
		if !includeCredentials && isCredentialHeader(k) {
			continue
		}
		hreq.Header[k] = slices.Clone(vs)
	}
	h.sent = hreq.Header.Clone()
	resp, err := c.tr.RoundTrip(hreq.WithContext(httptrace.WithClientTrace(ctx, trace)))
	if err != nil {
		return h, err
	}
	mu.Lock()
	defer mu.Unlock()
	h.resp = resp
	if h.ttfb == 0 {
		h.ttfb = time.Since(h.start)
	}
	return h, nil
}

// discard reads a little of an unused body, so the connection can be
// reused, closes it and records the exchange.
func (h *hop) discard(m *metrics) {
	n, _ := io.CopyN(io.Discard, h.resp.Body, discardLimit)
	h.resp.Body.Close()
	m.observe(StatusOutcome(h.resp.StatusCode), n, time.Since(h.start))
}

// finish reads the final hop's body and builds the Response.
func (c *Client) finish(ctx context.Context, op string, req *Request, u *url.URL, h *hop, loc *url.URL,
	redirects int, started time.Time, maxBody int64) (*Response, error) {
	resp := h.resp
	defer resp.Body.Close()
	wire := &countingReader{r: resp.Body}
	body, raw, err := readBody(wire, resp, maxBody, c.cfg.KeepRaw)
	if err != nil {
		err = ctxCause(ctx, fmt.Errorf("reading the body: %w", err))
		c.m.observe(string(Classify(err)), wire.n, time.Since(h.start))
		c.log.Debug("fetch failed", logURL, u.Redacted(), logOutcome, Classify(err), logErr, err)
		return nil, newError(op, err)
	}
	c.m.observe(StatusOutcome(resp.StatusCode), wire.n, time.Since(h.start))
	ct := resp.Header.Get("Content-Type")
	mt := mediaType(ct, body)
	r := &Response{
		URL:           req.URL,
		FinalURL:      u,
		Status:        resp.StatusCode,
		Header:        resp.Header,
		RequestHeader: h.sent,
		Proto:         resp.Proto,
		RawHeader:     rawHeader(resp),
		Body:          body,
		Truncated:     raw.truncated,
		Raw:           raw.raw,
		RawTruncated:  raw.rawTruncated,
		ContentType:   mt,
		Charset:       detectCharset(body, ct, mt),
		Location:      loc,
		Redirects:     redirects,
		RemoteAddr:    h.remote,
		Started:       started,
		TTFB:          h.ttfb,
	}
	r.RetryAfter, _ = ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	r.Duration = time.Since(started)
	c.log.Debug("fetched", logURL, u.Redacted(), logStatus, r.Status, logBytes, len(body), logDuration, r.Duration)
	return r, nil
}

// readResult is what readBody read beside the decoded body: the raw (still
// content-coded) body and the truncation of both.
type readResult struct {
	raw                     []byte
	truncated, rawTruncated bool
}

// readBody reads and content-decodes resp's body from r, capped at max
// decoded bytes, and, with keepRaw, keeps the bytes as transferred
// (Response.Raw), capped at max too. Without a content coding the raw body
// is the body, kept or not.
func readBody(r io.Reader, resp *http.Response, max int64, keepRaw bool) ([]byte, readResult, error) {
	ce := strings.Join(resp.Header.Values("Content-Encoding"), ",")
	src := r
	var rawBuf *cappedBuffer
	if keepRaw {
		rawBuf = &cappedBuffer{max: max}
		src = io.TeeReader(r, rawBuf)
	}
	var pooled decoders
	defer pooled.release() // the body has been read when readBody returns
	dec, err := decode(src, ce, &pooled)
	if err != nil {
		return nil, readResult{}, err
	}
	if dec == src { // no content coding: the raw body is the body
		body, truncated, err := readCapped(r, max, resp.ContentLength)
		return body, readResult{raw: body, truncated: truncated, rawTruncated: truncated}, err
	}
	if !keepRaw {
		body, truncated, err := readCapped(dec, max, 0)
		return body, readResult{truncated: truncated}, err
	}
	if resp.ContentLength > 0 { // the announced size is the raw one's
		rawBuf.buf.Grow(int(min(resp.ContentLength, max, maxPresize)))
	}
	body, truncated, err := readCapped(dec, max, 0)
	if err == nil && !truncated {
		// A decoder may stop at the end of its stream: what follows (a
		// brotli stream's last bytes, trailing garbage) was transferred
		// too. Read it into Raw, within the cap; a failure there leaves
		// Raw short of what was sent, not Body.
		if _, derr := io.Copy(io.Discard, io.LimitReader(src, max-int64(rawBuf.buf.Len())+1)); derr != nil {
			rawBuf.over = true
		}
	}
	return body, readResult{raw: rawBuf.buf.Bytes(), truncated: truncated, rawTruncated: truncated || rawBuf.over}, err
}

// cappedBuffer keeps the first max bytes written to it and notes whether
// more came; a write never fails.
type cappedBuffer struct {
	buf  bytes.Buffer
	max  int64
	over bool
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	room := c.max - int64(c.buf.Len())
	if int64(len(p)) > room {
		c.over = true
		c.buf.Write(p[:max(room, 0)])
		return len(p), nil
	}
	c.buf.Write(p)
	return len(p), nil
}

// ctxCause replaces err by the context's own error when ctx ended, so that a
// total time-out surfacing as "request canceled" or a short read is still
// classified as a time-out (or a cancellation).
func ctxCause(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("%w (%v)", cerr, err)
	}
	return err
}

// checkURL accepts absolute http and https URLs with a host.
func checkURL(u *url.URL) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("unsupported scheme %q in %s: only http and https can be fetched", u.Scheme, u.Redacted())
	}
	if u.Host == "" {
		return fmt.Errorf("no host in %s: give an absolute URL", u.Redacted())
	}
	return nil
}

// location returns the Location of a 3xx resolved against u, or nil.
func location(u *url.URL, resp *http.Response) *url.URL {
	if resp.StatusCode < 300 || resp.StatusCode > 399 {
		return nil
	}
	v := strings.TrimSpace(resp.Header.Get("Location"))
	if v == "" {
		return nil
	}
	loc, err := u.Parse(v)
	if err != nil {
		return nil
	}
	return loc
}

// isRedirect reports whether code is a redirect that Fetch follows.
func isRedirect(code int) bool {
	switch code {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

func sameHost(a, b *url.URL) bool { return strings.EqualFold(a.Host, b.Host) }

func isCredentialHeader(k string) bool {
	switch k {
	case "Authorization", "Proxy-Authorization", "Cookie", "Cookie2", "Www-Authenticate":
		return true
	}
	return false
}
