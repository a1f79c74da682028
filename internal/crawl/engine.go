// Package crawl is the crawl engine. It has two roles (../../ARCHITECTURE.md):
//
//   - the fetch role, Fetcher: robots.txt, HTTP, parsing, link filtering,
//     and local storage of what was fetched;
//   - the scheduling role: a State (durable pending and seen sets) and a
//     frontier (priorities and politeness) deciding what to fetch next.
//
// Engine runs both in one process, the loop every worker goes through:
//
//	lease := frontier.Next()            // politeness: one host, its delay
//	visit := fetcher.Visit(lease)       // robots, fetch, parse, store locally
//	state.Complete(req, outcome, links) // one atomic transaction
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
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"

	"github.com/spider-crawler/spider/internal/frontier"
	"github.com/spider-crawler/spider/internal/state"
)

// State is the crawl's durable state as the scheduling role uses it: the
// embedded back-end is package state (bbolt), the distributed one package
// rstate (Redis). Both pass the same contract tests (state/statetest).
type State interface {
	Discover(ctx context.Context, reqs []frontier.Request) ([]frontier.Request, error)
	Complete(ctx context.Context, r frontier.Request, o state.Outcome, discovered []frontier.Request) (state.Result, error)
	UpdatePending(ctx context.Context, r frontier.Request) error
	Current(ctx context.Context, r frontier.Request) (bool, error)
	LoadPending(ctx context.Context, fn func(frontier.Request) error) error
	Counters(ctx context.Context) (map[string]int64, error)
	Sync() error
	Close() error
}

var _ State = (*state.Store)(nil)

// Engine runs one crawl on one machine: both roles in one process.
type Engine struct {
	cfg     Config
	log     *slog.Logger
	fetcher *Fetcher
	st      State
	fr      *frontier.Frontier
	m       *metrics

	fetched   atomic.Int64 // completions in this run
	errs      atomic.Int64
	started   time.Time
	hostMu    sync.Mutex
	hostPages map[string]int64 // this run's completions per host
	stopOnce  sync.Once
	stop      context.CancelFunc
}

// New opens the data directory (creating it), the embedded crawl state and
// the local stores, and prepares the fetcher. Close releases them. reg may
// be nil.
func New(cfg Config, logger *slog.Logger, reg prometheus.Registerer) (*Engine, error) {
	cfg.Defaults()
	fetcher, err := NewFetcher(cfg, logger, reg)
	if err != nil {
		return nil, err
	}
	st, err := state.Open(filepath.Join(cfg.Data, "state"), state.Options{
		SeenMode: cfg.Seen, ExpectedURLs: cfg.ExpectedURLs, FPRate: cfg.FPRate, Logger: logger,
	})
	if err != nil {
		fetcher.Close()
		return nil, err
	}
	e, err := NewEngine(cfg, fetcher, st, logger, reg)
	if err != nil {
		st.Close()
		fetcher.Close()
		return nil, err
	}
	return e, nil
}

// NewEngine assembles an engine from a fetcher and a state (embedded or
// Redis). The engine owns both from then on: Close closes them.
func NewEngine(cfg Config, fetcher *Fetcher, st State, logger *slog.Logger, reg prometheus.Registerer) (*Engine, error) {
	cfg.Defaults()
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	fr, err := newFrontier(cfg, logger, reg)
	if err != nil {
		return nil, err
	}
	return &Engine{
		cfg: cfg, log: logger, fetcher: fetcher, st: st, fr: fr,
		m: fetcher.m, hostPages: map[string]int64{},
	}, nil
}

// newFrontier makes the frontier a crawl of cfg schedules from.
func newFrontier(cfg Config, logger *slog.Logger, reg prometheus.Registerer) (*frontier.Frontier, error) {
	fq, strict := frontierLevels(cfg)
	return frontier.New(frontier.Config{
		FrontQueues:  fq,
		Strict:       strict,
		PerKey:       cfg.PerHost,
		Delay:        frontierDelay(cfg.Delay),
		MemoryBudget: cfg.MemoryBudget,
		SpillDir:     filepath.Join(cfg.Data, "spill"),
		Logger:       logger,
		Registerer:   reg,
	})
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

// Close flushes and closes everything the engine owns. It is safe to call
// more than once.
func (e *Engine) Close() error {
	var errs []error
	if e.fr != nil {
		errs = append(errs, e.fr.Close())
		e.fr = nil
	}
	if e.fetcher != nil {
		errs = append(errs, e.fetcher.Close())
		e.fetcher = nil
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
	seeds, err := e.fetcher.SeedRequests()
	if err != nil {
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
	if errors.Is(err, context.Canceled) && ctx.Err() != nil && e.limitReached() {
		err = nil
	}
	if serr := e.st.Sync(); serr != nil && err == nil {
		err = serr
	}
	if serr := e.fetcher.Sync(); serr != nil && err == nil {
		err = serr
	}
	return err
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
		if e.cfg.MaxPages > 0 && e.fetched.Load()%16 == 0 && e.limitReached() {
			e.stopOnce.Do(func() {
				e.log.Info("page limit reached, stopping", "max_pages", e.cfg.MaxPages)
				e.stop()
			})
			return context.Canceled
		}
	}
}

// limitReached reports whether MaxPages URLs were completed over all runs.
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

// process handles one leased URL end to end. It returns an error only when
// the crawl cannot go on (the state or a local store failed).
func (e *Engine) process(ctx context.Context, lease *frontier.Lease) error {
	req := lease.Request
	if cur, err := e.st.Current(ctx, req); err != nil || !cur {
		// A copy left behind when its URL was lowered to a smaller depth
		// (or completed): drop it unfetched.
		e.fr.Done(lease, frontier.DoneInfo{})
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	}
	v, err := e.fetcher.Visit(ctx, req, lease.Start)
	if err != nil {
		e.fr.Done(lease, frontier.DoneInfo{})
		return err
	}
	if ctx.Err() != nil {
		// Cancelled mid-fetch: leave the URL pending for the next run.
		e.fr.Done(lease, frontier.DoneInfo{})
		return ctx.Err()
	}
	return e.finish(ctx, lease, v)
}

// finish applies a visit to the state and the frontier: a retry is
// persisted (attempt count) and put back; anything else completes the URL
// and queues its newly discovered links, before the host is released.
func (e *Engine) finish(ctx context.Context, lease *frontier.Lease, v Visit) error {
	req := lease.Request
	if v.CrawlDelay > 0 {
		e.fr.SetKeyDelay(req.Key, v.CrawlDelay)
	}
	if v.Retry {
		req.Attempt++
		if err := e.st.UpdatePending(ctx, req); err != nil && !errors.Is(err, state.ErrNotPending) {
			e.fr.Done(lease, frontier.DoneInfo{})
			return fmt.Errorf("cannot record retry of %s: %w", req.URL, err)
		}
		e.fr.Done(lease, frontier.DoneInfo{Retry: true, Delay: v.Delay})
		return nil
	}
	out, err := e.st.Complete(ctx, req, state.Outcome{Class: v.Outcome, Fingerprint: v.Fingerprint, URL: req.URL}, v.Discovered)
	if err != nil {
		e.fr.Done(lease, frontier.DoneInfo{})
		return fmt.Errorf("cannot record completion of %s: %w", req.URL, err)
	}
	if out.DuplicateOf != "" {
		e.m.duplicates.Inc()
	}
	if err := e.fr.PushAll(out.New); err != nil {
		e.fr.Done(lease, frontier.DoneInfo{})
		return fmt.Errorf("cannot queue discovered URLs: %w", err)
	}
	e.fr.Done(lease, frontier.DoneInfo{Delay: v.Delay})

	e.fetched.Add(1)
	if row := Row(v.Outcome); row != Row200 && row != Row30x {
		e.errs.Add(1)
	}
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
