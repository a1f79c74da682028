package cluster

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
)

// TestBlockingPops: values come back as Redis gives them, and a time-out below one
// second is kept (go-redis's own helpers would wait a whole second) and reported as
// redis.Nil.
func TestBlockingPops(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Start(t).Client()
	rdb.RPush(ctx, "a", "1", "2")
	if v, err := BLPop(ctx, rdb, 100*time.Millisecond, "empty", "a"); err != nil || len(v) != 2 || v[0] != "a" || v[1] != "1" {
		t.Fatalf("BLPop = %v, %v", v, err)
	}
	if v, err := BLMove(ctx, rdb, "a", "b", 100*time.Millisecond); err != nil || v != "2" {
		t.Fatalf("BLMove = %q, %v", v, err)
	}
	if n, _ := rdb.LLen(ctx, "b").Result(); n != 1 {
		t.Fatalf("b holds %d entries, want 1", n)
	}
	start := time.Now()
	if _, err := BLPop(ctx, rdb, 150*time.Millisecond, "a"); !errors.Is(err, redis.Nil) {
		t.Fatalf("BLPop on an empty list: %v, want redis.Nil", err)
	}
	if _, err := BLMove(ctx, rdb, "a", "b", 150*time.Millisecond); !errors.Is(err, redis.Nil) {
		t.Fatalf("BLMove on an empty list: %v, want redis.Nil", err)
	}
	if d := time.Since(start); d > 1800*time.Millisecond { // rounded up, they would take 2 s
		t.Errorf("two 150 ms waits took %v: the time-out was rounded up", d)
	}
}
