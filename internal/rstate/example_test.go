package rstate_test

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
	"github.com/spider-crawler/spider/internal/crawlstate"
	"github.com/spider-crawler/spider/internal/frontier"
	"github.com/spider-crawler/spider/internal/rstate"
)

// A node that holds the lease of bucket 12 opens its state fenced by the
// lease key, discovers seeds and completes a fetch with the links it found.
// (Not run: it needs a Redis at localhost:6379.)
func ExampleOpen() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	defer rdb.Close()
	bucket := rstate.BucketName(12)
	st, err := rstate.Open(ctx, rdb, rstate.Options{
		Crawl:  "news",
		Bucket: bucket,
		Fence:  &rstate.Fence{Key: "spider:news:{" + bucket + "}:owner", Value: "node1:7f3a"},
	})
	if err != nil {
		fmt.Println(err) // wraps rstate.ErrFenced if another node owns the bucket
		return
	}
	defer st.Close()
	seeds, err := st.Discover(ctx, []frontier.Request{{URL: "https://example.com/", Key: "example.com:443"}})
	if err != nil || len(seeds) == 0 {
		return
	}
	res, err := st.Complete(ctx, seeds[0], crawlstate.Outcome{Class: "200", Stored: true},
		[]frontier.Request{{URL: "https://example.com/about", Key: "example.com:443", Depth: 1}})
	if err == nil {
		fmt.Println("new links:", len(res.New))
	}
}
