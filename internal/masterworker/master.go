package masterworker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/spider-crawler/spider/internal/cluster"
	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/crawlstate"
	"github.com/spider-crawler/spider/internal/frontier"
)

// MasterStats counts the master's traffic.
type MasterStats struct {
	Handed   int64 // tasks put on srq
	Results  int64 // results applied
	Stale    int64 // results ignored (old epoch, unknown lease, worker declared dead)
	Requeued int64 // tasks taken back from dead workers
	Bad      int64 // malformed packets dropped
	Expired  int64 // tasks out longer than the task TTL, queued again
	Returned int64 // topics: tasks a leaving crawl node had not started, taken back from its queue
	// Answers counts the hosts' turns ended by a worker's Answered packet
	// (the rest end with their result); StaleAnswers the packets ignored
	// (their result came first, the task was taken back, another epoch).
	Answers, StaleAnswers int64
}

// Master is the scheduling node of a master–worker crawl.
type Master struct {
	opt   Options
	cfg   crawl.Config
	rdb   redis.UniversalClient
	sched *crawl.Scheduler
	seeds []frontier.Request
	log   *slog.Logger
	k     keys

	maxInFlight int
	ctlKeys     cluster.Keys
	sem         chan struct{} // one slot per task out
	epoch       int64

	mu     sync.Mutex
	leases map[uint64]outTask
	nextID uint64

	handed, results, stale, requeued, bad, expired, returned atomic.Int64
	answers, staleAnswers                                    atomic.Int64

	held    atomic.Bool    // paused or stopping by spider control: hand out nothing
	fetcher *crawl.Fetcher // builds the requests of seeds added by spider control

	rv crawlstate.Revisits // the state's revisit schedule (nil: none; revisit.go)

	tp *topicRoute // the topics coordinator's routing (nil: plain master–worker; topics.go)

	finishOnce sync.Once // finished marks the crawl done once
	finishErr  error
}

// UseSchedule gives the master the revisit schedule its scheduler's State
// keeps (crawlstate.Revisits; OpenState's state has one): Run then makes
// failed URLs due with Config.RetryFailed, queues what is due at the start
// of a one-shot run, and, with Config.Continuous, keeps taking due URLs
// (crawl.Scheduler.FeedRevisits) and runs until stopped. Call it before
// Run.
func (m *Master) UseSchedule(rv crawlstate.Revisits) { m.rv = rv }

// AcceptSeeds lets the master add the seeds `spider control seed` queues:
// f (closed or not: only its normaliser and rules are used) builds their
// requests under the crawl's rules. Call it before Run.
func (m *Master) AcceptSeeds(f *crawl.Fetcher) { m.fetcher = f }

// outTask is a task handed out and not answered yet.
type outTask struct {
	lease *frontier.Lease
	at    time.Time // when it went on srq (topics: on its node's queue)
	node  int       // topics: the crawl node whose srq:N holds it (0: shared srq, or waiting in the master)
	turn  *taskTurn // its host's turn: ended by an Answered packet (answered.go)
}

// NewMaster prepares a master for cfg that schedules from sched (which it
// owns from then on) with the given seeds. maxInFlight bounds the tasks
// handed out and not yet answered (0: 4 × cfg.Concurrency).
func NewMaster(cfg crawl.Config, sched *crawl.Scheduler, seeds []frontier.Request, rdb redis.UniversalClient, opt Options, maxInFlight int, logger *slog.Logger) (*Master, error) {
	if err := opt.defaults(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if maxInFlight <= 0 {
		maxInFlight = 4 * max(cfg.Concurrency, 1)
	}
	return &Master{
		opt: opt, cfg: cfg, rdb: rdb, sched: sched, seeds: seeds, log: logger, k: newKeys(opt.Crawl),
		maxInFlight: maxInFlight, sem: make(chan struct{}, maxInFlight), leases: map[uint64]outTask{},
	}, nil
}

// Stats returns the master's counters.
func (m *Master) Stats() MasterStats {
	return MasterStats{Handed: m.handed.Load(), Results: m.results.Load(), Stale: m.stale.Load(),
		Requeued: m.requeued.Load(), Bad: m.bad.Load(), Expired: m.expired.Load(), Returned: m.returned.Load(),
		Answers: m.answers.Load(), StaleAnswers: m.staleAnswers.Load()}
}

// Progress reports the crawl's progress as the scheduler sees it.
func (m *Master) Progress() crawl.Progress { return m.sched.Progress() }

// errDone ends the master's loops when the crawl is over.
var errDone = errors.New("crawl done")

// Run schedules the crawl until the frontier is drained (or MaxPages URLs
// are completed: each task out holds a slot of the scheduler's budget, so
// no task beyond the limit is handed out), then marks it done so the
// workers exit. A master started again
// on the same state resumes: a new epoch makes workers drop tasks of the
// previous run, and whatever that run had out is pending again (a new
// Master: Run is called once per Master, which marks its crawl done once).
func (m *Master) Run(ctx context.Context) (err error) {
	if err := m.prepare(ctx); err != nil {
		return err
	}
	rep, err := cluster.StartReporter(ctx, m.rdb, m.ctlKeys, cluster.ReporterConfig{Node: ControlNode, Role: cluster.RoleMaster,
		Source: m.masterReport, Every: m.opt.ReportEvery, Logger: m.log})
	if err != nil {
		return fmt.Errorf("cannot publish the master's report: %w", err)
	}
	defer func() {
		if rerr := stopReport(ctx, rep, endState(err, false)); rerr != nil && err == nil {
			err = fmt.Errorf("cannot publish the master's final report: %w", rerr)
		}
	}()
	if err := m.sched.Start(ctx, m.seeds); err != nil {
		return err
	}
	if err := m.startRevisits(ctx); err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	if m.rv != nil && m.cfg.Continuous {
		g.Go(func() error { return m.sched.FeedRevisits(gctx, m.rv) })
	}
	for range m.dispatchers() {
		g.Go(func() error { return m.dispatch(gctx) })
	}
	results := make(chan string, 2*m.opt.Collectors)
	g.Go(func() error { return m.collect(gctx, results) })
	g.Go(func() error { return m.collectAnswers(gctx) })
	for range m.opt.Collectors {
		g.Go(func() error { return m.apply(gctx, results) })
	}
	g.Go(func() error { return m.reap(gctx) })
	if m.tp != nil {
		g.Go(func() error { return m.sched.RunTopicDaemon(gctx, m.tp.opt.Fetcher, m.topicTick) })
	}
	ctl := cluster.NewControl(m.rdb, m.ctlKeys)
	g.Go(func() error { return m.follow(gctx, ctl) })
	// The loops end (done, stopped, failed): the blocked pops of nrq and
	// ans would otherwise hold the master's exit for up to popWait.
	woken := make(chan struct{})
	stopWake := context.AfterFunc(gctx, func() {
		defer close(woken)
		m.wakePops(ctx)
	})
	err = g.Wait()
	if !stopWake() {
		<-woken // pushed: remove what no pop took
	}
	m.unwake(ctx)
	if errors.Is(err, ErrStopped) {
		if serr := m.sched.Sync(); serr != nil {
			return serr
		}
		return err
	}
	if !errors.Is(err, errDone) {
		return err // errDone comes only from finished, which marked the crawl done
	}
	m.log.Info("crawl done", "handed", m.handed.Load(), "results", m.results.Load())
	return m.sched.Sync()
}

// prepare starts a new epoch: the queues of an earlier master run are
// cleared (their URLs are still pending in the state), the configuration
// is published for workers, and trq is filled once per crawl.
func (m *Master) prepare(ctx context.Context) error {
	epoch, err := m.rdb.Incr(ctx, m.k.epoch()).Result()
	if err != nil {
		return fmt.Errorf("cannot reach Redis to start the master (is redis-server running and the URL right?): %w", err)
	}
	m.epoch = epoch
	if m.ctlKeys, err = cluster.NewKeys(m.opt.Crawl); err != nil {
		return err
	}
	if err := cluster.NewControl(m.rdb, m.ctlKeys).Fresh(ctx); err != nil {
		return err
	}
	// Only the crawl's rules are published: the master's SSRF guard, name
	// resolution, paths and limits are its own (crawl.LocalFields).
	cfgJSON, err := m.cfg.RulesJSON()
	if err != nil {
		return err
	}
	// trq first: a worker that finds the configuration takes its work
	// number at once, instead of polling an empty trq.
	first, err := m.rdb.SetNX(ctx, m.k.trqInit(), "1", 0).Result()
	if err != nil {
		return fmt.Errorf("cannot prepare trq: %w", err)
	}
	if first {
		tags := make([]any, m.opt.MaxWorkers)
		for i := range tags {
			tags[i] = i + 1
		}
		if err := m.rdb.RPush(ctx, m.k.trq(), tags...).Err(); err != nil {
			return fmt.Errorf("cannot fill trq: %w", err)
		}
	}
	pipe := m.rdb.TxPipeline()
	pipe.Del(ctx, m.k.srq(), m.k.nrq(), m.k.ans(), m.k.done())
	pipe.Set(ctx, m.k.ansEpoch(), epoch, 0) // this master reads ans
	pipe.Set(ctx, m.k.config(), cfgJSON, 0)
	pipe.Set(ctx, m.k.heartbeat(), m.opt.Heartbeat.Milliseconds(), 0)
	if m.tp != nil {
		// The workers check their topics file against this one; the
		// queues of the crawl nodes of an earlier run go (their URLs are
		// pending in the state).
		pipe.Set(ctx, m.k.topicsConfig(), m.tp.canon, 0)
		for w := 1; w <= m.opt.MaxWorkers; w++ {
			pipe.Del(ctx, m.k.srqOf(w))
		}
	} else {
		pipe.Del(ctx, m.k.topicsConfig(), m.k.topicsStatus()) // a worker started with --topics is refused
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("cannot prepare the crawl's queues: %w", err)
	}
	return nil
}

// dispatch hands URLs to workers as the frontier releases them: politeness
// across all workers is the frontier's, because a host's next URL is only
// released after its previous one's answer was read (the worker's
// Answered packet, answered.go) or, failing that, its result came back.
func (m *Master) dispatch(ctx context.Context) error {
	for {
		select {
		case m.sem <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
		if m.sched.LimitReached() {
			return m.drainThenDone(ctx)
		}
		lease, err := m.sched.Next(ctx)
		if errors.Is(err, frontier.ErrDrained) && (m.continuous() || m.tp != nil && m.sched.TopicsRecrawl()) {
			// A continuous crawl runs until stopped: FeedRevisits queues
			// the URLs that come due, spider control seed new ones.
			<-m.sem
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(drainedPoll):
			}
			continue
		}
		if errors.Is(err, frontier.ErrDrained) {
			return m.finished(ctx)
		}
		if errors.Is(err, crawl.ErrLimitReached) {
			// Every URL of the budget is completed (each task out held
			// one of its slots): what is still queued stays pending.
			return m.drainThenDone(ctx)
		}
		if err != nil {
			return err
		}
		if m.held.Load() { // paused meanwhile: queued again as it was
			m.sched.Release(lease, false)
			err := m.sched.Enqueue([]frontier.Request{lease.Request})
			<-m.sem
			if err != nil {
				return fmt.Errorf("cannot queue %s again: %w", lease.Request.URL, err)
			}
			continue
		}
		m.mu.Lock()
		m.nextID++
		id := m.nextID
		m.leases[id] = outTask{lease: lease, at: time.Now(), turn: &taskTurn{}}
		m.mu.Unlock()
		if m.tp != nil {
			// To the queue of the crawl node owning the host's logical
			// node, when its window has room.
			m.tp.enqueue(id)
			if err := m.route(ctx); err != nil {
				return err
			}
			continue
		}
		b, err := encodeTask(m.epoch, id, lease.Request)
		if err == nil {
			err = cluster.Retry(ctx, func() error { return m.rdb.RPush(ctx, m.k.srq(), b).Err() })
		}
		if err != nil {
			m.take(id) // never on srq: its turn cannot have ended
			m.sched.Release(lease, false)
			return fmt.Errorf("cannot hand out %s: %w", lease.Request.URL, err)
		}
		m.handed.Add(1)
	}
}

// dispatchLoops is how many dispatch loops a plain master runs. Each
// hand-out costs two Redis round trips (the state's Current, the push on
// srq), under load a few ms; with one loop a host that became ready
// while another host's task was being handed out waited for it, and the
// wait added to the host's gap at the server.
const dispatchLoops = 4

// dispatchers is the number of dispatch loops: dispatchLoops, or one for
// a topics coordinator (its routing to the crawl nodes' queues is one
// loop's).
func (m *Master) dispatchers() int {
	if m.tp != nil {
		return 1
	}
	return dispatchLoops
}

// drainedPoll is how often a continuous master with nothing queued looks
// at its frontier again.
const drainedPoll = 50 * time.Millisecond

// continuous reports whether the crawl runs until stopped (Config.Continuous
// with a revisit schedule).
func (m *Master) continuous() bool { return m.cfg.Continuous && m.rv != nil }

// startRevisits prepares the revisit schedule of a master run as the
// single-node engine does: with Config.RetryFailed every failed URL is
// made due now; a one-shot run then queues every URL due now (revisits,
// and retries of failures whose back-off has passed); a continuous one
// leaves them to FeedRevisits.
func (m *Master) startRevisits(ctx context.Context) error {
	if m.rv == nil {
		if m.cfg.RetryFailed || m.cfg.Continuous {
			return errors.New("cannot revisit or retry URLs: this crawl state keeps no revisit schedule")
		}
		return nil
	}
	now := time.Now()
	if m.cfg.RetryFailed {
		n, err := m.rv.RetryFailed(ctx, now)
		if err != nil {
			return fmt.Errorf("cannot make the failed URLs due (--retry-failed): %w", err)
		}
		m.log.Info("retrying failed URLs", "urls", n)
	}
	if m.cfg.Continuous {
		return nil
	}
	n, err := m.sched.TakeAllDue(ctx, m.rv, now)
	if err != nil {
		return err
	}
	if n > 0 {
		m.log.Info("queued URLs due for a revisit or a retry", "urls", n)
	}
	return nil
}

// drainThenDone waits for the tasks already out (MaxPages reached).
func (m *Master) drainThenDone(ctx context.Context) error {
	<-m.sem // the slot taken for the task not handed out
	for {
		m.mu.Lock()
		n := len(m.leases)
		m.mu.Unlock()
		if n == 0 {
			return m.finished(ctx)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// finished marks the crawl done at once, so that the workers stop without
// waiting for the master's other loops to wind down, and ends the loops.
func (m *Master) finished(ctx context.Context) error {
	m.finishOnce.Do(func() { m.finishErr = m.finish(ctx) })
	return m.finishErr
}

// finish is finished's work, done once (several dispatch loops may find
// the frontier drained).
func (m *Master) finish(ctx context.Context) error {
	// The final counters first: the reaper publishes only every heartbeat,
	// so without this `spider status` on a done crawl showed the counters of
	// up to one heartbeat before the end (issue #24: 256 done, 19 queued
	// while the master reported 275).
	m.publish(ctx)
	if m.tp != nil {
		m.publishTopics(ctx, time.Now())
	}
	if err := m.markDone(ctx); err != nil {
		return err
	}
	return errDone
}

// markDone sets the key the workers watch and wakes the workers' blocked
// pops with the done sentinel on srq (idempotent: a second sentinel is
// harmless).
func (m *Master) markDone(ctx context.Context) error {
	var nodes []string
	if m.tp != nil {
		var err error
		if nodes, err = m.rdb.HKeys(ctx, m.k.workers()).Result(); err != nil {
			return fmt.Errorf("cannot mark the crawl done: %w", err)
		}
	}
	if err := cluster.Retry(ctx, func() error {
		pipe := m.rdb.TxPipeline()
		pipe.Set(ctx, m.k.done(), strconv.FormatInt(m.epoch, 10), 0)
		pipe.RPush(ctx, m.k.srq(), doneSentinel)
		for _, w := range nodes { // crawl nodes wait on their own queues
			if id, err := strconv.Atoi(w); err == nil {
				pipe.RPush(ctx, m.k.srqOf(id), doneSentinel)
			}
		}
		_, err := pipe.Exec(ctx)
		return err
	}); err != nil {
		return fmt.Errorf("cannot mark the crawl done: %w", err)
	}
	return nil
}

// take removes a task from the tasks out and returns it (ok false: not
// out any more); from then on no Answered packet ends its turn (it waits
// for an endTurn under way). A topics coordinator counts the task off its
// node's window.
func (m *Master) take(id uint64) (t outTask, ok bool) {
	m.mu.Lock()
	t, ok = m.leases[id]
	delete(m.leases, id)
	m.mu.Unlock()
	if !ok {
		return t, false
	}
	t.turn.finish()
	if m.tp != nil {
		m.answered(t.node)
	}
	return t, true
}

// collect pops results from nrq, up to resultBatch per round trip, and
// passes them to the appliers. Only this loop blocks on Redis, so the
// appliers' state scripts never wait for a connection held by a blocked
// pop.
func (m *Master) collect(ctx context.Context, out chan<- string) error {
	return m.drain(ctx, m.k.nrq(), "results", func(raw string) error {
		select {
		case out <- raw:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
}

// drain pops the list key, what it holds named by what in errors and
// logs, until ctx ends or Redis stays down: one blocking pop (popWait) and
// then up to resultBatch-1 more in one round trip, each handed to use in
// order. A Redis error is retried as an outage (cluster.Outage); use's
// error ends the loop with it.
func (m *Master) drain(ctx context.Context, key, what string, use func(string) error) error {
	var down cluster.Outage
	reading := "reading " + what
	for {
		vals, err := m.rdb.BLPop(ctx, popWait, key).Result()
		if errors.Is(err, redis.Nil) {
			down.OK(m.log, reading)
			continue
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if down.Retry(ctx, err, m.log, reading) {
				continue
			}
			return fmt.Errorf("cannot read the %s (%s): %w", what, key, err)
		}
		down.OK(m.log, reading)
		// The popped value is used before more are asked for: an answered
		// packet ends its host's turn without waiting for a second round
		// trip (the host's gap at the server grows by every delay here).
		for _, raw := range vals[1:] {
			if err := m.use(ctx, raw, use); err != nil {
				return err
			}
		}
		more, err := m.rdb.LPopCount(ctx, key, resultBatch-1).Result()
		if err != nil && !errors.Is(err, redis.Nil) && ctx.Err() == nil {
			m.log.Warn("cannot read more "+what, "key", key, "err", err)
		}
		for _, raw := range more {
			if err := m.use(ctx, raw, use); err != nil {
				return err
			}
		}
	}
}

// use hands raw, popped by drain, to fn, unless it is popWake: then the
// drain ends with ctx's error if ctx has ended, and the value is dropped
// if not (a wake-up left by an earlier run).
func (m *Master) use(ctx context.Context, raw string, fn func(string) error) error {
	if raw == popWake {
		return ctx.Err()
	}
	return fn(raw)
}

// popWake is the value wakePops pushes at the head of nrq and ans when
// the master's loops end, so that the blocked pops (drain) return at once
// instead of after popWait. It cannot be a result or an answered packet
// (those are JSON objects); a master's prepare deletes both lists, so one
// left behind by a master that exited is never read by the next run.
const popWake = "wake"

// wakePops pushes popWake at the head of nrq and of ans (best effort: if
// Redis is away, the pops end after popWait as before).
func (m *Master) wakePops(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), popWait)
	defer cancel()
	pipe := m.rdb.Pipeline()
	pipe.LPush(ctx, m.k.nrq(), popWake)
	pipe.LPush(ctx, m.k.ans(), popWake)
	if _, err := pipe.Exec(ctx); err != nil {
		m.log.Debug("cannot wake the master's blocked pops; they end within their time-out", "err", err)
	}
}

// unwake removes a popWake that no pop took (its loop had ended
// already), so that spider status counts no result waiting on a finished
// crawl.
func (m *Master) unwake(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), popWait)
	defer cancel()
	pipe := m.rdb.Pipeline()
	pipe.LRem(ctx, m.k.nrq(), 0, popWake)
	pipe.LRem(ctx, m.k.ans(), 0, popWake)
	_, _ = pipe.Exec(ctx) // best effort: a master's prepare deletes both lists
}

// popWait bounds a blocking pop (go-redis does not interrupt a blocked
// command when its context is cancelled, and its shortest blocking time-out
// is 1 s).
const popWait = time.Second

// doneSentinel is the task the master appends to srq when the crawl is
// done. A worker loop that pops it puts it back at the head of srq and
// stops, so it wakes every blocked loop of every worker in turn, one round
// trip each, instead of each waiting out its pop's time-out.
const doneSentinel = "done"

// resultBatch is the most results collect pops in one round trip.
const resultBatch = 64

// apply applies popped results to the state. Several appliers run at once
// (Options.Collectors); the scheduler takes concurrent Finish calls as it
// does from the single-node engine's workers.
func (m *Master) apply(ctx context.Context, in <-chan string) error {
	for {
		var raw string
		select {
		case raw = <-in:
		case <-ctx.Done():
			return ctx.Err()
		}
		r, err := decodeResult([]byte(raw))
		if err != nil {
			m.bad.Add(1)
			m.log.Warn("dropping malformed result", "err", err)
			continue
		}
		if r.Epoch != m.epoch {
			m.stale.Add(1)
			continue
		}
		t, ok := m.take(r.ID)
		if !ok {
			m.stale.Add(1) // its worker was declared dead and the URL re-queued
			continue
		}
		lease := t.lease
		if lease.Request.URL != r.Visit.Request.URL {
			m.bad.Add(1)
			m.log.Warn("result does not match its task", "id", r.ID, "task", lease.Request.URL, "result", r.Visit.Request.URL)
			m.release(t, true)
			continue
		}
		if r.Visit.Retry && (r.GivenBack || t.turn.finish()) {
			// Given back by a worker that abandoned it after its answered
			// packet (giveBackAnswered: counted as re-queued even when the
			// packet has not arrived yet), or a retry after the turn ended:
			// Finish's re-queue would be lost (Done after EndTurn ignores
			// a Retry), so it is queued again here (release).
			m.release(t, true)
			m.requeued.Add(1)
			if m.tp != nil {
				if err := m.route(ctx); err != nil {
					return err
				}
			}
			continue
		}
		r.Visit.RequestAfter = requestAfter(lease.Start, r)
		if err := m.sched.Finish(ctx, lease, r.Visit); err != nil {
			return err
		}
		m.results.Add(1)
		<-m.sem
		if m.tp != nil {
			if err := m.route(ctx); err != nil {
				return err
			}
		}
	}
}

// requestAfter is when, after the lease's start on the master's clock, the
// result's page request started at the latest: its arrival less the age the
// worker measured (the time the task waited in srq and the result in nrq
// is thus never counted as if the request had already started). A result
// without an age but with a request (from a worker before RequestAge)
// counts from its arrival, like the delay from the answer.
func requestAfter(leaseStart time.Time, r Result) time.Duration {
	if r.Visit.RequestAfter <= 0 {
		return 0
	}
	return max(time.Since(leaseStart)-r.RequestAge, 1)
}

// reap takes back the tasks of workers whose heartbeat is older than
// WorkerTTL: their URLs are queued again (Attempt+1) and their work number
// returns to trq.
func (m *Master) reap(ctx context.Context) error {
	t := time.NewTicker(m.opt.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		now, err := m.rdb.Time(ctx).Result()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			m.log.Warn("cannot read Redis time", "err", err)
			continue
		}
		m.publish(ctx)
		m.expire(ctx)
		beats, err := m.rdb.HGetAll(ctx, m.k.workers()).Result()
		if err != nil {
			m.log.Warn("cannot read worker heartbeats", "err", err)
			continue
		}
		for w, ms := range beats {
			last, err := strconv.ParseInt(ms, 10, 64)
			id, err2 := strconv.Atoi(w)
			if err != nil || err2 != nil {
				m.rdb.HDel(ctx, m.k.workers(), w)
				continue
			}
			if now.Sub(time.UnixMilli(last)) > m.opt.WorkerTTL {
				if err := m.requeue(ctx, id); err != nil {
					m.log.Warn("cannot requeue a dead worker's tasks", "worker", id, "err", err)
				}
			}
		}
		if m.tp != nil {
			m.refreshNodes(ctx, beats, now)
		}
	}
}

// taskTTL is how long a task may stay out before the master takes it back:
// longer than any fetch can take (a robots.txt fetch and the page, each
// bounded by the fetch time-out, and the host's delay between them), so a
// task still being fetched is never handed out twice.
func (m *Master) taskTTL() time.Duration {
	if m.opt.TaskTTL > 0 {
		return m.opt.TaskTTL
	}
	return 2*time.Duration(m.cfg.Timeout) + 2*time.Duration(m.cfg.Delay) + 30*time.Second
}

// expire takes back tasks that have been out longer than taskTTL. A task
// can be lost without its worker dying: when Redis restarts just after
// moving it into a worker's processing list but before the worker got the
// reply, the worker never sees it, keeps heart-beating, and the reaper
// never looks at its list. Without this the host stays leased forever
// and the crawl never ends.
//
// The task's copy is removed from srq and from every worker's processing
// list first (a task waiting on srq because no worker runs would otherwise
// be fetched twice, and a lost one would be handed back to srq when its
// worker leaves).
func (m *Master) expire(ctx context.Context) {
	ttl := m.taskTTL()
	type gone struct {
		id    uint64
		lease *frontier.Lease
		node  int
	}
	var old []gone
	m.mu.Lock()
	for id, t := range m.leases {
		if m.tp != nil && t.node == 0 {
			continue // waiting in the master for its node: never lost
		}
		if time.Since(t.at) > ttl {
			old = append(old, gone{id, t.lease, t.node})
		}
	}
	m.mu.Unlock()
	if len(old) == 0 {
		return
	}
	workers, err := m.rdb.HKeys(ctx, m.k.workers()).Result()
	if err != nil {
		return // Redis is away: try again at the next round
	}
	n := 0
	for _, g := range old {
		raw, err := encodeTask(m.epoch, g.id, g.lease.Request)
		if err != nil {
			continue
		}
		pipe := m.rdb.Pipeline()
		pipe.LRem(ctx, m.k.srq(), 1, raw)
		if g.node != 0 {
			pipe.LRem(ctx, m.k.srqOf(g.node), 1, raw)
		}
		for _, w := range workers {
			if id, err := strconv.Atoi(w); err == nil {
				pipe.LRem(ctx, m.k.processing(id), 1, raw)
			}
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return
		}
		if t, ok := m.take(g.id); ok { // else answered meanwhile
			m.release(t, true)
			n++
		}
	}
	old = old[:n]
	if len(old) > 0 {
		m.expired.Add(int64(len(old)))
		m.log.Warn("tasks out longer than the task TTL are queued again", "tasks", len(old), "ttl", ttl)
	}
}

func (m *Master) requeue(ctx context.Context, worker int) error {
	if m.tp != nil {
		return m.requeueTopics(ctx, worker)
	}
	items, err := m.rdb.LRange(ctx, m.k.processing(worker), 0, -1).Result()
	if err != nil {
		return err
	}
	n := m.releaseTasks(items, true)
	pipe := m.rdb.TxPipeline()
	pipe.Del(ctx, m.k.processing(worker))
	pipe.HDel(ctx, m.k.workers(), strconv.Itoa(worker))
	pipe.HDel(ctx, m.k.owners(), strconv.Itoa(worker))
	pipe.RPush(ctx, m.k.trq(), worker)
	if _, err := pipe.Exec(ctx); err != nil {
		return err
	}
	m.requeued.Add(int64(n))
	m.log.Warn("worker declared dead; its tasks are queued again", "worker", worker, "tasks", n)
	return nil
}

// publish writes the master's progress for `spider status`.
func (m *Master) publish(ctx context.Context) {
	fields := map[string]any{"epoch": m.epoch}
	for k, v := range m.figures() {
		fields[k] = v
	}
	m.rdb.HSet(ctx, m.k.stats(), fields)
}

// figures are the master's progress and task counters by the names the
// stats hash (spider status) and the crawl report share; a topics
// coordinator adds "returned" (MasterStats.Returned: tasks a leaving crawl
// node had not started, taken back from its queue).
func (m *Master) figures() map[string]int64 {
	p := m.sched.Progress()
	s := m.Stats()
	f := map[string]int64{
		"fetched": p.Fetched, "errors": p.Errors, "queued": int64(p.Queued), "in_flight": int64(p.InFlight), "hosts": int64(p.Hosts), "elapsed_ms": p.Elapsed.Milliseconds(),
		"handed": s.Handed, "results": s.Results, "stale": s.Stale, "requeued": s.Requeued, "bad": s.Bad, "expired": s.Expired,
	}
	if m.tp != nil {
		f["returned"] = s.Returned
	}
	return f
}

// ScheduleStatus reads the revisit schedule for the summary
// (crawl.Scheduler.ScheduleStatus); ok is false when the state keeps none.
func (m *Master) ScheduleStatus(ctx context.Context) (crawl.ScheduleStatus, bool, error) {
	return m.sched.ScheduleStatus(ctx)
}

// Counters returns the crawl's outcome counters from the state.
func (m *Master) Counters(ctx context.Context) (map[string]int64, error) {
	return m.sched.Counters(ctx)
}

// Close closes the scheduler (frontier and state).
func (m *Master) Close() error { return m.sched.Close() }

// WaitWorkersGone waits, at most timeout, until no worker of the crawl is
// registered any more (each deregisters as it leaves a done crawl), and
// returns how many still are. The command's --expire-done waits for it, so
// that the keys a leaving worker writes exist when they get their expiry.
func (m *Master) WaitWorkersGone(ctx context.Context, timeout time.Duration) (int64, error) {
	deadline := time.Now().Add(timeout)
	for {
		n, err := m.rdb.HLen(ctx, m.k.workers()).Result()
		if err != nil || n == 0 || time.Now().After(deadline) {
			return n, err
		}
		select {
		case <-ctx.Done():
			return n, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
