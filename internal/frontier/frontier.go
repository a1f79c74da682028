package frontier

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// ErrDrained is returned by Next when no URL is queued (in memory or spilled)
// and no lease is outstanding: the crawl is over unless something is pushed.
var ErrDrained = errors.New("frontier drained: no URL queued and no lease outstanding")

// ErrClosed is returned by Next and Push after Close.
var ErrClosed = errors.New("frontier closed")

// NoDelay, as Config.Delay, removes the minimum gap between requests to a key
// (the zero Delay means the 1 s default).
const NoDelay time.Duration = -1

// Defaults of Config fields left at their zero value.
const (
	DefaultFrontQueues  = 4
	DefaultBackQueues   = 1024
	DefaultPerKey       = 1
	DefaultDelay        = time.Second
	DefaultMemoryBudget = 1_000_000
)

// refillChunk bounds the spilled URLs read back per Next call, so that one
// call holds the lock for a few milliseconds at most.
const refillChunk = 8192

// Config configures a Frontier. The zero value is usable.
type Config struct {
	// FrontQueues is F, the number of front queues, one per priority level;
	// a Request.Priority ≥ F uses queue F-1. Default 4.
	FrontQueues int
	// Weights sets how often the router draws each front queue relative to
	// the others (smooth weighted round robin over non-empty queues); it
	// must have FrontQueues positive entries. Default: queue i has weight
	// F-i (4, 3, 2, 1 for F = 4), so priority 0 is drawn 4× as often as
	// priority 3 and no priority starves.
	Weights []int
	// BackQueues is B, the maximum number of back queues (keys being
	// scheduled at once); see the package documentation. Default 1024.
	BackQueues int
	// PerKey is the maximum number of concurrent leases per key. Default 1.
	PerKey int
	// Delay is the minimum gap between starts of successive requests to a
	// key (with PerKey 1 and not DelayFromStart: between a Done and the
	// next start). Default 1 s; set NoDelay (any negative value) for none.
	// SetKeyDelay raises it per key.
	Delay time.Duration
	// DelayFromStart, with PerKey 1, counts Delay from the start of the
	// key's previous request (DoneInfo.Started, else the lease's Start)
	// instead of from its Done: the next request still waits for the Done
	// (one at a time), but the latency of an answer no longer adds to the
	// gap, so a key whose answers take L serves one request per
	// max(Delay, L) instead of one per Delay + L. Server-side gaps stay
	// at least Delay as long as a request takes no longer to reach the
	// server than the one before it did (true for a fetch made in this
	// process; a hand-out queue between frontier and fetcher, as in
	// master–worker, can shrink them by its wait).
	DelayFromStart bool
	// MemoryBudget is the maximum number of URLs held in memory; beyond it
	// URLs spill to disk. Default 1,000,000.
	MemoryBudget int
	// SpillDir holds the spill files; New creates it and deletes spill files
	// left in it by an earlier run (other files are kept). It must not be
	// shared with another Frontier. If empty, a temporary directory is
	// created on the first spill and removed by Close.
	SpillDir string
	// Now returns the current time. Default time.Now. Set it, with After,
	// to drive the frontier from a fake clock in tests.
	Now func() time.Time
	// After returns a channel that delivers after d has passed on the Now
	// clock. Default: a real timer.
	After func(d time.Duration) <-chan time.Time
	// Logger receives warnings (spill errors, misused leases). Nil discards.
	Logger *slog.Logger
	// Registerer, if not nil, receives the frontier's metrics (names start
	// with spider_frontier_).
	Registerer prometheus.Registerer
	// Strict serves priorities in order with a barrier: no URL of front
	// queue q+1 is routed while a URL of queue q or lower is queued, spilled,
	// in a back queue or leased. With Priority = link depth this is a
	// breadth-first crawl by levels, so every URL is fetched at its shortest
	// depth (a depth limit then cuts exactly the URLs beyond it). The price:
	// a level ends only when its slowest host has finished it.
	Strict bool
	// Selector, if not nil, chooses which of the keys that may start a
	// request now is leased (see Selector); nil takes the one that has
	// waited longest (the heap top).
	Selector Selector
}

func (c *Config) setDefaults() error {
	if c.FrontQueues == 0 {
		c.FrontQueues = DefaultFrontQueues
	}
	if c.FrontQueues < 0 || c.FrontQueues > maxSmall {
		return fmt.Errorf("cannot create frontier: FrontQueues is %d, want 1..%d", c.FrontQueues, maxSmall)
	}
	if c.Weights == nil {
		c.Weights = make([]int, c.FrontQueues)
		for i := range c.Weights {
			c.Weights[i] = c.FrontQueues - i
		}
	}
	if len(c.Weights) != c.FrontQueues {
		return fmt.Errorf("cannot create frontier: %d Weights for %d front queues, give one weight per queue", len(c.Weights), c.FrontQueues)
	}
	for i, w := range c.Weights {
		if w <= 0 {
			return fmt.Errorf("cannot create frontier: weight of front queue %d is %d, weights must be positive", i, w)
		}
	}
	if c.BackQueues == 0 {
		c.BackQueues = DefaultBackQueues
	}
	if c.PerKey == 0 {
		c.PerKey = DefaultPerKey
	}
	if c.BackQueues < 0 || c.PerKey < 0 {
		return fmt.Errorf("cannot create frontier: BackQueues (%d) and PerKey (%d) must be positive", c.BackQueues, c.PerKey)
	}
	switch {
	case c.Delay == 0:
		c.Delay = DefaultDelay
	case c.Delay < 0:
		c.Delay = 0
	}
	if c.MemoryBudget == 0 {
		c.MemoryBudget = DefaultMemoryBudget
	}
	if c.MemoryBudget < 0 {
		return fmt.Errorf("cannot create frontier: MemoryBudget is %d, want a positive number of URLs", c.MemoryBudget)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return nil
}

// Lease is a URL handed out by Next. The holder must call Done exactly once.
type Lease struct {
	// Request is the URL to fetch.
	Request Request
	// Start is when Next handed it out (on the Config.Now clock).
	Start time.Time

	f    *Frontier
	ks   *keyState
	done bool
	// turnEnded: EndTurn gave the key's slot back; Done only ends the lease.
	turnEnded bool
	// prevNext and prevLast are the key's politeness clock before this
	// lease, put back by Done with DoneInfo.Unused.
	prevNext, prevLast time.Time
	n                  uint64 // the key's leaseN when this lease was handed out
}

// DoneInfo tells Done how a lease ended.
type DoneInfo struct {
	// Retry puts Lease.Request back at the head of its key's queue with
	// Attempt+1, to be fetched again once the key's delay has passed.
	Retry bool
	// Delay is an extra minimum wait for the key measured from Done (e.g.
	// Retry-After or a back-off). The key's next start is the latest of its
	// politeness time and now+Delay.
	Delay time.Duration
	// Started is when the lease's last request to the server started, if
	// later than Lease.Start (e.g. a page fetched after robots.txt under the
	// same lease); zero means Lease.Start. Delays counted from a start
	// (PerKey > 1, or DelayFromStart) count from it.
	Started time.Time
	// Unused says the lease made no request to its key (the crawler
	// dropped it: a stale duplicate, a URL already in flight). The key's
	// politeness clock is put back as it was before the lease, when no
	// later lease of the key has started, so the key loses no turn to a
	// request the server never saw. Retry and Delay still apply; Started is
	// ignored.
	Unused bool
}

// Stats is a snapshot of the frontier's size.
type Stats struct {
	Queued     int   // URLs in memory (front and back queues)
	Front      int   // of which in front queues (not yet routed)
	Spilled    int64 // URLs in spill files
	Leased     int   // leases outstanding
	Keys       int   // distinct keys with URLs in memory
	BackQueues int   // back queues in use (≤ Config.BackQueues)
	ReadyKeys  int   // back queues whose key may start a request now
	Paused     bool
}

// Frontier is a Mercator URL frontier; see the package documentation. All
// methods are safe for concurrent use.
type Frontier struct {
	cfg Config
	log *slog.Logger

	mu      sync.Mutex
	wake    chan struct{} // closed and replaced to wake waiting Next calls
	waiters int
	closed  bool
	paused  bool

	front    []deque
	frontN   int // URLs in front queues
	frontWRR wrr
	spillWRR wrr
	spill    *spiller
	refill   bool // refilling from the spill until memory is full again

	keys     map[string]*keyState
	keyDelay map[string]time.Duration // SetKeyDelay values above Config.Delay
	topics   []string
	topicIdx map[string]uint32
	topicN   []int // URLs in memory per topic index

	cands []Candidate  // Selector scratch
	candQ []*backQueue // back queue of each candidate

	ready   readyHeap
	idle    idleHeap
	active  int // back queues in existence
	bqOrder uint64

	mem      int // URLs in memory
	level    int // with Strict: the highest front queue routing may draw from
	leased   int
	withURLs int // keys with queued > 0

	m *metrics
}

// New returns an empty frontier. It deletes spill files left in
// cfg.SpillDir. It fails on an invalid Config, an unusable SpillDir, or when
// the metrics cannot be registered.
func New(cfg Config) (*Frontier, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	sp, err := newSpiller(cfg.SpillDir, cfg.FrontQueues)
	if err != nil {
		return nil, err
	}
	f := &Frontier{
		cfg:      cfg,
		log:      cfg.Logger,
		wake:     make(chan struct{}),
		front:    make([]deque, cfg.FrontQueues),
		frontWRR: newWRR(cfg.Weights),
		spillWRR: newWRR(cfg.Weights),
		spill:    sp,
		keys:     make(map[string]*keyState),
		keyDelay: make(map[string]time.Duration),
		topics:   []string{""},
		topicIdx: map[string]uint32{"": 0},
	}
	f.m, err = newMetrics(cfg.Registerer, f)
	if err != nil {
		_ = sp.close()
		return nil, err
	}
	return f, nil
}

func (f *Frontier) queueOf(priority int) int { return min(priority, f.cfg.FrontQueues-1) }

func validate(r Request) error {
	switch {
	case r.URL == "":
		return errors.New("cannot push request: empty URL")
	case r.Key == "":
		return fmt.Errorf("cannot push %q: empty politeness Key, the engine must set it", r.URL)
	case r.Depth < 0 || r.Depth > maxDepth:
		return fmt.Errorf("cannot push %q: Depth %d out of range 0..%d", r.URL, r.Depth, maxDepth)
	case r.Priority < 0 || r.Priority > maxSmall:
		return fmt.Errorf("cannot push %q: Priority %d out of range 0..%d", r.URL, r.Priority, maxSmall)
	case r.Attempt < 0 || r.Attempt > maxSmall:
		return fmt.Errorf("cannot push %q: Attempt %d out of range 0..%d", r.URL, r.Attempt, maxSmall)
	case r.Redirects < 0 || r.Redirects > maxSmall:
		return fmt.Errorf("cannot push %q: Redirects %d out of range 0..%d", r.URL, r.Redirects, maxSmall)
	}
	return nil
}

// Push queues r. It fails when r is invalid (empty URL or Key, negative or
// too large Depth, Priority, Attempt or Redirects), when the frontier is
// closed, or when a needed spill write fails (r is then not queued). The
// frontier does not de-duplicate: that is the caller's job (internal/state).
func (f *Frontier) Push(r Request) error {
	if err := validate(r); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return ErrClosed
	}
	if err := f.pushLocked(r); err != nil {
		return err
	}
	f.wakeLocked()
	return nil
}

// PushAll queues every request of rs, in order. It validates them all first
// and queues none if one is invalid. A spill write error stops it: the
// requests before the failing one are queued, the rest are not.
func (f *Frontier) PushAll(rs []Request) error {
	if len(rs) == 0 {
		return nil
	}
	for _, r := range rs {
		if err := validate(r); err != nil {
			return err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return ErrClosed
	}
	defer f.wakeLocked()
	for _, r := range rs {
		if err := f.pushLocked(r); err != nil {
			return err
		}
	}
	return nil
}

// pushLocked is the prioritizer: it appends r to its front queue, or to that
// queue's spill stream when memory is full or the stream is not empty (so
// that each priority stays FIFO).
func (f *Frontier) pushLocked(r Request) error {
	q := f.queueOf(r.Priority)
	if f.mem >= f.cfg.MemoryBudget || f.spill.len(q) > 0 {
		if err := f.spill.append(q, r); err != nil {
			f.log.Error("cannot spill URL", "url", r.URL, "err", err)
			return fmt.Errorf("cannot push %q: %w", r.URL, err)
		}
		f.m.pushed.Inc()
		f.m.spilled.Inc()
		return nil
	}
	f.front[q].pushBack(f.makeItem(r))
	f.frontN++
	f.m.pushed.Inc()
	return nil
}

// makeItem converts r to its in-memory form and accounts for it.
func (f *Frontier) makeItem(r Request) item {
	ks := f.keys[r.Key]
	if ks == nil {
		key := strings.Clone(r.Key)
		ks = &keyState{key: key, delay: f.cfg.Delay, idleIdx: -1}
		if d, ok := f.keyDelay[key]; ok {
			ks.delay = d
		}
		f.keys[key] = ks
	}
	if ks.idleIdx >= 0 {
		f.idle.remove(ks) // in use again
	}
	if ks.queued == 0 {
		f.withURLs++
	}
	ks.queued++
	f.mem++
	t, ok := f.topicIdx[r.Topic]
	if !ok {
		t = uint32(len(f.topics))
		topic := strings.Clone(r.Topic)
		f.topics = append(f.topics, topic)
		f.topicIdx[topic] = t
	}
	for int(t) >= len(f.topicN) {
		f.topicN = append(f.topicN, 0)
	}
	f.topicN[t]++
	var extra *itemExtra
	if r.Kind != KindPage || r.Schedule != "" {
		extra = &itemExtra{kind: r.Kind, schedule: strings.Clone(r.Schedule)}
	}
	return item{
		url:       strings.Clone(r.URL),
		ks:        ks,
		seq:       r.Seq,
		depth:     int32(r.Depth),
		topic:     t,
		attempt:   uint16(r.Attempt),
		redirects: uint16(r.Redirects),
		prio:      uint16(r.Priority),
		extra:     extra,
	}
}

func (f *Frontier) requestOf(it *item) Request {
	r := Request{
		URL:       it.url,
		Key:       it.ks.key,
		Depth:     int(it.depth),
		Priority:  int(it.prio),
		Seq:       it.seq,
		Attempt:   int(it.attempt),
		Redirects: int(it.redirects),
		Topic:     f.topics[it.topic],
	}
	if it.extra != nil {
		r.Kind, r.Schedule = it.extra.kind, it.extra.schedule
	}
	return r
}

func (f *Frontier) wakeLocked() {
	if f.waiters > 0 {
		close(f.wake)
		f.wake = make(chan struct{})
	}
}

// Next returns the next URL to fetch, blocking until one may be started:
// the key with the earliest allowed start whose time has come and that has a
// free lease slot. It returns ErrDrained when nothing is queued and no lease
// is out, ErrClosed after Close, ctx.Err() when ctx ends first, and a wrapped
// error when spilled URLs cannot be read back (those URLs are dropped from
// the frontier; they stay pending in the durable state). While paused, Next
// waits (but still reports ErrDrained).
func (f *Frontier) Next(ctx context.Context) (*Lease, error) {
	f.mu.Lock()
	for {
		if f.closed {
			f.mu.Unlock()
			return nil, ErrClosed
		}
		if err := ctx.Err(); err != nil {
			f.mu.Unlock()
			return nil, err
		}
		if err := f.refillLocked(); err != nil {
			f.mu.Unlock()
			return nil, err
		}
		now := f.cfg.Now()
		f.collectIdleLocked(now)
		wait := time.Duration(-1)
		if !f.paused {
			f.routeLocked()
			if len(f.ready) > 0 {
				bq := f.ready[0]
				if !bq.ks.nextStart.After(now) {
					var later time.Time
					if f.cfg.Selector != nil {
						bq, later = f.selectLocked(now)
					}
					if bq != nil {
						l := f.leaseLocked(bq, now)
						f.mu.Unlock()
						return l, nil
					}
					// An Admitter declined every ready key: wait for a
					// Wake, a lease's end, a push, or the next key due.
					if !later.IsZero() {
						wait = later.Sub(now)
					}
				} else {
					wait = bq.ks.nextStart.Sub(now)
				}
			}
		}
		if f.mem == 0 && f.spill.total == 0 && f.leased == 0 {
			f.mu.Unlock()
			return nil, ErrDrained
		}
		ch := f.wake
		f.waiters++
		f.mu.Unlock()
		var timerC <-chan time.Time
		var timer *time.Timer
		if wait >= 0 {
			if f.cfg.After != nil {
				timerC = f.cfg.After(wait)
			} else {
				timer = time.NewTimer(wait)
				timerC = timer.C
			}
		}
		select {
		case <-ctx.Done():
		case <-ch:
		case <-timerC:
		}
		if timer != nil {
			timer.Stop()
		}
		f.mu.Lock()
		f.waiters--
	}
}

// routeLocked is the router: while fewer than B back queues exist, it draws
// URLs from the front queues by weighted priority and appends each to its
// key's back queue, creating the back queue if needed.
func (f *Frontier) routeLocked() {
	limit := f.cfg.FrontQueues - 1
	if f.cfg.Strict {
		limit = f.strictLevelLocked()
	}
	for f.frontN > 0 && f.active < f.cfg.BackQueues {
		q := f.frontWRR.pick(func(i int) bool { return i <= limit && f.front[i].len() > 0 })
		if q < 0 {
			break
		}
		it := f.front[q].popFront()
		f.frontN--
		ks := it.ks
		bq := ks.bq
		if bq == nil {
			f.bqOrder++
			bq = &backQueue{ks: ks, idx: -1, order: f.bqOrder}
			ks.bq = bq
			f.active++
		}
		bq.items.pushBack(it)
		f.placeLocked(bq)
	}
}

// strictLevelLocked is the barrier of Config.Strict: while URLs sit in back
// queues or are leased, the level stays; once all routed work is done, the
// level becomes the first front queue holding URLs (in memory or spilled).
func (f *Frontier) strictLevelLocked() int {
	if f.mem-f.frontN > 0 || f.leased > 0 {
		return f.level
	}
	for i := range f.front {
		if f.front[i].len() > 0 || f.spill.len(i) > 0 {
			f.level = i
			break
		}
	}
	return f.level
}

// placeLocked restores the invariants of bq after a change: it is in the
// ready heap iff it has URLs and its key a free lease slot, and it is freed
// when empty with no lease out.
func (f *Frontier) placeLocked(bq *backQueue) {
	ks := bq.ks
	eligible := bq.items.len() > 0 && ks.leases < f.cfg.PerKey
	switch {
	case eligible && bq.idx < 0:
		f.ready.push(bq)
	case eligible:
		f.ready.fix(bq)
	case bq.idx >= 0:
		f.ready.remove(bq)
	}
	if bq.items.len() == 0 && ks.leases == 0 {
		ks.bq = nil
		f.active--
		f.idleLocked(ks)
	}
}

// idleLocked forgets ks if it holds nothing, or parks it in the idle heap
// until its next start has passed so its politeness time is honoured.
func (f *Frontier) idleLocked(ks *keyState) {
	if ks.queued > 0 || ks.leases > 0 || ks.bq != nil || ks.idleIdx >= 0 {
		return // in use, or already parked
	}
	if ks.nextStart.After(f.cfg.Now()) {
		f.idle.push(ks)
		return
	}
	delete(f.keys, ks.key)
}

func (f *Frontier) collectIdleLocked(now time.Time) {
	for len(f.idle) > 0 && !f.idle[0].nextStart.After(now) {
		ks := f.idle[0]
		f.idle.remove(ks)
		f.idleLocked(ks)
	}
}

func (f *Frontier) leaseLocked(bq *backQueue, now time.Time) *Lease {
	ks := bq.ks
	it := bq.items.popFront()
	ks.queued--
	if ks.queued == 0 {
		f.withURLs--
	}
	f.mem--
	f.topicN[it.topic]--
	ks.leases++
	f.leased++
	prevNext, prevLast := ks.nextStart, ks.last
	ks.leaseN++
	// With PerKey > 1 this spaces starts by the delay; with PerKey 1 the key
	// leaves the heap and Done sets the real next start.
	ks.nextStart = now.Add(ks.delay)
	ks.last = now
	f.placeLocked(bq)
	f.m.leases.Inc()
	return &Lease{Request: f.requestOf(&it), Start: now, f: f, ks: ks, prevNext: prevNext, prevLast: prevLast, n: ks.leaseN}
}

// Done ends a lease: it releases the key's lease slot and sets the key's
// next allowed start to the latest of: the current next start; Done time +
// key delay (PerKey 1) or lease start + key delay (PerKey > 1); Done time +
// info.Delay. With info.Unused the key's clock goes back instead to what it
// was before the lease (if no later lease of the key started), still at
// least Done time + info.Delay. With info.Retry, Lease.Request is queued
// again at the head of its key's back queue with Attempt+1 (even beyond
// MemoryBudget). Done on a lease that is already done, nil, or from another
// frontier is ignored (and logged); Done after Close is ignored.
func (f *Frontier) Done(l *Lease, info DoneInfo) {
	if l == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if l.f != f || l.done {
		f.log.Warn("frontier: Done on a lease that is not outstanding", "url", l.Request.URL)
		return
	}
	l.done = true
	if f.closed {
		return
	}
	if l.turnEnded {
		// EndTurn already set the key's clock and freed its slot: only the
		// lease itself ends (drain, the Strict level barrier).
		f.leased--
		f.wakeLocked()
		return
	}
	f.leased--
	f.endTurnLocked(l, info)
}

// EndTurn ends the key's turn of a lease while the lease stays outstanding:
// the key's lease slot is freed and its next start set exactly as Done
// would (info.Delay, info.Started, info.Unused apply), so Next may hand out
// the key's next URL once its delay has passed, but the frontier still
// counts the lease (Stats.Leased; Next does not report ErrDrained, and the
// Strict level barrier holds) until Done. It is for a holder that has
// finished talking to the key's server but still has work to do with the
// answer (parse it, record it, push its links). info.Retry is not allowed
// here (a retried URL must be re-queued by Done, whose turn it is): EndTurn
// with Retry logs and ignores the Retry. Done after EndTurn ignores its
// DoneInfo. EndTurn on a lease already done, whose turn already ended, nil,
// or from another frontier is ignored (and logged); after Close it is
// ignored.
func (f *Frontier) EndTurn(l *Lease, info DoneInfo) {
	if l == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if l.f != f || l.done || l.turnEnded {
		f.log.Warn("frontier: EndTurn on a lease that is not outstanding", "url", l.Request.URL)
		return
	}
	if f.closed {
		return
	}
	if info.Retry {
		f.log.Warn("frontier: EndTurn with Retry; the retry is ignored (use Done)", "url", l.Request.URL)
		info.Retry = false
	}
	l.turnEnded = true
	f.endTurnLocked(l, info)
}

// endTurnLocked frees l's slot of its key and sets the key's clock (Done,
// EndTurn).
func (f *Frontier) endTurnLocked(l *Lease, info DoneInfo) {
	ks := l.ks
	ks.leases--
	now := f.cfg.Now()
	started := l.Start
	if info.Started.After(started) {
		started = info.Started
	}
	next := started.Add(ks.delay)
	switch {
	case info.Unused && ks.leaseN == l.n:
		// No request was made and no later lease started: the clock goes
		// back to where this lease found it.
		ks.nextStart, ks.last = l.prevNext, l.prevLast
		next = l.prevNext
	case info.Unused:
		next = ks.nextStart // a later lease has set the clock
	case f.cfg.PerKey == 1 && f.cfg.DelayFromStart:
		ks.last = started
	case f.cfg.PerKey == 1:
		next = now.Add(ks.delay)
		ks.last = now
	}
	if info.Delay > 0 {
		if t := now.Add(info.Delay); t.After(next) {
			next = t
		}
	}
	if next.After(ks.nextStart) {
		ks.nextStart = next
	}
	if info.Retry {
		r := l.Request
		r.Attempt = min(r.Attempt+1, maxSmall)
		r.Key = ks.key
		ks.bq.items.pushFront(f.makeItem(r))
		f.m.retries.Inc()
	}
	f.placeLocked(ks.bq)
	f.wakeLocked()
}

// SetKeyDelay sets the minimum gap for key to max(Config.Delay, d), e.g. from
// a robots.txt Crawl-delay. It applies at once (a key waiting for its next
// start waits for the new gap) and is remembered for the key while the
// frontier lives, even when the key has nothing queued.
func (f *Frontier) SetKeyDelay(key string, d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	eff := max(f.cfg.Delay, d)
	if d > f.cfg.Delay {
		f.keyDelay[strings.Clone(key)] = d
	} else {
		delete(f.keyDelay, key)
	}
	ks := f.keys[key]
	if ks == nil {
		return
	}
	ks.delay = eff
	if ks.last.IsZero() {
		return
	}
	if t := ks.last.Add(eff); t.After(ks.nextStart) {
		ks.nextStart = t
		if ks.bq != nil && ks.bq.idx >= 0 {
			f.ready.fix(ks.bq)
		}
	}
}

// Pause stops Next from handing out leases until Resume. Pushes and Done
// still work.
func (f *Frontier) Pause() {
	f.mu.Lock()
	f.paused = true
	f.mu.Unlock()
}

// Resume undoes Pause and wakes waiting Next calls.
func (f *Frontier) Resume() {
	f.mu.Lock()
	f.paused = false
	f.wakeLocked()
	f.mu.Unlock()
}

// Empty reports whether nothing is queued (in memory or spilled) or
// leased: Stats' Queued, Spilled and Leased all 0, without Stats' count of
// the ready keys (cheap enough to ask after every completion).
func (f *Frontier) Empty() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mem == 0 && f.spill.total == 0 && f.leased == 0
}

// Stats returns a snapshot of the frontier's size.
func (f *Frontier) Stats() Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return Stats{
		Queued:     f.mem,
		Front:      f.frontN,
		Spilled:    f.spill.total,
		Leased:     f.leased,
		Keys:       f.withURLs,
		BackQueues: f.active,
		ReadyKeys:  f.ready.countReady(f.cfg.Now()),
		Paused:     f.paused,
	}
}

// KeyState is one key's politeness state, as KeyStates reports it.
type KeyState struct {
	// Next is the earliest start of the key's next lease; zero when the
	// frontier keeps no clock for the key (it may start at once). While a
	// lease of the key is out with PerKey 1, Done sets the real time.
	Next   time.Time
	Leases int // leases of the key outstanding
	Queued int // URLs of the key in memory
}

// KeyStates reports the politeness state of each of keys, in order; a key
// the frontier does not know (nothing queued, leased or waiting) has the
// zero KeyState. It takes the frontier's lock once for all keys.
func (f *Frontier) KeyStates(keys []string) []KeyState {
	out := make([]KeyState, len(keys))
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, k := range keys {
		if ks := f.keys[k]; ks != nil {
			out[i] = KeyState{Next: ks.nextStart, Leases: ks.leases, Queued: ks.queued}
		}
	}
	return out
}

// Close wakes every waiting Next (they return ErrClosed), drops the queued
// URLs and deletes the spill files. Later calls return ErrClosed (Push,
// Next) or do nothing (Done, Close). The error reports spill files that
// could not be removed.
func (f *Frontier) Close() error {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil
	}
	defer f.m.unregister() // outside f.mu: the gauges take f.mu
	defer f.mu.Unlock()
	f.closed = true
	close(f.wake)
	f.wake = make(chan struct{})
	f.front = make([]deque, f.cfg.FrontQueues)
	f.ready = nil
	f.keys = map[string]*keyState{}
	f.mem, f.frontN, f.withURLs, f.active = 0, 0, 0, 0
	clear(f.topicN)
	return f.spill.close()
}

// refillLocked reads spilled URLs back once memory has fallen under half the
// budget, then keeps refilling (refillChunk per call) until memory is full or
// the spill is empty. Streams are drawn by the same priority weights as the
// front queues.
func (f *Frontier) refillLocked() error {
	if f.spill.total == 0 {
		f.refill = false
		return nil
	}
	if f.cfg.Strict {
		// The barrier routes only queues ≤ level: refill the lowest spilled
		// stream when nothing at or below it is left in memory, whatever
		// the memory use, or the crawl would wait for ever.
		lvl := f.strictLevelLocked()
		for q := 0; q <= lvl && q < len(f.front); q++ {
			if f.front[q].len() > 0 {
				break
			}
			if f.spill.len(q) > 0 {
				return f.refillStreamLocked(q, refillChunk)
			}
		}
	}
	if !f.refill && 2*f.mem >= f.cfg.MemoryBudget && f.mem > 0 {
		return nil
	}
	f.refill = true
	for n := 0; n < refillChunk && f.mem < f.cfg.MemoryBudget; n++ {
		q := f.spillWRR.pick(func(i int) bool { return f.spill.len(i) > 0 })
		if q < 0 {
			break
		}
		if err := f.refillStreamLocked(q, 1); err != nil {
			return err
		}
	}
	if f.mem >= f.cfg.MemoryBudget || f.spill.total == 0 {
		f.refill = false
	}
	return nil
}

// refillStreamLocked reads up to n URLs of spill stream q back into front
// queue q.
func (f *Frontier) refillStreamLocked(q, n int) error {
	for ; n > 0 && f.spill.len(q) > 0; n-- {
		r, err := f.spill.pop(q)
		if err != nil {
			lost := f.spill.drop(q)
			f.log.Error("frontier: spilled URLs lost; they stay pending in the crawl state and return on restart",
				"queue", q, "lost", lost, "err", err)
			return fmt.Errorf("cannot refill frontier from spill: %w", err)
		}
		if err := validate(r); err != nil {
			f.log.Error("frontier: dropping invalid spilled URL", "err", err)
			continue
		}
		f.front[q].pushBack(f.makeItem(r))
		f.frontN++
	}
	return nil
}

// Drop removes from memory every queued URL whose key matches pred (for
// example the hosts of a bucket this node no longer owns) and returns how
// many it removed. Leased URLs are not touched, and spilled URLs are not
// read back to be dropped: the caller must still check each lease it gets
// (a URL it no longer owns is dropped at lease time).
func (f *Frontier) Drop(pred func(key string) bool) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	removed := 0
	forget := func(ks *keyState, n int) {
		ks.queued -= n
		if ks.queued == 0 && n > 0 {
			f.withURLs--
		}
		f.mem -= n
		removed += n
	}
	for i := range f.front {
		q := &f.front[i]
		var kept deque
		for q.len() > 0 {
			it := q.popFront()
			if pred(it.ks.key) {
				forget(it.ks, 1)
				f.topicN[it.topic]--
				f.frontN--
				continue
			}
			kept.pushBack(it)
		}
		*q = kept
	}
	for key, ks := range f.keys {
		if ks.bq == nil || !pred(key) {
			continue
		}
		n := ks.bq.items.len()
		for ks.bq.items.len() > 0 {
			it := ks.bq.items.popFront()
			f.topicN[it.topic]--
		}
		forget(ks, n)
		f.placeLocked(ks.bq)
	}
	if removed > 0 {
		f.wakeLocked()
	}
	return removed
}
