package crawl

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http/httptrace"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/spider-crawler/spider/internal/crawlstate"
	"github.com/spider-crawler/spider/internal/dedup"
	"github.com/spider-crawler/spider/internal/fetch"
	"github.com/spider-crawler/spider/internal/frontier"
	"github.com/spider-crawler/spider/internal/parse"
	"github.com/spider-crawler/spider/internal/robots"
	"github.com/spider-crawler/spider/internal/store"
	"github.com/spider-crawler/spider/internal/store/warc"
	"github.com/spider-crawler/spider/internal/urls"
)

// Visit is what the fetcher role made of one URL: the scheduler role turns
// it into state changes (Complete or a retry) and frontier updates. In a
// master–worker crawl it is the packet a worker sends back to the master.
type Visit struct {
	// Request is the URL as it was handed out.
	Request frontier.Request `json:"request"`
	// Outcome is the class the URL ended with ("200", "robots", "timeout"…).
	Outcome string `json:"outcome"`
	// Discovered are the normalised, filtered links (and redirect targets).
	Discovered []frontier.Request `json:"discovered,omitempty"`
	// Beyond are the links the depth limit alone kept out of Discovered
	// (one level deeper than MaxDepth). They are filled only when depth
	// levels overlap (MaxDepth ≥ 0 without StrictLevels, or Topics), for a
	// State that relinks (state.Options.Relink): if the page is later
	// found at a smaller depth, they come within the limit.
	Beyond []frontier.Request `json:"beyond,omitempty"`
	// RequestAfter is how long after the lease's start the server saw the
	// page request at the latest (robots.txt and its delay come first; see
	// Fetcher.arrivalBound); 0 if none was sent. A start-to-start delay
	// (Config.DelayFrom "start") counts from it.
	RequestAfter time.Duration `json:"request_after,omitempty"`
	// Retry asks for the URL to be put back (Attempt+1) after Delay.
	Retry bool `json:"retry,omitempty"`
	// Delay is an extra wait for the URL's host (back-off, Retry-After).
	Delay time.Duration `json:"delay,omitempty"`
	// CrawlDelay is the host's robots.txt Crawl-delay (capped), 0 if none.
	CrawlDelay time.Duration `json:"crawl_delay,omitempty"`
	// Fingerprint is the page text's content fingerprint, 0 if none.
	Fingerprint uint64 `json:"fingerprint,omitempty"`
	// SimHash is the page text's near-duplicate hash (dedup.PageSimHash),
	// 0 if none or Config.NearDupDistance is 0.
	SimHash uint64 `json:"simhash,omitempty"`
	// Filed reports that the page's content was judged before its record
	// was written (a ContentFiler, Fetcher.FileContent): DuplicateOf and
	// Near are that decision, written in the record as duplicate_of and
	// near, and Scheduler.Finish hands it to the State's Complete
	// (crawlstate.Outcome.Filed) instead of letting it decide again.
	// DuplicateOf is the earlier page this one copies ("" for an
	// original); Near: found by SimHash. A master–worker worker sends them
	// to the master with the rest of the Visit.
	Filed       bool   `json:"filed,omitempty"`
	DuplicateOf string `json:"duplicate_of,omitempty"`
	Near        bool   `json:"near,omitempty"`
	// Text is the parsed page text, for the topic scheduler's relevance
	// score; it stays in the process (not sent between nodes).
	Text string `json:"-"`
	// TopicScore is the page text's relevance to its topic
	// (topics.Scheduler.Score), computed by a master–worker crawl node,
	// which has the text, and sent to the coordinator, which charges it
	// (Scheduler.Finish uses it when Text is empty). 0 without topics.
	TopicScore float64 `json:"topic_score,omitempty"`
	// PageNext and RecordsEnd locate what Visit stored in the fetcher's
	// data directory: the page number after the URL's page (0: none
	// stored) and the records file's size after its record (0: none).
	// The embedded state keeps their maxima (crawlstate.Outcome); they stay
	// in the process.
	PageNext   int64 `json:"-"`
	RecordsEnd int64 `json:"-"`

	// What the answer said for the revisit schedule (Scheduler.Finish, on
	// whichever process schedules: the JSON fields travel from a remote
	// worker). Conditional: the request carried If-None-Match or
	// If-Modified-Since (from Request.Schedule's validators). NotModified:
	// the answer was 304 (to a conditional request: the page is unchanged;
	// to an unconditional one: a failure). ETag and LastModified: the
	// answer's validators (zero: none). ContentHash: the body's
	// fingerprint when the page has no text Fingerprint (a non-HTML body),
	// so that its changes are seen too. RetryAfter: the server's
	// Retry-After of a failed answer (429, 5xx).
	Conditional  bool          `json:"conditional,omitempty"`
	NotModified  bool          `json:"not_modified,omitempty"`
	ETag         string        `json:"etag,omitempty"`
	LastModified time.Time     `json:"last_modified,omitzero"`
	ContentHash  uint64        `json:"content_hash,omitempty"`
	RetryAfter   time.Duration `json:"retry_after,omitempty"`
}

// Fetcher is the fetch role: robots.txt, HTTP, parsing, link filtering and
// local storage of what it fetched (page files, records, WARC). It is safe
// for concurrent use by many workers.
type Fetcher struct {
	cfg   Config
	log   *slog.Logger
	norm  *urls.Normalizer
	chain urls.Chain
	// beyondChain is chain without its depth filter, when depth levels
	// overlap and cut links are kept (Config.relink); else nil.
	beyondChain urls.Chain
	client      *fetch.Client
	robots      *robots.Cache
	lock        *store.DirLock // the data directory's lock, taken first
	pages       *store.PageFiles
	recs        *store.Records
	warc        *warc.Writer
	limit       *rateLimiter
	m           *metrics
	tally       Tally // the records this fetcher wrote (Tally)

	robotsMu      sync.Mutex
	robotsFetched map[string]time.Time // host:port → end of the last robots.txt fetch
	robotsErr     map[string]error     // host:port → why its last robots.txt fetch failed
	robotsFails   map[string]int       // host:port → robots.txt fetches failed in a row (5xx, 429, network)
	fastestRTT    time.Duration        // fastest request round trip (write to first byte), with DelayFrom "start"

	share RobotsShare  // robots.txt answers shared with other processes; nil: none
	filer ContentFiler // judges a page's content before its record; nil: the State's Complete does

	sm sitemapState // sitemaps.go

	// known, when not nil, is the Scheduler's knownLinks (the engine
	// in one process): links it holds at their depth or less are left
	// out of Visit.Discovered, which Finish would drop anyway (the same
	// check, made before a page's requests are built: on a site being
	// crawled most of a page's links are known).
	known *knownLinks
}

// RobotsShare shares robots.txt answers between the processes that fetch
// for one crawl, so that a host's robots.txt is fetched once for the crawl,
// not once per fetching process (master–worker: any worker may get any
// host's next URL). Only answers that are not errors are shared (2xx and
// 4xx); a 5xx, 429 or network failure is retried by whoever meets it.
type RobotsShare interface {
	// LoadRobots returns the answer stored for robotsURL, ok false when
	// there is none (or it is older than the store keeps answers).
	LoadRobots(ctx context.Context, robotsURL string) (status int, body []byte, ok bool, err error)
	// StoreRobots records an answer for robotsURL.
	StoreRobots(ctx context.Context, robotsURL string, status int, body []byte) error
}

// ShareRobots makes the fetcher consult s before fetching a robots.txt
// and store what it fetched there. Call it before the first Visit. A
// failing share is logged and the file fetched as if there were none.
func (f *Fetcher) ShareRobots(s RobotsShare) { f.share = s }

// ContentFiler judges a page's content (exact and near duplicates) before
// its record is written: crawlstate.Filer, implemented by the embedded
// state and by the Redis duplicate tables.
type ContentFiler = crawlstate.Filer

// FileContent makes Process judge every page with a fingerprint or a
// SimHash through c before it appends the page's record, so that the
// record names the page it copies (duplicate_of, near) and the Visit
// carries the same decision to the scheduler (Visit.Filed). Call it before
// the first Visit; nil (the default) leaves the decision to the State's
// Complete and the records without duplicate_of. A failing c is logged and
// the page recorded as an original (and filed nowhere).
func (f *Fetcher) FileContent(c ContentFiler) { f.filer = c }

// FetchTimeout is the crawl's time-out of one fetch (Config.Timeout).
func (f *Fetcher) FetchTimeout() time.Duration { return time.Duration(f.cfg.Timeout) }

// NewFetcher prepares the fetch role for cfg (validated, with defaults) and
// opens the local stores in cfg.Data. Before it opens any file there for
// writing it locks the directory (store.LockDir): a second process on the
// same directory (another crawl, worker or layered task) is refused with
// an error that wraps store.ErrLocked and names the holder, and nothing in
// the directory is touched. Close releases the stores, then the lock.
func NewFetcher(cfg Config, logger *slog.Logger, reg prometheus.Registerer) (*Fetcher, error) {
	return newFetcher(cfg, logger, reg, nil)
}

// newFetcher is NewFetcher that calls check, if not nil, once the data
// directory is locked and before any store in it is opened for writing;
// an error from check is returned and nothing is opened.
func newFetcher(cfg Config, logger *slog.Logger, reg prometheus.Registerer, check func() error) (*Fetcher, error) {
	cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid configuration: %w", err)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	resolve := append([]string(nil), cfg.Resolve...)
	if cfg.ResolveFile != "" {
		extra, err := readResolveFile(cfg.ResolveFile)
		if err != nil {
			return nil, err
		}
		resolve = append(resolve, extra...)
	}
	f := &Fetcher{
		cfg:           cfg,
		log:           logger,
		norm:          &urls.Normalizer{SortQuery: cfg.SortQuery, DropParams: cfg.DropParams},
		robotsFetched: map[string]time.Time{},
		robotsErr:     map[string]error{},
		robotsFails:   map[string]int{},
		m:             newMetrics(reg),
		limit:         newRateLimiter(cfg.MaxRate),
	}
	var err error
	f.client, err = fetch.New(fetch.Config{
		UserAgent:        cfg.UserAgent,
		Resolve:          resolve,
		AllowPrivate:     cfg.AllowPrivate,
		ConnectTimeout:   time.Duration(cfg.ConnectTimeout),
		FirstByteTimeout: time.Duration(cfg.FirstByteTimeout),
		TotalTimeout:     time.Duration(cfg.Timeout),
		MaxBodyBytes:     cfg.MaxBodyBytes,
		KeepRaw:          cfg.WARC, // the body as transferred, for the WARC records
	}, logger, reg)
	if err != nil {
		return nil, fmt.Errorf("cannot set up the fetcher: %w", err)
	}
	f.robots = robots.NewCache(f.fetchRobots, robots.CacheOptions{ErrorTTL: time.Duration(cfg.RetryDelay)})
	if _, err := f.SeedRequests(); err != nil {
		return nil, err
	}
	if err := f.buildFilters(); err != nil {
		return nil, err
	}
	f.lock, err = store.LockDir(cfg.Data, lockCommand(), 0)
	if err != nil {
		return nil, err
	}
	if check != nil {
		if err := check(); err != nil {
			f.Close()
			return nil, err
		}
	}
	f.pages, err = store.OpenPageFiles(store.DataDir(cfg.Data).Pages(), store.Options{Logger: logger})
	if err != nil {
		f.Close()
		return nil, err
	}
	f.recs, err = store.OpenRecords(cfg.Data, store.Options{Logger: logger})
	if err != nil {
		f.Close()
		return nil, err
	}
	if cfg.WARC {
		f.warc, err = warc.NewWriter(store.DataDir(cfg.Data).WARC(), "spider", warc.Options{Logger: logger, Dedup: warc.DefaultDedup})
		if err != nil {
			f.Close()
			return nil, err
		}
	}
	return f, nil
}

// Close flushes and closes the local stores; safe to call more than once.
func (f *Fetcher) Close() error {
	var errs []error
	if f.warc != nil {
		errs = append(errs, f.warc.Close())
		f.warc = nil
	}
	if f.recs != nil {
		errs = append(errs, f.recs.Close())
		f.recs = nil
	}
	if f.pages != nil {
		errs = append(errs, f.pages.Close())
		f.pages = nil
	}
	if f.lock != nil {
		errs = append(errs, f.lock.Unlock())
		f.lock = nil
	}
	return errors.Join(errs...)
}

// Sync makes everything stored so far durable (fsync): the page files,
// then the records, then the WARC files. It is the embedded state's
// checkpoint (state.Options.Checkpoint): the state is fsynced after it.
func (f *Fetcher) Sync() error {
	if f.pages == nil {
		return nil // closed: Close synced everything
	}
	if err := f.pages.Sync(); err != nil {
		return err
	}
	if err := f.recs.Sync(); err != nil {
		return err
	}
	if f.warc != nil {
		return f.warc.Sync()
	}
	return nil
}

// lockCommand names this process in the data directory's lock file.
func lockCommand() string {
	if len(os.Args) > 1 {
		return filepath.Base(os.Args[0]) + " " + os.Args[1]
	}
	return filepath.Base(os.Args[0])
}

// buildFilters builds the URL filter chain (SPEC §3: suffix, host, scope,
// depth; robots is checked at fetch time because it needs I/O). Scope is
// built from the configured seeds, so a resumed crawl keeps its scope.
func (f *Fetcher) buildFilters() error {
	var seeds []*url.URL
	for _, s := range f.cfg.Seeds {
		if u, err := f.norm.Parse(s); err == nil {
			seeds = append(seeds, u)
		}
	}
	if len(seeds) == 0 && f.cfg.Scope != "any" && f.cfg.Scope != "regexp" {
		return errors.New("no seed URLs: give at least one http(s) URL to start from")
	}
	scope, err := urls.NewScope(f.cfg.Scope, seeds, f.cfg.ScopeRegexp)
	if err != nil {
		return fmt.Errorf("cannot build scope: %w", err)
	}
	suffix := &urls.SuffixFilter{Deny: f.cfg.DenySuffixes} // nil: the default list
	f.chain = urls.Chain{&urls.LengthFilter{}, suffix, scope, &urls.DepthFilter{Max: f.cfg.MaxDepth}}
	if len(f.cfg.AllowHosts) > 0 || len(f.cfg.DenyHosts) > 0 {
		f.chain = append(f.chain, &urls.HostFilter{Allow: f.cfg.AllowHosts, Deny: f.cfg.DenyHosts})
	}
	if f.cfg.relink() {
		f.keepBeyond()
	}
	return nil
}

// keepBeyond sets beyondChain: the chain without the depth filter, so
// that a link it passes and the full chain rejects was cut by depth
// alone (Visit.Beyond).
func (f *Fetcher) keepBeyond() {
	f.beyondChain = slices.DeleteFunc(slices.Clone(f.chain), func(fl urls.Filter) bool {
		_, isDepth := fl.(*urls.DepthFilter)
		return isDepth
	})
}

// KeepBeyond makes Visit fill Visit.Beyond under a depth limit (MaxDepth
// ≥ 0) even when depth levels do not overlap in this process: for a
// peer-to-peer crawl, whose nodes each go level by level while their
// levels overlap across nodes, so that the shared state relinks
// (rstate.Options.Relink). Without a depth limit it does nothing. Call it
// before the first Visit.
func (f *Fetcher) KeepBeyond() {
	if f.cfg.MaxDepth >= 0 && f.beyondChain == nil {
		f.keepBeyond()
	}
}

// SeedRequests normalises the configured seeds into depth-0 requests.
func (f *Fetcher) SeedRequests() ([]frontier.Request, error) {
	var out []frontier.Request
	var errs []error
	for _, s := range f.cfg.Seeds {
		u, err := f.norm.Parse(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("seed %q is not a usable http(s) URL: %w", s, err))
			continue
		}
		out = append(out, f.request(u, 0, 0))
	}
	return out, errors.Join(errs...)
}

// request builds a frontier request for u: politeness key and priority
// (shallower pages first, SPEC §3 "score priority").
func (f *Fetcher) request(u *url.URL, depth, redirects int) frontier.Request {
	return f.requestOf(u, u.String(), depth, redirects)
}

// requestOf is request for u whose string form s the caller has.
func (f *Fetcher) requestOf(u *url.URL, s string, depth, redirects int) frontier.Request {
	return frontier.Request{URL: s, Key: f.key(u), Depth: depth, Priority: depth, Redirects: redirects}
}

// key is the politeness key: host:port, or the first resolved IP with PerIP.
func (f *Fetcher) key(u *url.URL) string {
	hp := urls.HostPort(u)
	if !f.cfg.PerIP {
		return hp
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(f.cfg.ConnectTimeout))
	defer cancel()
	ips, err := f.client.Resolver().LookupIP(ctx, u.Hostname(), portOf(u))
	if err != nil || len(ips) == 0 {
		return hp
	}
	return "ip:" + ips[0].String()
}

func portOf(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if u.Scheme == "https" {
		return "443"
	}
	return "80"
}

// fetchRobots is the robots cache's fetch function; it remembers when each
// host's robots.txt was fetched (so the page fetch that follows keeps the
// host's delay) and why it failed.
func (f *Fetcher) fetchRobots(ctx context.Context, u *url.URL) (int, []byte, error) {
	if f.share != nil {
		status, body, ok, err := f.share.LoadRobots(ctx, u.String())
		if err != nil {
			f.log.Warn("cannot read the shared robots.txt; fetching it", "url", u.String(), "err", err)
		} else if ok {
			f.m.robotsShared.Inc()
			return status, body, nil
		}
	}
	f.limit.wait(ctx)
	rctx, tr := ctx, (*reqTrace)(nil)
	if f.cfg.DelayFrom == DelayFromStart {
		rctx, tr = traceRequest(ctx)
	}
	var status int
	var body []byte
	resp, err := f.client.RobotsResponse(rctx, u)
	if err == nil {
		status, body = resp.Status, resp.Body
		f.archiveRobots(ctx, resp)
	}
	if f.share != nil && err == nil && status < 500 && status != 429 {
		if serr := f.share.StoreRobots(ctx, u.String(), status, body); serr != nil {
			f.log.Warn("cannot share robots.txt", "url", u.String(), "err", serr)
		}
	}
	// The gap is measured from the end of the exchange, as the frontier
	// does, or from its start with DelayFrom "start".
	hp := urls.HostPort(u)
	at := time.Now()
	if f.cfg.DelayFrom == DelayFromStart {
		at = f.arrivalBound(tr)
	}
	f.robotsMu.Lock()
	f.robotsFetched[hp] = at
	if err != nil {
		f.robotsErr[hp] = err
	} else {
		delete(f.robotsErr, hp)
	}
	if err != nil || status >= 500 || status == 429 {
		f.robotsFails[hp]++
	} else {
		delete(f.robotsFails, hp)
	}
	f.robotsMu.Unlock()
	return status, body, err
}

// reqTrace notes when a request was written to its connection and when
// the first byte of its answer came back (UnixNano, 0 = not yet).
type reqTrace struct{ written, firstByte atomic.Int64 }

// traceRequest returns ctx with a trace filling a new reqTrace.
func traceRequest(ctx context.Context) (context.Context, *reqTrace) {
	t := &reqTrace{}
	trace := &httptrace.ClientTrace{
		WroteRequest: func(httptrace.WroteRequestInfo) { t.written.CompareAndSwap(0, time.Now().UnixNano()) },
		GotFirstResponseByte: func() {
			t.firstByte.CompareAndSwap(0, time.Now().UnixNano())
		},
	}
	return httptrace.WithClientTrace(ctx, trace), t
}

// arrivalBound estimates, for a start-to-start delay (DelayFrom "start"),
// the latest time the server can have seen the traced request: the first
// byte of its answer less the fastest round trip (write to first byte) of
// any request so far, plus startGuard. A server answers no sooner than its
// own processing time after seeing a request, and the fastest round trip
// bounds that time from above only if it was measured on an unloaded
// moment; taking the fastest over all hosts makes that likely early in a
// crawl (a per-host minimum over a host's first requests, inflated under
// load, let gaps at the server fall 25 ms short). On an idle machine the
// estimate is about the write time; for a host farther away than the
// nearest one it moves towards the answer, as with DelayFrom "done". A
// request never written or never answered counts from now.
func (f *Fetcher) arrivalBound(t *reqTrace) time.Time {
	now := time.Now()
	w, fb := t.written.Load(), t.firstByte.Load()
	if w == 0 || fb == 0 || fb < w {
		return now
	}
	rtt := time.Duration(fb - w)
	f.robotsMu.Lock()
	if f.fastestRTT == 0 || rtt < f.fastestRTT {
		f.fastestRTT = rtt
	}
	fastest := f.fastestRTT
	f.robotsMu.Unlock()
	return time.Unix(0, fb).Add(f.cfg.startGuard() - fastest)
}

// Visit fetches one URL handed out at leaseStart and, unless it is to be
// retried, stores what it got locally (body, record, WARC) before
// returning, so the scheduler may complete it. It returns an error only
// when local storage failed; everything a web server does wrong is an
// outcome.
//
// Visit is Fetch then Process: a caller that ends the host's turn as soon
// as the answer was read (Scheduler.EndTurn) calls the two itself.
func (f *Fetcher) Visit(ctx context.Context, req frontier.Request, leaseStart time.Time) (Visit, error) {
	return f.Process(ctx, f.Fetch(ctx, req, leaseStart))
}

// Fetched is one URL's answer, read (or why there is none: robots.txt, a
// network error, a retry), and not yet processed: Fetch makes it, Process
// parses and stores it. It holds the body, so a bounded number of them
// should be waiting at any time.
type Fetched struct {
	req        frontier.Request
	leaseStart time.Time
	start      time.Time
	res        result
}

// Fetch does the part of a visit that talks to the URL's host: robots.txt
// (under the host's lease), the request and the reading of the answer. It
// returns when the answer has been read; the host's turn may end then
// (Fetched.Turn, Scheduler.EndTurn) while Process parses and stores it.
func (f *Fetcher) Fetch(ctx context.Context, req frontier.Request, leaseStart time.Time) *Fetched {
	start := time.Now()
	return &Fetched{req: req, leaseStart: leaseStart, start: start, res: f.visit(ctx, req, leaseStart)}
}

// Turn is what the host's turn needs from the fetch, known before the
// answer is processed: Request, Outcome (the status so far), Retry, Delay,
// CrawlDelay and RequestAfter. A Turn with Retry is final: Process adds
// nothing to it.
func (fd *Fetched) Turn() Visit {
	res := &fd.res
	v := Visit{Request: fd.req, Outcome: res.rec.Outcome, Retry: res.retry, Delay: res.delay, CrawlDelay: res.crawlDelay}
	if !res.requested.IsZero() {
		v.RequestAfter = max(res.requested.Sub(fd.leaseStart), 0)
	}
	return v
}

// Process parses what Fetch read (links, title, text, fingerprint) and,
// unless the URL is to be retried or ctx has ended, stores it locally
// (body, record, WARC) before returning, so that the scheduler may
// complete it. It returns an error only when local storage failed. Call
// it once per Fetched.
func (f *Fetcher) Process(ctx context.Context, fd *Fetched) (Visit, error) {
	res := &fd.res
	req := fd.req
	if res.page != nil && ctx.Err() == nil {
		f.parsePage(res, req)
	}
	v := fd.Turn()
	v.Outcome, v.Discovered, v.Beyond, v.Fingerprint, v.Text = res.rec.Outcome, res.discovered, res.beyond, res.fp, res.text
	v.SimHash = res.sim
	v.Conditional, v.NotModified, v.ETag, v.LastModified, v.RetryAfter = res.conditional, res.notModified, res.etag, res.lastModified, res.retryAfter
	if res.fp == 0 && res.body != nil {
		v.ContentHash = dedup.Fingerprint(res.body)
	} else if res.entriesHash != 0 {
		v.ContentHash = res.entriesHash // a sitemap's entries (sitemaps.go)
	}
	if res.retry || ctx.Err() != nil {
		return v, nil
	}
	start := fd.start
	rec := &res.rec
	rec.PageNo = -1
	if res.body != nil {
		no, err := f.pages.Append(rec.FinalURL, rec.FetchedAt, res.body)
		if err != nil {
			return v, fmt.Errorf("cannot store page %s: %w", rec.URL, err)
		}
		rec.PageNo = no
		rec.BodyCRC = store.BodyChecksum(res.body)
		v.PageNext = no + 1
	}
	if res.exchange != nil && f.warc != nil {
		if err := f.warc.WriteExchange(ctx, *res.exchange); err != nil {
			return v, fmt.Errorf("cannot write WARC records for %s: %w", rec.URL, err)
		}
	}
	if res.fp != 0 {
		rec.Fingerprint = strconv.FormatUint(res.fp, 16)
	}
	if res.sim != 0 {
		rec.SimHash = strconv.FormatUint(res.sim, 16)
	}
	if f.filer != nil && (res.fp != 0 || res.sim != 0) {
		// One decision per page, made before the record is written (and
		// so before the completion): the record, the counters and the log
		// agree. A kill before the completion refetches the URL, which is
		// never a duplicate of itself.
		dup, near, err := f.filer.File(ctx, req.URL, res.fp, res.sim, f.cfg.NearDupDistance)
		if err != nil {
			f.log.Warn("a page is recorded without a duplicate check: the duplicate tables failed", "url", req.URL, "err", err)
			dup, near = "", false
		}
		v.Filed, v.DuplicateOf, v.Near = true, dup, near && dup != ""
		rec.DuplicateOf, rec.Near = v.DuplicateOf, v.Near
	}
	rec.DurationMS = time.Since(start).Milliseconds()
	// The record reaches the OS before the scheduler completes the URL: a
	// kill between the two refetches the URL and appends a second record
	// (readers keep the last one), but never loses a record.
	end, err := f.recs.AppendEnd(*rec)
	if err != nil {
		return v, fmt.Errorf("cannot append record for %s: %w", req.URL, err)
	}
	v.RecordsEnd = end
	f.tally.Add(*rec)
	return v, nil
}

// Tally returns the counts of the records this fetcher wrote since
// NewFetcher (this run's, for the crawl-wide report).
func (f *Fetcher) Tally() Counts { return f.tally.Counts() }

// result is what visiting one URL produced, before it is made durable.
type result struct {
	rec        store.Record
	discovered []frontier.Request
	beyond     []frontier.Request // links cut by the depth limit alone (Visit.Beyond)
	requested  time.Time          // page request sent (DelayFrom "start": seen by the server at the latest, arrivalBound); zero if none
	retry      bool
	delay      time.Duration
	crawlDelay time.Duration
	body       []byte // stored in the page files when non-nil
	fp         uint64
	sim        uint64 // near-duplicate SimHash (Visit.SimHash)
	text       string // parsed page text
	exchange   *warc.Exchange
	// page is a 2xx HTML answer still to be parsed (Process), with
	// pageBase the URL its links resolve against; nil once parsed.
	page     *fetch.Response
	pageBase *url.URL
	// The revisit schedule's view of the answer (Visit.Conditional …).
	conditional, notModified bool
	etag                     string
	lastModified             time.Time
	retryAfter               time.Duration
	// entriesHash is a sitemap's content hash (its entries as read), so
	// that a revisit sees it change; 0 for pages.
	entriesHash uint64
}

// visit checks robots.txt, fetches and parses one URL.
func (f *Fetcher) visit(ctx context.Context, req frontier.Request, leaseStart time.Time) result {
	res := result{rec: store.Record{URL: req.URL, FinalURL: req.URL, Depth: req.Depth, FetchedAt: time.Now().UTC(), Attempts: req.Attempt + 1}}
	u, err := url.Parse(req.URL)
	if err != nil {
		res.rec.Outcome, res.rec.Error = OutcomeError, "stored URL does not parse: "+err.Error()
		return res
	}

	// robots.txt (SPEC §3 robots module), fetched under this host's lease.
	rb, err := f.robots.Get(ctx, u)
	if err != nil {
		res.rec.Outcome, res.rec.Error = OutcomeError, err.Error()
		return res
	}
	group := rb.Group(f.cfg.RobotsAgent)
	hostDelay := time.Duration(f.cfg.Delay)
	if d, ok := group.CrawlDelay(); ok {
		res.crawlDelay = min(d, time.Duration(f.cfg.MaxCrawlDelay))
		hostDelay = max(hostDelay, res.crawlDelay)
	}
	if rb.Kind() == robots.KindUnreachable {
		f.robotsMu.Lock()
		cause := f.robotsErr[urls.HostPort(u)]
		f.robotsMu.Unlock()
		if cause != nil && errorOutcome(cause) == OutcomeForbiddenAddress {
			// Not a transient failure: the host resolves to an address the
			// crawler refuses (no --allow-private). Say so, do not retry.
			res.rec.Outcome, res.rec.Error = OutcomeForbiddenAddress, cause.Error()
			return res
		}
		var dnsErr *net.DNSError
		if cause != nil && errors.As(cause, &dnsErr) && dnsErr.IsNotFound {
			// The name does not exist (NXDOMAIN): retrying will not help.
			res.rec.Outcome, res.rec.Error = OutcomeDNS, cause.Error()
			return res
		}
		// RFC 9309 §2.3.1.4: the server may be down; assume complete
		// disallow and try again later. The retries are counted per host:
		// once its robots.txt failed more than MaxRetries times in a row,
		// every URL of the host ends at once instead of each waiting out
		// the whole back-off again.
		f.robotsMu.Lock()
		fails := f.robotsFails[urls.HostPort(u)]
		f.robotsMu.Unlock()
		if fails <= f.cfg.MaxRetries {
			res.retry, res.delay = true, f.backoff(max(fails-1, 0), 0)
			return res
		}
		res.rec.Outcome, res.rec.Error = OutcomeRobotsUnavailable, "robots.txt unavailable (5xx or unreachable) after retries"
		if cause != nil {
			switch o := errorOutcome(cause); o {
			case OutcomeDNS, OutcomeRefused, OutcomeTLS, OutcomeUnreachable, OutcomeTimeout, OutcomeReset:
				// The host never answered (its name did not resolve, or
				// no connection could be made): name the cause, which the
				// crawl summary explains, not robots.txt.
				res.rec.Outcome, res.rec.Error = o, cause.Error()
			}
		}
		return res
	}
	res.discovered = f.hostSitemaps(u, rb, leaseStart) // sitemaps.go: when robots.txt was fetched under this lease
	if !group.Allowed(u.RequestURI()) {
		res.rec.Outcome = OutcomeRobots
		return res
	}

	f.waitAfterRobots(ctx, u, leaseStart, hostDelay)
	f.limit.wait(ctx)
	fctx, tr := ctx, (*reqTrace)(nil)
	res.requested = time.Now()
	if f.cfg.DelayFrom == DelayFromStart {
		fctx, tr = traceRequest(ctx)
	}
	if req.Kind == frontier.KindSitemap {
		f.readSitemap(ctx, fctx, &res, req, u) // sitemaps.go
		if tr != nil {
			res.requested = f.arrivalBound(tr)
		}
		return res
	}
	freq := &fetch.Request{URL: u}
	res.conditional = conditionalHeaders(freq, req.Schedule)
	resp, err := f.client.Fetch(fctx, freq)
	if tr != nil {
		res.requested = f.arrivalBound(tr)
	}
	if err != nil {
		res.rec.Outcome, res.rec.Error = errorOutcome(err), err.Error()
		if ctx.Err() == nil && retryable(res.rec.Outcome) && req.Attempt < f.cfg.MaxRetries {
			res.retry, res.delay = true, f.backoff(req.Attempt, 0)
		}
		f.m.fetchErrors.WithLabelValues(res.rec.Outcome).Inc()
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
		rec.Error = fmt.Sprintf("body truncated at %d bytes", f.cfg.MaxBodyBytes)
	}
	res.etag, res.lastModified = validatorsOf(resp)
	res.retryAfter = resp.RetryAfter

	switch {
	case resp.Status == 429 || resp.Status >= 500:
		if req.Attempt < f.cfg.MaxRetries {
			res.retry, res.delay = true, f.backoff(req.Attempt, resp.RetryAfter)
			return res
		}
	case resp.Status == 304:
		// Not modified: the stored copy stands. The record says so (status
		// 304, no page); readers of records keep the URL's previous one.
		res.notModified = true
		if !res.conditional {
			rec.Error = "304 Not Modified to a request without validators (the server's fault): no copy to keep"
		}
	case resp.Status >= 300 && resp.Status < 400:
		f.redirect(&res, resp, req)
	}
	res.exchange = warcExchange(req, resp, rec.FetchedAt)
	if resp.Status < 200 || resp.Status >= 300 {
		return res
	}
	if !resp.IsHTML() {
		res.body = resp.Body
		return res
	}
	res.body = resp.Body
	res.page, res.pageBase = resp, u
	if resp.FinalURL != nil {
		res.pageBase = resp.FinalURL
	}
	return res
}

// linkBufs holds parse.Page.Links slices between pages (parse.Options.Links):
// a documentation page's hundreds of links make a slice of about 40 KB.
var linkBufs = sync.Pool{New: func() any { return new([]parse.Link) }}

// maxPooledLinks bounds the links slices linkBufs keeps, and the pages
// whose links are de-duplicated in a set of seenSets.
const maxPooledLinks = 4096

// seenSets holds the sets links de-duplicates a page's links in.
var seenSets = sync.Pool{New: func() any { m := make(map[string]struct{}); return &m }}

// parsePage converts res.page to UTF-8 and parses it: title, text,
// fingerprint, out-links and discovered requests.
func (f *Fetcher) parsePage(res *result, req frontier.Request) {
	resp, base := res.page, res.pageBase
	res.page, res.pageBase = nil, nil
	rec := &res.rec
	body, err := resp.UTF8()
	if err != nil {
		rec.Error = "cannot convert to UTF-8: " + err.Error()
		return
	}
	res.body = body
	links := linkBufs.Get().(*[]parse.Link)
	page, err := parse.Parse(base, body, parse.Options{Unresolved: true, Links: *links})
	if err != nil {
		linkBufs.Put(links)
		rec.Error = "cannot parse HTML: " + err.Error()
		return
	}
	defer func() {
		// Nothing keeps page.Links: the record holds the links' strings.
		if cap(page.Links) <= maxPooledLinks {
			clear(page.Links)
			*links = page.Links[:0]
		}
		linkBufs.Put(links)
	}()
	rec.Title = page.Title
	if len(page.Text) > 0 {
		// One walk of the text for both hashes.
		res.fp, res.sim = dedup.PageHashes(page.Text, f.cfg.NearDupDistance > 0)
		res.text = page.Text
	}
	f.links(res, page, req.Depth)
	if f.cfg.Canonical {
		f.canonical(res, resp, page, req)
	}
	res.exchange.OutLinks = rec.OutLinks
}

// links normalises the page's links into the record's out-links and keeps
// the followable ones that pass the filter chain as discovered requests.
// The links come unresolved (parse.Options.Unresolved): each is resolved
// and normalised in one pass against the page's base (a urls.Resolver:
// the page's host canonicalised once), and turned into a string once, which
// the filter chain reuses (urls.Chain.CheckString).
func (f *Fetcher) links(res *result, page *parse.Page, depth int) {
	nofollowPage := page.MetaRobots.NoFollow && !f.cfg.FollowNofollow
	var seen map[string]struct{}
	if len(page.Links) <= maxPooledLinks {
		sp := seenSets.Get().(*map[string]struct{})
		defer func() {
			clear(*sp)
			seenSets.Put(sp)
		}()
		seen = *sp
	} else {
		seen = make(map[string]struct{}, len(page.Links))
	}
	res.rec.OutLinks = make([]string, 0, len(page.Links))
	var lastScheme, lastHost, lastKey string // most links share a host: its key once
	request := func(n *url.URL, s string, depth int) frontier.Request {
		if n.Host != lastHost || n.Scheme != lastScheme || lastKey == "" {
			lastScheme, lastHost, lastKey = n.Scheme, n.Host, f.key(n)
		}
		return frontier.Request{URL: s, Key: lastKey, Depth: depth, Priority: depth}
	}
	resolver := f.norm.Resolver(page.Base) // the page's host canonicalised once
	for i := range page.Links {
		l := &page.Links[i]
		n, s, err := resolver.ResolveString(l.Raw)
		if err != nil {
			continue
		}
		if _, dup := seen[s]; dup {
			continue
		}
		seen[s] = struct{}{}
		res.rec.OutLinks = append(res.rec.OutLinks, s)
		if nofollowPage || l.NoFollow && !f.cfg.FollowNofollow {
			continue
		}
		if f.cfg.Canonical && isCanonicalLink(l) {
			continue // canonical decides (same host, in scope), never an ordinary link
		}
		if f.chain.CheckString(n, s, depth+1) != nil {
			if f.beyondChain != nil && f.beyondChain.CheckString(n, s, depth+1) == nil {
				res.beyond = append(res.beyond, request(n, s, depth+1))
			}
			continue
		}
		if f.known != nil && f.known.has(s, depth+1) {
			continue
		}
		res.discovered = append(res.discovered, request(n, s, depth+1))
	}
	// A meta refresh's target is among the links (parse.Page.Links).
}

// ipOnly drops a port from a remote address, if it has one.
func ipOnly(addr string) string {
	if host, _, err := net.SplitHostPort(addr); err == nil {
		return host
	}
	return strings.Trim(addr, "[]")
}

// redirect queues a 3xx's target as a new URL at the same depth (it is
// fetched under its own host's politeness), or records too-many-redirects.
func (f *Fetcher) redirect(res *result, resp *fetch.Response, req frontier.Request) {
	if resp.Location == nil {
		res.rec.Error = "redirect without a usable Location header"
		return
	}
	n, err := f.norm.Resolve(resp.URL, resp.Location.String())
	if err != nil {
		res.rec.Error = "redirect to an unusable URL: " + err.Error()
		return
	}
	res.rec.OutLinks = []string{n.String()}
	if req.Redirects+1 > f.cfg.MaxRedirects {
		res.rec.Outcome = OutcomeTooManyRedirects
		return
	}
	// Depth is kept, so the depth filter passes; scope and suffix apply.
	if err := f.chain.Check(n, req.Depth); err != nil {
		if rej, ok := urls.AsRejection(err); ok {
			res.rec.Error = "redirect target rejected by " + rej.Filter + " filter: " + rej.Reason
		}
		return
	}
	res.discovered = append(res.discovered, f.request(n, req.Depth, req.Redirects+1))
}

// waitAfterRobots keeps the host's delay between a robots.txt fetch made
// under this lease and the page fetch that follows it.
func (f *Fetcher) waitAfterRobots(ctx context.Context, u *url.URL, leaseStart time.Time, delay time.Duration) {
	f.robotsMu.Lock()
	t, ok := f.robotsFetched[urls.HostPort(u)]
	f.robotsMu.Unlock()
	if !ok || t.Before(leaseStart) {
		return
	}
	wait := time.Until(t.Add(delay))
	if wait <= 0 {
		return
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-ctx.Done():
	case <-timer.C:
	}
}

// backoff is the wait before retry number attempt+1: RetryDelay doubled per
// attempt, or the server's Retry-After if longer (capped at 10 minutes).
func (f *Fetcher) backoff(attempt int, retryAfter time.Duration) time.Duration {
	d := time.Duration(f.cfg.RetryDelay) << attempt
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
	case fetch.OutcomeTLS:
		return OutcomeTLS
	case fetch.OutcomeUnreachable:
		return OutcomeUnreachable
	}
	return OutcomeError
}

// retryable outcomes are transient failures worth another try. Time-outs
// are not retried: a server that hangs would cost a worker each time.
func retryable(outcome string) bool {
	return outcome == OutcomeReset || outcome == OutcomeRefused
}

func readResolveFile(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read resolve file: %w", err)
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		out = append(out, line)
	}
	return out, nil
}
