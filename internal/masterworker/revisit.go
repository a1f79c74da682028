package masterworker

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spider-crawler/spider/internal/cluster"
	"github.com/spider-crawler/spider/internal/crawlstate"
	"github.com/spider-crawler/spider/internal/frontier"
	"github.com/spider-crawler/spider/internal/rstate"
)

// The revisit schedule of a master–worker crawl (issue #26): each state
// part keeps the schedule of its hosts' URLs (rstate: the part's rv hash,
// due set and failed set, in its hash tag), and the master runs the loop a
// single-node crawl runs (crawl.Scheduler.TakeAllDue at the start of a
// one-shot run, FeedRevisits under Config.Continuous): due URLs become
// pending in their part and go through the master's frontier, under the
// same politeness as new URLs, to the workers. A worker gets the URL's
// schedule entry with the task (Task.Schedule) for the conditional GET,
// and sends back the Visit (304, validators), which the master's
// Scheduler.Finish turns into the next schedule entry.

var _ crawlstate.Revisits = (*shards)(nil)

// TakeDue implements crawlstate.Revisits over the parts: the max earliest
// due entries of all parts (rstate.DueShares: one pipeline), then each
// part makes its share of them pending in one script call
// (rstate.Store.TakeDue, kept for a retry by OneCall). A URL another taker
// took meanwhile is simply not returned.
func (s *shards) TakeDue(ctx context.Context, now time.Time, max int) ([]frontier.Request, error) {
	if max <= 0 {
		return nil, nil
	}
	var share []int
	if err := cluster.Retry(ctx, func() (err error) { share, err = rstate.DueShares(ctx, s.parts, now, max); return err }); err != nil {
		return nil, err
	}
	var out []frontier.Request
	for i, n := range share {
		if n == 0 {
			continue
		}
		st := s.parts[i]
		cctx := st.OneCall(ctx)
		var got []frontier.Request
		if err := cluster.Retry(ctx, func() (err error) { got, err = st.TakeDue(cctx, now, n); return err }); err != nil {
			return out, err
		}
		out = append(out, got...)
	}
	return out, nil
}

// NextDue implements crawlstate.Revisits: the earliest of the parts' (one
// pipeline).
func (s *shards) NextDue(ctx context.Context) (next time.Time, ok bool, err error) {
	err = cluster.Retry(ctx, func() (err error) { next, ok, err = rstate.NextDueOf(ctx, s.parts); return err })
	return next, ok, err
}

// RetryFailed implements crawlstate.Revisits: every part's failed URLs.
func (s *shards) RetryFailed(ctx context.Context, now time.Time) (int, error) {
	total := 0
	for _, st := range s.parts {
		var n int
		if err := cluster.Retry(ctx, func() (err error) { n, err = st.RetryFailed(ctx, now); return err }); err != nil {
			return total, err
		}
		total += n
	}
	return total, nil
}

// Scheduled implements crawlstate.Revisits: the sums over the parts.
func (s *shards) Scheduled(ctx context.Context) (records, due int64, err error) {
	for _, st := range s.parts {
		var r, d int64
		if err := cluster.Retry(ctx, func() (err error) { r, d, err = st.Scheduled(ctx); return err }); err != nil {
			return 0, 0, err
		}
		records, due = records+r, due+d
	}
	return records, due, nil
}

var _ crawlstate.Rescheduler = (*shards)(nil)

// Reschedule implements crawlstate.Rescheduler: each URL in the part of
// its host (a host not in the directory has no record), each part's URLs
// in its own calls (rstate.Store.Reschedule).
func (s *shards) Reschedule(ctx context.Context, urls []string, fn crawlstate.RescheduleFunc) (int, error) {
	byPart := map[int][]string{}
	for _, u := range urls {
		if n, ok := s.partOf(u); ok {
			byPart[n] = append(byPart[n], u)
		}
	}
	total := 0
	for n, us := range byPart {
		st := s.parts[n]
		var got int
		if err := cluster.Retry(ctx, func() (err error) { got, err = st.Reschedule(ctx, us, fn); return err }); err != nil {
			return total, err
		}
		total += got
	}
	return total, nil
}

// ScheduleCounts implements crawlstate.Rescheduler: the parts' figures
// summed (one pipeline).
func (s *shards) ScheduleCounts(ctx context.Context, now time.Time) (c crawlstate.ScheduleCounts, err error) {
	err = cluster.Retry(ctx, func() (err error) {
		c, err = rstate.ReadScheduleCounts(ctx, s.rdb, partPrefixes(s.crawl), now)
		return err
	})
	return c, err
}

// partPrefixes are the key prefixes of a crawl's state parts.
func partPrefixes(crawlName string) []string {
	out := make([]string, len(shardTags))
	for i, tag := range shardTags {
		out[i] = rstate.KeyPrefix(crawlName, tag)
	}
	return out
}

// ReadSchedule reads the revisit schedule of master–worker crawl
// crawlName from Redis at now (spider status, the dashboard's Redis view),
// opening no state: ok is false when the crawl keeps none (no part has a
// revisit record).
func ReadSchedule(ctx context.Context, rdb redis.UniversalClient, crawlName string, now time.Time) (c crawlstate.ScheduleCounts, ok bool, err error) {
	c, err = rstate.ReadScheduleCounts(ctx, rdb, partPrefixes(crawlName), now)
	return c, err == nil && c.Records > 0, err
}
