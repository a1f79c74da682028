package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/pflag"

	"github.com/spider-crawler/spider/internal/crawls"
)

// expireDoneFlag registers --expire-done into p on the commands that end
// a distributed crawl (master, crawl --redis, layered, center).
func expireDoneFlag(fs *pflag.FlagSet, p *time.Duration) {
	fs.DurationVar(p, "expire-done", 0, "when the crawl is done, give every key of the crawl on this command's Redis this time to live (e.g. 24h), as spider drop --after does; 0 keeps them (range 0 to 8760h)")
}

// checkExpireDone is the range of --expire-done, a usage error.
func checkExpireDone(d time.Duration) error {
	if d < 0 || d > 8760*time.Hour {
		return fmt.Errorf("%w: --expire-done %s is out of range: use 0 (keep the keys) to 8760h", errUsage, d)
	}
	return nil
}

// expireDone gives every key of the done crawl name on rdb the time to
// live ttl (crawls.Expire, the logic of spider drop --after) and says so
// on w; nothing when ttl is 0. Call it only once the crawl is marked done:
// a stopped or interrupted crawl keeps its keys for the next run. On an
// error nothing is reported as done: the message says how many keys got
// their expiry and how to finish (spider drop --after).
func expireDone(ctx context.Context, rdb redis.UniversalClient, rf *redisFlags, name string, ttl time.Duration, w io.Writer) error {
	if ttl <= 0 {
		return nil
	}
	// A context of its own: the crawl's may be ending.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	r, err := crawls.Expire(ctx, rdb, name, ttl)
	if err != nil {
		return rf.lost(fmt.Errorf("cannot give crawl %q's keys their expiry (--expire-done %s): %d keys got it before the error; run spider drop --redis URL --crawl %s --after %s to finish: %w",
			name, ttl, r.Total, name, ttl, err))
	}
	fmt.Fprintf(w, "crawl %q done: %d Redis keys expire in %s (--expire-done)\n", name, r.Total, ttl)
	return nil
}
