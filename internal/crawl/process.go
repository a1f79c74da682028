package crawl

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/spider-crawler/spider/internal/dedup"
	"github.com/spider-crawler/spider/internal/fetch"
	"github.com/spider-crawler/spider/internal/frontier"
	"github.com/spider-crawler/spider/internal/parse"
	"github.com/spider-crawler/spider/internal/robots"
	"github.com/spider-crawler/spider/internal/state"
	"github.com/spider-crawler/spider/internal/store"
	"github.com/spider-crawler/spider/internal/store/warc"
	"github.com/spider-crawler/spider/internal/urls"
)

// result is what processing one URL produced, before it is made durable.
type result struct {
	rec        store.Record
	discovered []frontier.Request
	retry      bool          // put the URL back (attempt+1) instead of completing it
	delay      time.Duration // extra wait for the host
	body       []byte        // stored in the page files when non-nil
	fp         uint64
	exchange   *warc.Exchange
}

// process handles one leased URL end to end. It returns an error only when
// the crawl cannot go on (the state or the page store failed); everything a
// web server can do wrong becomes an outcome.
func (e *Engine) process(ctx context.Context, lease *frontier.Lease) error {
	req := lease.Request
	start := time.Now()
	if cur, err := e.st.Current(ctx, req); err != nil || !cur {
		// A copy left behind when its URL was lowered to a smaller depth
		// (or completed): drop it unfetched.
		e.fr.Done(lease, frontier.DoneInfo{})
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	}
	res := e.visit(ctx, lease)
	if ctx.Err() != nil {
		// Cancelled mid-fetch: leave the URL pending for the next run.
		e.fr.Done(lease, frontier.DoneInfo{})
		return ctx.Err()
	}
	if res.retry {
		req.Attempt++
		if err := e.st.UpdatePending(ctx, req); err != nil {
			return fmt.Errorf("cannot record retry of %s: %w", req.URL, err)
		}
		e.m.retries.Inc()
		e.fr.Done(lease, frontier.DoneInfo{Retry: true, Delay: res.delay})
		return nil
	}
	rec := &res.rec
	rec.PageNo = -1
	if res.body != nil {
		no, err := e.pages.Append(rec.FinalURL, rec.FetchedAt, res.body)
		if err != nil {
			return fmt.Errorf("cannot store page %s: %w", rec.URL, err)
		}
		rec.PageNo = no
	}
	if res.exchange != nil && e.warc != nil {
		if err := e.warc.WriteExchange(ctx, *res.exchange); err != nil {
			return fmt.Errorf("cannot write WARC records for %s: %w", rec.URL, err)
		}
	}
	if res.fp != 0 {
		rec.Fingerprint = strconv.FormatUint(res.fp, 16)
	}
	rec.DurationMS = time.Since(start).Milliseconds()
	// The record reaches the OS before the state transaction that completes
	// the URL: a kill between the two refetches the URL and appends a second
	// record (export keeps the last one), but never loses a record.
	if err := e.recs.Append(*rec); err != nil {
		return fmt.Errorf("cannot append record for %s: %w", req.URL, err)
	}
	out, err := e.st.Complete(ctx, req, state.Outcome{Class: rec.Outcome, Fingerprint: res.fp, URL: rec.URL}, res.discovered)
	if err != nil {
		return fmt.Errorf("cannot record completion of %s: %w", req.URL, err)
	}
	if out.DuplicateOf != "" {
		e.m.duplicates.Inc()
	}
	if err := e.fr.PushAll(out.New); err != nil {
		return fmt.Errorf("cannot queue discovered URLs: %w", err)
	}
	e.fr.Done(lease, frontier.DoneInfo{Delay: res.delay})

	e.fetched.Add(1)
	row := Row(rec.Outcome)
	if row != Row200 && row != Row30x {
		e.errs.Add(1)
	}
	e.m.pages.WithLabelValues(row).Inc()
	e.m.discovered.Add(float64(len(out.New)))
	e.hostMu.Lock()
	e.hostPages[hostOf(req.URL)]++
	e.hostMu.Unlock()
	return nil
}

func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Host
}

// visit checks robots.txt, fetches and parses one URL.
func (e *Engine) visit(ctx context.Context, lease *frontier.Lease) result {
	req := lease.Request
	res := result{rec: store.Record{URL: req.URL, FinalURL: req.URL, Depth: req.Depth, FetchedAt: time.Now().UTC()}}
	u, err := url.Parse(req.URL)
	if err != nil {
		res.rec.Outcome, res.rec.Error = OutcomeError, "stored URL does not parse: "+err.Error()
		return res
	}

	// robots.txt (SPEC §3 robots module), fetched under this host's lease.
	rb, err := e.robots.Get(ctx, u)
	if err != nil {
		res.rec.Outcome, res.rec.Error = OutcomeError, err.Error()
		return res
	}
	group := rb.Group(e.cfg.RobotsAgent)
	hostDelay := time.Duration(e.cfg.Delay)
	if d, ok := group.CrawlDelay(); ok {
		d = min(d, time.Duration(e.cfg.MaxCrawlDelay))
		e.fr.SetKeyDelay(req.Key, d)
		hostDelay = max(hostDelay, d)
	}
	if rb.Kind() == robots.KindUnreachable {
		e.robotsMu.Lock()
		cause := e.robotsErr[urls.HostPort(u)]
		e.robotsMu.Unlock()
		if cause != nil && errorOutcome(cause) == OutcomeForbiddenAddress {
			// Not a transient failure: the host resolves to an address the
			// crawler refuses (no --allow-private). Say so, do not retry.
			res.rec.Outcome, res.rec.Error = OutcomeForbiddenAddress, cause.Error()
			return res
		}
		// RFC 9309 §2.3.1.4: the server may be down; assume complete
		// disallow and try again later.
		if req.Attempt < e.cfg.MaxRetries {
			res.retry, res.delay = true, e.backoff(req.Attempt, 0)
			return res
		}
		res.rec.Outcome, res.rec.Error = OutcomeRobotsUnavailable, "robots.txt unavailable (5xx or unreachable) after retries"
		return res
	}
	if !group.Allowed(u.RequestURI()) {
		res.rec.Outcome = OutcomeRobots
		return res
	}

	e.waitAfterRobots(ctx, u, lease, hostDelay)
	e.limit.wait(ctx)
	resp, err := e.client.Fetch(ctx, &fetch.Request{URL: u})
	if err != nil {
		res.rec.Outcome, res.rec.Error = errorOutcome(err), err.Error()
		if ctx.Err() == nil && retryable(res.rec.Outcome) && req.Attempt < e.cfg.MaxRetries {
			res.retry, res.delay = true, e.backoff(req.Attempt, 0)
		}
		e.m.fetchErrors.WithLabelValues(res.rec.Outcome).Inc()
		return res
	}
	rec := &res.rec
	rec.Status = resp.Status
	rec.Outcome = strconv.Itoa(resp.Status)
	rec.ContentType = resp.ContentType
	rec.Charset = resp.Charset
	rec.IP = resp.RemoteAddr
	rec.Size = len(resp.Body)
	if resp.FinalURL != nil {
		rec.FinalURL = resp.FinalURL.String()
	}
	if resp.Truncated {
		rec.Error = fmt.Sprintf("body truncated at %d bytes", e.cfg.MaxBodyBytes)
	}

	switch {
	case resp.Status == 429 || resp.Status >= 500:
		if req.Attempt < e.cfg.MaxRetries {
			res.retry, res.delay = true, e.backoff(req.Attempt, resp.RetryAfter)
			return res
		}
	case resp.Status >= 300 && resp.Status < 400:
		e.redirect(&res, resp, req)
	}
	res.exchange = &warc.Exchange{
		URL: req.URL, Method: "GET", RequestHeader: resp.RequestHeader, Status: resp.Status, Proto: resp.Proto,
		RawResponseHeader: resp.RawHeader, ResponseHeader: resp.Header, Body: resp.Body,
		IP: resp.RemoteAddr, Fetched: rec.FetchedAt, Decoded: true, Truncated: resp.Truncated, Duration: resp.Duration,
	}
	if resp.Status < 200 || resp.Status >= 300 {
		return res
	}
	if !resp.IsHTML() {
		res.body = resp.Body
		return res
	}
	body, err := resp.UTF8()
	if err != nil {
		rec.Error = "cannot convert to UTF-8: " + err.Error()
		res.body = resp.Body
		return res
	}
	res.body = body
	base := u
	if resp.FinalURL != nil {
		base = resp.FinalURL
	}
	page, err := parse.Parse(base, body, parse.Options{})
	if err != nil {
		rec.Error = "cannot parse HTML: " + err.Error()
		return res
	}
	rec.Title = page.Title
	if len(page.Text) > 0 {
		res.fp = dedup.Fingerprint([]byte(page.Text))
	}
	if page.MetaRobots.NoFollow && !e.cfg.FollowNofollow {
		return res
	}
	seen := make(map[string]bool, len(page.Links))
	for _, l := range page.Links {
		if l.URL == nil || (l.NoFollow && !e.cfg.FollowNofollow) {
			continue
		}
		n, err := e.norm.Resolve(base, l.URL.String())
		if err != nil {
			continue
		}
		s := n.String()
		if seen[s] {
			continue
		}
		seen[s] = true
		rec.OutLinks = append(rec.OutLinks, s)
		if e.chain.Check(n, req.Depth+1) != nil {
			continue
		}
		res.discovered = append(res.discovered, e.request(n, req.Depth+1, 0))
	}
	if page.Refresh != nil {
		if n, err := e.norm.Resolve(base, page.Refresh.String()); err == nil && !seen[n.String()] {
			rec.OutLinks = append(rec.OutLinks, n.String())
			if e.chain.Check(n, req.Depth+1) == nil {
				res.discovered = append(res.discovered, e.request(n, req.Depth+1, 0))
			}
		}
	}
	res.exchange.OutLinks = rec.OutLinks
	return res
}

// redirect queues a 3xx's target as a new URL at the same depth (it is
// fetched under its own host's politeness), or records too-many-redirects.
func (e *Engine) redirect(res *result, resp *fetch.Response, req frontier.Request) {
	if resp.Location == nil {
		res.rec.Error = "redirect without a usable Location header"
		return
	}
	n, err := e.norm.Resolve(resp.URL, resp.Location.String())
	if err != nil {
		res.rec.Error = "redirect to an unusable URL: " + err.Error()
		return
	}
	res.rec.OutLinks = []string{n.String()}
	if req.Redirects+1 > e.cfg.MaxRedirects {
		res.rec.Outcome = OutcomeTooManyRedirects
		return
	}
	// Depth is kept, so the depth filter passes; scope and suffix apply.
	if err := e.chain.Check(n, req.Depth); err != nil {
		if rej, ok := urls.AsRejection(err); ok {
			res.rec.Error = "redirect target rejected by " + rej.Filter + " filter: " + rej.Reason
		}
		return
	}
	res.discovered = append(res.discovered, e.request(n, req.Depth, req.Redirects+1))
}

// waitAfterRobots keeps the host's delay between a robots.txt fetch made
// under this lease and the page fetch that follows it.
func (e *Engine) waitAfterRobots(ctx context.Context, u *url.URL, lease *frontier.Lease, delay time.Duration) {
	e.robotsMu.Lock()
	t, ok := e.robotsFetched[urls.HostPort(u)]
	e.robotsMu.Unlock()
	if !ok || t.Before(lease.Start) {
		return
	}
	wait := time.Until(t.Add(delay))
	if wait <= 0 {
		return
	}
	select {
	case <-ctx.Done():
	case <-time.After(wait):
	}
}

// backoff is the wait before retry number attempt+1: RetryDelay doubled per
// attempt, or the server's Retry-After if longer (capped at 10 minutes).
func (e *Engine) backoff(attempt int, retryAfter time.Duration) time.Duration {
	d := time.Duration(e.cfg.RetryDelay) << attempt
	if retryAfter > d {
		d = retryAfter
	}
	return min(d, 10*time.Minute)
}

func errorOutcome(err error) string {
	switch fetch.Classify(err) {
	case fetch.OutcomeTimeout:
		return OutcomeTimeout
	case fetch.OutcomeReset:
		return OutcomeReset
	case fetch.OutcomeDNS:
		return OutcomeDNS
	case fetch.OutcomeRefused:
		return OutcomeRefused
	case fetch.OutcomeForbiddenAddress:
		return OutcomeForbiddenAddress
	}
	return OutcomeError
}

// retryable outcomes are transient failures worth another try. Time-outs
// are not retried: a server that hangs would cost a worker each time.
func retryable(outcome string) bool {
	return outcome == OutcomeReset || outcome == OutcomeRefused
}
