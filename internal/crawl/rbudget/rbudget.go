// Package rbudget is crawl.Budget (--max-pages) kept in Redis, for crawls
// that several processes schedule: the peer-to-peer nodes, the hosts of
// the mixed topology.
package rbudget

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spider-crawler/spider/internal/cluster"
	"github.com/spider-crawler/spider/internal/crawl"
)

// Budget is --max-pages over all the processes of a crawl (crawl.Budget)
// in two keys of one Redis, which must share a hash tag:
//
//   - Keys.Used counts the URLs completed, over all processes and runs;
//   - Keys.Held is a sorted set of the slots reserved by fetches in
//     flight, each scored by its expiry on Redis server time.
//
// Reserve takes a slot only while used + held < limit, atomically (a Lua
// script), so the processes together never start a fetch beyond the
// limit. A process commits a slot after the URL's completion reached the
// crawl's state, so once used reaches the limit no URL is in flight
// anywhere and the crawl can be marked done. A slot of a process that died
// is reclaimed when it expires (the TTL, longer than any fetch): if such a
// process died between completing a URL and counting it, the crawl may end
// one URL beyond the limit. Without a limit the budget only counts
// (Commit), so a crawl resumed with --max-pages knows what earlier runs
// completed.
type Budget struct {
	rdb   redis.UniversalClient
	k     Keys
	limit int64 // 0: count only
	ttl   time.Duration
	log   *slog.Logger

	run   string // this process's slots: run + sequence number
	seq   atomic.Uint64
	spent atomic.Bool

	mu   sync.Mutex
	held []string // slots this process holds
}

var _ crawl.Budget = (*Budget)(nil)

// Keys name a budget's two keys; they must share a hash tag.
type Keys struct{ Used, Held string }

// New returns the budget of limit URLs (0: count only) in k of rdb for the
// process named node; a reserved slot expires after ttl. log may be nil.
func New(rdb redis.UniversalClient, k Keys, node string, limit int64, ttl time.Duration, log *slog.Logger) *Budget {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Budget{rdb: rdb, k: k, limit: limit, ttl: ttl, log: log,
		run: node + ":" + strconv.FormatInt(time.Now().UnixNano(), 36) + ":"}
}

// SlotTTL is a slot's life for a crawl of cfg: longer than any fetch can
// take (a robots.txt fetch and the page, each bounded by the fetch
// time-out, and the host's delay between them), so that only a dead
// process's slots expire.
func SlotTTL(cfg crawl.Config) time.Duration {
	return 2*time.Duration(cfg.Timeout) + 2*max(time.Duration(cfg.Delay), time.Duration(cfg.MaxCrawlDelay)) + 30*time.Second
}

// reserveScript: KEYS used, held; ARGV limit, slot, ttl ms. Returns 1
// (taken), 0 (every free slot is held: wait) or -1 (the limit is spent).
var reserveScript = redis.NewScript(cluster.LuaNow + `
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now_ms)
local used = tonumber(redis.call('GET', KEYS[1]) or '0')
local limit = tonumber(ARGV[1])
if used >= limit then return -1 end
if used + redis.call('ZCARD', KEYS[2]) >= limit then return 0 end
redis.call('ZADD', KEYS[2], now_ms + tonumber(ARGV[3]), ARGV[2])
return 1`)

// endScript: KEYS used, held; ARGV slot, commit ("1" counts the URL,
// even when the slot expired meanwhile: the URL is completed).
var endScript = redis.NewScript(`
redis.call('ZREM', KEYS[2], ARGV[1])
if ARGV[2] == '1' then redis.call('INCR', KEYS[1]) end
return 1`)

// reserveWait is how long Reserve waits before asking again while every
// free slot is held (only near the end of a limited crawl).
const reserveWait = 50 * time.Millisecond

// Reserve implements crawl.Budget.
func (b *Budget) Reserve(ctx context.Context) error {
	if b.limit <= 0 {
		return nil
	}
	for {
		if b.spent.Load() {
			return crawl.ErrLimitReached
		}
		slot := b.run + strconv.FormatUint(b.seq.Add(1), 10)
		var got int64
		err := cluster.Retry(ctx, func() (err error) {
			got, err = reserveScript.Run(ctx, b.rdb, []string{b.k.Used, b.k.Held},
				b.limit, slot, b.ttl.Milliseconds()).Int64()
			return err
		})
		if err != nil {
			return fmt.Errorf("cannot reserve a --max-pages slot in Redis: %w", err)
		}
		switch got {
		case 1:
			b.mu.Lock()
			b.held = append(b.held, slot)
			b.mu.Unlock()
			return nil
		case -1:
			b.spent.Store(true)
			return crawl.ErrLimitReached
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(reserveWait):
		}
	}
}

// Release implements crawl.Budget.
func (b *Budget) Release() { b.end(false) }

// Commit implements crawl.Budget.
func (b *Budget) Commit() { b.end(true) }

// end gives back one of this process's slots (they are alike), counting a
// completed URL with commit. A slot that cannot be given back expires.
func (b *Budget) end(commit bool) {
	slot := ""
	if b.limit > 0 {
		b.mu.Lock()
		if n := len(b.held); n > 0 {
			slot, b.held = b.held[n-1], b.held[:n-1]
		}
		b.mu.Unlock()
		if slot == "" && !commit {
			return
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := "0"
	if commit {
		c = "1"
	}
	err := cluster.Retry(ctx, func() error {
		return endScript.Run(ctx, b.rdb, []string{b.k.Used, b.k.Held}, slot, c).Err()
	})
	if err != nil {
		b.log.Warn("cannot count a completed URL or give back its --max-pages slot; the slot expires", "slot", slot, "commit", commit, "err", err)
	}
}

// Spent implements crawl.Budget: the limit's URLs are completed over all
// processes.
func (b *Budget) Spent() bool {
	if b.limit <= 0 {
		return false
	}
	if b.spent.Load() {
		return true
	}
	used, err := b.Used(context.Background())
	if err == nil && used >= b.limit {
		b.spent.Store(true)
		return true
	}
	return false
}

// Used reads the URLs completed over all processes and runs.
func (b *Budget) Used(ctx context.Context) (int64, error) {
	n, err := b.rdb.Get(ctx, b.k.Used).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	return n, err
}
