// Package p2p is the peer-to-peer topology of SPEC §3: every node is
// scheduler and fetcher for the buckets of hosts that the consistent-hash
// ring with weighted virtual nodes gives it over the live members. A URL
// found for another node's bucket travels to that node in a JSON batch (the
// URL dispatcher), flushed on a timer or when large enough, into the
// receiver's inbox in Redis (the URL receiver).
//
// Each bucket's durable state (seen set, pending URLs, counters) lives in
// Redis under the bucket's hash tag (package rstate), every write fenced by
// the bucket's lease (package cluster), so a bucket moves between nodes
// without losing a URL and two nodes never crawl one bucket at once.
//
// Under a depth limit the depth is exact: depth levels overlap (on each
// node by default; across the nodes even when each goes level by level,
// crawl.Config.StrictLevels), so a page may be fetched at a greater
// depth than its shortest path's. The buckets' states therefore relink
// (rstate.Options.Relink): a completion keeps all the page's links, those
// of other buckets and those one level beyond the limit too
// (crawl.Visit.Beyond, which the node has the fetcher fill), and when a
// fetched page is found again at a smaller depth its kept links are
// discovered again that much shallower, routed to their buckets' owners
// like any link (so the sent and received counts still balance).
//
// The crawl ends by itself: every node publishes whether it is idle (nothing
// queued, leased, buffered or in its inbox, and all its buckets held); when
// every live member is idle and the URLs sent equal the URLs received, on
// two checks in a row between which every member published a newer report,
// the crawl is marked done and every node exits.
package p2p

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/spider-crawler/spider/internal/cluster"
	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/crawl/rbudget"
	"github.com/spider-crawler/spider/internal/frontier"
	"github.com/spider-crawler/spider/internal/partition"
	"github.com/spider-crawler/spider/internal/rstate"
	"github.com/spider-crawler/spider/internal/store"
)

// Options configure a node.
type Options struct {
	// Crawl names the crawl (the same on every node).
	Crawl string
	// NodeID names this node, unique in the crawl; a node restarted with
	// the same ID takes its buckets and inbox back. Empty: the id kept in
	// the data directory (store.NodeID: generated once as HOST-xxxxxx), so
	// several nodes on one machine, each with its own data directory, never
	// share one. Run refuses an id that a live node of another data
	// directory holds (cluster.ErrNodeIDInUse).
	NodeID string
	// Instance tells this node's processes from another node's that claims
	// the same NodeID (cluster.Member.Instance). Empty: the token kept in
	// the data directory (store.NodeToken), so a node restarted on its data
	// directory right after a crash takes its id back at once, before its
	// old heartbeat expires.
	Instance string
	// Weight is the node's number of virtual nodes on the ring: its share
	// of the buckets. Default 100.
	Weight int
	// Buckets is M, the number of logical buckets (the same on every
	// node). Default partition.DefaultBuckets (4096).
	Buckets int
	// Flush is the dispatcher's fallback timer (it flushes at once when a
	// completion waits, see dispatcher.send). Default 50ms.
	Flush time.Duration
	// BatchSize is the most URLs one JSON batch carries; more for one
	// destination go as several batches. Default 500.
	BatchSize int
	// Heartbeat and MemberTTL tune membership (defaults 1s and 5s);
	// LeaseTTL the bucket leases (default 6s).
	Heartbeat, MemberTTL, LeaseTTL time.Duration
}

// Ranges of Options.Weight and Options.Buckets: the ring holds Weight
// points per node and the bucket table Buckets entries, so neither may be
// unbounded.
const (
	MaxWeight  = 10000
	MaxBuckets = 1 << 20
)

func (o *Options) defaults() error {
	if o.Crawl == "" {
		return errors.New("a peer-to-peer node needs --crawl NAME")
	}
	if o.NodeID == "" {
		return errors.New("a peer-to-peer node needs --node-id ID or a --data directory to keep its id in")
	}
	if err := cluster.CheckNodeID(o.NodeID); err != nil {
		return err
	}
	if o.Weight == 0 {
		o.Weight = 100
	}
	if o.Weight < 1 || o.Weight > MaxWeight {
		return fmt.Errorf("--weight %d is out of range: use 1 to %d virtual nodes", o.Weight, MaxWeight)
	}
	if o.Buckets == 0 {
		o.Buckets = partition.DefaultBuckets
	}
	if o.Buckets < 1 || o.Buckets > MaxBuckets {
		return fmt.Errorf("--buckets %d is out of range: use 1 to %d (the same on every node)", o.Buckets, MaxBuckets)
	}
	if o.Flush == 0 {
		o.Flush = 50 * time.Millisecond
	}
	if o.BatchSize == 0 {
		o.BatchSize = 500
	}
	if o.LeaseTTL == 0 {
		o.LeaseTTL = 6 * time.Second
	}
	return nil
}

// fromDataDir fills an empty NodeID and Instance from the data directory
// dir (nothing without one).
func (o *Options) fromDataDir(dir string) error {
	if dir == "" {
		return nil
	}
	var err error
	if o.NodeID == "" {
		if o.NodeID, err = store.NodeID(dir); err != nil {
			return err
		}
	}
	if o.Instance == "" {
		if o.Instance, err = store.NodeToken(dir); err != nil {
			return err
		}
	}
	return nil
}

// IDHint is what a node refused for its id (cluster.ErrNodeIDInUse) is
// told to do.
const IDHint = cluster.DefaultIDHint

// settleTime is how long the member list must have stayed unchanged,
// counted from the node's registration or the last change after it, before
// a starting node takes buckets (cluster.CoordinatorConfig.Settle): nodes
// started together register within a few tens of milliseconds and split
// the buckets at once instead of handing them back and forth. It was
// 300 ms counted from the coordinator's first member list, the largest
// part of a node's start-up (issue 23). handoverRetry is how often a node
// asks again for buckets their previous owner still holds.
const (
	settleTime    = 100 * time.Millisecond
	handoverRetry = 250 * time.Millisecond
)

// Node is one peer of a peer-to-peer crawl.
type Node struct {
	opt     Options
	cfg     crawl.Config
	rdb     redis.UniversalClient
	log     *slog.Logger
	k       qkeys
	keys    cluster.Keys
	fetcher *crawl.Fetcher
	sched   *crawl.Scheduler
	budget  *rbudget.Budget // --max-pages over all nodes
	bs      *buckets
	disp    *dispatcher
	mem     *cluster.Membership
	coord   *cluster.Coordinator

	tableMu sync.RWMutex
	table   []string // bucket → node under the current view
	epoch   int64

	fetched  atomic.Int64
	received atomic.Int64
	paused   atomic.Bool // spider control paused (or is stopping) the crawl
	// acquiring counts Acquired events read and not yet applied (their
	// buckets' pending URLs not yet queued): the node is not idle.
	acquiring atomic.Int64
	evq       *eventQueue // ownership events not yet applied (events)
	// wake tells terminate to check now (nudge): the node may be idle.
	wake chan struct{}
	// finishedAt is when the node's last completion ended (unix ns); end
	// is how the crawl's end was detected after it (EndStats).
	finishedAt atomic.Int64
	endMu      sync.Mutex
	end        EndStats
}

// NewNode prepares a node that fetches with fetcher (which it owns from
// then on, and which holds cfg.Data's lock). An empty opt.NodeID or
// opt.Instance is read from cfg.Data (generated and kept there the first
// time: store.NodeID, store.NodeToken).
func NewNode(cfg crawl.Config, fetcher *crawl.Fetcher, rdb redis.UniversalClient, opt Options, logger *slog.Logger) (*Node, error) {
	if err := opt.fromDataDir(cfg.Data); err != nil {
		return nil, err
	}
	if err := opt.defaults(); err != nil {
		return nil, err
	}
	if cfg.PerIP {
		return nil, errors.New("--per-ip does not go with a peer-to-peer crawl: buckets are by host name")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	keys, err := cluster.NewKeys(opt.Crawl)
	if err != nil {
		return nil, err
	}
	n := &Node{opt: opt, cfg: cfg, rdb: rdb, log: logger.With("node", opt.NodeID), k: newQKeys(opt.Crawl), keys: keys,
		fetcher: fetcher, wake: make(chan struct{}, 1), evq: newEventQueue()}
	// Depth levels overlap across nodes: under a depth limit the buckets'
	// states relink (buckets.Relinks), which needs the links the limit cut.
	fetcher.KeepBeyond()
	// A page's duplicate decision is made before its record is written,
	// in the crawl-wide tables the buckets' states use (Options.DupTags),
	// and handed to the bucket's Complete (crawlstate.Outcome.Filed).
	dupes, err := rstate.CrawlDupes(rdb, keys.Crawl(), dupTags)
	if err != nil {
		return nil, err
	}
	fetcher.FileContent(dupes)
	n.disp = newDispatcher(rdb, n.k, opt.NodeID, opt.Buckets, n.route, opt.Flush, opt.BatchSize, n.log)
	n.bs = newBuckets(rdb, keys, opt.NodeID, opt.Buckets, cfg, n.disp, n.route, n.log)
	n.sched, err = crawl.NewScheduler(cfg, n.bs, n.log, nil)
	if err != nil {
		return nil, err
	}
	n.budget = rbudget.New(rdb, rbudget.Keys{Used: n.k.used(), Held: n.k.held()}, opt.NodeID, cfg.MaxPages, rbudget.SlotTTL(cfg), n.log)
	n.sched.SetBudget(n.budget)
	n.mem = cluster.NewMembership(rdb, keys, cluster.MembershipConfig{Heartbeat: opt.Heartbeat, TTL: opt.MemberTTL, Logger: n.log, IDHint: IDHint})
	return n, nil
}

// doneByLimit is the value of the done key when --max-pages ended the
// crawl: a node started again with a larger limit (or none) clears it and
// the crawl goes on.
const doneByLimit = "max-pages"

// route is the node the current table gives a bucket to ("" before the
// first member list).
func (n *Node) route(bucket int) string {
	n.tableMu.RLock()
	defer n.tableMu.RUnlock()
	if bucket < 0 || bucket >= len(n.table) {
		return ""
	}
	return n.table[bucket]
}

func (n *Node) setView(v cluster.View) {
	ring, err := v.Ring(partition.PointsPerWeight(partition.DefaultPointsPerWeight))
	if err != nil {
		return
	}
	table := ring.Balanced(n.opt.Buckets, 0)
	n.tableMu.Lock()
	n.table, n.epoch = table, v.Epoch
	n.tableMu.Unlock()
}

// keyBucket maps a frontier politeness key (host:port) to its bucket.
func (n *Node) keyBucket(key string) int {
	host := key
	if h, _, err := net.SplitHostPort(key); err == nil {
		host = h
	}
	return partition.Bucket(host, n.opt.Buckets)
}

// drain is the coordinator's hook before a voluntary release: stop working
// on the bucket (wait briefly for its fetches in flight) and forget its
// queued URLs.
func (n *Node) drain(ctx context.Context, bucket int) error {
	n.bs.drop(bucket, n.opt.LeaseTTL/3)
	n.sched.Drop(func(key string) bool { return n.keyBucket(key) == bucket })
	return nil
}

// ID is the node's id (Options.NodeID, or the one kept in the data
// directory).
func (n *Node) ID() string { return n.opt.NodeID }

// Fetched is the number of URLs this node completed.
func (n *Node) Fetched() int64 { return n.fetched.Load() }

// Run joins the crawl and works until the crawl is done or ctx ends; then it
// leaves the member list gracefully (its buckets move to the others). If a
// live node of another data directory holds the id, Run does nothing and
// returns an error wrapping cluster.ErrNodeIDInUse (a *cluster.IDInUseError
// naming that node's pid and host); if one takes it over while this node
// was cut off from Redis past its TTL, Run stops with that error.
func (n *Node) Run(ctx context.Context) error {
	if _, err := n.mem.Join(ctx, cluster.Member{ID: n.opt.NodeID, Weight: n.opt.Weight, Instance: n.opt.Instance}); err != nil {
		if errors.Is(err, cluster.ErrNodeIDInUse) {
			return err // the message says it all
		}
		return fmt.Errorf("cannot join the crawl: %w", err)
	}
	defer n.mem.Close()
	if v, err := n.rdb.Get(ctx, n.k.done()).Result(); err == nil && v == doneByLimit && !n.budget.Spent() {
		if err := n.rdb.Del(ctx, n.k.done()).Err(); err != nil {
			return fmt.Errorf("cannot resume the crawl stopped by --max-pages: %w", err)
		}
		n.log.Info("resuming a crawl that --max-pages stopped", "max_pages", n.cfg.MaxPages)
	} else if err == nil && v != doneByLimit && (n.cfg.Continuous || n.cfg.RetryFailed) {
		// A finished crawl run again to revisit its pages or retry its
		// failures: its URLs are due again, so it is not done.
		if err := n.rdb.Del(ctx, n.k.done()).Err(); err != nil {
			return fmt.Errorf("cannot resume the finished crawl: %w", err)
		}
		n.log.Info("resuming a finished crawl", "continuous", n.cfg.Continuous, "retry_failed", n.cfg.RetryFailed)
	}
	seeds, err := n.fetcher.SeedRequests()
	if err != nil {
		return err
	}
	// The seeds' buckets are acquired first: the crawl's first requests
	// wait for them, not for the thousands of other leases.
	var first []int
	for b := range n.bs.split(seeds) {
		first = append(first, b)
	}
	n.coord, err = cluster.NewCoordinator(n.rdb, n.mem, cluster.CoordinatorConfig{
		Buckets: n.opt.Buckets, Leases: cluster.LeasesConfig{TTL: n.opt.LeaseTTL, Logger: n.log},
		Drain: n.drain, Logger: n.log,
		// Nodes started together split the buckets at once; a bucket handed
		// over is asked for again soon, not a third of the lease TTL later.
		Settle: settleTime, Retry: min(n.opt.LeaseTTL/3, handoverRetry), First: first,
	})
	if err != nil {
		return err
	}
	// The crawl-wide report (spider status, spider serve --redis): this
	// node's records, live every second and final when it leaves.
	rep, err := cluster.StartReporter(ctx, n.rdb, n.keys, cluster.ReporterConfig{Node: n.opt.NodeID, Role: cluster.RolePeer, Source: n.report, Logger: n.log})
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	n.evq = newEventQueue() // this run's (events closes it at its end)
	g, gctx := errgroup.WithContext(runCtx)
	g.Go(func() error { return n.coord.Run(gctx) })
	g.Go(func() error { return n.events(gctx) })
	g.Go(func() error { return n.watch(gctx) })
	g.Go(func() error {
		select {
		case err := <-n.mem.Taken():
			return err
		case <-gctx.Done():
			return nil
		}
	})
	g.Go(func() error { n.disp.run(gctx); return nil })
	g.Go(func() error { return n.receive(gctx) })
	// The node's loops end (done, stopped, failed): the receiver's
	// blocked pop would otherwise hold the exit for up to its time-out
	// (a second).
	woken := make(chan struct{})
	stopWake := context.AfterFunc(gctx, func() {
		defer close(woken)
		n.wakeReceive(ctx)
	})
	ctl := cluster.NewControl(n.rdb, n.keys)
	if err := ctl.Fresh(ctx); err != nil {
		return err
	}
	g.Go(func() error { return n.follow(gctx, ctl) })
	g.Go(func() error { return n.sched.Start(gctx, seeds) })
	for i := 0; i < n.cfg.Concurrency; i++ {
		g.Go(func() error { return n.work(gctx) })
	}
	if n.cfg.Continuous {
		// Due URLs of the owned buckets into the frontier, until stopped
		// (revisit.go).
		g.Go(func() error { return n.sched.FeedRevisits(gctx, n.bs) })
	}
	doneErr := errors.New("crawl done")
	g.Go(func() error {
		if err := n.terminate(gctx); err != nil {
			return err
		}
		return doneErr
	})
	err = g.Wait()
	if !stopWake() {
		<-woken
	}
	leaveCtx, lc := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer lc()
	n.unwakeReceive(leaveCtx)
	// The member list forgets a node that leaves; its count stays here for
	// `spider status` and `spider crawls` after the end (issue #24). A node
	// killed with -9 never adds its run.
	if ferr := n.rdb.HIncrBy(leaveCtx, n.k.final(), n.opt.NodeID, n.Fetched()).Err(); ferr != nil {
		n.log.Warn("cannot record the node's final count for spider status", "err", ferr)
	}
	if rerr := rep.Stop(leaveCtx, reportState(ctx, err, doneErr)); rerr != nil {
		n.log.Warn("cannot publish the node's final report for spider status", "err", rerr)
	}
	if lerr := n.mem.Leave(leaveCtx); lerr != nil {
		n.log.Warn("cannot leave the member list", "err", lerr)
	}
	if errors.Is(err, doneErr) {
		return nil
	}
	if errors.Is(err, ErrStopped) {
		return err
	}
	if ctx.Err() != nil {
		return ctx.Err() // stopped from outside: what failed while stopping does not matter
	}
	return err
}

// report is this run's part of the node's crawl-wide report.
func (n *Node) report() cluster.NodeReport {
	p := n.sched.Progress()
	r := cluster.NodeReport{Counts: cluster.Counts(n.fetcher.Tally()),
		Detail: map[string]int64{"queued": int64(p.Queued), "in_flight": int64(p.InFlight), "hosts": int64(p.Hosts), "received": n.received.Load()}}
	if n.paused.Load() {
		r.State = cluster.ReportPaused
	}
	return r
}

// reportState is the final state of a run that ended with err.
func reportState(ctx context.Context, err, doneErr error) string {
	switch {
	case errors.Is(err, doneErr):
		return cluster.ReportDone
	case errors.Is(err, ErrStopped), ctx.Err() != nil:
		return cluster.ReportStopped
	}
	return cluster.ReportFailed
}

// ErrStopped is returned by Run when `spider control stop` stopped the
// crawl: this node finished its fetches in flight and left; what is
// pending stays pending for the next run.
var ErrStopped = errors.New("the crawl was stopped by spider control; run the same command again to resume it")

// follow applies the crawl's control word (cluster.Control): pause and
// resume the hand-out, add the seeds queued by spider control (routed to
// their buckets' owners), stop after the fetches in flight.
func (n *Node) follow(ctx context.Context, ctl *cluster.Control) error {
	return ctl.Follow(ctx, n.opt.NodeID, n.log, func(ctx context.Context, cmd cluster.Command) error {
		switch cmd.State {
		case cluster.ControlPaused, cluster.ControlStopping:
			n.sched.Pause()
			n.paused.Store(true)
		default:
			n.sched.Resume()
			n.paused.Store(false)
		}
		if err := n.popSeeds(ctx, ctl); err != nil {
			n.log.Warn("cannot add the seeds given by spider control", "err", err)
		}
		if cmd.State != cluster.ControlStopping {
			return nil
		}
		for n.sched.Progress().InFlight > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(10 * time.Millisecond):
			}
		}
		if err := ctl.Ack(ctx, n.opt.NodeID, cmd.Seq); err != nil {
			return err
		}
		n.log.Info("stopped by spider control: fetches in flight finished, the rest stays pending")
		return ErrStopped
	})
}

// popSeeds takes the seeds spider control queued (each URL is popped by
// one node) and records them as discovered: the crawl's rules apply and
// each goes to its bucket's owner.
func (n *Node) popSeeds(ctx context.Context, ctl *cluster.Control) error {
	return ctl.DrainSeeds(ctx, func(ctx context.Context, raw []string) error {
		reqs, rerr := n.fetcher.Requests(raw)
		if rerr != nil {
			n.log.Warn("seeds refused", "err", rerr)
		}
		added, err := n.sched.AddSeeds(ctx, reqs)
		if err != nil {
			return err
		}
		n.log.Info("seeds added by spider control", "given", len(raw), "new_here", added)
		return nil
	})
}

// watch keeps the bucket table in step with the member list.
func (n *Node) watch(ctx context.Context) error {
	for v := range n.mem.Watch(ctx) {
		n.setView(v)
	}
	return ctx.Err()
}

// eventWorkers is how many buckets' ownership changes a node applies at
// once. Opening a bucket's state and loading its pending and due URLs
// costs a few Redis round trips, and a node starting alone or with a few
// others acquires thousands of buckets: one at a time, that held back the
// crawl's first requests (the seeds' buckets waited their turn) by a
// second or more on a loaded machine.
const eventWorkers = 8

// eventQueue holds the ownership events read from the coordinator and not
// yet applied. A worker takes the first event of a bucket no other worker
// is applying, so each bucket's events are applied one at a time in the
// coordinator's order; among those, a bucket that URLs wait for (urgent:
// the receiver parked URLs of it, the seeds' at the start) goes first.
type eventQueue struct {
	mu     sync.Mutex
	cond   *sync.Cond
	items  []cluster.Event
	busy   map[int]bool // buckets whose event a worker is applying
	urgent map[int]bool // buckets URLs wait for (urge)
	closed bool

	earlier map[int]bool // take's scratch: buckets seen earlier in the scan
}

func newEventQueue() *eventQueue {
	q := &eventQueue{busy: map[int]bool{}, urgent: map[int]bool{}, earlier: map[int]bool{}}
	q.cond = sync.NewCond(&q.mu)
	return q
}

func (q *eventQueue) push(ev cluster.Event) {
	q.mu.Lock()
	q.items = append(q.items, ev)
	q.mu.Unlock()
	q.cond.Signal()
}

func (q *eventQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.cond.Broadcast()
}

// urge moves bucket's pending events ahead of the others.
func (q *eventQueue) urge(bucket int) {
	q.mu.Lock()
	q.urgent[bucket] = true
	q.mu.Unlock()
}

// take returns the next event to apply and marks its bucket busy until
// done; ok is false once the queue is closed.
func (q *eventQueue) take() (ev cluster.Event, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for {
		if q.closed {
			return ev, false
		}
		first, pick := -1, -1
		clear(q.earlier)
		for i, e := range q.items {
			if q.busy[e.Bucket] || q.earlier[e.Bucket] {
				continue // its bucket's earlier event goes first
			}
			q.earlier[e.Bucket] = true
			if first < 0 {
				first = i
				if len(q.urgent) == 0 {
					break
				}
			}
			if q.urgent[e.Bucket] {
				pick = i
				break
			}
		}
		if pick < 0 {
			pick = first
		}
		if pick >= 0 {
			ev = q.items[pick]
			q.items = append(q.items[:pick], q.items[pick+1:]...)
			q.busy[ev.Bucket] = true
			delete(q.urgent, ev.Bucket)
			return ev, true
		}
		q.cond.Wait()
	}
}

// done ends the application of an event of bucket.
func (q *eventQueue) done(bucket int) {
	q.mu.Lock()
	delete(q.busy, bucket)
	q.mu.Unlock()
	q.cond.Broadcast()
}

// events applies the coordinator's ownership changes, eventWorkers at a
// time (eventQueue: each bucket's in order, urgent buckets first).
func (n *Node) events(ctx context.Context) error {
	q := n.evq
	g, gctx := errgroup.WithContext(ctx)
	stop := context.AfterFunc(gctx, q.close)
	defer stop()
	for range eventWorkers {
		g.Go(func() error {
			for {
				ev, ok := q.take()
				if !ok {
					return gctx.Err()
				}
				err := gctx.Err()
				if err == nil {
					err = n.applyEvent(gctx, ev)
				}
				q.done(ev.Bucket)
				if ev.Kind == cluster.Acquired {
					n.acquiring.Add(-1)
				}
				if err != nil {
					return err
				}
			}
		})
	}
	g.Go(func() error {
		defer q.close()
		for {
			select {
			case <-gctx.Done():
				return gctx.Err()
			case ev, ok := <-n.coord.Events():
				if !ok {
					return ctx.Err()
				}
				if ev.Kind == cluster.Acquired {
					n.acquiring.Add(1) // not idle until its pending URLs are queued
				}
				q.push(ev)
			}
		}
	})
	return g.Wait()
}

// applyEvent applies one ownership change.
func (n *Node) applyEvent(ctx context.Context, ev cluster.Event) error {
	switch ev.Kind {
	case cluster.Acquired:
		// Events queue up (a node alone at the start acquires every
		// bucket); one read late may be for a bucket released since.
		if !n.coord.Current(ev) {
			return nil
		}
		var st *rstate.Store
		err := cluster.Retry(ctx, func() (err error) { st, err = n.bs.acquire(ctx, ev.Bucket, ev.Token); return err })
		if lostBucket(err) {
			return nil // it moved on already; its new owner has it
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("cannot open acquired bucket %d: %w", ev.Bucket, err)
		}
		var reqs []frontier.Request
		err = cluster.Retry(ctx, func() error {
			reqs = reqs[:0]
			return st.LoadPending(ctx, func(r frontier.Request) error { reqs = append(reqs, r); return nil })
		})
		if lostBucket(err) {
			n.bs.drop(ev.Bucket, 0)
			return nil
		}
		if err != nil {
			return fmt.Errorf("cannot load the pending URLs of bucket %d: %w", ev.Bucket, err)
		}
		if err := n.sched.Enqueue(reqs); err != nil {
			return err
		}
		if err := n.acquiredSchedule(ctx, st); err != nil {
			return fmt.Errorf("cannot take the due URLs of bucket %d: %w", ev.Bucket, err)
		}
	case cluster.Lost, cluster.Released:
		// Released: drain already stopped the work; this also undoes
		// a late Acquired that reopened the bucket meanwhile.
		n.bs.drop(ev.Bucket, 0)
		n.sched.Drop(func(key string) bool { return n.keyBucket(key) == ev.Bucket })
	}
	return nil
}

// receive is the URL receiver: batches from the inbox are moved to a
// processing list, applied (URLs of owned buckets recorded and queued,
// others forwarded to their owner, URLs of buckets about to be acquired
// sent back to this node's own inbox after a pause), then removed with the
// "received" count in one MULTI. A batch survives a crash in the processing
// list; this node takes it back when restarted with the same ID.
func (n *Node) receive(ctx context.Context) error {
	me := n.opt.NodeID
	for {
		if err := n.rdb.LMove(ctx, n.k.proc(me), n.k.inbox(me), "RIGHT", "LEFT").Err(); err == nil {
			continue // a batch left from an earlier run goes back first
		}
		raw, err := n.rdb.BLMove(ctx, n.k.inbox(me), n.k.proc(me), "LEFT", "RIGHT", time.Second).Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err == nil && raw == inboxWake {
			// wakeReceive's: this node is leaving (or one of an earlier
			// run, or of a departed node's adopted inbox: dropped).
			n.rdb.LRem(ctx, n.k.proc(me), 1, raw)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			continue
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			n.log.Warn("cannot read the inbox", "err", err)
			time.Sleep(100 * time.Millisecond)
			continue
		}
		if err := n.apply(ctx, raw); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		n.nudge() // a batch of URLs all seen already leaves the node idle
	}
}

func (n *Node) apply(ctx context.Context, raw string) error {
	me := n.opt.NodeID
	b, err := decodeBatch(raw)
	count := int64(len(b.URLs))
	if err != nil {
		n.log.Warn("dropping a malformed batch", "err", err)
		count = 0
	} else {
		var forward, parked, relink []frontier.Request
		var news []frontier.Request
		for bucket, rs := range n.bs.split(b.URLs) {
			if st := n.bs.store(bucket); st != nil {
				var got, more []frontier.Request
				cctx := st.OneCall(ctx) // a retry after a lost reply gets the first run's reply
				err := cluster.Retry(ctx, func() (err error) { got, more, err = st.DiscoverRelink(cctx, rs); return err })
				if err == nil {
					news = append(news, got...)
					relink = append(relink, more...)
					continue
				}
				n.log.Debug("bucket write refused; forwarding", "bucket", bucket, "err", err)
			}
			if n.route(bucket) == me {
				parked = append(parked, rs...)
				n.evq.urge(bucket) // opened next, before buckets nothing waits for
			} else {
				forward = append(forward, rs...)
			}
		}
		if len(relink) > 0 {
			// Kept links of fetched URLs this batch lowered: routed like
			// any discovered link, before the batch is acknowledged, so
			// that the sent and received counts still balance at the end.
			more, wait, err := n.bs.discover(ctx, relink)
			if err != nil {
				return err
			}
			if err := wait(); err != nil {
				return err
			}
			news = append(news, more...)
		}
		if err := n.sched.Enqueue(news); err != nil {
			return err
		}
		if len(parked) > 0 {
			// The bucket is ours by the table but not acquired yet (at
			// the start: the seeds wait for their buckets so).
			time.Sleep(parkedWait)
			forward = append(forward, parked...)
		}
		if len(forward) > 0 {
			if err := n.disp.send(map[string][]frontier.Request{"": forward})(); err != nil {
				return err
			}
		}
	}
	// Idempotent, so that a retry after a lost reply does not count twice.
	err = cluster.Retry(ctx, func() error {
		return ackScript.Run(ctx, n.rdb, []string{n.k.proc(me), n.k.received()}, raw, me, count).Err()
	})
	if err != nil {
		return fmt.Errorf("cannot acknowledge a batch: %w", err)
	}
	n.received.Add(count)
	return nil
}

// parkedWait is how long the receiver waits before it sends URLs of a
// bucket the table gives this node, and that it has not acquired yet, to
// its own inbox again. It was 100 ms: at the start every seed waited for
// its bucket so, up to that much after the bucket was acquired.
const parkedWait = 25 * time.Millisecond

// inboxWake is the value wakeReceive pushes at the head of the node's
// own inbox; it is never a batch (those are JSON objects) and never
// counted as received.
const inboxWake = "wake"

// wakeReceive pushes inboxWake at the head of the node's inbox so that
// the receiver's blocked pop returns at once when the node's loops have
// ended (best effort: without it the pop ends within its time-out).
func (n *Node) wakeReceive(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	if err := n.rdb.LPush(ctx, n.k.inbox(n.opt.NodeID), inboxWake).Err(); err != nil {
		n.log.Debug("cannot wake the receiver; it ends within its pop's time-out", "err", err)
	}
}

// unwakeReceive removes an inboxWake the receiver did not take (it had
// ended already), so that spider status counts no batch waiting for a
// node that left.
func (n *Node) unwakeReceive(ctx context.Context) {
	pipe := n.rdb.Pipeline()
	pipe.LRem(ctx, n.k.inbox(n.opt.NodeID), 0, inboxWake)
	pipe.LRem(ctx, n.k.proc(n.opt.NodeID), 0, inboxWake)
	_, _ = pipe.Exec(ctx) // best effort: the next run's receiver drops one
}

// ackScript removes a processed batch from the processing list and counts
// its URLs as received, only if the batch was still there.
var ackScript = redis.NewScript(`
if redis.call('LREM', KEYS[1], 1, ARGV[1]) == 1 then
  redis.call('HINCRBY', KEYS[2], ARGV[2], ARGV[3])
end
return 1`)

// work is one fetch worker.
func (n *Node) work(ctx context.Context) error {
	for {
		lease, err := n.sched.Next(ctx)
		if errors.Is(err, crawl.ErrLimitReached) {
			return nil // the crawl is marked done by terminate
		}
		if errors.Is(err, frontier.ErrDrained) {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(20 * time.Millisecond):
			}
			continue
		}
		if err != nil {
			return err
		}
		// The host's turn ends when the answer has been read, as on one
		// node (crawl/pipeline.go): its next request may start after the
		// delay while this page is parsed, stored and completed (the
		// completion waits for its links to other nodes' buckets to
		// reach their inboxes). The lease, and with it the URL in
		// flight, its bucket's hand-over wait and idleness, lasts until
		// Finish. A retry keeps the turn (Finish re-queues it under it).
		fd := n.fetcher.Fetch(ctx, lease.Request, lease.Start)
		if ctx.Err() == nil {
			n.sched.EndTurn(lease, fd.Turn())
		}
		v, err := n.fetcher.Process(ctx, fd)
		if err != nil || ctx.Err() != nil {
			n.sched.Release(lease, false)
			if err == nil {
				err = ctx.Err()
			}
			return err
		}
		if err := n.sched.Finish(ctx, lease, v); err != nil {
			return err
		}
		n.fetched.Add(1)
		n.finishedAt.Store(time.Now().UnixNano())
		n.nudge()
	}
}

// nudge wakes terminate if this node may have just become idle (nothing
// queued, leased or buffered for other nodes), so that it publishes its
// report and looks for the crawl's end now rather than at its next tick:
// the last completion of a crawl is followed by the end's checks at once.
// Cheap (counters under two locks), and wake-ups coalesce: a node that
// goes idle and busy again in quick succession costs one check, not one
// per completion.
func (n *Node) nudge() {
	if n.acquiring.Load() != 0 || !n.sched.Idle() || n.disp.pending() != 0 {
		return
	}
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// idleReport is what a node publishes for termination detection.
type idleReport struct {
	Idle  bool  `json:"idle"`
	Epoch int64 `json:"epoch"`
	// Seq numbers the node's reports (the start's clock in ns, then one
	// more each), so that a check can tell a report published after an
	// earlier check from one it has seen already (quiet).
	Seq int64 `json:"seq,omitempty"`
}

// terminate publishes this node's idleness and decides, with the others'
// reports, when the crawl is over (see the package documentation).
func (n *Node) terminate(ctx context.Context) error {
	t := time.NewTimer(busyCheck)
	defer t.Stop()
	var last *quiet
	// Counted from the clock, so that the reports of a node restarted
	// under the same id (the member list unchanged) follow its earlier
	// run's.
	seq := time.Now().UnixNano()
	idle, nudged := false, false
	var since EndStats // the checks after the node's last completion
	lastFinish := int64(0)
	rateAt, rateFetched, rate := time.Now(), int64(0), 0.0
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		case <-n.wake: // nudge: the node may have just become idle
			nudged = true
		}
		if f := n.finishedAt.Load(); f != lastFinish {
			lastFinish, since = f, EndStats{}
		}
		since.Checks++
		since.Nudged = since.Nudged || nudged
		nudged = false
		if done, _ := n.rdb.Exists(ctx, n.k.done()).Result(); done > 0 {
			return nil
		}
		n.adoptOrphans(ctx)
		if n.budget.Spent() {
			// Slots are counted after their URLs' completions: none is in
			// flight on any node.
			n.log.Info("the crawl reached --max-pages", "max_pages", n.cfg.MaxPages)
			return n.rdb.Set(ctx, n.k.done(), doneByLimit, 0).Err()
		}
		n.tableMu.RLock()
		epoch, want := n.epoch, 0
		for _, id := range n.table {
			if id == n.opt.NodeID {
				want++
			}
		}
		n.tableMu.RUnlock()
		inbox, _ := n.rdb.LLen(ctx, n.k.inbox(n.opt.NodeID)).Result()
		proc, _ := n.rdb.LLen(ctx, n.k.proc(n.opt.NodeID)).Result()
		idle = epoch > 0 && n.acquiring.Load() == 0 && n.sched.Idle() && n.disp.pending() == 0 && inbox == 0 && proc == 0 && n.bs.ownedCount() == want
		// An idle node looks again soon: the crawl ends two equal idle
		// checks after its last completion, and the other nodes see the
		// done mark at their next check. Set from this check's idleness,
		// not the previous one's: a node nudged idle checks again after
		// idleCheck, not busyCheck (the others' confirmation waits for
		// its next report).
		if idle {
			t.Reset(idleCheck)
		} else {
			t.Reset(busyCheck)
		}
		seq++
		rep, _ := json.Marshal(idleReport{Idle: idle, Epoch: epoch, Seq: seq})
		n.rdb.HSet(ctx, n.k.idle(), n.opt.NodeID, rep)
		if el := time.Since(rateAt); el >= time.Second {
			f := n.fetched.Load()
			rate = float64(f-rateFetched) / el.Seconds()
			rateAt, rateFetched = time.Now(), f
		}
		n.mem.SetLoad(cluster.Load{PagesPerSec: rate, Queue: int64(n.sched.Progress().Queued), Fetched: n.Fetched()})
		if !idle || n.cfg.Continuous { // a continuous crawl runs until stopped
			last = nil
			continue
		}
		snap, ok := n.snapshot(ctx, epoch)
		if !ok {
			last = nil
			continue
		}
		if snap.confirms(last) {
			n.log.Info("every node is idle and every URL sent was received: the crawl is done")
			if lastFinish > 0 {
				since.Detected = true
				since.AfterLast = time.Since(time.Unix(0, lastFinish))
			}
			n.endMu.Lock()
			n.end = since
			n.endMu.Unlock()
			return n.rdb.Set(ctx, n.k.done(), "1", 0).Err()
		}
		if last == nil || !snap.same(last) {
			last = snap
		}
	}
}

// EndStats says how a node that marked the crawl done got there after
// its own last completion (for tests and the end's latency figures).
type EndStats struct {
	// Detected: this node marked the crawl done, after completions of its
	// own; the other fields are about the checks since the last one.
	Detected bool
	// Checks counts this node's checks (reports published) from its last
	// completion to the done mark, that one included.
	Checks int
	// Nudged: one of them came from a nudge (the completion left the node
	// idle), not from the timer.
	Nudged bool
	// AfterLast is the time from the last completion to the done mark.
	AfterLast time.Duration
}

// EndStats reports how this node detected the crawl's end (zero if
// another node marked it done, or the run has not ended).
func (n *Node) EndStats() EndStats {
	n.endMu.Lock()
	defer n.endMu.Unlock()
	return n.end
}

// quiet is a check that found every live member idle at one epoch and
// the URLs sent equal to those received: the counters and each member's
// report number (idleReport.Seq).
type quiet struct {
	epoch, sent, received int64
	seqs                  map[string]int64
}

// same reports whether q and p saw the same epoch, members and counters.
func (q *quiet) same(p *quiet) bool {
	if p == nil || q.epoch != p.epoch || q.sent != p.sent || q.received != p.received || len(q.seqs) != len(p.seqs) {
		return false
	}
	for id := range q.seqs {
		if _, ok := p.seqs[id]; !ok {
			return false
		}
	}
	return true
}

// confirms reports whether q, a later check, proves the crawl over after
// the earlier check p: same epoch, members and counters, and every
// member's report published after p read it. A member busy between the
// checks either sent URLs (the counters moved) or was idle again when it
// published; no URL was in flight at p (all sent were received), so none
// can make a member busy after q. A report p had already seen proves
// nothing: its member may have received a batch since, whatever the time
// between the checks.
func (q *quiet) confirms(p *quiet) bool {
	if !q.same(p) {
		return false
	}
	for id, s := range q.seqs {
		if s <= p.seqs[id] {
			return false
		}
	}
	return true
}

// busyCheck is how often a node that is not idle publishes its
// idleness, load and rate and looks for the done mark (a completion or a
// batch that leaves it idle checks at once: nudge); idleCheck how often
// an idle one does (it also compares the crawl-wide counters: a few round
// trips, for the nodes at the end of a crawl or between its phases).
const (
	busyCheck = 100 * time.Millisecond
	idleCheck = 25 * time.Millisecond
)

// adoptOrphans moves the inboxes (and processing lists) of nodes that are
// no longer members into this node's inbox, if this node is the live member
// with the smallest ID: batches sent to a node that left or died are not
// lost, and the receiver forwards them to their buckets' owners.
func (n *Node) adoptOrphans(ctx context.Context) {
	view, err := n.mem.Members(ctx)
	if err != nil || len(view.Members) == 0 || view.Members[0].ID != n.opt.NodeID {
		return
	}
	table, err := SentTable(ctx, n.rdb, n.opt.Crawl)
	if err != nil {
		return
	}
	me := n.opt.NodeID
	for _, node := range Nodes(table) {
		if view.Has(node) {
			continue
		}
		moved := 0
		for _, src := range []string{n.k.proc(node), n.k.inbox(node)} {
			for {
				if err := n.rdb.LMove(ctx, src, n.k.inbox(me), "LEFT", "RIGHT").Err(); err != nil {
					break
				}
				moved++
			}
		}
		if moved > 0 {
			n.log.Warn("took over the inbox of a node that left", "from", node, "batches", moved)
		}
	}
}

// snapshot returns a fingerprint of the global counters if every live
// member reports idle at this epoch and sent == received.
func (n *Node) snapshot(ctx context.Context, epoch int64) (*quiet, bool) {
	view, err := n.mem.Members(ctx)
	if err != nil || view.Epoch != epoch {
		return nil, false
	}
	// The reports and both counters in one transaction (one hash tag):
	// read apart, a batch sent after the first read and received before
	// the second could balance one still in flight.
	pipe := n.rdb.TxPipeline()
	repCmd := pipe.HGetAll(ctx, n.k.idle())
	sentCmd := pipe.HGetAll(ctx, n.k.sent())
	recvCmd := pipe.HGetAll(ctx, n.k.received())
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, false
	}
	reports := repCmd.Val()
	q := &quiet{epoch: epoch, seqs: make(map[string]int64, len(view.Members))}
	for _, m := range view.Members {
		var r idleReport
		if json.Unmarshal([]byte(reports[m.ID]), &r) != nil || !r.Idle || r.Epoch != epoch {
			return nil, false
		}
		q.seqs[m.ID] = r.Seq
	}
	for _, v := range sentCmd.Val() {
		x, _ := strconv.ParseInt(v, 10, 64)
		q.sent += x
	}
	for _, v := range recvCmd.Val() {
		x, _ := strconv.ParseInt(v, 10, 64)
		q.received += x
	}
	if q.sent != q.received {
		return nil, false
	}
	return q, true
}

// Close closes the scheduler, the bucket stores and the fetcher.
func (n *Node) Close() error {
	return errors.Join(n.sched.Close(), n.fetcher.Close())
}

// SentTable reads the SPEC §3 table: URLs each node sent to each other node
// (the diagonal holds URLs a node routed to its own inbox).
func SentTable(ctx context.Context, rdb redis.UniversalClient, crawlName string) (map[string]map[string]int64, error) {
	raw, err := rdb.HGetAll(ctx, newQKeys(crawlName).sent()).Result()
	if err != nil {
		return nil, fmt.Errorf("cannot read the sent counters: %w", err)
	}
	out := map[string]map[string]int64{}
	for k, v := range raw {
		from, to, ok := strings.Cut(k, ">")
		if !ok {
			continue
		}
		x, _ := strconv.ParseInt(v, 10, 64)
		if out[from] == nil {
			out[from] = map[string]int64{}
		}
		out[from][to] += x
	}
	return out, nil
}

// Nodes lists the node names of a sent table, sorted.
func Nodes(t map[string]map[string]int64) []string {
	set := map[string]bool{}
	for f, row := range t {
		set[f] = true
		for to := range row {
			set[to] = true
		}
	}
	out := make([]string, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}
