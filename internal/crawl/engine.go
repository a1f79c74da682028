// Package crawl is the crawl engine. It has two roles (../../ARCHITECTURE.md):
//
//   - the fetch role, Fetcher: robots.txt, HTTP, parsing, link filtering,
//     and local storage of what was fetched;
//   - the scheduling role: a State (durable pending and seen sets) and a
//     frontier (priorities and politeness) deciding what to fetch next.
//
// Engine runs both in one process, as a pipeline (pipeline.go):
//
//	lease := frontier.Next()            // politeness: one host, its delay
//	fetched := fetcher.Fetch(lease)     // robots, HTTP, the answer read
//	frontier.EndTurn(lease)             // the host's next request may start
//	  ── bounded queue to the page workers ──
//	visit := fetcher.Process(fetched)   // parse, store locally
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
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/spider-crawler/spider/internal/crawlstate"
	"github.com/spider-crawler/spider/internal/frontier"
	"github.com/spider-crawler/spider/internal/state"
	"github.com/spider-crawler/spider/internal/store"
	"github.com/spider-crawler/spider/internal/topics"
)

// State is the crawl's durable state as the scheduling role uses it, with
// the contract written at crawlstate.State: the embedded back-end is
// package state (bbolt), the distributed one package rstate (Redis). Both
// pass the same contract tests (state/statetest).
type State = crawlstate.State

var _ State = (*state.Store)(nil)

// relinker is a State that keeps each page's links, those beyond the depth
// limit too, to pass a smaller depth found later on to them
// (state.Options.Relink); Finish gives it Visit.Beyond with the links.
type relinker interface{ Relinks() bool }

var _ relinker = (*state.Store)(nil)

// Engine runs one crawl on one machine: both roles in one process.
type Engine struct {
	*Scheduler
	cfg      Config
	fetcher  *Fetcher
	hooks    pipelineHooks // tests only
	stopOnce sync.Once
	stop     context.CancelFunc
	ctl      control // Pause, Resume, Stop, AddSeeds (control.go)
}

// New opens the data directory (creating it), the embedded crawl state and
// the local stores, and prepares the fetcher. Close releases them. reg may
// be nil.
//
// The fetcher locks the directory before anything in it is opened for
// writing (NewFetcher), so a second crawl on a running crawl's directory
// fails with an error wrapping store.ErrLocked and changes nothing. Then
// New checks that the state and the files agree, and refuses (naming the
// file and spider fsck, wrapping ErrInconsistent) a directory whose state
// is missing or empty while records.jsonl holds records, or whose
// records.jsonl is shorter than its state's completions say
// (state.Store.RecordsEnd). Pages lost from the page files (a truncated
// PageData or PageIndex) do not stop the crawl: their numbers are skipped
// up to the state's PageNext (store.PageFiles.SkipTo) and never issued
// again, and a warning names spider fsck, which re-queues their URLs. The
// state's checkpoints fsync the page files and records first
// (state.Options.Checkpoint is Fetcher.Sync).
func New(cfg Config, logger *slog.Logger, reg prometheus.Registerer) (*Engine, error) {
	cfg.Defaults()
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	var tc *topics.Config
	if cfg.Topics != "" {
		var err error
		if tc, err = loadTopics(&cfg); err != nil {
			return nil, err
		}
	}
	var marks state.Marks
	fetcher, err := newFetcher(cfg, logger, reg, func() (err error) {
		marks, err = checkDataDir(cfg.Data)
		return err
	})
	if err != nil {
		return nil, err
	}
	st, err := state.Open(store.DataDir(cfg.Data).State(), state.Options{
		SeenMode: cfg.Seen, ExpectedURLs: cfg.ExpectedURLs, FPRate: cfg.FPRate, Logger: logger,
		Relink: cfg.relink(), MaxDepth: cfg.MaxDepth, Checkpoint: fetcher.Sync,
	})
	if err != nil {
		fetcher.Close()
		return nil, err
	}
	// The page's duplicate decision is made before its record is written
	// (state.Store.File) and handed to Complete.
	fetcher.FileContent(st)
	if err := fetcher.skipLostPages(max(marks.PageNext, st.PageNext()), logger); err != nil {
		st.Close()
		fetcher.Close()
		return nil, err
	}
	var tr *topicRun
	if tc != nil {
		if tr, err = newTopicRun(cfg, tc, fetcher, logger); err != nil {
			st.Close()
			fetcher.Close()
			return nil, err
		}
	}
	sched, err := newScheduler(cfg, st, logger, reg, tr)
	if err != nil {
		if tr != nil {
			tr.close()
		}
		st.Close()
		fetcher.Close()
		return nil, err
	}
	if !cfg.relink() {
		// The embedded state only: its Complete is the one the filter's
		// contract was checked against (state.Store.Complete: seen URLs
		// are lowered, never re-added).
		sched.known = newKnownLinks(knownLinksMax)
		if tr == nil {
			// A topic crawl's hub revisits report every link
			// (finishRecrawl): the Fetcher leaves none out.
			fetcher.known = sched.known
		}
	}
	return &Engine{Scheduler: sched, cfg: cfg, fetcher: fetcher}, nil
}

// Scheduler is the scheduling role: the durable State and the in-memory
// frontier. It hands out URLs (Next) and applies what a fetcher made of
// them (Finish). It is safe for concurrent use.
type Scheduler struct {
	cfg Config
	log *slog.Logger
	st  State
	fr  *frontier.Frontier
	m   *schedMetrics

	fetched atomic.Int64 // completions in this run
	errs    atomic.Int64
	started time.Time // set once by NewScheduler

	flightMu sync.Mutex
	inFlight map[string]bool // URLs leased and not yet finished or released; true: it holds a budget slot
	// parked holds, per URL in flight, a copy of it that Next handed out
	// meanwhile (its claim failed): done queues it again when the copy in
	// flight ends. Dropping it would lose the URL when that copy was the
	// current one (the URL's depth was lowered while the other copy was
	// out) and the copy in flight comes back without a result (a dead
	// master–worker worker: RequeueAfterTurn, Release): the copy then
	// queued again is stale, Next drops it, and nothing fetches the URL.
	// A parked copy that is stale by then is dropped by Next as any
	// other. At most one per URL in flight (flightMu).
	parked map[string]frontier.Request

	budget Budget // nil without Config.MaxPages; set by Start or SetBudget

	topics *topicRun // nil without Config.Topics

	known *knownLinks // links already reported to the State; nil: report all (knownLinks)

	rv *revisitState // the revisit policy and its counts (schedule.go)
}

// knownLinksMax bounds the engine's knownLinks generation (two are kept).
const knownLinksMax = 1 << 16

// NewScheduler schedules a crawl of cfg from st (embedded or Redis). The
// scheduler owns st from then on: Close closes it. Under a depth limit,
// depth levels overlap (Config.StrictLevels unset, no Topics) only if st
// relinks (a Relinks method reporting true: state.Options.Relink,
// rstate.Options.Relink), which is what keeps such a crawl exact; on any
// other State the scheduler goes level by level, as exact as before.
func NewScheduler(cfg Config, st State, logger *slog.Logger, reg prometheus.Registerer) (*Scheduler, error) {
	return newScheduler(cfg, st, logger, reg, nil)
}

// newScheduler is NewScheduler with the topic scheduling tr (nil: none).
func newScheduler(cfg Config, st State, logger *slog.Logger, reg prometheus.Registerer, tr *topicRun) (*Scheduler, error) {
	cfg.Defaults()
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxDepth >= 0 && cfg.Topics == "" && !cfg.StrictLevels {
		if rl, ok := st.(relinker); !ok || !rl.Relinks() {
			// Overlapping levels would fetch a page at a greater depth than
			// its shortest with no way to pass the smaller one on.
			cfg.StrictLevels, cfg.LooseDepth = true, false
			logger.Debug("the crawl state keeps no links to relink: depth levels are crawled one after another")
		}
	}
	var sel frontier.Selector
	if tr != nil {
		sel = tr.gate
	}
	rv, err := newRevisitState(cfg, reg)
	if err != nil {
		return nil, err
	}
	fr, err := newFrontier(cfg, logger, reg, sel)
	if err != nil {
		return nil, err
	}
	return &Scheduler{cfg: cfg, log: logger, st: st, fr: fr, m: newSchedMetrics(reg), started: time.Now(),
		inFlight: map[string]bool{}, parked: map[string]frontier.Request{}, topics: tr, rv: rv}, nil
}

// SetBudget makes Next reserve a slot of b for each URL it hands out
// (Budget): the crawl-wide budget of a crawl scheduled by several
// processes. Call it before Start; without it, Start makes a LocalBudget
// of Config.MaxPages from the State's counters.
func (s *Scheduler) SetBudget(b Budget) { s.budget = b }

// Start loads what a previous run left pending into the frontier and
// records the seeds (URLs already seen are not queued again). With
// Config.MaxPages and no budget set, the budget counts the URLs the
// State's counters say earlier runs completed.
func (s *Scheduler) Start(ctx context.Context, seeds []frontier.Request) error {
	if s.budget == nil && s.cfg.MaxPages > 0 {
		used, err := s.completed(ctx)
		if err != nil {
			return fmt.Errorf("cannot count the URLs completed so far for --max-pages: %w", err)
		}
		s.budget = NewLocalBudget(s.cfg.MaxPages, used)
	}
	resumed := 0
	if err := s.st.LoadPending(ctx, func(r frontier.Request) error {
		resumed++
		return s.fr.Push(r)
	}); err != nil {
		return fmt.Errorf("cannot resume pending URLs: %w", err)
	}
	if resumed > 0 {
		s.log.Info("resuming crawl", "pending", resumed)
	}
	if s.topics != nil {
		s.topics.tag(seeds)
	}
	news, err := s.st.Discover(ctx, seeds)
	if err != nil {
		return fmt.Errorf("cannot record seeds: %w", err)
	}
	return s.fr.PushAll(news)
}

// Next blocks until a URL may be fetched (politeness) and returns its lease;
// frontier.ErrDrained means nothing is queued and nothing is leased: the
// crawl is over. A frontier may hold a URL twice (a copy left by depth
// lowering, or by a bucket that left and came back): a copy that is not
// the State's current one, or whose URL is already in flight, is dropped.
//
// With a budget (Config.MaxPages) the lease holds one of its slots, taken
// after the URL was chosen and before it is returned: Finish commits it
// when the URL is completed, a retry or Release gives it back. While every
// slot is held by URLs in flight Next waits with the URL leased; once the
// budget is spent it returns ErrLimitReached and the URL stays pending.
// A topic hub's revisit takes no slot (it completes no pending URL).
func (s *Scheduler) Next(ctx context.Context) (*frontier.Lease, error) {
	for {
		lease, err := s.fr.Next(ctx)
		if err != nil {
			return nil, err
		}
		recrawl := s.topics != nil && s.topics.isRecrawl(lease.Request)
		if !s.claim(lease.Request, !recrawl) {
			s.fr.Done(lease, frontier.DoneInfo{Unused: true}) // another copy is being fetched
			if recrawl {
				s.topics.endRecrawl(lease.Request.URL)
			}
			continue
		}
		if recrawl {
			return lease, nil // a hub revisit: not pending in the State
		}
		// The slot is taken before Current, which a State may count as
		// the start of a fetch (p2p's buckets, until Complete).
		if err := s.reserve(ctx, lease); err != nil {
			s.done(lease, frontier.DoneInfo{Unused: true})
			return nil, err
		}
		cur, err := s.st.Current(ctx, lease.Request)
		if err == nil && cur {
			return lease, nil
		}
		// A copy left behind when its URL was lowered to a smaller depth
		// (or already completed, or of a bucket no longer owned): drop it.
		// No request was made, so the host keeps its turn.
		s.done(lease, frontier.DoneInfo{Unused: true})
		if err != nil {
			return nil, err
		}
	}
}

// claim marks r's URL in flight; false if it already is, and then, with
// park, r is kept to be queued again when the copy in flight ends (see
// Scheduler.parked; of several, the one of the smallest depth).
func (s *Scheduler) claim(r frontier.Request, park bool) bool {
	s.flightMu.Lock()
	defer s.flightMu.Unlock()
	if _, busy := s.inFlight[r.URL]; busy {
		if old, ok := s.parked[r.URL]; park && (!ok || r.Depth < old.Depth) {
			s.parked[r.URL] = r
		}
		return false
	}
	s.inFlight[r.URL] = false
	return true
}

// reserve takes a budget slot for lease (claimed by Next).
func (s *Scheduler) reserve(ctx context.Context, lease *frontier.Lease) error {
	if s.budget == nil {
		return nil
	}
	if err := s.budget.Reserve(ctx); err != nil {
		return err
	}
	s.flightMu.Lock()
	s.inFlight[lease.Request.URL] = true
	s.flightMu.Unlock()
	return nil
}

// commit counts lease's URL, just completed, in the budget.
func (s *Scheduler) commit(lease *frontier.Lease) {
	s.flightMu.Lock()
	held := s.inFlight[lease.Request.URL]
	if held {
		s.inFlight[lease.Request.URL] = false
	}
	s.flightMu.Unlock()
	if held {
		s.budget.Commit()
	}
}

// done ends a lease handed out by Next, giving back the budget slot it
// still holds; a URL taken from the revisit schedule stops counting
// against the revisit share (FeedRevisits).
func (s *Scheduler) done(lease *frontier.Lease, info frontier.DoneInfo) {
	s.flightMu.Lock()
	held := s.inFlight[lease.Request.URL]
	delete(s.inFlight, lease.Request.URL)
	parked, ok := s.parked[lease.Request.URL]
	delete(s.parked, lease.Request.URL)
	s.flightMu.Unlock()
	if held {
		s.budget.Release()
	}
	s.fr.Done(lease, info)
	if lease.Request.Schedule != "" {
		s.rv.finished(lease.Request.URL)
	}
	if ok {
		if err := s.fr.Push(parked); err != nil && !errors.Is(err, frontier.ErrClosed) {
			s.log.Warn("cannot queue a URL's copy again; it stays pending for the next run", "url", parked.URL, "err", err)
		}
	}
}

// Release gives a lease back without a result (cancelled, or its worker
// died): with retry the URL is queued again with Attempt+1.
func (s *Scheduler) Release(lease *frontier.Lease, retry bool) {
	if !retry && s.topics != nil && s.topics.isRecrawl(lease.Request) {
		s.topics.endRecrawl(lease.Request.URL)
	}
	s.done(lease, frontier.DoneInfo{Retry: retry})
}

// Enqueue queues requests the State already accepted (for example URLs
// another node sent, or a bucket's pending URLs after acquiring it).
func (s *Scheduler) Enqueue(reqs []frontier.Request) error { return s.fr.PushAll(reqs) }

// Drop removes queued URLs whose politeness key matches pred, e.g. the
// hosts of a bucket this node no longer owns; see frontier.Frontier.Drop.
func (s *Scheduler) Drop(pred func(key string) bool) int {
	if s.fr == nil {
		return 0 // closed
	}
	return s.fr.Drop(pred)
}

// Idle reports whether nothing is queued (in memory or spilled) or leased.
func (s *Scheduler) Idle() bool {
	return s.fr.Empty()
}

// Close closes the frontier and the state; safe to call more than once.
func (s *Scheduler) Close() error {
	var errs []error
	if s.fr != nil {
		errs = append(errs, s.fr.Close())
		s.fr = nil
	}
	if s.topics != nil {
		errs = append(errs, s.topics.close())
		s.topics = nil
	}
	if s.st != nil {
		errs = append(errs, s.st.Close())
		s.st = nil
	}
	return errors.Join(errs...)
}

// Counters returns the state's outcome counters (all runs).
func (s *Scheduler) Counters(ctx context.Context) (map[string]int64, error) {
	return s.st.Counters(ctx)
}

// Sync makes the state durable.
func (s *Scheduler) Sync() error { return s.st.Sync() }

// newFrontier makes the frontier a crawl of cfg schedules from.
func newFrontier(cfg Config, logger *slog.Logger, reg prometheus.Registerer, sel frontier.Selector) (*frontier.Frontier, error) {
	fq, strict := frontierLevels(cfg)
	return frontier.New(frontier.Config{
		FrontQueues:    fq,
		Strict:         strict,
		PerKey:         cfg.PerHost,
		Delay:          frontierDelay(cfg.Delay),
		DelayFromStart: cfg.DelayFrom == DelayFromStart,
		MemoryBudget:   cfg.MemoryBudget,
		SpillDir:       store.DataDir(cfg.Data).Spill(),
		Logger:         logger,
		Registerer:     reg,
		Selector:       sel,
	})
}

// maxLevels bounds the front queues used for depth levels; deeper pages
// share the last level.
const maxLevels = 64

// frontierLevels gives one front queue per depth level and turns on the
// level barrier with StrictLevels under a depth limit (not with Topics).
func frontierLevels(cfg Config) (queues int, strict bool) {
	if cfg.MaxDepth < 0 || cfg.LevelsOverlap() {
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
	if e.Scheduler != nil {
		errs = append(errs, e.Scheduler.Close())
	}
	if e.fetcher != nil {
		errs = append(errs, e.fetcher.Close())
		e.fetcher = nil
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

// Progress reports the crawl's state; it is safe to call during a crawl.
func (s *Scheduler) Progress() Progress {
	st := s.fr.Stats()
	return Progress{
		Fetched:  s.fetched.Load(),
		Errors:   s.errs.Load(),
		Queued:   st.Queued + int(st.Spilled),
		InFlight: st.Leased,
		Hosts:    st.Keys,
		Elapsed:  time.Since(s.started),
	}
}

// HostStates reports the frontier's politeness state of each host
// (host[:port] as urls.HostPort gives it), in order, for the dashboard.
// With PerIP the frontier keys politeness by address, not by host name:
// ok is false and states is nil.
func (s *Scheduler) HostStates(hosts []string) (states []frontier.KeyState, ok bool) {
	if s.cfg.PerIP {
		return nil, false
	}
	return s.fr.KeyStates(hosts), true
}

// Config returns the crawl's effective configuration (defaults filled).
// The caller must not change its slices.
func (e *Engine) Config() Config { return e.cfg }

// Run crawls until no URL is pending, MaxPages is reached, or ctx ends. It
// resumes whatever a previous run in the same data directory left pending.
// On ctx cancellation it returns ctx's error after the workers stopped; the
// state stays consistent and a later Run continues.
func (e *Engine) Run(ctx context.Context) error {
	// Reaching MaxPages cancels only the hand-out of new URLs (nextCtx).
	// No fetch beyond the limit is ever started (Budget): the fetches in
	// flight then are within it, finish and are recorded.
	nextCtx, stopNext := context.WithCancel(ctx)
	defer stopNext()
	e.startHandOut(nextCtx, stopNext)
	seeds, err := e.fetcher.SeedRequests()
	if err != nil {
		return err
	}
	if err := e.Start(ctx, seeds); err != nil {
		return err
	}
	rv, err := e.startRevisits(ctx)
	if err != nil {
		return err
	}
	if e.LimitReached() {
		e.log.Info("page limit already reached", "max_pages", e.cfg.MaxPages)
		return nil
	}
	pctx, stopPipeline := context.WithCancel(ctx)
	defer stopPipeline()
	if rv != nil {
		// spider status and the dashboard read the schedule's figures
		// from this file while the crawl holds the state.
		fctx, stopFile := context.WithCancel(pctx)
		fileDone := make(chan struct{})
		go func() { defer close(fileDone); e.scheduleFileLoop(fctx) }()
		defer func() {
			stopFile()
			<-fileDone
			if err := e.writeScheduleFile(context.WithoutCancel(ctx)); err != nil {
				e.log.Warn("cannot write the revisit schedule's figures for spider status", "err", err)
			}
		}()
	}
	var daemonErr chan error
	if e.topics != nil {
		daemonErr = make(chan error, 1)
		go func() { daemonErr <- e.topicDaemon(pctx, e.fetcher) }()
	}
	var feedErr chan error
	if e.cfg.Continuous && rv != nil {
		feedErr = make(chan error, 1)
		go func() {
			err := e.FeedRevisits(nextCtx, rv)
			if err != nil {
				stopPipeline()
			}
			feedErr <- err
		}()
	}
	err = e.runPipeline(pctx, nextCtx)
	stopPipeline()
	stopNext()
	if daemonErr != nil {
		if derr := <-daemonErr; derr != nil && err == nil {
			err = derr
		}
	}
	if feedErr != nil {
		if ferr := <-feedErr; ferr != nil && (err == nil || errors.Is(err, context.Canceled)) {
			err = ferr
		}
	}
	// A checkpoint: the state's Sync fsyncs the fetcher's files first.
	if serr := e.Sync(); serr != nil && err == nil {
		err = serr
	}
	return err
}

// startRevisits prepares the revisit schedule of a Run: with RetryFailed
// every failed URL is made due now; a one-shot crawl (not Continuous) then
// queues every URL due now (revisits and retries of failures whose
// back-off has passed), a continuous one leaves them to FeedRevisits. It
// returns the State's schedule (nil: the State keeps none).
func (e *Engine) startRevisits(ctx context.Context) (crawlstate.Revisits, error) {
	rv := e.revisits()
	if rv == nil {
		if e.cfg.RetryFailed {
			return nil, errors.New("cannot retry failed URLs: this crawl state keeps no revisit schedule")
		}
		return nil, nil
	}
	now := e.rv.now()
	if e.cfg.RetryFailed {
		n, err := rv.RetryFailed(ctx, now)
		if err != nil {
			return nil, fmt.Errorf("cannot make the failed URLs due (--retry-failed): %w", err)
		}
		e.log.Info("retrying failed URLs", "urls", n)
	}
	if e.cfg.Continuous {
		return rv, nil
	}
	n, err := e.TakeAllDue(ctx, rv, now)
	if err != nil {
		return nil, err
	}
	if n > 0 {
		e.log.Info("queued URLs due for a revisit or a retry", "urls", n)
	}
	return rv, nil
}

// stopAtLimit ends the hand-out once the budget is spent.
func (e *Engine) stopAtLimit() {
	e.stopOnce.Do(func() {
		e.log.Info("page limit reached, stopping", "max_pages", e.cfg.MaxPages)
		e.stop()
	})
}

// LimitReached reports whether MaxPages URLs were completed over all runs
// (the budget is spent).
func (s *Scheduler) LimitReached() bool {
	if s.cfg.MaxPages <= 0 {
		return false
	}
	if s.budget != nil {
		return s.budget.Spent()
	}
	total, err := s.completed(context.Background())
	return err == nil && total >= s.cfg.MaxPages
}

// completed is the number of URLs completed over all runs: the sum of the
// State's outcome counters (one per completion, so one per record).
func (s *Scheduler) completed(ctx context.Context) (int64, error) {
	c, err := s.st.Counters(ctx)
	if err != nil {
		return 0, err
	}
	var total int64
	for _, n := range c {
		total += n
	}
	return total, nil
}

// Finish applies a visit to the state and the frontier: a retry is
// persisted (attempt count) and put back; anything else completes the URL
// and queues its newly discovered links, before the lease ends (and with
// it the host's turn, unless EndTurn ended it when the answer was read). An
// error means the state failed and the crawl cannot go on.
func (s *Scheduler) Finish(ctx context.Context, lease *frontier.Lease, v Visit) error {
	req := lease.Request
	if v.CrawlDelay > 0 {
		s.fr.SetKeyDelay(req.Key, v.CrawlDelay)
	}
	if s.topics != nil && !v.Retry {
		elapsed := time.Since(lease.Start)
		switch {
		case v.Outcome == OutcomeRobots:
			s.topics.sched.Refused(req, elapsed) // no page: robots.txt said no
		case v.Text != "":
			s.topics.sched.Finished(req, elapsed, v.Text)
		default: // scored by the crawl node that fetched it (or no text)
			s.topics.sched.FinishedScore(req, elapsed, v.TopicScore)
		}
		if s.topics.isRecrawl(req) {
			return s.finishRecrawl(ctx, lease, v)
		}
		s.topics.tag(v.Discovered)
	}
	if v.Retry {
		req.Attempt++
		if err := s.st.UpdatePending(ctx, req); err != nil && !errors.Is(err, state.ErrNotPending) {
			s.done(lease, frontier.DoneInfo{})
			return fmt.Errorf("cannot record retry of %s: %w", req.URL, err)
		}
		s.m.retries.Inc()
		info := v.doneInfo(lease)
		info.Retry = true
		s.done(lease, info)
		return nil
	}
	discovered := v.Discovered
	relinks := false
	if rl, ok := s.st.(relinker); ok && rl.Relinks() {
		relinks = true
		if len(v.Beyond) > 0 {
			discovered = append(slices.Clip(discovered), v.Beyond...)
		}
	}
	report := discovered
	if s.known != nil && !relinks {
		report = s.known.filter(discovered)
	}
	sc := s.rv.scheduleOf(req, v, s.rv.now(), s.log.Warn)
	out, err := s.st.Complete(ctx, req, crawlstate.Outcome{Class: v.Outcome, Fingerprint: v.Fingerprint, URL: req.URL,
		SimHash: v.SimHash, NearDistance: s.cfg.NearDupDistance,
		PageNext: v.PageNext, RecordsEnd: v.RecordsEnd,
		Schedule: sc.entry, Due: sc.due, Failed: sc.failed,
		Filed: v.Filed, DuplicateOf: v.DuplicateOf, Near: v.Near}, report)
	if err != nil {
		s.done(lease, frontier.DoneInfo{})
		return fmt.Errorf("cannot record completion of %s: %w", req.URL, err)
	}
	s.rv.count(sc)
	if s.known != nil && !relinks {
		s.known.add(report)
	}
	s.commit(lease)
	if out.DuplicateOf != "" {
		if out.Near {
			s.m.nearDups.Inc()
		} else {
			s.m.duplicates.Inc()
		}
		s.log.Debug("duplicate content", "url", req.URL, "duplicate_of", out.DuplicateOf, "near", out.Near)
	}
	if err := s.fr.PushAll(out.New); err != nil {
		s.done(lease, frontier.DoneInfo{})
		return fmt.Errorf("cannot queue discovered URLs: %w", err)
	}
	s.done(lease, v.doneInfo(lease))
	if req.Kind == frontier.KindSitemap && len(v.Discovered) > 0 {
		// After the lease: a sitemap of 50,000 URLs does not hold its
		// host's turn while their schedule is read. A hint is a hint: a
		// state error here is logged, not fatal.
		if n, err := s.sitemapHints(ctx, v.Discovered); err != nil {
			s.log.Warn("cannot apply a sitemap's lastmod hints to the revisit schedule", "sitemap", req.URL, "err", err)
		} else if n > 0 {
			s.log.Debug("sitemap lastmod brought revisits forward", "sitemap", req.URL, "urls", n)
		}
	}

	s.fetched.Add(1)
	row := Row(v.Outcome)
	if row != Row200 && row != Row30x {
		s.errs.Add(1)
	}
	s.m.pages.WithLabelValues(row).Inc()
	s.m.discovered.Add(float64(len(out.New)))
	return nil
}

// doneInfo is how the visit ends its lease for the frontier: the host's
// extra delay, and when its page request started (after a robots.txt
// fetched under the lease), which a start-to-start delay counts from.
func (v Visit) doneInfo(lease *frontier.Lease) frontier.DoneInfo {
	info := frontier.DoneInfo{Delay: v.Delay}
	if v.RequestAfter > 0 {
		info.Started = lease.Start.Add(v.RequestAfter)
	}
	return info
}

func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Host
}
