package p2p

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spider-crawler/spider/internal/cluster"
	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/crawlstate"
	"github.com/spider-crawler/spider/internal/frontier"
	"github.com/spider-crawler/spider/internal/rstate"
)

// The revisit schedule of a peer-to-peer crawl (issue #26). Each bucket
// keeps the schedule of its hosts' URLs (rstate: the bucket's rv hash, due
// set and failed set, fenced by the bucket's lease like its other writes),
// so the schedule moves with the bucket: a node revisits the URLs of the
// buckets it owns. Its Scheduler runs the loop of a single-node crawl over
// them: with Config.Continuous, FeedRevisits takes due URLs from the owned
// buckets into the node's frontier (the bucket's owner is this node, so a
// due URL needs no routing: TakeDue makes it pending in its bucket); a
// one-shot run takes what is due in a bucket when the node acquires it
// (the buckets are acquired after the start), and Config.RetryFailed makes
// a bucket's failed URLs due then. A continuous node never decides that
// the crawl is done: it runs until stopped.

var _ crawlstate.Revisits = (*buckets)(nil)

// ownedStores returns the stores of the buckets this node owns.
func (b *buckets) ownedStores() []*rstate.Store {
	b.mu.RLock()
	defer b.mu.RUnlock()
	out := make([]*rstate.Store, 0, len(b.owned))
	for _, st := range b.owned {
		out = append(out, st)
	}
	return out
}

// TakeDue implements crawlstate.Revisits over the owned buckets: the max
// earliest due entries of all of them (rstate.DueShares, one pipeline),
// each bucket's share made pending there in one fenced script call. A
// bucket lost meanwhile is skipped: its new owner takes its due URLs.
func (b *buckets) TakeDue(ctx context.Context, now time.Time, max int) ([]frontier.Request, error) {
	stores := b.ownedStores()
	if max <= 0 || len(stores) == 0 {
		return nil, nil
	}
	var share []int
	if err := cluster.Retry(ctx, func() (err error) { share, err = rstate.DueShares(ctx, stores, now, max); return err }); err != nil {
		return nil, err
	}
	var out []frontier.Request
	for i, n := range share {
		if n == 0 {
			continue
		}
		st := stores[i]
		cctx := st.OneCall(ctx)
		var got []frontier.Request
		err := cluster.Retry(ctx, func() (err error) { got, err = st.TakeDue(cctx, now, n); return err })
		if lostBucket(err) {
			continue
		}
		if err != nil {
			return out, err
		}
		out = append(out, got...)
	}
	return out, nil
}

// NextDue implements crawlstate.Revisits: the earliest Due of the owned
// buckets (one pipeline).
func (b *buckets) NextDue(ctx context.Context) (next time.Time, ok bool, err error) {
	stores := b.ownedStores()
	err = cluster.Retry(ctx, func() (err error) { next, ok, err = rstate.NextDueOf(ctx, stores); return err })
	return next, ok, err
}

// RetryFailed implements crawlstate.Revisits: the failed URLs of the owned
// buckets.
func (b *buckets) RetryFailed(ctx context.Context, now time.Time) (int, error) {
	total := 0
	for _, st := range b.ownedStores() {
		n, err := retryFailed(ctx, st, now)
		if err != nil {
			return total, err
		}
		total += n
	}
	return total, nil
}

// retryFailed is one bucket's RetryFailed; a bucket lost meanwhile counts
// none.
func retryFailed(ctx context.Context, st *rstate.Store, now time.Time) (int, error) {
	var n int
	err := cluster.Retry(ctx, func() (err error) { n, err = st.RetryFailed(ctx, now); return err })
	if lostBucket(err) {
		return 0, nil
	}
	return n, err
}

// Scheduled implements crawlstate.Revisits: the sums over the owned
// buckets.
func (b *buckets) Scheduled(ctx context.Context) (records, due int64, err error) {
	for _, st := range b.ownedStores() {
		var r, d int64
		err := cluster.Retry(ctx, func() (err error) { r, d, err = st.Scheduled(ctx); return err })
		if lostBucket(err) {
			continue
		}
		if err != nil {
			return 0, 0, err
		}
		records, due = records+r, due+d
	}
	return records, due, nil
}

// acquiredSchedule is the revisit part of acquiring bucket st: with
// Config.RetryFailed its failed URLs are made due now; a one-shot run
// (not Continuous) then queues every URL of the bucket due now, as a
// single-node crawl does at its start. A continuous node leaves them to
// FeedRevisits.
func (n *Node) acquiredSchedule(ctx context.Context, st *rstate.Store) error {
	now := time.Now()
	if n.cfg.RetryFailed {
		if _, err := retryFailed(ctx, st, now); err != nil {
			return err
		}
	}
	if n.cfg.Continuous {
		return nil
	}
	_, err := n.sched.TakeAllDue(ctx, st, now)
	if lostBucket(err) {
		return nil
	}
	return err
}

// ScheduleStatus reads the revisit schedule of the buckets this node owns
// and this run's revisit counts, for the node's summary.
func (n *Node) ScheduleStatus(ctx context.Context) (crawl.ScheduleStatus, bool, error) {
	return n.sched.ScheduleStatus(ctx)
}

var _ crawlstate.Rescheduler = (*buckets)(nil)

// Reschedule implements crawlstate.Rescheduler over the owned buckets: a
// URL of a bucket this node does not own is left alone (its owner keeps
// its schedule; a sitemap lists its own host's URLs, which share its
// bucket, but for cross-submitted ones). A bucket lost meanwhile is
// skipped.
func (b *buckets) Reschedule(ctx context.Context, urls []string, fn crawlstate.RescheduleFunc) (int, error) {
	byBucket := map[int][]string{}
	for _, u := range urls {
		n := bucketOf(u, b.m)
		byBucket[n] = append(byBucket[n], u)
	}
	total := 0
	for n, us := range byBucket {
		st := b.store(n)
		if st == nil {
			continue
		}
		var got int
		err := cluster.Retry(ctx, func() (err error) { got, err = st.Reschedule(ctx, us, fn); return err })
		if lostBucket(err) {
			continue
		}
		if err != nil {
			return total, err
		}
		total += got
	}
	return total, nil
}

// ScheduleCounts implements crawlstate.Rescheduler: the owned buckets'
// figures summed (one pipeline).
func (b *buckets) ScheduleCounts(ctx context.Context, now time.Time) (c crawlstate.ScheduleCounts, err error) {
	stores := b.ownedStores()
	prefixes := make([]string, len(stores))
	for i, st := range stores {
		prefixes[i] = st.Prefix()
	}
	err = cluster.Retry(ctx, func() (err error) { c, err = rstate.ReadScheduleCounts(ctx, b.rdb, prefixes, now); return err })
	return c, err
}

// ReadSchedule reads the revisit schedule of peer-to-peer crawl crawlName
// of the given number of buckets (the nodes' --buckets) from Redis at now,
// over every bucket whoever owns it, opening no state (spider status, the
// dashboard's Redis view): ok is false when the crawl keeps none (no
// bucket has a revisit record).
func ReadSchedule(ctx context.Context, rdb redis.UniversalClient, crawlName string, buckets int, now time.Time) (c crawlstate.ScheduleCounts, ok bool, err error) {
	prefixes := make([]string, buckets)
	for n := range prefixes {
		prefixes[n] = rstate.KeyPrefix(crawlName, rstate.BucketName(n))
	}
	c, err = rstate.ReadScheduleCounts(ctx, rdb, prefixes, now)
	return c, err == nil && c.Records > 0, err
}
