package fetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"
)

// Stream GETs req.URL like Fetch, following redirects as req says, but
// hands the final answer's body to fn as a stream instead of reading it
// into memory: for documents read entry by entry whatever their size
// (sitemaps). resp has every field Fetch fills except the body's: Body,
// Raw, Truncated and Charset are empty, and ContentType comes from the
// header alone. body yields the payload with its Content-Encoding undone;
// it is not capped (the reader caps what it takes). What fn leaves unread
// is drained, so the connection is reused, only when little is left (a
// Content-Length with at most 64 KiB to go, or an error page of unknown
// length, read up to 64 KiB); otherwise the connection is closed, so
// stopping early costs nothing however long the body is.
//
// Stream returns fn's error as it is, or an *Error (classify it with
// Classify) when no answer arrived or the Content-Encoding is unknown; a
// read error inside fn is classified the same way (ctx's end as a
// time-out or a cancellation). The whole call, fn included, is bounded by
// Config.TotalTimeout and by ctx.
func (c *Client) Stream(ctx context.Context, req *Request, fn func(resp *Response, body io.Reader) error) error {
	if req == nil || req.URL == nil {
		return &Error{Outcome: OutcomeOther, Op: "fetch", Err: errors.New("no URL given")}
	}
	op := "fetch " + req.URL.Redacted()
	if err := checkURL(req.URL); err != nil {
		return &Error{Outcome: OutcomeOther, Op: op, Err: err}
	}
	started := time.Now()
	ctx, cancel := context.WithTimeout(ctx, c.cfg.TotalTimeout)
	defer cancel()
	u, h, loc, redirects, err := c.follow(ctx, op, req, false)
	if err != nil {
		return err
	}
	return c.stream(ctx, op, req, u, h, loc, redirects, started, fn)
}

// stream hands the final hop's body to fn and records the exchange.
func (c *Client) stream(ctx context.Context, op string, req *Request, u *url.URL, h *hop, loc *url.URL,
	redirects int, started time.Time, fn func(*Response, io.Reader) error) error {
	resp := h.resp
	wire := &countingReader{r: resp.Body}
	defer func() {
		// A sitemap URL answered 404 (fn reads no body) would otherwise cost
		// the host's connection: the next page request opened a new one.
		if rest := resp.ContentLength - wire.n; resp.ContentLength >= 0 && rest <= discardLimit ||
			resp.ContentLength < 0 && resp.StatusCode >= 300 {
			_, _ = io.CopyN(io.Discard, resp.Body, discardLimit)
		}
		resp.Body.Close()
	}()
	dec, err := decoder(wire, strings.Join(resp.Header.Values("Content-Encoding"), ","))
	if err != nil {
		c.m.observe(string(OutcomeOther), 0, time.Since(h.start))
		return newError(op, err)
	}
	r := &Response{
		URL:           req.URL,
		FinalURL:      u,
		Status:        resp.StatusCode,
		Header:        resp.Header,
		RequestHeader: h.sent,
		Proto:         resp.Proto,
		RawHeader:     rawHeader(resp),
		ContentType:   mediaType(resp.Header.Get("Content-Type"), nil),
		Location:      loc,
		Redirects:     redirects,
		RemoteAddr:    h.remote,
		Started:       started,
		TTFB:          h.ttfb,
	}
	r.RetryAfter, _ = ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	err = fn(r, &streamReader{r: dec, ctx: ctx, op: op})
	c.m.observe(StatusOutcome(resp.StatusCode), wire.n, time.Since(h.start))
	c.log.Debug("streamed", logURL, u.Redacted(), logStatus, r.Status, logBytes, wire.n, logDuration, time.Since(started))
	return err
}

// streamReader turns the body's read errors into *Error values, ctx's end
// classified as a time-out or a cancellation.
type streamReader struct {
	r   io.Reader
	ctx context.Context
	op  string
}

func (s *streamReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		var fe *Error
		if !errors.As(err, &fe) {
			err = newError(s.op, ctxCause(s.ctx, fmt.Errorf("reading the body: %w", err)))
		}
	}
	return n, err
}
