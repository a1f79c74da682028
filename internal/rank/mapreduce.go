package rank

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/spider-crawler/spider/internal/cluster"
	"github.com/spider-crawler/spider/internal/graph"
)

// DefaultLease is how long a worker holds a task before the master hands it
// to another worker.
const DefaultLease = 10 * time.Second

// ErrMasterBusy is returned by NewMaster when another master holds the
// crawl's rank master lock.
var ErrMasterBusy = errors.New("another rank master is running")

// keyTTL bounds the life of every per-run key, so a master that crashed does
// not leave its graph in Redis for ever.
const keyTTL = 24 * time.Hour

// keys names the Redis keys of one crawl's map/reduce PageRank. The queue
// and the bookkeeping share the hash tag {spider:NAME}, so every script on
// them is in one slot of a Redis Cluster; the large per-part values (the
// graph parts, rank slices and results) take the tag of their part,
// spreadTags[PART mod spreadParts] (rk-I-K, slots.SpreadTag), so a
// cluster's masters hold about equal shares of them.
//
//	{spider:NAME}:rank:master               string session id, TTL: the master lock
//	{spider:NAME}:rank:state                hash session, status (running|done), lease_ms
//	{spider:NAME}:rank:todo                 list of tasks "RUN:ROUND:PART"
//	{spider:NAME}:rank:tickets              list of wake-up hints for idle workers
//	{spider:NAME}:rank:leases               sorted set task → lease deadline (Redis ms)
//	{spider:NAME}:rank:got:RUN:ROUND        hash PART → "1": results in (first report wins)
//	{spider:NAME}:rank:done:RUN:ROUND       list of PARTs as their results arrive
//	spider:NAME:{rk-I-K}:graph:RUN:PART       the part's out-links, sent once per run
//	spider:NAME:{rk-I-K}:ranks:RUN:ROUND:PART the part's rank slice for one round
//	spider:NAME:{rk-I-K}:result:RUN:ROUND:PART the part's result (first writer wins)
//
// A worker stores its result in the part's slot (storeScript), then
// reports it in the queue's slot (reportScript); a worker lost between the
// two leaves a stored result that the next worker's report announces.
type keys struct {
	p     string
	crawl string
}

// spreadParts is the number of hash tags the per-part keys spread over.
const spreadParts = 12

var spreadTags = cluster.SpreadTags("rk-", spreadParts)

func newKeys(crawl string) (keys, error) {
	if _, err := cluster.NewKeys(crawl); err != nil {
		return keys{}, err
	}
	return keys{p: cluster.TopologyPrefix(crawl, "rank"), crawl: crawl}, nil
}

// part is the prefix of part's spread keys.
func (k keys) part(part int) string {
	return cluster.SpreadPrefix(k.crawl, spreadTags[part%spreadParts])
}

func (k keys) master() string  { return k.p + "master" }
func (k keys) state() string   { return k.p + "state" }
func (k keys) todo() string    { return k.p + "todo" }
func (k keys) tickets() string { return k.p + "tickets" }
func (k keys) leases() string  { return k.p + "leases" }
func (k keys) graph(run string, part int) string {
	return k.part(part) + "graph:" + run + ":" + strconv.Itoa(part)
}
func (k keys) ranks(run string, round, part int) string {
	return k.part(part) + "ranks:" + run + ":" + strconv.Itoa(round) + ":" + strconv.Itoa(part)
}
func (k keys) result(run string, round, part int) string {
	return k.part(part) + "result:" + run + ":" + strconv.Itoa(round) + ":" + strconv.Itoa(part)
}
func (k keys) got(run string, round int) string {
	return k.p + "got:" + run + ":" + strconv.Itoa(round)
}
func (k keys) done(run string, round int) string {
	return k.p + "done:" + run + ":" + strconv.Itoa(round)
}

// task names one unit of work: the contributions of one part in one round.
type task struct {
	run         string
	round, part int
}

func (t task) String() string {
	return t.run + ":" + strconv.Itoa(t.round) + ":" + strconv.Itoa(t.part)
}

func parseTask(s string) (task, error) {
	f := strings.Split(s, ":")
	if len(f) != 3 || f[0] == "" {
		return task{}, fmt.Errorf("%w: task %q is not RUN:ROUND:PART", errBlob, s)
	}
	round, err1 := strconv.Atoi(f[1])
	part, err2 := strconv.Atoi(f[2])
	if err1 != nil || err2 != nil || round < 0 || part < 0 {
		return task{}, fmt.Errorf("%w: task %q has a bad round or part", errBlob, s)
	}
	return task{run: f[0], round: round, part: part}, nil
}

// claimScript pops a task and leases it atomically, skipping tasks whose
// result is already reported (re-queued copies), and returns the task (the
// worker then reads its rank slice, in the part's slot). Lease deadlines are
// on the Redis server clock (cluster.LuaNow). KEYS: todo,
// leases, state. ARGV: the queue's key prefix.
var claimScript = redis.NewScript(cluster.LuaNow + `
local ttl = tonumber(redis.call('HGET', KEYS[3], 'lease_ms') or '10000')
while true do
  local t = redis.call('LPOP', KEYS[1])
  if not t then return false end
  local run, round, part = string.match(t, '^([^:]+):(%d+):(%d+)$')
  if run and redis.call('HEXISTS', ARGV[1] .. 'got:' .. run .. ':' .. round, part) == 0 then
    redis.call('ZADD', KEYS[2], now_ms + ttl, t)
    return {t}
  end
end
`)

// storeScript stores a result in the part's slot unless one is already in
// or the round is over. KEYS: result, ranks of the task. ARGV: result, TTL
// ms. Returns 1 stored, 0 one was in, -1 round over.
var storeScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[2]) == 0 then return -1 end
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
return 0
`)

// reportScript drops the lease and, for a result stored (by this worker
// or by one lost before its report), announces the part once. KEYS:
// leases, got, done. ARGV: task, part, store's answer, TTL ms. Returns 1
// announced, 0 already announced, -1 round over.
var reportScript = redis.NewScript(`
redis.call('ZREM', KEYS[1], ARGV[1])
if ARGV[3] == '-1' then return -1 end
if redis.call('HSETNX', KEYS[2], ARGV[2], '1') == 0 then return 0 end
redis.call('PEXPIRE', KEYS[2], ARGV[4])
redis.call('RPUSH', KEYS[3], ARGV[2])
redis.call('PEXPIRE', KEYS[3], ARGV[4])
return 1
`)

// complete stores task t's result, then reports it: 1 stored and
// announced, 0 a duplicate, -1 the round is over.
func complete(ctx context.Context, rdb redis.UniversalClient, k keys, t task, blob []byte) (int, error) {
	ttl := keyTTL.Milliseconds()
	stored, err := storeScript.Run(ctx, rdb, []string{k.result(t.run, t.round, t.part), k.ranks(t.run, t.round, t.part)}, blob, ttl).Int()
	if err != nil {
		return 0, err
	}
	n, err := reportScript.Run(ctx, rdb, []string{k.leases(), k.got(t.run, t.round), k.done(t.run, t.round)},
		t.String(), strconv.Itoa(t.part), strconv.Itoa(stored), ttl).Int()
	if err != nil {
		return 0, err
	}
	if n == 1 && stored == 0 {
		return 1, nil // a lost worker's result, announced now
	}
	return n, nil
}

// reapScript puts the tasks whose lease expired back on the queue.
// KEYS: leases, todo, tickets. Returns how many.
var reapScript = redis.NewScript(cluster.LuaNow + `
local exp = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now_ms)
for _, t in ipairs(exp) do
  redis.call('ZREM', KEYS[1], t)
  redis.call('RPUSH', KEYS[2], t)
  redis.call('RPUSH', KEYS[3], '1')
end
return #exp
`)

// MasterConfig configures a map/reduce master. The zero value works except
// that a crawl name is required for keys ("default" if empty).
type MasterConfig struct {
	// Crawl is the crawl name of the keys ({spider:Crawl}:rank:*); "" is
	// "default".
	Crawl string
	// Parts is the number of tasks per round; 0 picks N/8192 clamped to
	// [1, 64] (each task costs two Redis round trips, so fewer, larger
	// parts are faster while there are enough for the workers).
	Parts int
	// Lease is how long a worker may hold a task before it is handed to
	// another worker; 0 means DefaultLease.
	Lease time.Duration
	// Logger receives progress; nil discards.
	Logger *slog.Logger
	// Registry receives the master's metrics; nil registers none.
	Registry prometheus.Registerer
}

// Master is the map/reduce master of SPEC §1: it packs every part's ranks
// into tasks on Redis, waits for the workers' sums and reduces them. Create
// it with NewMaster, run Compute once per graph, then Close, which tells the
// workers to exit.
type Master struct {
	rdb     redis.UniversalClient
	k       keys
	cfg     MasterConfig
	log     *slog.Logger
	session string
	lock    *cluster.Lock // the master lock, held by session
	jobs    int

	lockMu   sync.Mutex
	lockErr  error
	stopLock context.CancelFunc
	lockDone chan struct{}

	rounds   prometheus.Counter
	requeued prometheus.Counter
}

// NewMaster takes the crawl's master lock (failing with ErrMasterBusy when a
// live master holds it), marks a new session running and starts renewing
// the lock in the background.
func NewMaster(ctx context.Context, rdb redis.UniversalClient, cfg MasterConfig) (*Master, error) {
	if cfg.Crawl == "" {
		cfg.Crawl = "default"
	}
	if cfg.Lease == 0 {
		cfg.Lease = DefaultLease
	}
	if cfg.Lease < 10*time.Millisecond {
		return nil, fmt.Errorf("%w: lease %v is too short: use at least 10ms (default %v)", ErrBadOptions, cfg.Lease, DefaultLease)
	}
	if cfg.Parts < 0 {
		return nil, fmt.Errorf("%w: %d parts: use a positive number or 0 for automatic", ErrBadOptions, cfg.Parts)
	}
	k, err := newKeys(cfg.Crawl)
	if err != nil {
		return nil, err
	}
	m := &Master{rdb: rdb, k: k, cfg: cfg, log: cfg.Logger, session: newID()}
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	m.rounds = prometheus.NewCounter(prometheus.CounterOpts{Name: "spider_rank_rounds_total", Help: "Map/reduce PageRank rounds reduced by the master."})
	m.requeued = prometheus.NewCounter(prometheus.CounterOpts{Name: "spider_rank_tasks_requeued_total", Help: "Map/reduce PageRank tasks handed out again after their lease expired."})
	if cfg.Registry != nil {
		for _, c := range []prometheus.Collector{m.rounds, m.requeued} {
			if err := cfg.Registry.Register(c); err != nil {
				return nil, fmt.Errorf("cannot register rank metrics: %w", err)
			}
		}
	}
	lockTTL := m.lockTTL()
	if m.lock, err = cluster.NewLock(rdb, k.master(), m.session, lockTTL); err != nil {
		return nil, err
	}
	ok, err := m.lock.TryAcquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("cannot take the rank master lock: %w", err)
	}
	if !ok {
		return nil, fmt.Errorf("%w for crawl %q (it holds %s; wait for it to finish, use another --crawl, or retry after %v if it crashed)",
			ErrMasterBusy, cfg.Crawl, k.master(), lockTTL)
	}
	if err := m.reset(ctx); err != nil {
		_, _ = m.lock.Release(context.WithoutCancel(ctx))
		return nil, err
	}
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	m.stopLock, m.lockDone = cancel, make(chan struct{})
	go m.renewLock(lctx)
	return m, nil
}

func (m *Master) lockTTL() time.Duration { return max(3*m.cfg.Lease, 3*time.Second) }

// reset clears what an earlier (possibly crashed) master left in the queues
// and marks this session running.
func (m *Master) reset(ctx context.Context) error {
	_, err := m.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, m.k.todo(), m.k.tickets(), m.k.leases())
		p.HSet(ctx, m.k.state(), "session", m.session, "status", "running", "lease_ms", m.cfg.Lease.Milliseconds())
		return nil
	})
	if err != nil {
		return fmt.Errorf("cannot start a rank session on Redis: %w", err)
	}
	return nil
}

// renewLock extends the master lock every third of its TTL until stopped;
// losing it makes the running Compute fail.
func (m *Master) renewLock(ctx context.Context) {
	defer close(m.lockDone)
	err := m.lock.Keep(ctx, func(err error) { // transient: the next tick retries, the TTL covers two misses
		m.log.Warn("rank: cannot renew the master lock", "err", err)
	})
	if err != nil {
		m.lockMu.Lock()
		m.lockErr = fmt.Errorf("%w: the lock %s expired and was taken over; stop the other master and rerun", ErrMasterBusy, m.k.master())
		m.lockMu.Unlock()
	}
}

func (m *Master) lockLost() error {
	m.lockMu.Lock()
	defer m.lockMu.Unlock()
	return m.lockErr
}

// Close marks the session done (workers exit), deletes the queues and
// releases the lock. It is safe to call once; later calls do nothing.
func (m *Master) Close(ctx context.Context) error {
	if m.stopLock == nil {
		return nil
	}
	m.stopLock()
	<-m.lockDone
	m.stopLock = nil
	_, err := m.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, m.k.state(), "session", m.session, "status", "done")
		p.Del(ctx, m.k.todo(), m.k.tickets(), m.k.leases())
		return nil
	})
	if _, rerr := m.lock.Release(ctx); err == nil {
		err = rerr
	}
	if err != nil {
		return fmt.Errorf("cannot close the rank session on Redis: %w", err)
	}
	return nil
}

// Compute runs PageRank on g as map/reduce over Redis with the same formula,
// options and stopping rule as Matrix.Compute (opt.Workers is ignored; the
// workers are whoever runs RunWorker on the crawl). The graph is cut into
// parts of contiguous sources, each uploaded once; each round uploads each
// part's rank slice and queues one task per part. Results are reduced in
// part order, so the sums do not depend on which worker finished first.
//
// A worker that dies holding a task loses its lease after MasterConfig.Lease
// and the task is queued again; a result that arrives twice (the slow
// original and its replacement) is stored once (first writer wins, both are
// identical). Compute waits for workers as long as ctx allows.
func (m *Master) Compute(ctx context.Context, g *graph.Graph, opt Options) (Result, error) {
	n := g.N()
	opt, err := opt.withDefaults(n)
	if err != nil {
		return Result{}, err
	}
	if n == 0 {
		return Result{Converged: true}, nil
	}
	m.jobs++
	run := m.session + "-" + strconv.Itoa(m.jobs)
	nparts := m.cfg.Parts
	if nparts == 0 {
		nparts = min(max(n/8192, 1), 64)
	}
	ranges := splitRows(g.Offsets, nparts)
	if err := m.upload(ctx, g, run, ranges); err != nil {
		return Result{}, err
	}
	defer m.cleanupRun(context.WithoutCancel(ctx), run, len(ranges))

	rank := make([]float64, n)
	for i := range rank {
		rank[i] = 1 / float64(n)
	}
	acc := make([]float64, n)
	uniform, invN, d := 1/float64(n), 1/float64(n), opt.Damping
	var res Result
	for res.Iterations < opt.MaxIter {
		round := res.Iterations
		parts, err := m.round(ctx, run, round, ranges, rank, n)
		if err != nil {
			return Result{}, err
		}
		clear(acc)
		var dangling float64
		for _, r := range parts {
			dangling += r.dangling
			for i, id := range r.ids {
				acc[id] += r.sums[i]
			}
		}
		res.Delta = 0
		for v := range rank {
			t := uniform
			if opt.Teleport != nil {
				t = opt.Teleport[v]
			}
			r := update(d, t, dangling, invN, acc[v])
			res.Delta += math.Abs(r - rank[v])
			rank[v] = r
		}
		res.Iterations++
		m.rounds.Inc()
		m.log.Debug("rank: round reduced", "run", run, "round", round, "delta", res.Delta)
		if res.Delta < opt.Tolerance {
			res.Converged = true
			break
		}
	}
	res.Ranks = rank
	return res, nil
}

// upload sends every part's out-links once per run.
func (m *Master) upload(ctx context.Context, g *graph.Graph, run string, ranges []rowRange) error {
	_, err := m.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, r := range ranges {
			pt := &part{n: g.N(), lo: r.lo, hi: r.hi, off: make([]uint32, r.hi-r.lo+1)}
			base := g.Offsets[r.lo]
			for u := r.lo; u <= r.hi; u++ {
				pt.off[u-r.lo] = uint32(g.Offsets[u] - base)
			}
			pt.tgt = g.Targets[base:g.Offsets[r.hi]]
			p.Set(ctx, m.k.graph(run, i), encodePart(pt), keyTTL)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("cannot upload the link graph to Redis: %w", err)
	}
	return nil
}

func (m *Master) cleanupRun(ctx context.Context, run string, parts int) {
	_, err := m.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range parts { // one key a command: the parts lie in different slots
			p.Del(ctx, m.k.graph(run, i))
		}
		return nil
	})
	if err != nil {
		m.log.Warn("rank: cannot delete the run's graph parts (they expire in a day)", "err", err)
	}
}

// round publishes one round's tasks and returns the parts' results in part
// order once all are in.
func (m *Master) round(ctx context.Context, run string, round int, ranges []rowRange, rank []float64, n int) ([]*result, error) {
	// The rank slices first: on a cluster a pipeline's commands to
	// different masters run in parallel, and a task claimed before its
	// slice is there would be dropped as stale.
	_, err := m.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, r := range ranges {
			p.Set(ctx, m.k.ranks(run, round, i), encodeRanks(rank[r.lo:r.hi]), keyTTL)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cannot send round %d's ranks to Redis: %w", round, err)
	}
	_, err = m.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		tasks := make([]any, len(ranges))
		tickets := make([]any, len(ranges))
		for i := range ranges {
			tasks[i] = task{run: run, round: round, part: i}.String()
			tickets[i] = "1"
		}
		p.RPush(ctx, m.k.todo(), tasks...)
		p.RPush(ctx, m.k.tickets(), tickets...)
		p.LTrim(ctx, m.k.tickets(), int64(-4*len(ranges)), -1) // hints only: keep the list short
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cannot queue round %d on Redis: %w", round, err)
	}
	defer m.cleanupRound(context.WithoutCancel(ctx), run, round, len(ranges))

	got := make([]bool, len(ranges))
	missing := len(ranges)
	wait := min(max(m.cfg.Lease/4, 5*time.Millisecond), time.Second)
	lastReap := time.Now()
	for missing > 0 {
		if err := m.lockLost(); err != nil {
			return nil, err
		}
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("cannot finish round %d: %w", round, err)
		}
		v, err := cluster.BLPop(ctx, m.rdb, wait, m.k.done(run, round))
		switch {
		case errors.Is(err, redis.Nil):
		case err != nil:
			if ctx.Err() != nil {
				return nil, fmt.Errorf("cannot finish round %d: %w", round, ctx.Err())
			}
			return nil, fmt.Errorf("cannot wait for round %d results: %w", round, err)
		default:
			if i, perr := strconv.Atoi(v[1]); perr == nil && i >= 0 && i < len(got) && !got[i] {
				got[i] = true
				missing--
			}
		}
		if missing > 0 && time.Since(lastReap) >= wait {
			lastReap = time.Now()
			k, err := reapScript.Run(ctx, m.rdb, []string{m.k.leases(), m.k.todo(), m.k.tickets()}).Int()
			if err != nil {
				return nil, fmt.Errorf("cannot re-queue expired tasks: %w", err)
			}
			if k > 0 {
				m.requeued.Add(float64(k))
				m.log.Info("rank: re-queued tasks whose worker stopped answering", "tasks", k, "round", round)
			}
		}
	}
	pipe := m.rdb.Pipeline() // one key a command: the parts lie in different slots
	cmds := make([]*redis.StringCmd, len(ranges))
	for i := range ranges {
		cmds[i] = pipe.Get(ctx, m.k.result(run, round, i))
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("cannot read round %d results: %w", round, err)
	}
	out := make([]*result, len(ranges))
	for i := range ranges {
		b, err := cmds[i].Bytes()
		if err != nil {
			return nil, fmt.Errorf("cannot reduce round %d: result of part %d vanished from Redis (was the database flushed?)", round, i)
		}
		r, err := decodeResult([]byte(b), n)
		if err != nil {
			return nil, fmt.Errorf("cannot reduce round %d: part %d: %w", round, i, err)
		}
		out[i] = r
	}
	return out, nil
}

func (m *Master) cleanupRound(ctx context.Context, run string, round, parts int) {
	_, err := m.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := 0; i < parts; i++ {
			p.Del(ctx, m.k.ranks(run, round, i))
			p.Del(ctx, m.k.result(run, round, i))
		}
		p.Del(ctx, m.k.got(run, round), m.k.done(run, round))
		return nil
	})
	if err != nil {
		m.log.Warn("rank: cannot delete a finished round's keys (they expire in a day)", "round", round, "err", err)
	}
}

// WorkerConfig configures a map/reduce worker. The zero value works.
type WorkerConfig struct {
	// Crawl is the crawl name of the keys; "" is "default".
	Crawl string
	// ID names the worker in logs; "" picks a random one.
	ID string
	// Idle is how long an idle worker blocks waiting for a wake-up hint
	// before it looks at the queue and the master's state again; 0 means
	// 200ms.
	Idle time.Duration
	// Logger receives progress; nil discards.
	Logger *slog.Logger
	// Registry receives the worker's metrics; nil registers none.
	Registry prometheus.Registerer
	// afterClaim, when set (tests only), runs after each claim; returning
	// true makes the worker vanish without completing the task.
	afterClaim func(task) bool
}

// RunWorker serves map/reduce PageRank tasks of the crawl until the master
// marks its session done (returns nil) or ctx ends (returns ctx's error).
// A worker started while no master runs waits for one; a session already
// done when the worker starts does not count. The worker caches each part's
// out-links for the whole run, so after the first round it fetches only
// rank slices.
func RunWorker(ctx context.Context, rdb redis.UniversalClient, cfg WorkerConfig) error {
	if cfg.Crawl == "" {
		cfg.Crawl = "default"
	}
	if cfg.Idle <= 0 {
		cfg.Idle = 200 * time.Millisecond
	}
	if cfg.ID == "" {
		cfg.ID = newID()
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	k, err := newKeys(cfg.Crawl)
	if err != nil {
		return err
	}
	tasks := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "spider_rank_worker_tasks_total",
		Help: "Map/reduce PageRank tasks finished by this worker, by what became of the result (stored, duplicate, stale)."}, []string{"result"})
	if cfg.Registry != nil {
		if err := cfg.Registry.Register(tasks); err != nil {
			return fmt.Errorf("cannot register rank worker metrics: %w", err)
		}
	}
	st, err := rdb.HMGet(ctx, k.state(), "session", "status").Result()
	if err != nil {
		return fmt.Errorf("cannot read the rank state from Redis: %w", err)
	}
	ignore := "" // a session already done at start is not ours to wait for
	if s, _ := st[1].(string); s == "done" {
		ignore, _ = st[0].(string)
	}
	w := &worker{rdb: rdb, k: k, log: log, cache: map[int]*part{}}
	log.Info("rank worker: waiting for tasks", "worker", cfg.ID, "crawl", cfg.Crawl)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		v, err := claimScript.Run(ctx, rdb, []string{k.todo(), k.leases(), k.state()}, k.p).StringSlice()
		if err != nil && !errors.Is(err, redis.Nil) {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("cannot claim a rank task: %w", err)
		}
		if len(v) == 1 {
			t, err := parseTask(v[0])
			if err != nil {
				log.Warn("rank worker: dropping a malformed task", "task", v[0], "err", err)
				continue
			}
			if cfg.afterClaim != nil && cfg.afterClaim(t) {
				return nil
			}
			outcome, err := w.serve(ctx, t)
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				return err
			}
			tasks.WithLabelValues(outcome).Inc()
			continue
		}
		st, err := rdb.HMGet(ctx, k.state(), "session", "status").Result()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("cannot read the rank state from Redis: %w", err)
		}
		if s, _ := st[1].(string); s == "done" {
			if sess, _ := st[0].(string); sess != ignore {
				log.Info("rank worker: the master is done", "worker", cfg.ID)
				return nil
			}
		}
		if _, err := cluster.BLPop(ctx, rdb, cfg.Idle, k.tickets()); err != nil && !errors.Is(err, redis.Nil) {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("cannot wait for rank tasks: %w", err)
		}
	}
}

// worker is the state one RunWorker keeps across tasks.
type worker struct {
	rdb   redis.UniversalClient
	k     keys
	log   *slog.Logger
	run   string        // run whose parts are cached
	cache map[int]*part // part number → out-links
	acc   []float64     // dense scratch of the run's node count
	mark  []bool
	touch []uint32
}

// serve computes one task and stores its result; it returns what became of
// the result: "stored", "duplicate" or "stale" (round over or run gone).
func (w *worker) serve(ctx context.Context, t task) (string, error) {
	rankBlob, err := w.rdb.Get(ctx, w.k.ranks(t.run, t.round, t.part)).Bytes()
	if errors.Is(err, redis.Nil) { // the round is over: drop the lease
		if err := w.rdb.ZRem(ctx, w.k.leases(), t.String()).Err(); err != nil {
			return "", fmt.Errorf("cannot drop the lease of task %s: %w", t, err)
		}
		return "stale", nil
	}
	if err != nil {
		return "", fmt.Errorf("cannot fetch the rank slice of task %s: %w", t, err)
	}
	if t.run != w.run {
		w.run, w.cache, w.acc, w.mark = t.run, map[int]*part{}, nil, nil
	}
	pt := w.cache[t.part]
	if pt == nil {
		b, err := w.rdb.Get(ctx, w.k.graph(t.run, t.part)).Bytes()
		if errors.Is(err, redis.Nil) { // the run is over; its lease just lapses
			return "stale", nil
		}
		if err != nil {
			return "", fmt.Errorf("cannot fetch graph part %d: %w", t.part, err)
		}
		if pt, err = decodePart(b); err != nil {
			return "", fmt.Errorf("cannot use graph part %d from Redis: %w", t.part, err)
		}
		w.cache[t.part] = pt
		if w.acc == nil {
			w.acc, w.mark = make([]float64, pt.n), make([]bool, pt.n)
		}
	}
	ranks, err := decodeRanks(rankBlob)
	if err != nil || len(ranks) != pt.hi-pt.lo || len(w.acc) != pt.n {
		return "", fmt.Errorf("cannot use the rank slice of task %s: %d values for part [%d,%d): %v", t, len(ranks), pt.lo, pt.hi, err)
	}
	res := w.contribute(pt, ranks)
	n, err := complete(ctx, w.rdb, w.k, t, encodeResult(res))
	if err != nil {
		return "", fmt.Errorf("cannot store the result of task %s: %w", t, err)
	}
	switch n {
	case 1:
		return "stored", nil
	case 0:
		return "duplicate", nil
	}
	return "stale", nil
}

// contribute is the map step: every source sends rank/out-degree along each
// out-link, summed per target in source order; dangling sources add their
// rank to the dangling total.
func (w *worker) contribute(pt *part, ranks []float64) *result {
	res := &result{}
	w.touch = w.touch[:0]
	for i, r := range ranks {
		lo, hi := pt.off[i], pt.off[i+1]
		if lo == hi {
			res.dangling += r
			continue
		}
		c := contribution(r, hi-lo)
		for _, t := range pt.tgt[lo:hi] {
			if !w.mark[t] {
				w.mark[t] = true
				w.touch = append(w.touch, t)
			}
			w.acc[t] += c
		}
	}
	sortUint32(w.touch)
	res.ids = append([]uint32(nil), w.touch...)
	res.sums = make([]float64, len(w.touch))
	for i, t := range w.touch {
		res.sums[i] = w.acc[t]
		w.acc[t], w.mark[t] = 0, false
	}
	return res
}

func newID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
