package masterworker

import (
	"context"
	"crypto/rand"
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
	"github.com/spider-crawler/spider/internal/rstate"
	"github.com/spider-crawler/spider/internal/topics"
)

// LoadConfig waits until the master of crawl has published its
// configuration and returns the crawl's rules from it (scope, depth,
// filters, delays, user and robots agent), with every local-only setting
// (crawl.LocalFields: data directory, SSRF guard, name resolution,
// concurrency, memory, body and time limits) at its zero value: the worker
// sets those from its own flags with Config.SetLocal and then Defaults.
// Local-only keys found in Redis (an older master, or anyone who can write
// the key) are ignored, with one warning naming them: a value in Redis
// never switches the worker's SSRF guard off or points it at a file.
func LoadConfig(ctx context.Context, rdb redis.UniversalClient, crawlName string, logger *slog.Logger) (crawl.Config, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	// A name no master can have would be waited for forever.
	if _, err := cluster.NewKeys(crawlName); err != nil {
		return crawl.Config{}, err
	}
	k := newKeys(crawlName)
	warned := false
	var wait startPoll
	for {
		b, err := rdb.Get(ctx, k.config()).Bytes()
		if err == nil {
			cfg, ignored, err := crawl.RulesFromJSON(b)
			if err != nil {
				return cfg, fmt.Errorf("the master's configuration in Redis (key %s) is unreadable: restart the master to publish it again: %w", k.config(), err)
			}
			if len(ignored) > 0 {
				logger.Warn("ignoring local-only settings in the crawl's configuration in Redis: they come from this worker's flags (an older master published them, or someone wrote the key)",
					"crawl", crawlName, "key", k.config(), "ignored", ignored)
			}
			return cfg, nil
		}
		if !errors.Is(err, redis.Nil) {
			return crawl.Config{}, fmt.Errorf("cannot reach Redis to read the crawl's configuration: %w", err)
		}
		if !warned {
			logger.Info("waiting for the master of the crawl to start", "crawl", crawlName)
			warned = true
		}
		select {
		case <-ctx.Done():
			return crawl.Config{}, ctx.Err()
		case <-time.After(wait.next()):
		}
	}
}

// startPoll is the interval of a worker's polls while it waits for the
// master to start (LoadConfig, takeNumber): 10 ms at first, doubling to
// 200 ms. Master and workers are often started together; a worker that
// asked a moment before the master published its configuration then
// starts a few ms after it instead of up to 200 ms later, and one left
// waiting for a master still asks only five times a second.
type startPoll struct{ d time.Duration }

func (p *startPoll) next() time.Duration {
	p.d = min(max(2*p.d, 10*time.Millisecond), 200*time.Millisecond)
	return p.d
}

// Worker is a fetching node of a master–worker crawl.
type Worker struct {
	opt         Options
	rdb         redis.UniversalClient
	fetcher     *crawl.Fetcher
	concurrency int
	log         *slog.Logger
	k           keys

	id       int
	instance string // this process's token in the owners hash
	node     string // its id in the crawl-wide report (Options.NodeID)
	epoch    atomic.Int64
	ansEpoch atomic.Int64 // the epoch of the master that reads ans (answered.go)
	fetched  atomic.Int64
	stopping atomic.Bool // spider control stop: take no more tasks

	leaving   atomic.Bool   // Leave: take no more tasks, finish those in flight
	leaveOnce sync.Once     // closes leaveCh
	leaveCh   chan struct{} // closed by Leave

	// A crawl node of a topics crawl (topics.go): nil scorer otherwise.
	scorer      *topics.Scheduler
	inFlight    atomic.Int64
	errs        atomic.Int64
	loadMu      sync.Mutex // reportLoad runs in the heartbeat and in Leave's goroutine
	lastAt      time.Time  // the previous load report (loadMu)
	lastFetched int64      // (loadMu)

	// answeredOut holds the tasks (raw → Task) whose answered packet was
	// sent and whose result was not yet (giveBackAnswered).
	answeredOut sync.Map

	// beforeResult, a test hook, is called after a page was processed
	// and before its result is sent (nil: not called).
	beforeResult func(Task)
	// noAnswered, a test hook, keeps the worker from sending answered
	// packets (the host's turn then ends with the result, as before).
	noAnswered bool
}

// NewWorker makes a worker that fetches with fetcher (which it owns from
// then on) using concurrency goroutines. The fetcher shares robots.txt
// answers with the other workers through Redis (RobotsShare).
func NewWorker(fetcher *crawl.Fetcher, rdb redis.UniversalClient, opt Options, concurrency int, logger *slog.Logger) (*Worker, error) {
	if err := opt.defaults(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	fetcher.ShareRobots(NewRobotsShare(rdb, opt.Crawl))
	// The worker writes a page's record, so it makes the page's duplicate
	// decision, in the crawl's tables (the master's parts' DupTags); the
	// master's Complete takes it from the Visit (Visit.Filed).
	dupes, err := rstate.CrawlDupes(rdb, opt.Crawl, shardTags)
	if err != nil {
		return nil, err
	}
	fetcher.FileContent(dupes)
	w := &Worker{opt: opt, rdb: rdb, fetcher: fetcher, concurrency: max(concurrency, 1), log: logger, k: newKeys(opt.Crawl), instance: rand.Text(), node: opt.NodeID,
		leaveCh: make(chan struct{})}
	if w.node == "" {
		w.node = "worker-" + w.instance[:8]
	}
	if err := cluster.CheckNodeID(w.node); err != nil {
		return nil, err
	}
	return w, nil
}

// Fetched is the number of tasks this worker answered.
func (w *Worker) Fetched() int64 { return w.fetched.Load() }

// ID is the work number taken from trq (0 before Run took one).
func (w *Worker) ID() int { return w.id }

var errDeclaredDead = errors.New("declared dead by the master")

// Leave makes Run leave the crawl gracefully (spider worker's first
// Ctrl-C): the worker takes no more tasks; a crawl node of a topics crawl
// marks itself leaving in its load, so the coordinator takes the tasks
// waiting on its queue back (once) and moves its logical nodes to the
// other nodes at once; the fetches in flight finish (at most
// Options.LeaveTimeout) and their results go to the master; then the
// worker deregisters and Run returns nil. Cancelling Run's context
// abandons at once instead (fetches in flight are cut off and their
// tasks handed back: another worker may send their requests again). Leave
// may be called at any time, more than once, from any goroutine.
func (w *Worker) Leave() {
	w.leaveOnce.Do(func() {
		w.leaving.Store(true)
		close(w.leaveCh)
	})
}

// errLeft ends a fetch loop of a leaving worker (Leave); it cancels
// nothing.
var errLeft = errors.New("worker leaving")

// Run takes a work number from trq and fetches tasks until the master marks
// the crawl done, Leave is called, or ctx ends. If the master declares it
// dead (a heartbeat came too late), it takes a new number and goes on
// (unless it is leaving). On ctx cancellation it puts the tasks it had not
// finished back at the head of srq.
func (w *Worker) Run(ctx context.Context) (err error) {
	ck, err := cluster.NewKeys(w.opt.Crawl)
	if err != nil {
		return err
	}
	rep, err := cluster.StartReporter(ctx, w.rdb, ck, cluster.ReporterConfig{Node: w.node, Role: cluster.RoleWorker,
		Source: w.workerReport, Every: w.opt.ReportEvery, Logger: w.log})
	if err != nil {
		return fmt.Errorf("cannot publish the worker's report: %w", err)
	}
	defer func() {
		if rerr := stopReport(ctx, rep, endState(err, w.stopping.Load())); rerr != nil && err == nil {
			err = fmt.Errorf("cannot publish the worker's final report: %w", rerr)
		}
	}()
	for {
		err := w.runOnce(ctx)
		if !errors.Is(err, errDeclaredDead) {
			return err
		}
		if w.leaving.Load() {
			w.log.Warn("this worker was declared dead (late heartbeat) while leaving; the master took its tasks back")
			return nil
		}
		w.log.Warn("this worker was declared dead (late heartbeat); taking a new work number")
	}
}

func (w *Worker) runOnce(ctx context.Context) error {
	id, err := w.takeNumber(ctx)
	if err != nil || id == 0 {
		return err
	}
	w.id = id
	w.answeredOut.Clear() // a previous number's tasks were taken back with it
	if ms, err := w.rdb.Get(ctx, w.k.heartbeat()).Int64(); err == nil && ms > 0 {
		w.opt.Heartbeat = time.Duration(ms) * time.Millisecond // the master's pace
	}
	if err := w.beat(ctx, true); err != nil {
		return err
	}
	ctlKeys, err := cluster.NewKeys(w.opt.Crawl)
	if err != nil {
		return err
	}
	ctl := cluster.NewControl(w.rdb, ctlKeys)
	if err := ctl.Fresh(ctx); err != nil { // a stopped crawl runs again
		return err
	}
	// The heartbeat and the control follower run until the fetch loops
	// have ended (a leaving worker beats while its fetches finish, so the
	// master never takes them back); fetchCtx is cut by Leave's bound.
	g, gctx := errgroup.WithContext(ctx)
	beatCtx, stopBeats := context.WithCancel(gctx)
	defer stopBeats()
	fetchCtx, abandon := context.WithCancel(gctx)
	defer abandon()
	untilLoops := func(f func(context.Context) error) func() error {
		return func() error {
			err := f(beatCtx)
			if beatCtx.Err() != nil && gctx.Err() == nil {
				return nil // the loops ended: not an error
			}
			return err
		}
	}
	g.Go(untilLoops(w.heartbeat))
	g.Go(untilLoops(func(ctx context.Context) error { return w.follow(ctx, ctl) }))
	var loops sync.WaitGroup
	for i := 0; i < w.concurrency; i++ {
		loops.Add(1)
		g.Go(func() error {
			defer loops.Done()
			err := w.loop(fetchCtx)
			if errors.Is(err, errLeft) {
				return nil // the other loops finish their fetches
			}
			return err
		})
	}
	var cutOff atomic.Bool
	g.Go(func() error {
		loops.Wait()
		stopBeats()
		return nil
	})
	g.Go(func() error {
		select {
		case <-beatCtx.Done():
			return nil
		case <-w.leaveCh:
		}
		w.log.Info("leaving the crawl: taking no more tasks, finishing the fetches in flight", "in_flight", w.inFlight.Load())
		if w.scorer != nil {
			// The coordinator takes the tasks waiting on srq:N back at
			// its next round and routes no more to this node.
			if err := w.reportLoad(beatCtx); err != nil && beatCtx.Err() == nil {
				w.log.Warn("cannot tell the coordinator this node is leaving; it will take the node's tasks back when the node is gone", "err", err)
			}
		}
		bound := w.opt.LeaveTimeout
		if bound <= 0 {
			bound = w.fetcher.FetchTimeout()
		}
		select {
		case <-beatCtx.Done():
		case <-time.After(bound):
			cutOff.Store(true)
			w.log.Warn("fetches still in flight after the leave time-out are abandoned; their tasks are handed back", "in_flight", w.inFlight.Load(), "timeout", bound)
			abandon()
		}
		return nil
	})
	err = g.Wait()
	if errors.Is(err, errDeclaredDead) {
		return err
	}
	if cutOff.Load() && ctx.Err() == nil && (err == nil || errors.Is(err, context.Canceled)) {
		// The loops end with the cancelled fetch context's error, not nil.
		err = fmt.Errorf("left the crawl with fetches cut off after the leave time-out; their tasks are handed back to be fetched again: %w", context.Canceled)
	}
	// Leaving (done, or cancelled): give unfinished tasks and the number back.
	bg := context.WithoutCancel(ctx)
	if w.scorer != nil {
		if lerr := w.leaveTopics(bg, id); lerr != nil && (err == nil || errors.Is(err, errDone)) {
			err = lerr
		}
		if errors.Is(err, errDone) {
			err = nil
		}
		return err
	}
	if !w.giveBackAnswered(bg, w.k.processing(id)) {
		// An abandoned task whose turn ended is still in the processing
		// list: the list and the number stay for the master's reaper
		// (this worker beats no more), never moved to srq.
		if errors.Is(err, errDone) {
			err = nil
		}
		return err
	}
	for {
		if err := w.rdb.LMove(bg, w.k.processing(id), w.k.srq(), "RIGHT", "LEFT").Err(); err != nil {
			break
		}
	}
	pipe := w.rdb.TxPipeline()
	pipe.HDel(bg, w.k.workers(), strconv.Itoa(id))
	pipe.HDel(bg, w.k.owners(), strconv.Itoa(id))
	pipe.RPush(bg, w.k.trq(), id)
	if _, perr := pipe.Exec(bg); perr != nil && err == nil {
		err = perr
	}
	if errors.Is(err, errDone) {
		err = nil
	}
	return err
}

// takeNumber pops a unique work number from trq, waiting for one (or for
// the crawl to end: then it returns 0).
func (w *Worker) takeNumber(ctx context.Context) (int, error) {
	var wait startPoll
	for {
		v, err := w.rdb.LPop(ctx, w.k.trq()).Result()
		if err == nil {
			id, err := strconv.Atoi(v)
			if err != nil {
				return 0, fmt.Errorf("trq holds %q, not a work number", v)
			}
			return id, nil
		}
		if !errors.Is(err, redis.Nil) {
			return 0, fmt.Errorf("cannot take a work number from trq: %w", err)
		}
		if done, err := w.isDone(ctx); err != nil || done {
			return 0, err
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-w.leaveCh:
			return 0, nil
		case <-time.After(wait.next()):
		}
	}
}

// beatScript refreshes a heartbeat only while the master still lists the
// worker and the number is still this worker's (owners: number → token);
// first registers unconditionally and records the token. KEYS = workers,
// owners; ARGV = number, first, token.
var beatScript = redis.NewScript(cluster.LuaNow + `
if ARGV[2] ~= '1' then
  if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then return 0 end
  local owner = redis.call('HGET', KEYS[2], ARGV[1])
  if owner and owner ~= ARGV[3] then return 0 end
end
redis.call('HSET', KEYS[1], ARGV[1], now_ms)
redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
return 1`)

func (w *Worker) beat(ctx context.Context, first bool) error {
	f := "0"
	if first {
		f = "1"
	}
	ok, err := beatScript.Run(ctx, w.rdb, []string{w.k.workers(), w.k.owners()}, w.id, f, w.instance).Int()
	if err != nil {
		return fmt.Errorf("cannot send heartbeat: %w", err)
	}
	if ok == 0 {
		return errDeclaredDead
	}
	vals, err := w.rdb.MGet(ctx, w.k.epoch(), w.k.ansEpoch()).Result()
	if err == nil && len(vals) == 2 {
		if s, ok := vals[0].(string); ok {
			if epoch, err := strconv.ParseInt(s, 10, 64); err == nil {
				w.epoch.Store(epoch)
			}
		}
		var ans int64 // none: a master that does not read ans
		if s, ok := vals[1].(string); ok {
			ans, _ = strconv.ParseInt(s, 10, 64)
		}
		w.ansEpoch.Store(ans)
	}
	if w.scorer != nil {
		if err := w.reportLoad(ctx); err != nil {
			return fmt.Errorf("cannot report the crawl node's load: %w", err)
		}
	}
	return nil
}

func (w *Worker) heartbeat(ctx context.Context) error {
	t := time.NewTicker(w.opt.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		if err := w.beat(ctx, false); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if errors.Is(err, errDeclaredDead) {
				return err
			}
			w.log.Warn("heartbeat failed", "err", err)
		}
		if done, err := w.isDone(ctx); err == nil && done {
			return errDone
		}
	}
}

// putBack moves raw from the processing list proc back to the head of
// queue in one transaction: the packet is not this loop's to handle.
func (w *Worker) putBack(ctx context.Context, proc, queue, raw string) error {
	pipe := w.rdb.TxPipeline()
	pipe.LRem(ctx, proc, 1, raw)
	pipe.LPush(ctx, queue, raw)
	_, err := pipe.Exec(ctx)
	return err
}

func (w *Worker) isDone(ctx context.Context) (bool, error) {
	n, err := w.rdb.Exists(ctx, w.k.done()).Result()
	if err != nil {
		return false, fmt.Errorf("cannot read the crawl's state: %w", err)
	}
	return n > 0, nil
}

// loop takes tasks from srq into this worker's processing list, fetches
// them and answers on nrq.
func (w *Worker) loop(ctx context.Context) error {
	proc := w.k.processing(w.id)
	queue := w.queue()
	var down cluster.Outage
	for {
		if w.stopping.Load() {
			return errDone // spider control stop: the tasks taken are done
		}
		if w.leaving.Load() {
			return errLeft // Leave: the task taken is answered
		}
		raw, err := w.rdb.BLMove(ctx, queue, proc, "LEFT", "RIGHT", popWait).Result()
		if errors.Is(err, redis.Nil) {
			done, err := w.isDone(ctx)
			if done {
				return errDone
			}
			if err != nil {
				if down.Retry(ctx, err, w.log, "asking whether the crawl is done") {
					continue
				}
				return err
			}
			down.OK(w.log, "taking tasks")
			continue
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if down.Retry(ctx, err, w.log, "taking a task from srq") {
				continue
			}
			return fmt.Errorf("cannot take a task from srq: %w", err)
		}
		down.OK(w.log, "taking tasks")
		if raw == doneSentinel {
			// Pass it on to the next blocked loop, then stop. Not under
			// ctx: the first loop's errDone cancels it (the errgroup), and
			// a pass-on that failed so broke the chain: every other loop of
			// the worker waited out its pop (popWait, 1 s) before it saw the
			// crawl done (issue 23: the workers' exit).
			pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), popWait)
			err := w.putBack(pctx, proc, queue, raw)
			cancel()
			if err != nil {
				w.log.Warn("cannot pass the end-of-crawl sentinel on; the worker's other fetch loops see the crawl done within a second", "err", err)
			}
			return errDone
		}
		if w.leaving.Load() {
			// Leave came while this loop waited for a task: no fetch starts
			// after Leave. The task goes back untouched to the head of the
			// queue it came from, where the coordinator takes it back (from a
			// leaving node's srq:N, or with the node's lists once it is gone).
			if err := w.putBack(ctx, proc, queue, raw); err != nil && ctx.Err() == nil {
				w.log.Warn("cannot hand back a task taken while leaving; the master takes it back from this worker's processing list", "err", err)
			}
			return errLeft
		}
		t, err := decodeTask([]byte(raw))
		if err != nil {
			w.log.Warn("dropping malformed task", "err", err)
			w.rdb.LRem(ctx, proc, 1, raw)
			continue
		}
		if t.Epoch < w.epoch.Load() {
			w.rdb.LRem(ctx, proc, 1, raw) // from an earlier master run
			continue
		}
		took := time.Now()
		w.inFlight.Add(1)
		// The answer read, the host's turn ends (answered.go) while the
		// page is parsed and stored.
		fd := w.fetcher.Fetch(ctx, t.Request, took)
		if ctx.Err() == nil && w.sendAnswered(ctx, t, fd.Turn(), took) {
			w.answeredOut.Store(raw, t)
		}
		v, err := w.fetcher.Process(ctx, fd)
		if w.beforeResult != nil {
			w.beforeResult(t)
		}
		w.inFlight.Add(-1)
		if err != nil {
			return err
		}
		if w.scorer != nil {
			v.TopicScore = w.scoreOf(t.Request, v)
			if r := crawl.Row(v.Outcome); !v.Retry && r != crawl.Row200 && r != crawl.Row30x {
				w.errs.Add(1)
			}
		}
		if ctx.Err() != nil {
			return ctx.Err() // the task stays in the processing list
		}
		// The master completes its own copy of the request (its lease):
		// the schedule entry is not sent back (nor could a JSON string
		// carry its bytes).
		v.Request.Schedule = ""
		res := Result{Epoch: t.Epoch, ID: t.ID, Worker: w.id, Visit: v}
		if v.RequestAfter > 0 {
			// Measured now, so a slow send below only makes the master
			// place the request later than it was: the safe side.
			res.RequestAge = max(time.Since(took.Add(v.RequestAfter)), 1)
		}
		b, err := encodeResult(res)
		if err != nil {
			return err
		}
		// Answer and drop the task from the processing list in one
		// transaction; after a lost reply the retry may answer twice, and
		// the master ignores the second answer (its lease is gone).
		err = cluster.Retry(ctx, func() error {
			pipe := w.rdb.TxPipeline()
			pipe.RPush(ctx, w.k.nrq(), b)
			pipe.LRem(ctx, proc, 1, raw)
			_, err := pipe.Exec(ctx)
			return err
		})
		if err != nil {
			return fmt.Errorf("cannot answer task %d: %w", t.ID, err)
		}
		w.answeredOut.Delete(raw)
		w.fetched.Add(1)
	}
}

// Close closes the fetcher's local stores.
func (w *Worker) Close() error { return w.fetcher.Close() }
