package p2p

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spider-crawler/spider/internal/cluster"
	"github.com/spider-crawler/spider/internal/cluster/slots"
	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/crawlstate"
	"github.com/spider-crawler/spider/internal/frontier"
	"github.com/spider-crawler/spider/internal/partition"
	"github.com/spider-crawler/spider/internal/rstate"
)

// buckets is the node's crawl.State: one Redis state store per bucket the
// node owns, each fenced by the bucket's lease. URLs of buckets owned
// elsewhere go to the dispatcher.
type buckets struct {
	rdb   redis.UniversalClient
	keys  cluster.Keys
	node  string
	m     int
	cfg   crawl.Config
	log   *slog.Logger
	disp  *dispatcher
	route func(bucket int) string // ring owner of a bucket in the current view

	mu       sync.RWMutex
	owned    map[int]*rstate.Store
	inFlight map[int]int // leased URLs per bucket, so a hand-over can wait for them
}

var _ crawl.State = (*buckets)(nil)

func newBuckets(rdb redis.UniversalClient, keys cluster.Keys, node string, m int, cfg crawl.Config, disp *dispatcher, route func(int) string, log *slog.Logger) *buckets {
	return &buckets{rdb: rdb, keys: keys, node: node, m: m, cfg: cfg, disp: disp, route: route, log: log,
		owned: map[int]*rstate.Store{}, inFlight: map[int]int{}}
}

// bucketOf maps a URL to its bucket: hash of the host (SPEC §4 level 1), so
// that all URLs of a host share a bucket and a node (SPEC §2 S200).
func bucketOf(rawURL string, m int) int {
	u, err := url.Parse(rawURL)
	if err != nil {
		return 0
	}
	return partition.Bucket(u.Hostname(), m)
}

// dupTags are the hash tags of the crawl's duplicate tables (rstate
// Options.DupTags), the same on every node: 12 tags spread evenly over a
// Redis Cluster's slots, whose keys count as the crawl's p2p keys.
var dupTags = func() []string {
	t := make([]string, 12)
	for i := range t {
		t[i] = slots.SpreadTag("dd-", i, len(t))
	}
	return t
}()

// acquire opens bucket n's store, fenced by the lease token.
func (b *buckets) acquire(ctx context.Context, n int, token int64) (*rstate.Store, error) {
	st, err := rstate.Open(ctx, b.rdb, rstate.Options{
		Crawl: b.keys.Crawl(), Bucket: rstate.BucketName(n), SeenMode: b.cfg.Seen,
		ExpectedURLs: max(b.cfg.ExpectedURLs/uint64(b.m), 10_000), FPRate: b.cfg.FPRate,
		Fence:  &rstate.Fence{Key: b.keys.Owner(n), Value: cluster.OwnerValue(b.node, token)},
		Logger: b.log,
		Relink: b.Relinks(), MaxDepth: b.cfg.MaxDepth,
		DupTags: dupTags, // duplicates across the buckets' hosts too
	})
	if err != nil {
		return nil, fmt.Errorf("cannot open bucket %d: %w", n, err)
	}
	b.mu.Lock()
	if old := b.owned[n]; old != nil {
		old.Close()
	}
	b.owned[n] = st
	b.mu.Unlock()
	return st, nil
}

// drop forgets bucket n; with a positive wait, it first waits (at most
// that long) until no URL of the bucket is being fetched here, so that a
// voluntary hand-over does not make the next owner fetch them again.
func (b *buckets) drop(n int, wait time.Duration) {
	deadline := time.Now().Add(wait)
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.inFlight[n] > 0 && time.Now().Before(deadline) {
		b.mu.Unlock()
		time.Sleep(10 * time.Millisecond)
		b.mu.Lock()
	}
	if st := b.owned[n]; st != nil {
		st.Close()
		delete(b.owned, n)
	}
}

func (b *buckets) store(n int) *rstate.Store {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.owned[n]
}

// ownedCount is the number of buckets held.
func (b *buckets) ownedCount() int {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return len(b.owned)
}

// split groups requests by bucket.
func (b *buckets) split(reqs []frontier.Request) map[int][]frontier.Request {
	out := map[int][]frontier.Request{}
	for _, r := range reqs {
		n := bucketOf(r.URL, b.m)
		out[n] = append(out[n], r)
	}
	return out
}

// Relinks reports whether the node relinks (rstate.Options.Relink): under
// a depth limit, always, since depth levels overlap across nodes (even
// when each node goes level by level on its own, with
// crawl.Config.StrictLevels), so a page may be fetched at a
// greater depth than its shortest path's. crawl.Scheduler then passes
// Visit.Beyond to Complete, and the fetcher fills it (NewNode calls
// crawl.Fetcher.KeepBeyond).
func (b *buckets) Relinks() bool { return b.cfg.MaxDepth >= 0 }

// within reports whether r is within the depth limit.
func (b *buckets) within(r frontier.Request) bool {
	return b.cfg.MaxDepth < 0 || r.Depth <= b.cfg.MaxDepth
}

// discover records the URLs of owned buckets and returns the new ones;
// the others are sent to their owners' inboxes (the returned wait
// function blocks until they are durably there). The kept links of
// fetched URLs that the URLs relinked (rstate.Store.DiscoverRelink) are
// routed the same way, round after round until none is left: each round
// lowers some URL's depth, so the rounds end.
func (b *buckets) discover(ctx context.Context, reqs []frontier.Request) ([]frontier.Request, func() error, error) {
	var news []frontier.Request
	remote := map[string][]frontier.Request{}
	for len(reqs) > 0 {
		var relink []frontier.Request
		for n, rs := range b.split(reqs) {
			if st := b.store(n); st != nil {
				var got, more []frontier.Request
				cctx := st.OneCall(ctx) // a retry after a lost reply gets the first run's reply
				err := cluster.Retry(ctx, func() (err error) { got, more, err = st.DiscoverRelink(cctx, rs); return err })
				if lostBucket(err) {
					remote[b.route(n)] = append(remote[b.route(n)], rs...)
					continue
				}
				if err != nil {
					return nil, nil, err
				}
				news = append(news, got...)
				relink = append(relink, more...)
				continue
			}
			remote[b.route(n)] = append(remote[b.route(n)], rs...)
		}
		reqs = relink
	}
	return news, b.disp.send(remote), nil
}

// Discover implements crawl.State (seeds): remote seeds are dispatched.
func (b *buckets) Discover(ctx context.Context, reqs []frontier.Request) ([]frontier.Request, error) {
	news, wait, err := b.discover(ctx, reqs)
	if err != nil {
		return nil, err
	}
	return news, wait()
}

// Complete implements crawl.State: links of other buckets within the
// depth limit first (sent to their owners and waited for, or added to
// other owned buckets), then the URL's own bucket in one fenced script
// that keeps every link (with Relink: other buckets' and those beyond the
// limit too, for a later relink) and discovers its same-bucket links
// within the limit; what that relinks (or, if the URL was lowered while
// in flight, its links shifted) is routed last. A URL whose bucket was
// lost meanwhile completes as a no-op: the new owner fetches it again (at
// most once more).
func (b *buckets) Complete(ctx context.Context, r frontier.Request, o crawlstate.Outcome, discovered []frontier.Request) (crawlstate.Result, error) {
	n := bucketOf(r.URL, b.m)
	defer b.release(n)
	var same, other []frontier.Request
	for _, d := range discovered {
		switch {
		case !b.within(d): // Visit.Beyond: kept only
		case bucketOf(d.URL, b.m) == n:
			same = append(same, d)
		default:
			other = append(other, d)
		}
	}
	news, wait, err := b.discover(ctx, other)
	if err != nil {
		return crawlstate.Result{}, err
	}
	if err := wait(); err != nil {
		return crawlstate.Result{}, err
	}
	st := b.store(n)
	if st == nil {
		b.log.Warn("fetched a URL of a bucket no longer owned; its new owner fetches it again", "url", r.URL, "bucket", n)
		return crawlstate.Result{New: news}, nil
	}
	var (
		res    crawlstate.Result
		relink []frontier.Request
	)
	cctx := st.OneCall(ctx) // a retry after a lost reply gets the first run's reply
	err = cluster.Retry(ctx, func() (err error) {
		res, relink, err = st.CompleteRelink(cctx, r, o, discovered, same)
		return err
	})
	if lostBucket(err) {
		b.log.Warn("completion fenced: the bucket moved; its new owner fetches the URL again", "url", r.URL, "bucket", n)
		return crawlstate.Result{New: news}, nil
	}
	if err != nil {
		return crawlstate.Result{}, err
	}
	res.New = append(res.New, news...)
	if len(relink) > 0 {
		more, wait, err := b.discover(ctx, relink)
		if err != nil {
			return crawlstate.Result{}, err
		}
		if err := wait(); err != nil {
			return crawlstate.Result{}, err
		}
		res.New = append(res.New, more...)
	}
	return res, nil
}

// UpdatePending implements crawl.State.
func (b *buckets) UpdatePending(ctx context.Context, r frontier.Request) error {
	n := bucketOf(r.URL, b.m)
	defer b.release(n)
	st := b.store(n)
	if st == nil {
		return nil
	}
	err := cluster.Retry(ctx, func() error { return st.UpdatePending(ctx, r) })
	if lostBucket(err) {
		return nil
	}
	return err
}

// Current implements crawl.State: a URL is current only in an owned
// bucket. A current URL counts as in flight until Complete or
// UpdatePending, so that a voluntary hand-over of its bucket waits for it;
// it is counted before the Redis round trip, under the lock that drop
// takes, so no hand-over can slip in between.
func (b *buckets) Current(ctx context.Context, r frontier.Request) (bool, error) {
	n := bucketOf(r.URL, b.m)
	b.mu.Lock()
	st := b.owned[n]
	if st != nil {
		b.inFlight[n]++
	}
	b.mu.Unlock()
	if st == nil {
		return false, nil
	}
	var cur bool
	err := cluster.Retry(ctx, func() (err error) { cur, err = st.Current(ctx, r); return err })
	if lostBucket(err) {
		err = nil // not ours any more: not current here
	}
	if err != nil || !cur {
		b.release(n)
		return false, err
	}
	return true, nil
}

func (b *buckets) release(n int) {
	b.mu.Lock()
	if b.inFlight[n] > 0 {
		b.inFlight[n]--
		if b.inFlight[n] == 0 {
			delete(b.inFlight, n)
		}
	}
	b.mu.Unlock()
}

// LoadPending implements crawl.State: nothing at start; each bucket's
// pending URLs are loaded when the bucket is acquired.
func (b *buckets) LoadPending(context.Context, func(frontier.Request) error) error { return nil }

// Counters implements crawl.State: the counters of the buckets this node
// owns (so --max-pages is per node in a peer-to-peer crawl).
func (b *buckets) Counters(ctx context.Context) (map[string]int64, error) {
	b.mu.RLock()
	stores := make([]*rstate.Store, 0, len(b.owned))
	for _, st := range b.owned {
		stores = append(stores, st)
	}
	b.mu.RUnlock()
	out := map[string]int64{}
	for _, st := range stores {
		c, err := st.Counters(ctx)
		if err != nil {
			continue
		}
		for k, v := range c {
			out[k] += v
		}
	}
	return out, nil
}

// Sync implements crawl.State: Redis persistence is the server's.
func (b *buckets) Sync() error { return nil }

// Close implements crawl.State.
func (b *buckets) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for n, st := range b.owned {
		st.Close()
		delete(b.owned, n)
	}
	return nil
}

// lostBucket reports whether err says the bucket's store is no longer this
// node's: fenced by a newer owner, or closed because its lease was lost
// while the call ran (a node cut from Redis longer than the lease). Either
// way the URL belongs to the bucket's new owner, which fetches it again.
func lostBucket(err error) bool {
	return errors.Is(err, rstate.ErrFenced) || errors.Is(err, rstate.ErrClosed)
}
