// Package mixed is the host crawl loop of the mixed topology (SPEC §3 "mixed: masters
// talk to masters, each with slaves") with the SPEC §0 de-duplication protocol: a
// crawler host takes URLs from its task_pool, fetches them with crawl.Fetcher under a
// local Mercator frontier (politeness per host:port), stores pages, records and WARC in
// its data directory, and puts the links it finds into URL_pool, from where the
// protocol (internal/protocol) de-duplicates them across the host's network and the
// other networks before they come back, to some host, as tasks.
//
// A host stops when its center reports the whole system done, at MaxPages URLs fetched
// by this host (the limit is per host in this topology), or when its context ends. Stopped
// any way, its unfinished tasks stay in its Redis (task_pool:processing is re-queued by
// the next start); with Options.Leave it hands them back to its center instead, submits
// the URLs it discovered but had not yet submitted, delivers its last frames and leaves
// the network (protocol.Host.Leave).
package mixed

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"

	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/frontier"
	"github.com/spider-crawler/spider/internal/protocol"
	"github.com/spider-crawler/spider/internal/urls"
)

// Options configures Run.
type Options struct {
	// Crawl is the crawl configuration (data directory, fetch settings, seeds, limits).
	// PerIP is not supported in this topology (sites are assigned by host name).
	Crawl crawl.Config
	// Host configures this host's protocol side (its Logger and Registerer default to
	// the ones below).
	Host protocol.HostOptions
	// Leave hands the unfinished tasks back to the center and leaves the network at the
	// end, instead of keeping them for a restart.
	Leave bool
	// Logger receives the crawl's logs; nil discards.
	Logger *slog.Logger
	// Registerer receives the metrics; nil uses a private registry.
	Registerer prometheus.Registerer
}

// Result is what one host did.
type Result struct {
	// Fetched counts URLs this run completed (fetched, or ended with an outcome).
	Fetched int64
	// Elapsed is the run's duration.
	Elapsed time.Duration
	// Done is true when the whole system finished (not a local stop).
	Done bool
}

// Run crawls as one host of the mixed topology until the system is done, MaxPages, or
// ctx ends (then it returns ctx's error with the result so far).
func Run(ctx context.Context, opt Options) (Result, error) {
	start := time.Now()
	cfg := opt.Crawl
	cfg.Defaults()
	if cfg.PerIP {
		return Result{}, errors.New("cannot use --per-ip with --dedup protocol: sites are assigned to hosts by host name; drop --per-ip")
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if opt.Registerer == nil {
		opt.Registerer = prometheus.NewRegistry()
	}
	hopt := opt.Host
	if hopt.Logger == nil {
		hopt.Logger = opt.Logger
	}
	if hopt.Registerer == nil {
		hopt.Registerer = opt.Registerer
	}
	fetcher, err := crawl.NewFetcher(cfg, opt.Logger, opt.Registerer)
	if err != nil {
		return Result{}, err
	}
	defer fetcher.Close()
	host, err := protocol.NewHost(hopt)
	if err != nil {
		return Result{}, err
	}
	if err := host.Start(ctx); errors.Is(err, protocol.ErrDone) {
		return Result{Done: true, Elapsed: time.Since(start)}, nil
	} else if err != nil {
		return Result{}, err
	}
	seeds, _ := fetcher.SeedRequests() // bad seeds were reported by NewFetcher's caller
	tasks := make([]protocol.Task, 0, len(seeds))
	for _, s := range seeds {
		tasks = append(tasks, protocol.Task{URL: s.URL})
	}
	if err := host.AddSeeds(ctx, tasks); err != nil {
		host.Close()
		return Result{}, err
	}
	delay := time.Duration(cfg.Delay)
	if delay <= 0 {
		delay = frontier.NoDelay
	}
	fr, err := frontier.New(frontier.Config{PerKey: cfg.PerHost, Delay: delay, MemoryBudget: cfg.MemoryBudget, Logger: opt.Logger})
	if err != nil {
		host.Close()
		return Result{}, err
	}
	defer fr.Close()

	l := &loop{cfg: cfg, host: host, fetcher: fetcher, fr: fr, log: opt.Logger, taken: map[string]protocol.Taken{}}
	wctx, stop := context.WithCancel(ctx)
	l.stop = stop
	g, gctx := errgroup.WithContext(wctx)
	g.Go(func() error { return l.feed(gctx) })
	g.Go(func() error { return l.watch(gctx) })
	for range cfg.Concurrency {
		g.Go(func() error { return l.work(gctx) })
	}
	runErr := g.Wait()
	stop()
	res := Result{Fetched: l.fetched.Load(), Elapsed: time.Since(start), Done: l.done.Load()}
	if opt.Leave {
		lctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := host.Leave(lctx); err != nil {
			runErr = errors.Join(runErr, err)
		}
		cancel()
	}
	host.Close()
	if err := fetcher.Close(); err != nil && runErr == nil {
		runErr = err
	}
	if runErr == nil && !res.Done && !l.limit.Load() && ctx.Err() != nil {
		runErr = ctx.Err()
	}
	return res, runErr
}

// loop is one host's crawl loop.
type loop struct {
	cfg     crawl.Config
	host    *protocol.Host
	fetcher *crawl.Fetcher
	fr      *frontier.Frontier
	log     *slog.Logger
	stop    context.CancelFunc

	mu    sync.Mutex
	taken map[string]protocol.Taken // URL → its task_pool:processing entry

	fetched     atomic.Int64
	done, limit atomic.Bool
}

// feedCap bounds the tasks held in processing (and the frontier) at once.
const feedCap = 4096

// feed moves tasks from task_pool into the frontier.
func (l *loop) feed(ctx context.Context) error {
	for ctx.Err() == nil {
		l.mu.Lock()
		room := feedCap - len(l.taken)
		l.mu.Unlock()
		if room <= 0 {
			sleepCtx(ctx, 50*time.Millisecond)
			continue
		}
		ts, err := l.host.Take(ctx, min(room, 256))
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			l.log.Warn("cannot take tasks", "err", err)
			sleepCtx(ctx, 500*time.Millisecond)
			continue
		}
		if len(ts) == 0 {
			sleepCtx(ctx, 50*time.Millisecond)
			continue
		}
		reqs := make([]frontier.Request, 0, len(ts))
		l.mu.Lock()
		for _, t := range ts {
			u, err := url.Parse(t.URL)
			if err != nil || u.Host == "" {
				l.log.Warn("dropping a task with an unusable URL", "url", t.URL)
				continue
			}
			if _, dup := l.taken[t.URL]; dup {
				continue
			}
			l.taken[t.URL] = t
			reqs = append(reqs, frontier.Request{URL: t.URL, Key: urls.HostPort(u), Depth: t.Depth, Priority: t.Depth, Redirects: t.Hops})
		}
		l.mu.Unlock()
		if err := l.fr.PushAll(reqs); err != nil {
			return fmt.Errorf("cannot queue tasks: %w", err)
		}
	}
	return nil
}

// watch ends the run when the center reports the system done.
func (l *loop) watch(ctx context.Context) error {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if done, err := l.host.Done(ctx); err == nil && done {
			l.done.Store(true)
			l.stop()
			return nil
		}
	}
}

// work fetches leased URLs until the run stops.
func (l *loop) work(ctx context.Context) error {
	for {
		lease, err := l.fr.Next(ctx)
		if errors.Is(err, frontier.ErrDrained) {
			sleepCtx(ctx, 20*time.Millisecond)
			continue
		}
		if err != nil {
			return nil // stopping
		}
		req := lease.Request
		v, err := l.fetcher.Visit(ctx, req, lease.Start)
		if err != nil || ctx.Err() != nil {
			// Visit stores nothing once ctx has ended: the task stays in processing for
			// the next start (or is handed back by Leave: at most the fetches in flight
			// are repeated).
			l.fr.Done(lease, frontier.DoneInfo{})
			return err
		}
		if v.CrawlDelay > 0 {
			l.fr.SetKeyDelay(req.Key, v.CrawlDelay)
		}
		if v.Retry {
			l.fr.Done(lease, frontier.DoneInfo{Retry: true, Delay: v.Delay})
			continue
		}
		l.mu.Lock()
		t := l.taken[req.URL]
		l.mu.Unlock()
		found := make([]protocol.Task, 0, len(v.Discovered))
		for _, d := range v.Discovered {
			found = append(found, protocol.Task{URL: d.URL, Depth: d.Depth, Hops: d.Redirects})
		}
		if err := l.host.Complete(ctx, t, found); err != nil {
			l.fr.Done(lease, frontier.DoneInfo{})
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		l.mu.Lock()
		delete(l.taken, req.URL)
		l.mu.Unlock()
		l.fr.Done(lease, frontier.DoneInfo{Delay: v.Delay})
		if n := l.fetched.Add(1); l.cfg.MaxPages > 0 && n >= l.cfg.MaxPages {
			l.limit.Store(true)
			l.stop()
			return nil
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
