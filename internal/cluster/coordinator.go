package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spider-crawler/spider/internal/partition"
)

// EventKind says what happened to a bucket.
type EventKind int

// The kinds of Event. For each bucket a node sees Acquired, then exactly one of Released
// or Lost, then maybe Acquired again.
const (
	// Acquired: the node holds the bucket's lease and may work on it, fencing its writes
	// with Event.Token.
	Acquired EventKind = iota + 1
	// Released: the bucket was given up on purpose (the ring gives it to another node, or
	// the coordinator stopped), after Drain returned.
	Released
	// Lost: the lease was lost (see LeasesConfig.OnLost); stop working on the bucket now.
	Lost
)

func (k EventKind) String() string {
	switch k {
	case Acquired:
		return "acquired"
	case Released:
		return "released"
	case Lost:
		return "lost"
	}
	return fmt.Sprintf("EventKind(%d)", int(k))
}

// Event is a change of this node's bucket ownership.
type Event struct {
	Kind   EventKind
	Bucket int
	// Token is the lease's fencing token.
	Token int64
	// Epoch is the member-list epoch the decision was made at (for Lost, the epoch the
	// coordinator knew then).
	Epoch int64
}

// CoordinatorConfig tunes a Coordinator. The zero value works; every node of a crawl must
// use the same Buckets, PointsPerWeight, Plain and Slack, or they disagree on ownership.
type CoordinatorConfig struct {
	// Buckets is M, the number of logical buckets. Default partition.DefaultBuckets.
	Buckets int
	// PointsPerWeight is the ring's K. Default partition.DefaultPointsPerWeight.
	PointsPerWeight int
	// Plain selects the plain ring table (partition.Ring.Owners: strictly monotone,
	// shares within the binomial spread of M buckets) instead of the default bounded-load
	// table (partition.Ring.Balanced with Slack: shares within one bucket of the weights,
	// a few extra buckets moved on a change).
	Plain bool
	// Slack is the bounded-load table's slack (0: tightest balance).
	Slack float64
	// Leases configures the coordinator's BucketLeases (OnLost is called after the
	// coordinator's own handling).
	Leases LeasesConfig
	// Retry is how often buckets that should be this node's but are still held by their
	// previous owner are asked for again. Default a third of the lease TTL.
	Retry time.Duration
	// Settle is how long the member list must stay unchanged before the
	// node first acquires buckets, counted from the node's registration
	// (Membership.JoinedAt) or from the last change seen after it, and at
	// most 5 × Settle after the registration. Nodes started together then
	// see each other and split the buckets at once, instead of the first
	// one taking them all and handing most over a Retry later; a node
	// whose coordinator starts late after its join (or whose first member
	// list comes late) does not wait the window again. 0: act on the first
	// list.
	Settle time.Duration
	// First lists buckets that work waits for (a crawl's seeds' hosts):
	// when the node acquires several buckets at once (at the start, all
	// its share), those of First are asked for in a batch of their own,
	// and announced, before the others (one batch of thousands of leases
	// takes tens of milliseconds). Nil: one batch.
	First []int
	// Drain is called before a bucket is released on purpose and must return once the
	// node has stopped working on it (flushed its writes); the lease is held meanwhile.
	// Nil: release at once.
	Drain func(ctx context.Context, bucket int) error
	// Logger receives ownership changes; nil discards.
	Logger *slog.Logger
}

// Coordinator makes one node own the buckets the ring gives it over the live members:
// on every member-list change it computes the bucket table (every node computes the same
// from the same list), releases the buckets it should no longer own (after Drain),
// acquires the ones it should own (waiting while their previous owner still holds them:
// that one releases when it sees the new list, or its lease expires), and reports every
// change as an Event. Leases make the hand-over safe: two nodes never hold a bucket at
// once, and a node that cannot renew stops before another can take over.
type Coordinator struct {
	m      *Membership
	leases *BucketLeases
	cfg    CoordinatorConfig
	log    *slog.Logger

	events chan Event
	lostCh chan struct{}

	// emitMu orders Acquired (run loop) before Lost (renewal goroutine) for a bucket;
	// it is never held across I/O, so a loss report is never delayed.
	emitMu      sync.Mutex
	announced   map[int]int64 // bucket → token announced Acquired and not yet ended
	unannounced map[int]int64 // bucket → token lost before it was announced

	mu    sync.Mutex
	view  View
	want  map[int]bool
	epoch int64
}

// NewCoordinator returns the coordinator of the node that m joins (or joined) as, over
// rdb. It creates the node's BucketLeases (renewal starts now). Run drives it.
func NewCoordinator(rdb redis.UniversalClient, m *Membership, cfg CoordinatorConfig) (*Coordinator, error) {
	if cfg.Buckets <= 0 {
		cfg.Buckets = partition.DefaultBuckets
	}
	if cfg.PointsPerWeight <= 0 {
		cfg.PointsPerWeight = partition.DefaultPointsPerWeight
	}
	if cfg.Leases.TTL <= 0 {
		cfg.Leases.TTL = DefaultLeaseTTL
	}
	if cfg.Retry <= 0 {
		cfg.Retry = cfg.Leases.TTL / 3
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Leases.Logger == nil {
		cfg.Leases.Logger = cfg.Logger
	}
	self := m.Self()
	if self.ID == "" {
		return nil, fmt.Errorf("cannot coordinate: %w: join the membership first", ErrNotJoined)
	}
	c := &Coordinator{
		m:      m,
		cfg:    cfg,
		log:    cfg.Logger.With("crawl", m.Keys().Crawl(), "node", self.ID),
		events: make(chan Event, 2*cfg.Buckets+16),
		lostCh: make(chan struct{}, 1),

		announced:   map[int]int64{},
		unannounced: map[int]int64{},
	}
	lcfg := cfg.Leases
	userLost := lcfg.OnLost
	lcfg.OnLost = func(l Lease) {
		c.emitMu.Lock()
		if c.announced[l.Bucket] == l.Token {
			delete(c.announced, l.Bucket)
			c.emit(Event{Kind: Lost, Bucket: l.Bucket, Token: l.Token, Epoch: c.currentEpoch()})
		} else {
			// Lost before reconcile announced it: reconcile will not announce it.
			c.unannounced[l.Bucket] = l.Token
		}
		c.emitMu.Unlock()
		select {
		case c.lostCh <- struct{}{}:
		default:
		}
		if userLost != nil {
			userLost(l)
		}
	}
	leases, err := NewBucketLeases(rdb, m.Keys(), self.ID, lcfg)
	if err != nil {
		return nil, err
	}
	c.leases = leases
	return c, nil
}

// Events returns the channel of ownership changes. It has room for 2·Buckets events, so a
// reader that keeps up never slows the coordinator; Run closes it when it returns.
//
// Events are queued: when a node alone acquires every bucket and others join, an Acquired
// event may be read after the bucket was drained and released again (its Released event
// follows it in the channel). Check Current before acting on an Acquired event.
func (c *Coordinator) Events() <-chan Event { return c.events }

// Current reports whether an Acquired event still holds: this node holds the bucket's
// lease with the event's token.
func (c *Coordinator) Current(ev Event) bool {
	tok, held := c.leases.Token(ev.Bucket)
	return held && tok == ev.Token
}

// Leases returns the node's leases (for fenced writes and status); the coordinator owns
// them: do not Acquire or Release through it.
func (c *Coordinator) Leases() *BucketLeases { return c.leases }

// View returns the last member list the coordinator acted on.
func (c *Coordinator) View() View {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.view
}

// Owned returns the leases the node holds now, sorted by bucket.
func (c *Coordinator) Owned() []Lease { return c.leases.Held() }

func (c *Coordinator) currentEpoch() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.epoch
}

// emit sends ev; the channel is sized so that this does not block a reader that keeps up.
func (c *Coordinator) emit(ev Event) {
	select {
	case c.events <- ev:
	default:
		c.log.Error("ownership event dropped: the Events channel is full (its reader stopped)", "kind", ev.Kind, "bucket", ev.Bucket)
	}
}

// Run follows the member list and keeps the node's buckets in line with it until ctx
// ends; then it drains and releases every held bucket, stops the leases and closes
// Events. It does not leave the membership (call Membership.Leave, before or after). The
// error is nil after a normal stop, or says what could not be released.
func (c *Coordinator) Run(ctx context.Context) error {
	defer close(c.events)
	views := c.m.Watch(ctx)
	retry := time.NewTicker(c.cfg.Retry)
	defer retry.Stop()
	settled := c.cfg.Settle <= 0
	for {
		select {
		case <-ctx.Done():
			return c.shutdown()
		case v, ok := <-views:
			if !ok {
				return c.shutdown()
			}
			if !settled {
				v = settle(ctx, views, v, c.cfg.Settle, c.m.JoinedAt())
				settled = true
			}
			if err := c.setView(v); err != nil {
				c.log.Error("cannot compute the bucket table; keeping the previous one", "epoch", v.Epoch, "err", err)
				continue
			}
		case <-retry.C:
		case <-c.lostCh:
		}
		c.reconcile(ctx)
	}
}

// settle returns the last view of views once none came for quiet, counted
// from the node's registration at from (zero: now) or from the last
// change that came after it; or at from + 5 × quiet; or when ctx ends.
func settle(ctx context.Context, views <-chan View, v View, quiet time.Duration, from time.Time) View {
	if from.IsZero() {
		from = time.Now()
	}
	capAt := from.Add(5 * quiet)
	if !time.Now().Before(capAt) {
		return v
	}
	limit := time.NewTimer(time.Until(capAt))
	defer limit.Stop()
	t := time.NewTimer(time.Until(from.Add(quiet)))
	defer t.Stop()
	for {
		select {
		case nv, ok := <-views:
			if !ok {
				return v
			}
			if nv.Epoch != v.Epoch {
				t.Reset(quiet)
			}
			v = nv
		case <-t.C:
			return v
		case <-limit.C:
			return v
		case <-ctx.Done():
			return v
		}
	}
}

// setView computes the buckets this node should own under v.
func (c *Coordinator) setView(v View) error {
	self := c.m.Self().ID
	want := map[int]bool{}
	if v.Has(self) {
		ring, err := v.Ring(partition.PointsPerWeight(c.cfg.PointsPerWeight))
		if err != nil {
			return err
		}
		var table []string
		if c.cfg.Plain {
			table = ring.Owners(c.cfg.Buckets)
		} else {
			table = ring.Balanced(c.cfg.Buckets, c.cfg.Slack)
		}
		for b, id := range table {
			if id == self {
				want[b] = true
			}
		}
	}
	c.mu.Lock()
	c.view, c.want, c.epoch = v, want, v.Epoch
	c.mu.Unlock()
	c.log.Info("member list changed", "epoch", v.Epoch, "members", len(v.Members), "buckets", len(want))
	return nil
}

// reconcile releases unwanted buckets and tries to acquire the wanted ones not held.
func (c *Coordinator) reconcile(ctx context.Context) {
	c.mu.Lock()
	want, epoch := c.want, c.epoch
	c.mu.Unlock()
	if want == nil {
		return // no member list yet
	}
	var drop []int
	heldSet := map[int]bool{}
	for _, l := range c.leases.Held() {
		heldSet[l.Bucket] = true
		if !want[l.Bucket] {
			drop = append(drop, l.Bucket)
		}
	}
	c.release(ctx, drop, epoch)
	var need []int
	for b := range want {
		if !heldSet[b] {
			need = append(need, b)
		}
	}
	if len(need) == 0 || ctx.Err() != nil {
		return
	}
	slices.Sort(need)
	if first, rest := c.splitFirst(need); len(first) > 0 && len(rest) > 0 {
		c.acquire(ctx, first, epoch)
		need = rest
	}
	c.acquire(ctx, need, epoch)
}

// splitFirst splits need (sorted) into the buckets of CoordinatorConfig.First
// and the others, in need's order.
func (c *Coordinator) splitFirst(need []int) (first, rest []int) {
	if len(c.cfg.First) == 0 {
		return nil, need
	}
	set := make(map[int]bool, len(c.cfg.First))
	for _, b := range c.cfg.First {
		set[b] = true
	}
	for _, b := range need {
		if set[b] {
			first = append(first, b)
		} else {
			rest = append(rest, b)
		}
	}
	return first, rest
}

// acquire asks for the leases of need in one batch and emits Acquired for
// the ones it got.
func (c *Coordinator) acquire(ctx context.Context, need []int, epoch int64) {
	if ctx.Err() != nil {
		return
	}
	actx, cancel := context.WithTimeout(ctx, c.cfg.Leases.TTL/3)
	defer cancel()
	got, busy, err := c.leases.AcquireMany(actx, need)
	c.emitMu.Lock()
	for _, l := range got {
		if c.unannounced[l.Bucket] == l.Token {
			delete(c.unannounced, l.Bucket)
			continue
		}
		if c.announced[l.Bucket] != l.Token {
			c.announced[l.Bucket] = l.Token
			c.emit(Event{Kind: Acquired, Bucket: l.Bucket, Token: l.Token, Epoch: epoch})
		}
	}
	c.emitMu.Unlock()
	if err != nil && ctx.Err() == nil {
		c.log.Warn("cannot acquire buckets; retrying", "want", len(need), "err", err)
	}
	if len(got) > 0 || len(busy) > 0 {
		c.log.Debug("acquire round", "epoch", epoch, "acquired", len(got), "still held by others", len(busy))
	}
}

// release drains and releases buckets, emitting Released for the ones still held.
func (c *Coordinator) release(ctx context.Context, buckets []int, epoch int64) {
	if len(buckets) == 0 {
		return
	}
	if c.cfg.Drain != nil {
		for _, b := range buckets {
			if err := c.cfg.Drain(ctx, b); err != nil {
				c.log.Warn("drain failed; releasing the bucket anyway (its writes are fenced)", "bucket", b, "err", err)
			}
		}
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.Leases.TTL/3)
	defer cancel()
	rel, err := c.leases.ReleaseMany(rctx, buckets)
	c.emitMu.Lock()
	for _, l := range rel {
		if c.announced[l.Bucket] == l.Token {
			delete(c.announced, l.Bucket)
			c.emit(Event{Kind: Released, Bucket: l.Bucket, Token: l.Token, Epoch: epoch})
		}
	}
	c.emitMu.Unlock()
	if err != nil {
		c.log.Warn("cannot release buckets; they expire after the lease TTL", "count", len(buckets), "err", err)
	}
}

// shutdown releases everything and stops the leases.
func (c *Coordinator) shutdown() error {
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.Leases.TTL)
	defer cancel()
	var buckets []int
	for _, l := range c.leases.Held() {
		buckets = append(buckets, l.Bucket)
	}
	c.release(ctx, buckets, c.currentEpoch())
	if err := c.leases.Close(ctx); err != nil {
		return fmt.Errorf("cannot stop coordinating: %w", err)
	}
	return nil
}
