package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultLeaseTTL is the default lifetime of a bucket lease without renewal.
const DefaultLeaseTTL = 6 * time.Second

// ErrHeld is returned (wrapped in a *HeldError) when another node holds a bucket's lease.
var ErrHeld = errors.New("lease held by another node")

// ErrClosed is returned by calls on closed BucketLeases.
var ErrClosed = errors.New("leases closed")

// HeldError says who holds the lease that could not be acquired.
type HeldError struct {
	Bucket int
	// Holder is the lease value, "NODE:TOKEN".
	Holder string
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("cannot acquire bucket %d: held by %s", e.Bucket, e.Holder)
}

// Unwrap returns ErrHeld.
func (e *HeldError) Unwrap() error { return ErrHeld }

// Lease is a held bucket lease. Token is the bucket's fencing token for this holding: it
// is larger than every token issued for the bucket before, and every write to the
// bucket's keys is to be checked against it (FencedScript, CheckOwner).
type Lease struct {
	Bucket int
	Token  int64
}

// LeasesConfig tunes BucketLeases. The zero value works.
type LeasesConfig struct {
	// TTL is the lease lifetime in Redis without renewal. Leases are renewed every TTL/3;
	// a lease whose last successful renewal was sent 2·TTL/3 ago is reported lost, at
	// least TTL/3 before any other node can take it. Default DefaultLeaseTTL (6 s).
	TTL time.Duration
	// OnLost is called, from the renewal goroutine, for every lease lost without Release:
	// renewal failed for 2·TTL/3 (Redis unreachable or slow) or Redis says the lease is
	// gone or someone else's. The node must stop working on the bucket at once. It must
	// not block for long. Nil: losses are only logged.
	OnLost func(Lease)
	// Logger receives lost leases and renewal failures; nil discards.
	Logger *slog.Logger
}

// held is the local state of one lease.
type held struct {
	token     int64
	confirmed time.Time // send time of the last successful acquire or renewal
}

// BucketLeases takes, renews and releases the leases of one node on a crawl's buckets
// (SPEC §3, §4: a bucket is crawled by one node at a time). A lease is the key
// spider:C:{bN}:owner = "NODE:TOKEN" with a TTL; TOKEN is a fencing token from
// spider:C:{bN}:fence, increasing across holders (and across Redis restarts, see
// next_counter). One goroutine renews every held lease in one pipelined round trip per
// TTL/3. Safe for concurrent use.
type BucketLeases struct {
	rdb  redis.UniversalClient
	keys Keys
	node string
	cfg  LeasesConfig

	mu     sync.Mutex
	leases map[int]held
	closed bool

	stop context.CancelFunc
	done chan struct{}
}

// NewBucketLeases returns the leases of node (see CheckNodeID) on the crawl named by keys
// and starts the renewal goroutine; Close stops it.
func NewBucketLeases(rdb redis.UniversalClient, keys Keys, node string, cfg LeasesConfig) (*BucketLeases, error) {
	if err := CheckNodeID(node); err != nil {
		return nil, err
	}
	if cfg.TTL <= 0 {
		cfg.TTL = DefaultLeaseTTL
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &BucketLeases{rdb: rdb, keys: keys, node: node, cfg: cfg, leases: map[int]held{}, stop: cancel, done: make(chan struct{})}
	go l.renewLoop(ctx)
	return l, nil
}

// Node returns the node ID the leases are taken for.
func (l *BucketLeases) Node() string { return l.node }

// TTL returns the lease lifetime in use.
func (l *BucketLeases) TTL() time.Duration { return l.cfg.TTL }

// Acquire takes bucket's lease. If this node already holds it, it returns the held lease
// without I/O. If another node holds it, the error is a *HeldError (errors.Is ErrHeld);
// the caller retries later. A lease left in Redis by an earlier incarnation of this node
// (same ID) is taken over with a new token, which fences the old one.
func (l *BucketLeases) Acquire(ctx context.Context, bucket int) (Lease, error) {
	got, busy, err := l.AcquireMany(ctx, []int{bucket})
	if err != nil {
		return Lease{}, err
	}
	if len(got) == 1 {
		return got[0], nil
	}
	return Lease{}, &busy[0]
}

// AcquireMany tries to take the leases of buckets in one pipelined round trip. It returns
// the leases held afterwards among buckets (already held ones included, in input order)
// and a *HeldError per bucket held by another node. err is set only when Redis could not
// be asked (then got and busy list what was decided before the failure).
func (l *BucketLeases) AcquireMany(ctx context.Context, buckets []int) (got []Lease, busy []HeldError, err error) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil, nil, fmt.Errorf("cannot acquire buckets: %w", ErrClosed)
	}
	var calls []scriptCall
	var asked []int
	for _, b := range buckets {
		if h, ok := l.leases[b]; ok {
			got = append(got, Lease{Bucket: b, Token: h.token})
			continue
		}
		asked = append(asked, b)
		calls = append(calls, scriptCall{keys: []string{l.keys.Owner(b), l.keys.Fence(b)}, args: []any{l.node, l.cfg.TTL.Milliseconds()}})
	}
	l.mu.Unlock()
	sent := time.Now()
	cmds, err := evalBatch(ctx, l.rdb, acquireScript, calls)
	if err != nil {
		err = fmt.Errorf("cannot acquire bucket leases of crawl %q: %w", l.keys.Crawl(), err)
	}
	var orphans []scriptCall
	l.mu.Lock()
	for i, cmd := range cmds {
		res, cerr := cmd.Slice()
		if cerr != nil || len(res) != 2 {
			continue
		}
		tok, _ := res[0].(int64)
		if tok <= 0 {
			holder, _ := res[1].(string)
			busy = append(busy, HeldError{Bucket: asked[i], Holder: holder})
			continue
		}
		if l.closed {
			orphans = append(orphans, scriptCall{keys: []string{l.keys.Owner(asked[i])}, args: []any{OwnerValue(l.node, tok)}})
			continue
		}
		l.leases[asked[i]] = held{token: tok, confirmed: sent}
		got = append(got, Lease{Bucket: asked[i], Token: tok})
	}
	closed := l.closed
	l.mu.Unlock()
	if closed {
		// Closed while asking: nobody would renew or release these; give them back.
		_, _ = evalBatch(ctx, l.rdb, releaseScript, orphans)
		return nil, busy, fmt.Errorf("cannot acquire buckets: %w", ErrClosed)
	}
	return got, busy, err
}

// Release gives bucket's lease up if this node holds it (checked in Redis: a lease that
// is someone else's by now is left alone). It reports whether the node held it locally.
// The caller must have stopped working on the bucket before calling it.
func (l *BucketLeases) Release(ctx context.Context, bucket int) (bool, error) {
	rel, err := l.ReleaseMany(ctx, []int{bucket})
	return len(rel) == 1, err
}

// ReleaseMany releases the given buckets' leases in one pipelined round trip and returns
// the leases that were held locally (the ones released); buckets not held are skipped.
// The leases are forgotten locally even when Redis cannot be reached (they then expire
// after their TTL).
func (l *BucketLeases) ReleaseMany(ctx context.Context, buckets []int) ([]Lease, error) {
	l.mu.Lock()
	var rel []Lease
	var calls []scriptCall
	for _, b := range buckets {
		h, ok := l.leases[b]
		if !ok {
			continue
		}
		delete(l.leases, b)
		rel = append(rel, Lease{Bucket: b, Token: h.token})
		calls = append(calls, scriptCall{keys: []string{l.keys.Owner(b)}, args: []any{OwnerValue(l.node, h.token)}})
	}
	l.mu.Unlock()
	if _, err := evalBatch(ctx, l.rdb, releaseScript, calls); err != nil {
		return rel, fmt.Errorf("cannot release %d bucket leases of crawl %q (they expire after %v): %w", len(calls), l.keys.Crawl(), l.cfg.TTL, err)
	}
	return rel, nil
}

// Held returns the leases this node holds, sorted by bucket.
func (l *BucketLeases) Held() []Lease {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Lease, 0, len(l.leases))
	for b, h := range l.leases {
		out = append(out, Lease{Bucket: b, Token: h.token})
	}
	slices.SortFunc(out, func(a, b Lease) int { return a.Bucket - b.Bucket })
	return out
}

// Token returns the token of bucket's lease if this node holds it.
func (l *BucketLeases) Token(bucket int) (int64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	h, ok := l.leases[bucket]
	return h.token, ok
}

// Holder reads bucket's lease from Redis: the holding node and token, and the time left
// before it expires; node is "" when the lease is free.
func (l *BucketLeases) Holder(ctx context.Context, bucket int) (node string, token int64, ttl time.Duration, err error) {
	return Holder(ctx, l.rdb, l.keys, bucket)
}

// Holder reads bucket's lease from Redis (see BucketLeases.Holder); for status reports.
func Holder(ctx context.Context, rdb redis.UniversalClient, keys Keys, bucket int) (node string, token int64, ttl time.Duration, err error) {
	pipe := rdb.Pipeline()
	get := pipe.Get(ctx, keys.Owner(bucket))
	pttl := pipe.PTTL(ctx, keys.Owner(bucket))
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return "", 0, 0, fmt.Errorf("cannot read the lease of bucket %d: %w", bucket, err)
	}
	v, err := get.Result()
	if errors.Is(err, redis.Nil) {
		return "", 0, 0, nil
	}
	node, token, err = ParseOwnerValue(v)
	if err != nil {
		return "", 0, 0, err
	}
	return node, token, pttl.Val(), nil
}

// Close stops renewing and releases every held lease (best effort within ctx); later
// Acquire calls fail with ErrClosed. Calling Close again does nothing.
func (l *BucketLeases) Close(ctx context.Context) error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	l.mu.Unlock()
	l.stop()
	<-l.done
	_, err := l.ReleaseMany(ctx, l.heldBuckets())
	return err
}

// Abandon stops renewing without releasing anything, as a crashed node would: the leases
// expire after their TTL. For tests and for a node that knows it is cut off.
func (l *BucketLeases) Abandon() {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	l.mu.Unlock()
	l.stop()
	<-l.done
	l.mu.Lock()
	clear(l.leases)
	l.mu.Unlock()
}

func (l *BucketLeases) heldBuckets() []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]int, 0, len(l.leases))
	for b := range l.leases {
		out = append(out, b)
	}
	return out
}

// renewLoop renews all held leases every TTL/3 and reports as lost every lease not
// confirmed for 2·TTL/3. A renewal round never outlives the earliest give-up deadline, so
// a hung Redis cannot delay a loss report.
func (l *BucketLeases) renewLoop(ctx context.Context) {
	defer close(l.done)
	period, giveUp := l.cfg.TTL/3, 2*l.cfg.TTL/3
	timer := time.NewTimer(period)
	defer timer.Stop()
	nextRenew := time.Now().Add(period)
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		now := time.Now()
		if !now.Before(nextRenew) {
			nextRenew = now.Add(period)
			l.renewAll(ctx, giveUp, nextRenew)
		}
		l.expire(time.Now(), giveUp)
		wake := nextRenew
		if d, ok := l.earliestDeadline(giveUp); ok && d.Before(wake) {
			wake = d
		}
		timer.Reset(max(time.Until(wake), time.Millisecond))
	}
}

// renewAll sends one pipelined renewal for every held lease, bounded by the earliest
// give-up deadline and by the next round.
func (l *BucketLeases) renewAll(ctx context.Context, giveUp time.Duration, next time.Time) {
	l.mu.Lock()
	type item struct {
		bucket int
		token  int64
	}
	items := make([]item, 0, len(l.leases))
	calls := make([]scriptCall, 0, len(l.leases))
	deadline := next
	for b, h := range l.leases {
		items = append(items, item{b, h.token})
		calls = append(calls, scriptCall{keys: []string{l.keys.Owner(b)}, args: []any{OwnerValue(l.node, h.token), l.cfg.TTL.Milliseconds()}})
		if d := h.confirmed.Add(giveUp); d.Before(deadline) {
			deadline = d
		}
	}
	l.mu.Unlock()
	if len(calls) == 0 {
		return
	}
	rctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	sent := time.Now()
	cmds, err := evalBatch(rctx, l.rdb, renewScript, calls)
	if err != nil && ctx.Err() == nil {
		l.cfg.Logger.Warn("cannot renew bucket leases; they are reported lost 2/3 of a TTL after the last renewal", "crawl", l.keys.Crawl(), "node", l.node, "leases", len(calls), "ttl", l.cfg.TTL, "err", err)
	}
	var lost []Lease
	l.mu.Lock()
	for i, cmd := range cmds {
		it := items[i]
		h, ok := l.leases[it.bucket]
		if !ok || h.token != it.token {
			continue // released or re-acquired meanwhile
		}
		n, cerr := cmd.Int64()
		switch {
		case cerr == nil && n == 1 && time.Now().Before(deadline):
			h.confirmed = sent
			l.leases[it.bucket] = h
		case cerr == nil && n == 0:
			delete(l.leases, it.bucket)
			lost = append(lost, Lease{Bucket: it.bucket, Token: it.token})
		}
	}
	l.mu.Unlock()
	l.reportLost(lost, "the lease is gone from Redis or held by another node")
}

// expire reports the leases not confirmed within giveUp.
func (l *BucketLeases) expire(now time.Time, giveUp time.Duration) {
	var lost []Lease
	l.mu.Lock()
	for b, h := range l.leases {
		if !now.Before(h.confirmed.Add(giveUp)) {
			delete(l.leases, b)
			lost = append(lost, Lease{Bucket: b, Token: h.token})
		}
	}
	l.mu.Unlock()
	l.reportLost(lost, "no renewal succeeded for 2/3 of the TTL")
}

func (l *BucketLeases) earliestDeadline(giveUp time.Duration) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var d time.Time
	for _, h := range l.leases {
		if t := h.confirmed.Add(giveUp); d.IsZero() || t.Before(d) {
			d = t
		}
	}
	return d, !d.IsZero()
}

func (l *BucketLeases) reportLost(lost []Lease, why string) {
	if len(lost) == 0 {
		return
	}
	slices.SortFunc(lost, func(a, b Lease) int { return a.Bucket - b.Bucket })
	l.cfg.Logger.Warn("bucket leases lost", "crawl", l.keys.Crawl(), "node", l.node, "count", len(lost), "first", lost[0].Bucket, "why", why)
	if l.cfg.OnLost != nil {
		for _, ls := range lost {
			l.cfg.OnLost(ls)
		}
	}
}
