package rstate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spider-crawler/spider/internal/crawlstate"
	"github.com/spider-crawler/spider/internal/dedup"
	"github.com/spider-crawler/spider/internal/frontier"
)

// The revisit schedule (crawlstate.Revisits), in the bucket's hash tag:
//
//	spider:<crawl>:{<bucket>}:rv      HASH  dedup.KeyOf(URL) → the request as last
//	                                        completed (frontier.Request encoding,
//	                                        Schedule set, Attempt 0; Seq 0, or the
//	                                        Seq TakeDue made it pending under)
//	spider:<crawl>:{<bucket>}:due     ZSET  dedup.KeyOf(URL), score its Due in Unix ms
//	spider:<crawl>:{<bucket>}:failed  SET   dedup.KeyOf(URL) of the URLs whose last
//	                                        completion had Outcome.Failed
//
// The complete script writes all three with the completion; the take-due
// script moves due URLs to pending in one call (fenced, its reply kept for
// OneCall like Discover's and Complete's); the retry script fills the due
// set from the failed set. A URL that TakeDue made pending keeps its
// record with its new Seq: while the pending hash holds the URL under that
// Seq it is not taken again, nor made due by RetryFailed.

// revisitArgs are the complete script's revisit arguments for o: the
// record ("" when o has neither a Schedule nor Failed: the record goes),
// its Due in Unix ms ("" for none) and failed ("1"/"0").
func revisitArgs(r frontier.Request, o crawlstate.Outcome) (rec []byte, due, failed string, err error) {
	failed = "0"
	if o.Failed {
		failed = "1"
	}
	if o.Schedule == "" && !o.Failed {
		return []byte{}, "", failed, nil
	}
	r.Seq, r.Attempt, r.Schedule = 0, 0, o.Schedule
	if rec, err = r.MarshalBinary(); err != nil {
		return nil, "", "", err
	}
	if !o.Due.IsZero() {
		due = strconv.FormatInt(max(o.Due.UnixMilli(), 1), 10)
	}
	return rec, due, failed, nil
}

// TakeDue makes up to max URLs whose Due is at or before now pending
// again, earliest Due first, in one script call (crawlstate.Revisits):
// each leaves the due set and is pending under a fresh Seq with its
// record's request. A URL still pending is skipped. Under OneCall a retry
// after a lost reply returns the first run's requests. It fails with
// ErrFenced when the bucket's lease is lost.
func (s *Store) TakeDue(ctx context.Context, now time.Time, max int) ([]frontier.Request, error) {
	if err := s.usable(ctx); err != nil {
		return nil, err
	}
	if max <= 0 {
		return nil, nil
	}
	v, err := takeDueScript.Run(ctx, s.rdb, s.callKeysFor(ctx), s.fence, replyTTLArg,
		strconv.FormatInt(now.UnixMilli(), 10), max).Slice()
	if err != nil {
		return nil, s.fail("cannot take due revisits", err)
	}
	out := make([]frontier.Request, 0, len(v))
	for _, it := range v {
		rec, ok := it.(string)
		if !ok {
			return nil, fmt.Errorf("cannot take due revisits: unexpected script reply item %T", it)
		}
		var r frontier.Request
		if err := r.UnmarshalBinary([]byte(rec)); err != nil {
			return nil, fmt.Errorf("cannot take due revisits: a pending record made does not decode: %w", err)
		}
		out = append(out, r)
	}
	return out, nil
}

// NextDue reports the earliest Due in the bucket's due set; ok is false
// when no URL is scheduled.
func (s *Store) NextDue(ctx context.Context) (next time.Time, ok bool, err error) {
	if err := s.usable(ctx); err != nil {
		return time.Time{}, false, err
	}
	z, err := s.rdb.ZRangeWithScores(ctx, s.keys[kDue], 0, 0).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return time.Time{}, false, s.fail("cannot read the next due revisit", err)
	}
	if len(z) == 0 {
		return time.Time{}, false, nil
	}
	return time.UnixMilli(int64(z[0].Score)), true, nil
}

// RetryFailed sets Due to now for every URL of the bucket whose last
// Complete had Outcome.Failed (a URL pending meanwhile is left alone), in
// one script call, and returns how many. It fails with ErrFenced when the
// bucket's lease is lost.
func (s *Store) RetryFailed(ctx context.Context, now time.Time) (int, error) {
	if err := s.usable(ctx); err != nil {
		return 0, err
	}
	n, err := retryFailedScript.Run(ctx, s.rdb, s.keys, s.fence, strconv.FormatInt(max(now.UnixMilli(), 1), 10)).Int()
	if err != nil {
		return 0, s.fail("cannot requeue the failed URLs", err)
	}
	return n, nil
}

// Scheduled reports how many URLs of the bucket have a revisit record and
// how many of those are in the due set.
func (s *Store) Scheduled(ctx context.Context) (records, due int64, err error) {
	if err := s.usable(ctx); err != nil {
		return 0, 0, err
	}
	var h, z *redis.IntCmd
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		h = p.HLen(ctx, s.keys[kRv])
		z = p.ZCard(ctx, s.keys[kDue])
		return nil
	})
	if err != nil {
		return 0, 0, s.fail("cannot count the revisit schedule", err)
	}
	return h.Val(), z.Val(), nil
}

var _ crawlstate.Revisits = (*Store)(nil)

// DueShares spreads a TakeDue of max URLs at now over several stores of
// one Redis (a p2p node's buckets, a master's state parts): it reads the
// first max due entries of every store in one pipeline and returns, per
// store, how many of the max earliest are its, for the caller to take with
// each store's TakeDue (so the crawl takes the earliest Due first across
// stores, not store by store). A store closed meanwhile counts none.
func DueShares(ctx context.Context, stores []*Store, now time.Time, max int) ([]int, error) {
	share := make([]int, len(stores))
	if len(stores) == 0 || max <= 0 {
		return share, nil
	}
	type due struct {
		at    float64
		store int
	}
	limit := strconv.FormatInt(now.UnixMilli(), 10)
	cmds := make([]*redis.ZSliceCmd, len(stores))
	_, err := stores[0].rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, st := range stores {
			cmds[i] = p.ZRangeByScoreWithScores(ctx, st.keys[kDue], &redis.ZRangeBy{Min: "-inf", Max: limit, Count: int64(max)})
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, stores[0].fail("cannot read the due revisits", err)
	}
	var all []due
	for i, c := range cmds {
		if stores[i].closed.Load() {
			continue
		}
		for _, z := range c.Val() {
			all = append(all, due{z.Score, i})
		}
	}
	slices.SortFunc(all, func(a, b due) int {
		switch {
		case a.at < b.at:
			return -1
		case a.at > b.at:
			return 1
		}
		return a.store - b.store
	})
	for _, d := range all[:min(len(all), max)] {
		share[d.store]++
	}
	return share, nil
}

// NextDueOf is NextDue over several stores of one Redis, in one pipeline:
// the earliest Due of all of them.
func NextDueOf(ctx context.Context, stores []*Store) (next time.Time, ok bool, err error) {
	if len(stores) == 0 {
		return time.Time{}, false, nil
	}
	cmds := make([]*redis.ZSliceCmd, len(stores))
	_, err = stores[0].rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, st := range stores {
			cmds[i] = p.ZRangeWithScores(ctx, st.keys[kDue], 0, 0)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return time.Time{}, false, stores[0].fail("cannot read the next due revisit", err)
	}
	for _, c := range cmds {
		if z := c.Val(); len(z) > 0 {
			t := time.UnixMilli(int64(z[0].Score))
			if !ok || t.Before(next) {
				next, ok = t, true
			}
		}
	}
	return next, ok, nil
}

var _ crawlstate.Rescheduler = (*Store)(nil)

// rescheduleBatch bounds the URLs of one Reschedule script call.
const rescheduleBatch = 500

// Reschedule implements crawlstate.Rescheduler for the bucket's URLs (the
// caller routes each URL to its bucket's Store): per batch of URLs, one
// read-only script reads the records that have a Schedule and are not
// pending with their Due, fn decides in Go, and one fenced script writes
// the decisions of records that did not change in between (a compare and
// set: a Complete or TakeDue meanwhile wins, that URL is left alone). It
// fails with ErrFenced when the bucket's lease is lost.
func (s *Store) Reschedule(ctx context.Context, urls []string, fn crawlstate.RescheduleFunc) (int, error) {
	if err := s.usable(ctx); err != nil {
		return 0, err
	}
	total := 0
	seen := make(map[string]bool, len(urls))
	for len(urls) > 0 {
		batch := urls[:min(len(urls), rescheduleBatch)]
		urls = urls[len(batch):]
		var keys []any
		var us []string
		for _, u := range batch {
			if seen[u] {
				continue
			}
			seen[u] = true
			keys = append(keys, string(dedup.KeyOf(u).AppendBinary(make([]byte, 0, 16))))
			us = append(us, u)
		}
		if len(keys) == 0 {
			continue
		}
		v, err := rescheduleReadScript.Run(ctx, s.rdb, s.keys, keys...).StringSlice()
		if err != nil {
			return total, s.fail("cannot read revisit records to reschedule", err)
		}
		if len(v) != 2*len(keys) {
			return total, fmt.Errorf("cannot read revisit records to reschedule: %d reply items for %d URLs", len(v), len(keys))
		}
		args := []any{s.fence}
		for i := range keys {
			rec, dueArg := v[2*i], v[2*i+1]
			if rec == "" {
				continue
			}
			var r frontier.Request
			if err := r.UnmarshalBinary([]byte(rec)); err != nil || r.URL != us[i] || r.Schedule == "" {
				continue // damaged, another URL under the key, or a failure without a schedule
			}
			var due time.Time
			if dueArg != "" {
				ms, err := strconv.ParseFloat(dueArg, 64)
				if err != nil {
					return total, fmt.Errorf("cannot read the due time %q of %s: %w", dueArg, us[i], err)
				}
				due = time.UnixMilli(int64(ms))
			}
			cur := r
			cur.Seq = 0
			sch, next, ok := fn(cur, due)
			if !ok {
				continue
			}
			r.Schedule = sch
			nrec, err := r.MarshalBinary()
			if err != nil {
				return total, fmt.Errorf("cannot reschedule %s: %w", us[i], err)
			}
			nextArg := ""
			if !next.IsZero() {
				nextArg = strconv.FormatInt(max(next.UnixMilli(), 1), 10)
			}
			args = append(args, keys[i], rec, string(nrec), nextArg)
		}
		if len(args) == 1 {
			continue
		}
		n, err := rescheduleScript.Run(ctx, s.rdb, s.keys, args...).Int()
		if err != nil {
			return total, s.fail("cannot reschedule revisits", err)
		}
		total += n
	}
	return total, nil
}

// ScheduleCounts implements crawlstate.Rescheduler for the bucket (one
// pipeline).
func (s *Store) ScheduleCounts(ctx context.Context, now time.Time) (crawlstate.ScheduleCounts, error) {
	if err := s.usable(ctx); err != nil {
		return crawlstate.ScheduleCounts{}, err
	}
	return ReadScheduleCounts(ctx, s.rdb, []string{s.prefix}, now)
}

// ReadScheduleCounts reads the revisit schedule of the buckets whose key
// prefixes (KeyPrefix) are given, summed, in one pipeline: no Store is
// opened and nothing is written (spider status, the dashboard's Redis
// view). Buckets that hold no schedule count nothing.
func ReadScheduleCounts(ctx context.Context, rdb redis.UniversalClient, prefixes []string, now time.Time) (crawlstate.ScheduleCounts, error) {
	var c crawlstate.ScheduleCounts
	if len(prefixes) == 0 {
		return c, nil
	}
	type cmds struct {
		rv, due, over, failed *redis.IntCmd
		first                 *redis.ZSliceCmd
	}
	all := make([]cmds, len(prefixes))
	limit := strconv.FormatInt(now.UnixMilli(), 10)
	_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, pre := range prefixes {
			all[i] = cmds{
				rv: p.HLen(ctx, pre+"rv"), due: p.ZCard(ctx, pre+"due"),
				over:   p.ZCount(ctx, pre+"due", "-inf", limit),
				failed: p.SCard(ctx, pre+"failed"),
				first:  p.ZRangeWithScores(ctx, pre+"due", 0, 0),
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return c, fmt.Errorf("cannot read the revisit schedule from Redis: %w", err)
	}
	for _, x := range all {
		c.Records += x.rv.Val()
		c.Due += x.due.Val()
		c.Overdue += x.over.Val()
		c.Failed += x.failed.Val()
		if z := x.first.Val(); len(z) > 0 {
			t := time.UnixMilli(int64(z[0].Score))
			if c.Next.IsZero() || t.Before(c.Next) {
				c.Next = t
			}
		}
	}
	return c, nil
}
