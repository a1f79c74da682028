// Package crawl is the crawl engine: it ties the frontier, the durable
// crawl state, the fetcher, robots.txt, the parser and the page store into
// the loop every worker runs:
//
//	lease := frontier.Next()             // politeness: one host, its delay
//	robots.txt (cached per host)          // disallowed → outcome "robots"
//	fetch (no redirects followed inline)  // a 3xx queues its target, same depth
//	parse, filter, normalise the links
//	store page, record, WARC              // written to the OS before…
//	state.Complete(req, outcome, links)   // …one atomic transaction
//	frontier.PushAll(new URLs); frontier.Done(lease)
//
// Because a page's record and body reach the OS before the transaction that
// removes it from the pending set, and its discovered links are added in
// that same transaction, a crawl killed at any moment resumes with nothing
// lost; only the URLs in flight at the kill are fetched again.
package crawl

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"

	"github.com/spider-crawler/spider/internal/fetch"
	"github.com/spider-crawler/spider/internal/frontier"
	"github.com/spider-crawler/spider/internal/robots"
	"github.com/spider-crawler/spider/internal/state"
	"github.com/spider-crawler/spider/internal/store"
	"github.com/spider-crawler/spider/internal/store/warc"
	"github.com/spider-crawler/spider/internal/urls"
)

// Engine runs one crawl on one machine over the embedded back-end.
type Engine struct {
	cfg    Config
	log    *slog.Logger
	norm   *urls.Normalizer
	chain  urls.Chain
	client *fetch.Client
	robots *robots.Cache
	fr     *frontier.Frontier
	st     *state.Store
	pages  *store.PageFiles
	recs   *store.Records
	warc   *warc.Writer
	limit  *rateLimiter
	m      *metrics

	robotsMu      sync.Mutex
	robotsFetched map[string]time.Time // host:port → time of the last robots.txt fetch
	robotsErr     map[string]error     // host:port → why its last robots.txt fetch failed

	fetched   atomic.Int64 // completions in this run
	errs      atomic.Int64
	started   time.Time
	hostMu    sync.Mutex
	hostPages map[string]int64 // this run's completions per host
	stopOnce  sync.Once
	stop      context.CancelFunc
}

// New opens the data directory (creating it), the crawl state and the page
// store, and prepares the fetcher. Close releases them. reg may be nil.
func New(cfg Config, logger *slog.Logger, reg prometheus.Registerer) (*Engine, error) {
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
	if err := os.MkdirAll(cfg.Data, 0o755); err != nil {
		return nil, fmt.Errorf("cannot create data directory %s: %w", cfg.Data, err)
	}
	e := &Engine{
		cfg:           cfg,
		log:           logger,
		norm:          &urls.Normalizer{SortQuery: cfg.SortQuery, DropParams: cfg.DropParams},
		robotsFetched: map[string]time.Time{},
		robotsErr:     map[string]error{},
		hostPages:     map[string]int64{},
		m:             newMetrics(reg),
		limit:         newRateLimiter(cfg.MaxRate),
	}
	var err error
	e.client, err = fetch.New(fetch.Config{
		UserAgent:        cfg.UserAgent,
		Resolve:          resolve,
		AllowPrivate:     cfg.AllowPrivate,
		ConnectTimeout:   time.Duration(cfg.ConnectTimeout),
		FirstByteTimeout: time.Duration(cfg.FirstByteTimeout),
		TotalTimeout:     time.Duration(cfg.Timeout),
		MaxBodyBytes:     cfg.MaxBodyBytes,
	}, logger, reg)
	if err != nil {
		return nil, fmt.Errorf("cannot set up the fetcher: %w", err)
	}
	e.robots = robots.NewCache(e.fetchRobots, robots.CacheOptions{ErrorTTL: time.Duration(cfg.RetryDelay)})
	e.st, err = state.Open(filepath.Join(cfg.Data, "state"), state.Options{
		SeenMode: cfg.Seen, ExpectedURLs: cfg.ExpectedURLs, FPRate: cfg.FPRate, Logger: logger,
	})
	if err != nil {
		return nil, err
	}
	cleanup := func() { e.Close() }
	e.pages, err = store.OpenPageFiles(filepath.Join(cfg.Data, "pages"), store.Options{Logger: logger})
	if err != nil {
		cleanup()
		return nil, err
	}
	e.recs, err = store.OpenRecords(cfg.Data, store.Options{Logger: logger})
	if err != nil {
		cleanup()
		return nil, err
	}
	if cfg.WARC {
		e.warc, err = warc.NewWriter(filepath.Join(cfg.Data, "warc"), "spider", warc.Options{Logger: logger})
		if err != nil {
			cleanup()
			return nil, err
		}
	}
	fq, strict := frontierLevels(cfg)
	e.fr, err = frontier.New(frontier.Config{
		FrontQueues:  fq,
		Strict:       strict,
		PerKey:       cfg.PerHost,
		Delay:        frontierDelay(cfg.Delay),
		MemoryBudget: cfg.MemoryBudget,
		SpillDir:     filepath.Join(cfg.Data, "spill"),
		Logger:       logger,
		Registerer:   reg,
	})
	if err != nil {
		cleanup()
		return nil, err
	}
	return e, nil
}

// maxLevels bounds the front queues used for depth levels; deeper pages
// share the last level.
const maxLevels = 64

// frontierLevels gives one front queue per depth level and turns on the
// level barrier unless the depth is unlimited or LooseDepth is set.
func frontierLevels(cfg Config) (queues int, strict bool) {
	if cfg.MaxDepth < 0 || cfg.LooseDepth {
		return frontier.DefaultFrontQueues, false
	}
	return min(cfg.MaxDepth+1, maxLevels), true
}

// frontierDelay maps the configured delay to the frontier's: zero there
// means "default", so no delay is spelled NoDelay.
func frontierDelay(d Duration) time.Duration {
	if d <= 0 {
		return frontier.NoDelay
	}
	return time.Duration(d)
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

// Close flushes and closes everything New opened. It is safe to call more
// than once.
func (e *Engine) Close() error {
	var errs []error
	if e.fr != nil {
		e.fr.Close()
		e.fr = nil
	}
	if e.warc != nil {
		errs = append(errs, e.warc.Close())
		e.warc = nil
	}
	if e.recs != nil {
		errs = append(errs, e.recs.Close())
		e.recs = nil
	}
	if e.pages != nil {
		errs = append(errs, e.pages.Close())
		e.pages = nil
	}
	if e.st != nil {
		errs = append(errs, e.st.Close())
		e.st = nil
	}
	return errors.Join(errs...)
}

// Progress is a snapshot of a running crawl.
type Progress struct {
	Fetched  int64         // completions in this run
	Errors   int64         // completions that were not 2xx/3xx in this run
	Queued   int           // URLs waiting in the frontier (memory and spill)
	InFlight int           // URLs being fetched
	Hosts    int           // hosts with queued URLs
	Elapsed  time.Duration // since Run started
}

// Progress reports the crawl's state; it is safe to call during Run.
func (e *Engine) Progress() Progress {
	st := e.fr.Stats()
	return Progress{
		Fetched:  e.fetched.Load(),
		Errors:   e.errs.Load(),
		Queued:   st.Queued + int(st.Spilled),
		InFlight: st.Leased,
		Hosts:    st.Keys,
		Elapsed:  time.Since(e.started),
	}
}

// Run crawls until no URL is pending, MaxPages is reached, or ctx ends. It
// resumes whatever a previous run in the same data directory left pending.
// On ctx cancellation it returns ctx's error after the workers stopped; the
// state stays consistent and a later Run continues.
func (e *Engine) Run(ctx context.Context) error {
	e.started = time.Now()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	e.stop = cancel

	resumed := 0
	if err := e.st.LoadPending(ctx, func(r frontier.Request) error {
		resumed++
		return e.fr.Push(r)
	}); err != nil {
		return fmt.Errorf("cannot resume pending URLs: %w", err)
	}
	if resumed > 0 {
		e.log.Info("resuming crawl", "pending", resumed)
	}
	seeds, err := e.seedRequests()
	if err != nil {
		return err
	}
	if err := e.buildFilters(); err != nil {
		return err
	}
	news, err := e.st.Discover(ctx, seeds)
	if err != nil {
		return fmt.Errorf("cannot record seeds: %w", err)
	}
	if err := e.fr.PushAll(news); err != nil {
		return err
	}
	if e.limitReached() {
		e.log.Info("page limit already reached", "max_pages", e.cfg.MaxPages)
		return nil
	}

	g, gctx := errgroup.WithContext(ctx)
	for i := 0; i < e.cfg.Concurrency; i++ {
		g.Go(func() error { return e.worker(gctx) })
	}
	err = g.Wait()
	if err == nil || errors.Is(err, context.Canceled) && ctx.Err() != nil && e.limitReached() {
		err = nil
	}
	if serr := e.st.Sync(); serr != nil && err == nil {
		err = serr
	}
	if serr := e.pages.Sync(); serr != nil && err == nil {
		err = serr
	}
	return err
}

func (e *Engine) limitReached() bool {
	if e.cfg.MaxPages <= 0 {
		return false
	}
	c, err := e.st.Counters(context.Background())
	if err != nil {
		return false
	}
	var total int64
	for _, n := range c {
		total += n
	}
	return total >= e.cfg.MaxPages
}

func (e *Engine) seedRequests() ([]frontier.Request, error) {
	var out []frontier.Request
	var errs []error
	for _, s := range e.cfg.Seeds {
		u, err := e.norm.Parse(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("seed %q is not a usable http(s) URL: %w", s, err))
			continue
		}
		out = append(out, e.request(u, 0, 0))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// buildFilters builds the URL filter chain (SPEC §3: suffix, host, scope,
// depth; robots is checked at fetch time because it needs I/O). Scope is
// built from the configured seeds, so a resumed crawl keeps its scope.
func (e *Engine) buildFilters() error {
	var seeds []*url.URL
	for _, s := range e.cfg.Seeds {
		if u, err := e.norm.Parse(s); err == nil {
			seeds = append(seeds, u)
		}
	}
	if len(seeds) == 0 && e.cfg.Scope != "any" && e.cfg.Scope != "regexp" {
		return errors.New("no seed URLs: give at least one http(s) URL to start from")
	}
	scope, err := urls.NewScope(e.cfg.Scope, seeds, e.cfg.ScopeRegexp)
	if err != nil {
		return fmt.Errorf("cannot build scope: %w", err)
	}
	suffix := &urls.SuffixFilter{Deny: e.cfg.DenySuffixes} // nil: the default list
	e.chain = urls.Chain{&urls.LengthFilter{}, suffix, scope, &urls.DepthFilter{Max: e.cfg.MaxDepth}}
	if len(e.cfg.AllowHosts) > 0 || len(e.cfg.DenyHosts) > 0 {
		e.chain = append(e.chain, &urls.HostFilter{Allow: e.cfg.AllowHosts, Deny: e.cfg.DenyHosts})
	}
	return nil
}

// request builds a frontier request for u: politeness key and priority
// (shallower pages first, SPEC §3 "score priority").
func (e *Engine) request(u *url.URL, depth, redirects int) frontier.Request {
	return frontier.Request{
		URL:       u.String(),
		Key:       e.key(u),
		Depth:     depth,
		Priority:  depth,
		Redirects: redirects,
	}
}

// key is the politeness key: host:port, or the first resolved IP with PerIP.
func (e *Engine) key(u *url.URL) string {
	hp := urls.HostPort(u)
	if !e.cfg.PerIP {
		return hp
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(e.cfg.ConnectTimeout))
	defer cancel()
	ips, err := e.client.Resolver().LookupIP(ctx, u.Hostname(), portOf(u))
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

func (e *Engine) worker(ctx context.Context) error {
	for {
		lease, err := e.fr.Next(ctx)
		if errors.Is(err, frontier.ErrDrained) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := e.process(ctx, lease); err != nil {
			return err
		}
		if e.limitReachedFast() {
			e.stopOnce.Do(func() {
				e.log.Info("page limit reached, stopping", "max_pages", e.cfg.MaxPages)
				e.stop()
			})
			return context.Canceled
		}
	}
}

func (e *Engine) limitReachedFast() bool {
	return e.cfg.MaxPages > 0 && e.fetched.Load()%16 == 0 && e.limitReached()
}

// fetchRobots is the robots cache's fetch function; it remembers when each
// host's robots.txt was fetched so the page fetch that follows can keep the
// host's delay.
func (e *Engine) fetchRobots(ctx context.Context, u *url.URL) (int, []byte, error) {
	e.limit.wait(ctx)
	status, body, err := e.client.RobotsFetch(ctx, u)
	// The gap is measured from the end of the exchange, as the frontier does.
	hp := urls.HostPort(u)
	e.robotsMu.Lock()
	e.robotsFetched[hp] = time.Now()
	if err != nil {
		e.robotsErr[hp] = err
	} else {
		delete(e.robotsErr, hp)
	}
	e.robotsMu.Unlock()
	return status, body, err
}
