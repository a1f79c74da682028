package crawl

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spider-crawler/spider/internal/fetch"
	"github.com/spider-crawler/spider/internal/frontier"
	"github.com/spider-crawler/spider/internal/revisit"
	"github.com/spider-crawler/spider/internal/robots"
	"github.com/spider-crawler/spider/internal/sitemap"
	"github.com/spider-crawler/spider/internal/urls"
)

// Sitemaps in the crawl (Config.Sitemaps, issue 26).
//
// A host's sitemaps are the Sitemap: lines of its robots.txt and
// /sitemap.xml. They are discovered when the host's robots.txt is fetched
// (the first visit of the host by this process, and again whenever the
// robots cache fetches it anew; the crawl state drops the URLs it has
// seen) and travel as ordinary frontier requests of Kind
// frontier.KindSitemap: leased under the host's politeness, retried like
// a page on a 5xx, 429, reset or refused connection, and completed with a
// record in records.jsonl of their own outcome class (OutcomeSitemap,
// OutcomeNoSitemap, OutcomeSitemapFailed), never stored as pages.
//
// A sitemap is read as a stream (fetch.Client.Stream, sitemap.Parse): a
// file of any size is never held in memory, and reading stops at the
// protocol's caps (50,000 URLs, 50 MiB uncompressed; the record's Error
// says which cap cut it). Its page URLs go through the same normaliser and
// filter chain as links, at depth 1: a sitemap is the site's own list of
// its pages, which a user expects within --max-depth 1 as the links of a
// home page are, and never under --max-depth 0 (no sitemap is fetched
// then). Sitemaps themselves are at depth 0 (a sitemap index's sitemaps
// too), so that a level-by-level crawl reads them with the seeds. The
// location rule of the protocol applies (a sitemap lists only URLs under
// its own directory, an index only sitemaps of its own host), except for
// the hosts whose robots.txt named the sitemap (cross-submission), whose
// URLs it may list wherever it sits, and except for the sitemaps of a
// sitemap index, which may list what the index may (any URL of its host
// for an index at the root, as /sitemap.xml is). What named a sitemap is
// known to the process that read the robots.txt or the index, for its
// run: a sitemap fetched after a restart, or by another worker, gets the
// protocol's plain rule, and the entries it then drops are counted in its
// record. Then scope, host and suffix filters as for links. A sitemap URL itself passes the length, scope and
// host filters (not the suffix filter: sitemaps end in .xml and .gz).
//
// A page URL's <changefreq> and <lastmod> travel as revisit hints: the
// request's Schedule is a fresh revisit.Entry with only ChangeFreq and
// HintLastMod set (a hint entry). ChangeFreq sets the page's first
// interval, never over observed changes. <lastmod> only matters for a
// page already fetched, and such a URL is seen: the state's Discover drops
// it, so Scheduler.Finish hands the sitemap's hints to the state's
// crawlstate.Rescheduler after the sitemap's completion (hints.go), where
// revisit.Policy.Hint brings the page's next fetch forward. A sitemap's own content hash (Visit.ContentHash) is that of its entries
// as read, so that the revisit schedule sees a sitemap change when its
// URLs or their lastmod do.

// Outcome classes of sitemap requests.
const (
	// OutcomeSitemap: the sitemap was read (maybe cut at a cap, or with
	// entries out of place: the record's Error says so).
	OutcomeSitemap = "sitemap"
	// OutcomeNoSitemap: there is no sitemap there: a 4xx answer (most
	// sites have no /sitemap.xml: 404), or a document that is not a
	// sitemap (an HTML "soft 404", other XML); not a failure. The record's
	// Error says which, but for 404 and 410.
	OutcomeNoSitemap = "no-sitemap"
	// OutcomeSitemapFailed: the sitemap could not be read: a 5xx or 429
	// after the retries, another status that is not 2xx, no answer, or
	// broken XML or gzip (the entries before the fault are kept).
	OutcomeSitemapFailed = "sitemap-failed"
)

// hintable reports whether a sitemap's lastmod is worth carrying at now:
// set, after 1970, and not in the future (a lastmod in the future is
// never trusted: revisit.Policy.Hint ignores it, and as a hint entry's
// HintLastMod it would hide the true lastmods after it).
func hintable(lastmod, now time.Time) bool {
	return lastmod.Unix() > 0 && !lastmod.After(now.Add(time.Minute))
}

// SitemapDepth is the depth of the pages a sitemap lists.
const SitemapDepth = 1

// maxListed bounds the sitemaps remembered as cross-submitted.
const maxListed = 10_000

// sitemapState is the fetcher's sitemap bookkeeping.
type sitemapState struct {
	once  sync.Once
	chain urls.Chain // the filters a sitemap's own URL passes

	mu       sync.Mutex
	listedBy map[string][]string // sitemap URL → origins whose robots.txt named it, when on another origin

	hints [revisit.FreqNever + 1]string // Request.Schedule per changefreq
}

// sitemapChain returns the filters a sitemap's URL passes: the link
// chain without its depth and suffix filters.
func (f *Fetcher) sitemapChain() urls.Chain {
	f.sm.once.Do(func() {
		f.sm.chain = slices.DeleteFunc(slices.Clone(f.chain), func(fl urls.Filter) bool {
			switch fl.(type) {
			case *urls.DepthFilter, *urls.SuffixFilter:
				return true
			}
			return false
		})
		for freq := revisit.FreqAlways; freq <= revisit.FreqNever; freq++ {
			e := revisit.Entry{ChangeFreq: freq}
			b, _ := e.MarshalBinary()
			f.sm.hints[freq] = string(b)
		}
	})
	return f.sm.chain
}

// hostSitemaps returns the sitemap requests of u's host when its
// robots.txt rb was fetched under this lease (so once per fetch of the
// file, not per page), nil otherwise or when sitemaps are off.
func (f *Fetcher) hostSitemaps(u *url.URL, rb *robots.Robots, leaseStart time.Time) []frontier.Request {
	if !f.cfg.Sitemaps || f.cfg.MaxDepth == 0 {
		return nil
	}
	hp := urls.HostPort(u)
	f.robotsMu.Lock()
	at, ok := f.robotsFetched[hp]
	f.robotsMu.Unlock()
	if !ok || at.Before(leaseStart) {
		return nil
	}
	origin := u.Scheme + "://" + u.Host
	locs := append(rb.Sitemaps(), origin+"/sitemap.xml")
	chain := f.sitemapChain()
	group := rb.Group(f.cfg.RobotsAgent)
	var out []frontier.Request
	seen := map[string]bool{}
	for _, loc := range locs {
		n, s, err := f.norm.ResolveString(u, loc)
		if err != nil || seen[s] || chain.Check(n, 0) != nil {
			continue
		}
		if n.Scheme+"://"+n.Host == origin && !group.Allowed(n.RequestURI()) {
			continue // disallowed by the robots.txt just read: not queued (another host's robots.txt is read when it is fetched)
		}
		seen[s] = true
		f.listSitemap(s, origin)
		out = append(out, f.sitemapRequest(n, s))
	}
	return out
}

// sitemapRequest is the request of sitemap n (string form s).
func (f *Fetcher) sitemapRequest(n *url.URL, s string) frontier.Request {
	return frontier.Request{URL: s, Key: f.key(n), Kind: frontier.KindSitemap}
}

// listSitemap remembers that sitemap s may list any URL of the origins
// (scheme://host[:port]): their robots.txt named it, or a sitemap index
// that could list their URLs did.
func (f *Fetcher) listSitemap(s string, origins ...string) {
	f.sm.mu.Lock()
	defer f.sm.mu.Unlock()
	if f.sm.listedBy == nil {
		f.sm.listedBy = map[string][]string{}
	}
	if _, ok := f.sm.listedBy[s]; !ok && len(f.sm.listedBy) >= maxListed {
		return
	}
	for _, o := range origins {
		if !slices.Contains(f.sm.listedBy[s], o) {
			f.sm.listedBy[s] = append(f.sm.listedBy[s], o)
		}
	}
}

// listed returns the origins whose robots.txt named sitemap s.
func (f *Fetcher) listed(s string) []string {
	f.sm.mu.Lock()
	defer f.sm.mu.Unlock()
	return slices.Clone(f.sm.listedBy[s])
}

// readSitemap fetches and reads the sitemap req (u parsed) into res: its
// record and its discovered requests. fctx carries the request's trace;
// ctx is the visit's.
func (f *Fetcher) readSitemap(ctx, fctx context.Context, res *result, req frontier.Request, u *url.URL) {
	rec := &res.rec
	var parsed *sitemap.Result
	var perr error
	err := f.client.Stream(fctx, &fetch.Request{URL: u, FollowRedirects: f.cfg.MaxRedirects}, func(resp *fetch.Response, body io.Reader) error {
		rec.Status, rec.ContentType, rec.IP = resp.Status, resp.ContentType, resp.RemoteAddr
		if resp.FinalURL != nil {
			rec.FinalURL = resp.FinalURL.String()
		}
		switch {
		case resp.Status == 429 || resp.Status >= 500:
			if req.Attempt < f.cfg.MaxRetries {
				res.retry, res.delay = true, f.backoff(req.Attempt, resp.RetryAfter)
				return nil
			}
			rec.Outcome, rec.Error = OutcomeSitemapFailed, fmt.Sprintf("sitemap answered HTTP %d after %d retries", resp.Status, req.Attempt)
			return nil
		case resp.Status == 404 || resp.Status == 410:
			rec.Outcome = OutcomeNoSitemap
			return nil
		case resp.Status >= 400 && resp.Status < 500:
			rec.Outcome, rec.Error = OutcomeNoSitemap, fmt.Sprintf("sitemap answered HTTP %d", resp.Status)
			return nil
		case resp.Status < 200 || resp.Status >= 300:
			rec.Outcome, rec.Error = OutcomeSitemapFailed, fmt.Sprintf("sitemap answered HTTP %d", resp.Status)
			return nil
		}
		r, err := f.parseSitemap(ctx, res, req, u, body)
		parsed, perr = &r, err
		return nil
	})
	if err != nil {
		rec.Outcome, rec.Error = OutcomeSitemapFailed, err.Error()
		if ctx.Err() == nil && retryable(errorOutcome(err)) && req.Attempt < f.cfg.MaxRetries {
			res.retry, res.delay = true, f.backoff(req.Attempt, 0)
		}
		f.m.fetchErrors.WithLabelValues(errorOutcome(err)).Inc()
		return
	}
	if parsed == nil {
		return
	}
	rec.Size = int(min(parsed.Bytes, int64(^uint(0)>>1)))
	var notes []string
	if errors.Is(perr, sitemap.ErrNotSitemap) {
		// An HTML page (a "soft 404"), another XML document: the site has
		// no sitemap there.
		rec.Outcome, rec.Error = OutcomeNoSitemap, perr.Error()
		return
	}
	if perr != nil {
		rec.Outcome = OutcomeSitemapFailed
		notes = append(notes, perr.Error())
		if parsed.Entries > 0 {
			notes = append(notes, fmt.Sprintf("the %d entries before the fault were read", parsed.Entries))
		}
	} else {
		rec.Outcome = OutcomeSitemap
	}
	if parsed.Truncated {
		what := fmt.Sprintf("the protocol's %d URLs", sitemap.ProtocolMaxURLs)
		if parsed.TruncatedBy == "bytes" {
			what = fmt.Sprintf("the protocol's %d bytes (uncompressed)", sitemap.ProtocolMaxBytes)
		}
		notes = append(notes, "sitemap cut at "+what+"; the entries after it are not read")
	}
	if parsed.OutOfPlace > 0 {
		notes = append(notes, fmt.Sprintf("%d entries out of place (a sitemap lists only URLs under its own directory, or of a host whose robots.txt names it), e.g. %s",
			parsed.OutOfPlace, parsed.OutOfPlaceSample[0]))
	}
	rec.Error = strings.Join(notes, "; ")
	f.log.Debug("sitemap read", "url", req.URL, "kind", parsed.Kind.String(), "entries", parsed.Entries,
		"discovered", len(res.discovered), "truncated", parsed.TruncatedBy, "out_of_place", parsed.OutOfPlace, "err", perr)
}

// parseSitemap streams body through sitemap.Parse, turning its entries
// into res.discovered: pages at SitemapDepth through the link filter
// chain, nested sitemaps through the sitemap chain.
func (f *Fetcher) parseSitemap(ctx context.Context, res *result, req frontier.Request, u *url.URL, body io.Reader) (sitemap.Result, error) {
	chain := f.sitemapChain()
	var lastScheme, lastHost, lastKey string
	hosts := f.listed(req.URL)
	// The sitemaps an index lists may list what the index may: the
	// origins that named it, and its own when it sits at the root.
	authority := hosts
	if strings.LastIndexByte(u.EscapedPath(), '/') <= 0 {
		authority = append(slices.Clip(authority), u.Scheme+"://"+u.Host)
	}
	opt := sitemap.Options{SitemapURL: req.URL, Hosts: hosts}
	h := fnv.New64a()
	defer func() { res.entriesHash = h.Sum64() | 1 }()
	now := time.Now()
	return sitemap.Parse(ctx, body, opt, func(e sitemap.Entry) error {
		// The content hash the revisit schedule judges change by: every
		// entry as read (a new URL, a new lastmod), not the bytes (which
		// gzip or white space may change).
		h.Write([]byte(e.Loc))
		h.Write([]byte{0})
		if !e.LastMod.IsZero() {
			h.Write(e.LastMod.AppendFormat(nil, time.RFC3339))
		}
		h.Write([]byte{'\n'})
		n, s, err := f.norm.ResolveString(u, e.Loc)
		if err != nil {
			return nil
		}
		if e.Index {
			if chain.Check(n, 0) == nil && s != req.URL {
				f.listSitemap(s, authority...)
				res.discovered = append(res.discovered, f.sitemapRequest(n, s))
			}
			return nil
		}
		if f.chain.Check(n, SitemapDepth) != nil {
			return nil
		}
		if n.Host != lastHost || n.Scheme != lastScheme || lastKey == "" {
			lastScheme, lastHost, lastKey = n.Scheme, n.Host, f.key(n)
		}
		r := frontier.Request{URL: s, Key: lastKey, Depth: SitemapDepth, Priority: SitemapDepth}
		freq := revisit.ParseChangeFreq(e.ChangeFreq)
		switch {
		case hintable(e.LastMod, now):
			h := revisit.Entry{ChangeFreq: freq, HintLastMod: e.LastMod.Truncate(time.Second).UTC()}
			r.Schedule = string(h.AppendBinary(nil))
		case freq != revisit.FreqUnknown:
			r.Schedule = f.sm.hints[freq]
		}
		res.discovered = append(res.discovered, r)
		return nil
	})
}
