// Package mixed is the host crawl loop of the mixed topology (SPEC §3 "mixed: masters
// talk to masters, each with slaves") with the SPEC §0 de-duplication protocol: a
// crawler host takes URLs from its task_pool, fetches them with crawl.Fetcher under a
// local Mercator frontier (politeness per host:port), stores pages, records and WARC in
// its data directory, and puts the links it finds into URL_pool, from where the
// protocol (internal/protocol) de-duplicates them across the host's network and the
// other networks before they come back, to some host, as tasks.
//
// A host stops when its center reports the whole system done, when MaxPages URLs are
// completed over all hosts of all networks (crawl.Budget in the first network's center's
// Redis, rbudget: a slot is reserved before each fetch, so no host starts one beyond the
// limit), or when its context ends. Stopped
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
	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/spider-crawler/spider/internal/cluster"
	"github.com/spider-crawler/spider/internal/cluster/slots"
	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/crawl/rbudget"
	"github.com/spider-crawler/spider/internal/frontier"
	"github.com/spider-crawler/spider/internal/protocol"
	"github.com/spider-crawler/spider/internal/rstate"
	"github.com/spider-crawler/spider/internal/store"
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
	// Budget is the Redis that keeps the crawl-wide --max-pages budget (Crawl.MaxPages
	// > 0): every host of the system must use the same one. Nil: the first network's
	// center's Redis, Host.Center when this host is in that network, else dialled from
	// Host.Config.Networks[0].CenterRedis.
	Budget redis.UniversalClient
}

// budgetKeys are the --max-pages budget's keys of the crawl named crawl.
func budgetKeys(crawl string) rbudget.Keys {
	p := "spider:proto:" + crawl + ":{budget}:"
	return rbudget.Keys{Used: p + "used", Held: p + "held"}
}

// firstCenter returns the Redis of the first network's center, which holds
// what is crawl-wide for a §0 crawl (the --max-pages budget, the run
// control): opt.Budget if set, else Host.Center when this host is in the
// first network, else a client dialled to the configuration's URL; the
// returned function closes what was dialled.
func firstCenter(opt Options) (redis.UniversalClient, func(), error) {
	pc := opt.Host.Config
	if pc == nil || len(pc.Networks) == 0 {
		return nil, nil, errors.New("the protocol configuration lists no network")
	}
	if opt.Budget != nil {
		return opt.Budget, func() {}, nil
	}
	if opt.Host.Network == pc.Networks[0].Name && opt.Host.Center != nil {
		return opt.Host.Center, func() {}, nil
	}
	c, err := protocol.DialURL(pc.Networks[0].CenterRedis)
	if err != nil {
		return nil, nil, fmt.Errorf("the first network's center (%s): %w", pc.Networks[0].Name, err)
	}
	return c, func() { c.Close() }, nil
}

// openBudget returns the crawl-wide budget of a limited crawl (nil without a limit) and
// the function that closes what it dialled.
func openBudget(opt Options, cfg crawl.Config) (*rbudget.Budget, func(), error) {
	if cfg.MaxPages <= 0 {
		return nil, func() {}, nil
	}
	rdb, closeFn, err := firstCenter(opt)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot keep --max-pages: %w", err)
	}
	return rbudget.New(rdb, budgetKeys(opt.Host.Config.Crawl), protocol.HostAddr(opt.Host.Network, opt.Host.ID), cfg.MaxPages,
		rbudget.SlotTTL(cfg), opt.Logger), closeFn, nil
}

// dupTags are the hash tags of a §0 crawl's duplicate tables (rstate.Dupes)
// in the first network's center's Redis: 12 tags spread evenly over a Redis
// Cluster's slots; their keys, spider:proto:C:{dd-I-K}:dupfp and dupsim,
// are the crawl's §0 keys.
var dupTags = func() []string {
	t := make([]string, 12)
	for i := range t {
		t[i] = slots.SpreadTag("dd-", i, len(t))
	}
	return t
}()

// dupMetrics are the duplicate counters the single-node scheduler keeps
// too (the same series).
type dupMetrics struct {
	exact, near prometheus.Counter
}

// openDupes returns the crawl-wide duplicate tables (nil when the crawl has
// no Redis to keep them in) and the function that closes what it dialled.
// Every host of every network files its pages there, so a copy is found
// whichever host fetched the original.
func openDupes(opt Options) (*rstate.Dupes, func(), error) {
	rdb, closeFn, err := firstCenter(opt)
	if err != nil {
		return nil, nil, err
	}
	d, err := rstate.NewDupes(rdb, "spider:proto:"+opt.Host.Config.Crawl+":", dupTags)
	if err != nil {
		closeFn()
		return nil, nil, err
	}
	return d, closeFn, nil
}

// countDupe counts and logs, as the single-node crawl does ("duplicate
// content"), the duplicate decision of a completed page: the one its
// Visit carries, made in the crawl's duplicate tables before the page's
// record was written (crawl.Fetcher.FileContent over l.dupes), so the
// record, the counters and the log agree.
func (l *loop) countDupe(url string, v crawl.Visit) {
	if !v.Filed || v.DuplicateOf == "" {
		return
	}
	if v.Near {
		l.dupM.near.Inc()
	} else {
		l.dupM.exact.Inc()
	}
	l.log.Debug("duplicate content", "url", url, "duplicate_of", v.DuplicateOf, "near", v.Near)
}

// Result is what one host did.
type Result struct {
	// Fetched counts URLs this run completed (fetched, or ended with an outcome).
	Fetched int64
	// Elapsed is the run's duration.
	Elapsed time.Duration
	// Done is true when the whole system finished (not a local stop).
	Done bool
	// Revisits are this run's revisit counts (revisit.go); zero without a
	// revisit schedule.
	Revisits crawl.RevisitCounts
}

// Run crawls as one host of the mixed topology until the system is done, MaxPages, or
// ctx ends (then it returns ctx's error with the result so far).
func Run(ctx context.Context, opt Options) (Result, error) {
	start := time.Now()
	cfg := opt.Crawl
	cfg.Defaults()
	// The protocol's URL pool keeps each URL's smallest depth but does not
	// relink a fetched page: no crawl.Visit.Beyond is kept for it, as
	// before levels overlapped by default (crawl.Config.StrictLevels).
	cfg.StrictLevels, cfg.LooseDepth = true, false
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
	if hopt.Instance == "" && cfg.Data != "" {
		// The fetcher holds the data directory's lock: a host restarted on this
		// directory takes its address back at once; another process claiming the
		// address while this one lives is refused.
		if hopt.Instance, err = store.NodeToken(cfg.Data); err != nil {
			return Result{}, err
		}
	}
	host, err := protocol.NewHost(hopt)
	if err != nil {
		return Result{}, err
	}
	// revisitOnly: the system is done, and this host only revisits (a
	// crawl with a revisit schedule, revisit.go): no protocol task is
	// taken and none completed.
	revisitOnly := false
	if err := host.Start(ctx); errors.Is(err, protocol.ErrDone) {
		if !wantsRevisits(cfg) {
			return Result{Done: true, Elapsed: time.Since(start)}, nil
		}
		revisitOnly = true
	} else if err != nil {
		return Result{}, err
	}
	bud, closeBudget, err := openBudget(opt, cfg)
	if err != nil {
		host.Close()
		return Result{}, err
	}
	defer closeBudget()
	if bud != nil && bud.Spent() {
		host.Close()
		opt.Logger.Info("page limit already reached", "max_pages", cfg.MaxPages)
		return Result{Elapsed: time.Since(start)}, nil
	}
	seeds, _ := fetcher.SeedRequests() // bad seeds were reported by NewFetcher's caller
	tasks := make([]protocol.Task, 0, len(seeds))
	for _, s := range seeds {
		tasks = append(tasks, protocol.Task{URL: s.URL})
	}
	if !revisitOnly {
		if err := host.AddSeeds(ctx, tasks); err != nil {
			host.Close()
			return Result{}, err
		}
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

	l := &loop{cfg: cfg, host: host, fetcher: fetcher, fr: fr, log: opt.Logger, budget: bud, taken: map[string]protocol.Taken{}}
	if l.rv, err = openRevisits(cfg, opt.Logger); err != nil {
		host.Close()
		return Result{}, err
	}
	if l.rv != nil {
		defer func() {
			if err := l.rv.close(); err != nil {
				opt.Logger.Warn("cannot close this host's revisit schedule", "err", err)
			}
		}()
	}
	l.dupM = dupMetrics{
		exact: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "spider_duplicate_content_total", Help: "Pages whose text was identical to an earlier page's.",
		}),
		near: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "spider_near_duplicate_content_total", Help: "Pages whose text's SimHash was within --near-dup-distance bits of an earlier page's (not identical).",
		}),
	}
	if err := opt.Registerer.Register(l.dupM.exact); err != nil {
		opt.Logger.Debug("duplicate counter not registered", "err", err)
	}
	if err := opt.Registerer.Register(l.dupM.near); err != nil {
		opt.Logger.Debug("near-duplicate counter not registered", "err", err)
	}
	if d, closeDupes, err := openDupes(opt); err != nil {
		// Like the report: the crawl goes on without it.
		opt.Logger.Warn("duplicate pages will not be found at crawl time", "err", err)
	} else {
		l.dupes = d
		defer closeDupes()
		// A page is judged in the tables before its record is written
		// (the record says duplicate_of), and counted once completed.
		fetcher.FileContent(d)
	}
	// The crawl-wide report (spider status and serve --redis on the first network's
	// center's Redis): this host's records, live every second, final at the end.
	rep, closeRep, err := startReport(ctx, opt, l)
	if err != nil {
		// Like spider control: the crawl goes on without it.
		opt.Logger.Warn("spider status will not show this host", "err", err)
	} else {
		defer closeRep()
	}
	wctx, stop := context.WithCancel(ctx)
	l.stop = stop
	g, gctx := errgroup.WithContext(wctx)
	if revisitOnly {
		l.log.Info("the crawl is done: this host only revisits")
		g.Go(func() error { return l.watchRevisits(gctx) })
	} else {
		g.Go(func() error { return l.feed(gctx) })
		g.Go(func() error { return l.watch(gctx) })
	}
	if l.rv != nil {
		g.Go(func() error {
			return l.rv.feed(gctx, fr, func() bool {
				l.mu.Lock()
				defer l.mu.Unlock()
				return len(l.taken) > 0
			})
		})
	}
	g.Go(func() error {
		select {
		case err := <-host.Taken(): // another process holds our address now
			return err
		case <-gctx.Done():
			return nil
		}
	})
	for range cfg.Concurrency {
		g.Go(func() error { return l.work(gctx) })
	}
	if ctl, closeCtl, err := controlOf(opt); err != nil {
		opt.Logger.Warn("this host does not follow spider control", "err", err)
	} else {
		defer closeCtl()
		if err := ctl.Fresh(ctx); err != nil {
			opt.Logger.Warn("cannot read the crawl's control word", "err", err)
		}
		g.Go(func() error {
			if err := l.follow(gctx, ctl, protocol.HostAddr(opt.Host.Network, opt.Host.ID)); gctx.Err() == nil {
				return err
			}
			return nil // the run ends: its other loops say why
		})
	}
	runErr := g.Wait()
	stop()
	res := Result{Fetched: l.fetched.Load(), Elapsed: time.Since(start), Done: l.done.Load()}
	if l.rv != nil {
		res.Revisits = l.rv.Counts()
	}
	defer func() {
		// After the leave (if any) and the fetcher's close: every record is counted.
		state := cluster.ReportStopped
		switch {
		case res.Done:
			state = cluster.ReportDone
		case runErr != nil && ctx.Err() == nil:
			state = cluster.ReportFailed
		}
		if rep == nil {
			return
		}
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := rep.Stop(sctx, state); err != nil {
			opt.Logger.Warn("cannot publish this host's final report for spider status", "err", err)
		}
	}()
	if opt.Leave && !revisitOnly {
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
	budget  *rbudget.Budget // nil without MaxPages
	dupes   *rstate.Dupes   // the crawl's duplicate tables; nil without
	rv      *hostRevisits   // the revisit schedule (revisit.go); nil without
	dupM    dupMetrics

	mu    sync.Mutex
	taken map[string]protocol.Taken // URL → its task_pool:processing entry

	fetched     atomic.Int64
	done, limit atomic.Bool
	paused      atomic.Bool // spider control paused (or is stopping) the crawl
}

// startReport starts this host's crawl-wide report (cluster.StartReporter, role host,
// node ID "NET/HOST") in the first network's center's Redis, where spider control and
// the --max-pages budget are too. The returned function closes what was dialled.
func startReport(ctx context.Context, opt Options, l *loop) (*cluster.Reporter, func(), error) {
	rdb, closeFn, err := firstCenter(opt)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot publish this host's report: %w", err)
	}
	k, err := cluster.NewKeys(opt.Host.Config.Crawl)
	if err != nil {
		closeFn()
		return nil, nil, fmt.Errorf("cannot publish this host's report: %w", err)
	}
	rep, err := cluster.StartReporter(ctx, rdb, k, cluster.ReporterConfig{Node: protocol.HostAddr(opt.Host.Network, opt.Host.ID),
		Role: cluster.RoleHost, Source: l.report, Logger: opt.Logger})
	if err != nil {
		closeFn()
		return nil, nil, fmt.Errorf("cannot publish this host's report in the first network's center's Redis: %w", err)
	}
	return rep, closeFn, nil
}

// report is this run's part of the host's crawl-wide report: the records it wrote,
// and its frontier's queue.
func (l *loop) report() cluster.NodeReport {
	st := l.fr.Stats()
	l.mu.Lock()
	taken := len(l.taken)
	l.mu.Unlock()
	r := cluster.NodeReport{Counts: cluster.Counts(l.fetcher.Tally()),
		Detail: map[string]int64{"queued": int64(st.Queued), "in_flight": int64(st.Leased), "tasks_taken": int64(taken)}}
	if l.paused.Load() {
		r.State = cluster.ReportPaused
	}
	return r
}

// feedCap bounds the tasks held in processing (and the frontier) at once.
const feedCap = 4096

// feed moves tasks from task_pool into the frontier. Its Redis failing for the
// configuration's RedisTimeout ends the run with an error.
func (l *loop) feed(ctx context.Context) error {
	down := protocol.Outage{What: "this host's Redis", Limit: time.Duration(l.host.Config().RedisTimeout)}
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
			if ferr := down.Fail(err); ferr != nil {
				return ferr
			}
			l.log.Warn("cannot take tasks", "err", err)
			sleepCtx(ctx, 500*time.Millisecond)
			continue
		}
		down.OK()
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

// watch ends the run when the center reports the system done, or with an error when
// the center's Redis has failed for the configuration's RedisTimeout (the host could
// neither submit its URLs nor learn that the crawl ended).
func (l *loop) watch(ctx context.Context) error {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	down := protocol.Outage{What: "the center's Redis", Limit: time.Duration(l.host.Config().RedisTimeout)}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		done, err := l.host.Done(ctx)
		if err != nil && ctx.Err() == nil {
			if ferr := down.Fail(err); ferr != nil {
				return ferr
			}
		} else if err == nil {
			down.OK()
		}
		// A continuous host goes on revisiting once the system is done; a
		// one-shot host with revisits ends when they are done.
		if err == nil && done && (l.rv == nil || l.rv.finished()) {
			l.done.Store(true)
			l.stop()
			return nil
		}
		if l.budget != nil && l.budget.Spent() {
			l.stopAtLimit()
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
		if l.budget != nil {
			// A slot of the crawl-wide budget before the fetch starts: no host
			// fetches beyond the limit; the task stays in processing.
			if err := l.budget.Reserve(ctx); err != nil {
				l.fr.Done(lease, frontier.DoneInfo{Unused: true})
				if errors.Is(err, crawl.ErrLimitReached) {
					l.stopAtLimit()
					return nil
				}
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
		}
		v, err := l.fetcher.Visit(ctx, req, lease.Start)
		if err != nil || ctx.Err() != nil {
			// Visit stores nothing once ctx has ended: the task stays in processing for
			// the next start (or is handed back by Leave: at most the fetches in flight
			// are repeated).
			l.release()
			l.fr.Done(lease, frontier.DoneInfo{})
			return err
		}
		if v.CrawlDelay > 0 {
			l.fr.SetKeyDelay(req.Key, v.CrawlDelay)
		}
		if v.Retry {
			l.release()
			l.fr.Done(lease, frontier.DoneInfo{Retry: true, Delay: v.Delay})
			continue
		}
		if l.rv != nil {
			if rq, ok := l.rv.taken(req.URL); ok {
				// A revisit: completed in the schedule, not in the protocol.
				if err := l.rv.finish(ctx, rq, v); err != nil {
					l.release()
					l.fr.Done(lease, frontier.DoneInfo{})
					if ctx.Err() != nil {
						return nil
					}
					return err
				}
				if l.budget != nil {
					l.budget.Commit()
				}
				l.fr.Done(lease, frontier.DoneInfo{Delay: v.Delay})
				l.fetched.Add(1)
				continue
			}
			// Its schedule entry before the task's completion: a kill in
			// between fetches the task again, the entry stays.
			if err := l.rv.first(ctx, req, v); err != nil {
				l.release()
				l.fr.Done(lease, frontier.DoneInfo{})
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
		}
		l.mu.Lock()
		t := l.taken[req.URL]
		l.mu.Unlock()
		found := make([]protocol.Task, 0, len(v.Discovered))
		for _, d := range v.Discovered {
			found = append(found, protocol.Task{URL: d.URL, Depth: d.Depth, Hops: d.Redirects})
		}
		if err := l.host.Complete(ctx, t, found); err != nil {
			l.release()
			l.fr.Done(lease, frontier.DoneInfo{})
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		l.mu.Lock()
		delete(l.taken, req.URL)
		l.mu.Unlock()
		l.countDupe(req.URL, v) // after the completion: counted once per completed URL
		if l.budget != nil {
			l.budget.Commit() // after the completion: once spent, nothing is in flight
		}
		l.fr.Done(lease, frontier.DoneInfo{Delay: v.Delay})
		l.fetched.Add(1)
	}
}

// release gives back the budget slot of a fetch that completed nothing.
func (l *loop) release() {
	if l.budget != nil {
		l.budget.Release()
	}
}

// stopAtLimit ends this host's run: the crawl-wide budget is spent.
func (l *loop) stopAtLimit() {
	if !l.limit.Swap(true) {
		l.log.Info("the crawl reached --max-pages", "max_pages", l.cfg.MaxPages)
	}
	l.stop()
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// watchRevisits ends a revisit-only run (the system is done) once a
// one-shot host's revisits are done; a continuous one runs until ctx ends.
func (l *loop) watchRevisits(ctx context.Context) error {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if l.rv.finished() {
			l.done.Store(true)
			l.stop()
			return nil
		}
	}
}
