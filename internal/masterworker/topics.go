package masterworker

// Topics on a cluster (SPEC §4, issue #25): the master is the coordinator
// of a multi-topic crawl (its crawl.Scheduler runs the PQ-MCSA selector
// over the whole frontier, the topic daemon, the task records in its data
// directory), the workers are the crawl nodes. What changes against the
// plain topology:
//
//   - each crawl node N has its own queue srq:N; the coordinator maps a
//     task's host to one of partition.DefaultBuckets logical nodes
//     (partition.Bucket, as p2p does) and a logical node to a worker by a
//     partition.Ring over the live workers, weighted by the concurrency
//     each reports;
//   - workers report their load with their heartbeat (wload); the
//     coordinator keeps at most 2 × a node's concurrency tasks out on it
//     (srq:N and its processing list), and leases no URL for a node
//     without room: the scheduler's Selector is offered only the ready
//     hosts whose node has room (crawl.Scheduler.AdmitTopics), so a slow
//     node's hosts stay in the frontier, holding neither a --max-inflight
//     slot nor a host lease, while the other nodes' hosts go out; when no
//     ready host is admitted the dispatcher waits for a result, a
//     membership change or a host coming due (WakeTopics), not spinning;
//   - a dead worker's processing list and srq:N are taken back in one
//     transaction (each task released once), the ring drops it and its
//     logical nodes move to the others; a joining worker gets its logical
//     nodes for new tasks (tasks already queued elsewhere stay there);
//   - a worker that leaves (Worker.Leave, spider worker's Ctrl-C) marks
//     its load leaving: the coordinator drops it from the ring and takes
//     back the tasks waiting on srq:N (once, never fetched: queued again
//     as they were), while the node finishes its fetches in flight and
//     answers them; then it marks its heartbeat dead and the reaper takes
//     whatever is left back as for a dead node;
//   - the canonical topics file is published at topics:config; a worker
//     checks its own file against it (CheckTopics).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spider-crawler/spider/internal/cluster"
	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/frontier"
	"github.com/spider-crawler/spider/internal/partition"
	"github.com/spider-crawler/spider/internal/topics"
)

// ErrTopicsMismatch is wrapped by CheckTopics' refusals: the crawl node's
// topics file (or its absence) does not match the coordinator's.
var ErrTopicsMismatch = errors.New("topics file does not match the coordinator's")

// TopicsOptions make a master the coordinator of a topics crawl
// (Master.UseTopics).
type TopicsOptions struct {
	// Config is the topics file the master's scheduler was built with
	// (crawl.LoadTopics); its canonical form is published for the workers.
	Config *topics.Config
	// Fetcher builds the requests of hub revisits (closed or not: only its
	// normaliser is used).
	Fetcher *crawl.Fetcher
	// WaitNodes is how many crawl nodes must have joined before the first
	// task goes out (default 1), so that the hosts spread over them from
	// the start.
	WaitNodes int
	// Window is how many tasks per unit of a node's concurrency may be out
	// on it (default 2).
	Window int
}

// topicRoute is the coordinator's routing: the ring over the live crawl
// nodes, their loads and windows, and the tasks waiting for their node.
type topicRoute struct {
	opt   TopicsOptions
	canon []byte

	mu      sync.Mutex
	started bool // WaitNodes reached once
	ring    *partition.Ring
	owners  []string // bucket → worker number, of ring
	nodes   map[int]*nodeState
	left    map[int]bool // leaving nodes whose queue was taken back
	waiting []uint64     // lease ids whose node left or filled up between lease and hand-out, oldest first
}

type nodeState struct {
	load        NodeLoad
	concurrency int
	out         int // tasks in its srq:N or processing list
}

func (tp *topicRoute) window(ns *nodeState) int { return tp.opt.Window * max(ns.concurrency, 1) }

// UseTopics makes the master the coordinator of a topics crawl: its
// scheduler must have been built by crawl.NewTopicScheduler. Call it
// before Run.
func (m *Master) UseTopics(o TopicsOptions) error {
	if m.sched.Topics() == nil {
		return errors.New("the master's scheduler has no topics: build it with crawl.NewTopicScheduler")
	}
	if o.Config == nil || o.Fetcher == nil {
		return errors.New("a topics coordinator needs the topics configuration and a fetcher")
	}
	if o.WaitNodes <= 0 {
		o.WaitNodes = 1
	}
	if o.Window <= 0 {
		o.Window = 2
	}
	canon, err := topics.Canonical(o.Config)
	if err != nil {
		return err
	}
	m.tp = &topicRoute{opt: o, canon: canon, nodes: map[int]*nodeState{}, left: map[int]bool{}}
	m.sched.AdmitTopics(m.tp.admit)
	return nil
}

// admit reports whether the ready URL c may be leased now: its logical
// node's crawl node is on the ring (WaitNodes reached) and has room in its
// window. It is the frontier's Admitter test (called with the frontier's
// lock held; takes tp.mu, which is never held while calling the
// scheduler).
func (tp *topicRoute) admit(c frontier.Candidate) bool {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	if tp.ring == nil || !tp.started {
		return false
	}
	ns := tp.nodes[tp.ownerOf(c.URL)]
	return ns != nil && ns.out < tp.window(ns)
}

// bucketOf is the logical node of a task's URL: its host's bucket among
// partition.DefaultBuckets, as the p2p topology maps hosts.
func bucketOf(rawURL string) int { return partition.Bucket(hostOf(rawURL), partition.DefaultBuckets) }

// rebuild makes the ring of the current nodes; tp.mu is held.
func (tp *topicRoute) rebuild(log *slog.Logger) {
	if len(tp.nodes) == 0 {
		tp.ring, tp.owners = nil, nil
		return
	}
	members := make([]partition.Member, 0, len(tp.nodes))
	for id, ns := range tp.nodes {
		members = append(members, partition.Member{ID: strconv.Itoa(id), Weight: max(ns.concurrency, 1)})
	}
	r, err := partition.NewRing(members)
	if err != nil {
		log.Error("cannot build the ring of crawl nodes", "err", err)
		return
	}
	tp.ring, tp.owners = r, r.Owners(partition.DefaultBuckets)
	count := map[string]int{}
	for _, o := range tp.owners {
		count[o]++
	}
	for id, ns := range tp.nodes {
		ns.load.Buckets = count[strconv.Itoa(id)]
	}
	if len(tp.nodes) >= tp.opt.WaitNodes {
		tp.started = true
	}
	ids := make([]int, 0, len(tp.nodes))
	for id := range tp.nodes {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	log.Info("crawl nodes on the ring", "workers", ids)
}

// ownerOf is the worker number owning rawURL's logical node; tp.mu is
// held and tp.ring is set.
func (tp *topicRoute) ownerOf(rawURL string) int {
	id, _ := strconv.Atoi(tp.owners[bucketOf(rawURL)])
	return id
}

// enqueue adds a leased task to the tasks waiting for a node.
func (tp *topicRoute) enqueue(id uint64) {
	tp.mu.Lock()
	tp.waiting = append(tp.waiting, id)
	tp.mu.Unlock()
}

// answered frees a slot of node's window and wakes the dispatcher.
func (m *Master) answered(node int) {
	if node == 0 {
		return
	}
	tp := m.tp
	tp.mu.Lock()
	if ns := tp.nodes[node]; ns != nil && ns.out > 0 {
		ns.out--
	}
	tp.mu.Unlock()
	m.sched.WakeTopics()
}

// route hands each waiting task to its node's queue while the node's
// window has room, oldest first; tasks of full nodes keep waiting (their
// hosts' leases held).
func (m *Master) route(ctx context.Context) error {
	tp := m.tp
	tp.mu.Lock()
	defer tp.mu.Unlock()
	if tp.ring == nil || !tp.started || len(tp.waiting) == 0 || m.held.Load() {
		return nil // paused or stopping: takeBack gives the waiting tasks back
	}
	type push struct {
		node int
		id   uint64
		raw  []byte
	}
	var pushes []push
	keep := tp.waiting[:0]
	now := time.Now()
	for _, id := range tp.waiting {
		m.mu.Lock()
		t, ok := m.leases[id]
		m.mu.Unlock()
		if !ok {
			continue // released meanwhile
		}
		node := tp.ownerOf(t.lease.Request.URL)
		ns := tp.nodes[node]
		if ns == nil || ns.out >= tp.window(ns) {
			keep = append(keep, id)
			continue
		}
		raw, err := encodeTask(m.epoch, id, t.lease.Request)
		if err != nil {
			return fmt.Errorf("cannot encode the task of %s: %w", t.lease.Request.URL, err)
		}
		ns.out++
		m.mu.Lock()
		t.at, t.node = now, node
		m.leases[id] = t
		m.mu.Unlock()
		pushes = append(pushes, push{node, id, raw})
	}
	tp.waiting = keep
	if len(pushes) == 0 {
		return nil
	}
	err := cluster.Retry(ctx, func() error {
		pipe := m.rdb.Pipeline()
		for _, p := range pushes {
			pipe.RPush(ctx, m.k.srqOf(p.node), p.raw)
		}
		_, err := pipe.Exec(ctx)
		return err
	})
	if err != nil {
		return fmt.Errorf("cannot hand out %d tasks to their crawl nodes: %w", len(pushes), err)
	}
	m.handed.Add(int64(len(pushes)))
	return nil
}

// refreshNodes updates the live crawl nodes from the heartbeats (beats:
// worker number → ms on Redis time) and their reported loads, rebuilds the
// ring when the membership or a weight changed, and routes waiting tasks.
func (m *Master) refreshNodes(ctx context.Context, beats map[string]string, now time.Time) {
	loads, err := m.rdb.HGetAll(ctx, m.k.workerLoads()).Result()
	if err != nil {
		m.log.Warn("cannot read the crawl nodes' loads", "err", err)
		return
	}
	tp := m.tp
	tp.mu.Lock()
	changed := false
	seen := map[int]bool{}
	var leaving []int // nodes that began to leave: their queues come back
	for w, ms := range beats {
		id, err := strconv.Atoi(w)
		last, err2 := strconv.ParseInt(ms, 10, 64)
		raw, ok := loads[w]
		if err != nil || err2 != nil || !ok || now.Sub(time.UnixMilli(last)) > m.opt.WorkerTTL {
			continue
		}
		var wl workerLoad
		if json.Unmarshal([]byte(raw), &wl) != nil || wl.Concurrency < 1 {
			continue
		}
		if wl.Leaving {
			// Off the ring now (not seen), so nothing more is routed to
			// it; its queue comes back once.
			if !tp.left[id] {
				tp.left[id] = true
				leaving = append(leaving, id)
				m.log.Info("crawl node leaving; its queued tasks are taken back and its logical nodes move to the others", "worker", id, "node", wl.Node, "in_flight", wl.InFlight)
			}
			continue
		}
		delete(tp.left, id) // the number taken again by a new worker
		seen[id] = true
		ns := tp.nodes[id]
		if ns == nil {
			ns = &nodeState{}
			tp.nodes[id] = ns
			changed = true
			m.log.Info("crawl node joined", "worker", id, "node", wl.Node, "concurrency", wl.Concurrency)
		}
		if ns.concurrency != wl.Concurrency {
			ns.concurrency, changed = wl.Concurrency, true
		}
		buckets := ns.load.Buckets
		ns.load = wl.NodeLoad
		ns.load.Worker, ns.load.Buckets, ns.load.Alive, ns.load.LastBeat = id, buckets, true, time.UnixMilli(last)
	}
	for id := range tp.nodes {
		if !seen[id] {
			delete(tp.nodes, id) // its tasks come back through requeue (or handBack)
			changed = true
		}
	}
	for id := range tp.left {
		if _, ok := beats[strconv.Itoa(id)]; !ok {
			delete(tp.left, id) // gone: requeueTopics took the rest back
		}
	}
	if changed {
		tp.rebuild(m.log)
	}
	tp.mu.Unlock()
	if changed {
		m.sched.WakeTopics() // other nodes own its logical nodes, or a node has room
	}
	// After the ring dropped them (route holds tp.mu while it pushes, so
	// nothing is pushed to them from here on).
	for _, id := range leaving {
		if err := m.handBack(ctx, id); err != nil {
			m.log.Warn("cannot take back a leaving crawl node's queue; it comes back when the node is gone", "worker", id, "err", err)
		}
	}
	if err := m.route(ctx); err != nil {
		m.log.Warn("cannot route tasks", "err", err)
	}
}

// handBack takes back the tasks waiting on a leaving crawl node's queue
// srq:N: read and deleted in one transaction, each lease released once and
// its URL queued again as it was (never fetched: no attempt counted). Its
// processing list stays: the node finishes those fetches and answers them.
// A task the node popped meanwhile is in its processing list, not here.
func (m *Master) handBack(ctx context.Context, worker int) error {
	pipe := m.rdb.TxPipeline()
	queue := pipe.LRange(ctx, m.k.srqOf(worker), 0, -1)
	pipe.Del(ctx, m.k.srqOf(worker))
	if _, err := pipe.Exec(ctx); err != nil {
		return err
	}
	n := m.releaseTasks(queue.Val(), false)
	m.returned.Add(int64(n))
	m.log.Info("took back the tasks a leaving crawl node had not started", "worker", worker, "tasks", n)
	return nil
}

// takeBackWaiting gives the tasks waiting in the coordinator for their
// node back to the scheduler, never fetched (spider control pause and
// stop: nothing more is handed out, and stop waits for every lease).
func (m *Master) takeBackWaiting() {
	tp := m.tp
	tp.mu.Lock()
	ids := tp.waiting
	tp.waiting = nil
	tp.mu.Unlock()
	for _, id := range ids {
		if t, ok := m.take(id); ok {
			m.release(t, false)
		}
	}
}

// dropNode takes a dead worker off the ring; it reports whether the
// worker had announced that it was leaving (Worker.Leave).
func (m *Master) dropNode(worker int) (left bool) {
	tp := m.tp
	tp.mu.Lock()
	defer tp.mu.Unlock()
	left = tp.left[worker]
	delete(tp.left, worker)
	if _, ok := tp.nodes[worker]; ok {
		delete(tp.nodes, worker)
		tp.rebuild(m.log)
	}
	return left
}

// requeueTopics takes back a dead (or leaving) crawl node's tasks: its
// processing list and its own queue are read and deleted in one
// transaction, so every task of the node is released exactly once
// (queued again in the frontier), whatever the node still does.
func (m *Master) requeueTopics(ctx context.Context, worker int) error {
	pipe := m.rdb.TxPipeline()
	proc := pipe.LRange(ctx, m.k.processing(worker), 0, -1)
	queue := pipe.LRange(ctx, m.k.srqOf(worker), 0, -1)
	pipe.Del(ctx, m.k.processing(worker), m.k.srqOf(worker))
	pipe.HDel(ctx, m.k.workers(), strconv.Itoa(worker))
	pipe.HDel(ctx, m.k.owners(), strconv.Itoa(worker))
	pipe.HDel(ctx, m.k.workerLoads(), strconv.Itoa(worker))
	pipe.RPush(ctx, m.k.trq(), worker)
	if _, err := pipe.Exec(ctx); err != nil {
		return err
	}
	left := m.dropNode(worker)
	// Its processing list may have been fetched (an attempt counts); its
	// queue was never started. A node that left (Worker.Leave) answered
	// everything it fetched: what it left on its queue counts as returned.
	n := m.releaseTasks(proc.Val(), true)
	q := m.releaseTasks(queue.Val(), false)
	if left {
		m.requeued.Add(int64(n))
		m.returned.Add(int64(q))
		if n+q > 0 {
			m.log.Info("crawl node gone after leaving; the tasks it left are queued again", "worker", worker, "taken", n, "not started", q)
		}
	} else {
		m.requeued.Add(int64(n + q))
		m.log.Warn("crawl node gone; its tasks are queued again and its logical nodes move to the others", "worker", worker, "tasks", n+q)
	}
	return m.route(ctx)
}

// topicTick is the coordinator's part of each daemon tick: the priority
// overrides of spider control are applied, and the status with each node's
// load is published.
func (m *Master) topicTick(ctx context.Context, now time.Time) error {
	ts := m.sched.Topics()
	cur := ts.Priorities()
	err := ApplyTopicPriorities(ctx, m.rdb, m.opt.Crawl, func(name string, p int) error {
		c, ok := cur[name]
		if !ok || c == p {
			return nil // a topic the file no longer has, or nothing to change
		}
		if err := ts.SetPriority(name, p); err != nil {
			return err
		}
		m.log.Info("topic priority changed", "topic", name, "from", c, "to", p)
		return nil
	})
	if err != nil {
		m.log.Warn("cannot apply the topic priority overrides", "err", err)
	}
	m.publishTopics(ctx, now)
	return nil
}

// publishTopics writes topics:status.
func (m *Master) publishTopics(ctx context.Context, now time.Time) {
	st := TopicStatus{Status: m.sched.Topics().Status(now), At: now}
	tp := m.tp
	tp.mu.Lock()
	for _, ns := range tp.nodes {
		l := ns.load
		st.Nodes = append(st.Nodes, l)
	}
	tp.mu.Unlock()
	slices.SortFunc(st.Nodes, func(a, b NodeLoad) int { return a.Worker - b.Worker })
	if err := PublishTopicStatus(ctx, m.rdb, m.opt.Crawl, st); err != nil && ctx.Err() == nil {
		m.log.Warn("cannot publish the topics status", "err", err)
	}
}

// workerLoad is a crawl node's heartbeat load record (wload).
type workerLoad struct {
	NodeLoad
	Concurrency int `json:"concurrency"`
	// Leaving: the node takes no more tasks (Worker.Leave) and finishes
	// those in flight.
	Leaving bool `json:"leaving,omitempty"`
}

// CheckTopics compares a crawl node's topics file (local, read from
// localName; nil when the worker was started without --topics) with the
// coordinator's published at topics:config. It returns an error wrapping
// ErrTopicsMismatch that names every difference, or says which side lacks
// --topics and what to do. Call it after LoadConfig (the master publishes
// both at once).
func CheckTopics(ctx context.Context, rdb redis.UniversalClient, crawlName string, local *topics.Config, localName string) error {
	b, err := rdb.Get(ctx, newKeys(crawlName).topicsConfig()).Bytes()
	if errors.Is(err, redis.Nil) {
		if local == nil {
			return nil
		}
		return fmt.Errorf("%w: crawl %q runs without topics (its master was started without --topics): drop --topics from this worker, or restart the master with --topics %s", ErrTopicsMismatch, crawlName, localName)
	}
	if err != nil {
		return fmt.Errorf("cannot read the coordinator's topics configuration: %w", err)
	}
	if local == nil {
		return fmt.Errorf("%w: crawl %q is a topics crawl: start this worker with --topics FILE, the same topics file as the master's", ErrTopicsMismatch, crawlName)
	}
	coord, err := topics.ParseCanonical(b)
	if err != nil {
		return fmt.Errorf("the coordinator's topics configuration in Redis is unreadable: restart the master to publish it again: %w", err)
	}
	if d := topics.Diff(coord, local, localName); len(d) > 0 {
		return fmt.Errorf("%w: %s; give this worker the master's topics file", ErrTopicsMismatch, strings.Join(d, "; "))
	}
	return nil
}

// UseTopics makes the worker a crawl node of a topics crawl: it takes its
// tasks from its own queue srq:N, reports its load with each heartbeat,
// scores each page's text against its topic (scorer: crawl.TopicScorer of
// the topics file CheckTopics accepted) and sends the score with the
// result. Call it before Run.
func (w *Worker) UseTopics(scorer *topics.Scheduler) { w.scorer = scorer }

// queue is the list this worker takes tasks from.
func (w *Worker) queue() string {
	if w.scorer != nil {
		return w.k.srqOf(w.id)
	}
	return w.k.srq()
}

// reportLoad writes the worker's load for the coordinator (topics mode).
func (w *Worker) reportLoad(ctx context.Context) error {
	q, err := w.rdb.LLen(ctx, w.k.srqOf(w.id)).Result()
	if err != nil {
		return err
	}
	w.loadMu.Lock()
	now := time.Now()
	fetched := w.fetched.Load()
	rate := 0.0
	if !w.lastAt.IsZero() {
		if dt := now.Sub(w.lastAt).Seconds(); dt > 0 {
			rate = float64(fetched-w.lastFetched) / dt
		}
	}
	w.lastAt, w.lastFetched = now, fetched
	w.loadMu.Unlock()
	b, err := json.Marshal(workerLoad{NodeLoad: NodeLoad{Worker: w.id, Node: w.node, InFlight: int(w.inFlight.Load()),
		Queued: int(q), PagesPerSec: rate, Errors: w.errs.Load(), Fetched: fetched}, Concurrency: w.concurrency, Leaving: w.leaving.Load()})
	if err != nil {
		return err
	}
	return w.rdb.HSet(ctx, w.k.workerLoads(), strconv.Itoa(w.id), b).Err()
}

// leaveTopics gives a crawl node's work back as it leaves: the tasks it
// had taken go back to the head of its queue, except those whose answered
// packet was sent, which go back to the coordinator as retries
// (giveBackAnswered: their hosts' turns have ended); if the crawl is done the
// queue is deleted and the number returned; otherwise the worker marks
// its heartbeat dead, so that the coordinator's reaper takes the queue back
// (each task once) on its next round and moves its logical nodes.
func (w *Worker) leaveTopics(ctx context.Context, id int) error {
	// Tasks whose answered packet was sent go back to the coordinator as
	// retries (their hosts' turns have ended), not to srq:N; if one
	// cannot, the processing list stays as it is for the reaper.
	gaveBack := w.giveBackAnswered(ctx, w.k.processing(id))
	for gaveBack {
		if err := w.rdb.LMove(ctx, w.k.processing(id), w.k.srqOf(id), "RIGHT", "LEFT").Err(); err != nil {
			break
		}
	}
	done, err := w.isDone(ctx)
	if err != nil {
		return err
	}
	pipe := w.rdb.TxPipeline()
	if done && gaveBack {
		pipe.Del(ctx, w.k.srqOf(id))
		pipe.HDel(ctx, w.k.workers(), strconv.Itoa(id))
		pipe.HDel(ctx, w.k.owners(), strconv.Itoa(id))
		pipe.HDel(ctx, w.k.workerLoads(), strconv.Itoa(id))
		pipe.RPush(ctx, w.k.trq(), id)
	} else {
		pipe.HSet(ctx, w.k.workers(), strconv.Itoa(id), 0)
	}
	_, err = pipe.Exec(ctx)
	return err
}

// scoreOf is the relevance score a crawl node sends with a visit.
func (w *Worker) scoreOf(r frontier.Request, v crawl.Visit) float64 {
	if w.scorer == nil || v.Retry || v.Text == "" {
		return 0
	}
	return w.scorer.Score(r, v.Text)
}

// TopicStatus is the coordinator's topics status now, nil without topics.
func (m *Master) TopicStatus() *topics.Status {
	ts := m.sched.Topics()
	if ts == nil {
		return nil
	}
	st := ts.Status(time.Now())
	return &st
}
