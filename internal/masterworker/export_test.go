package masterworker

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Victim plays a worker killed with kill -9: it takes a work number,
// heart-beats once, moves one task from srq into its processing list and
// never answers. It returns the processing list's key.
func Victim(t *testing.T, rdb redis.UniversalClient, crawl string) string {
	t.Helper()
	ctx := context.Background()
	k := newKeys(crawl)
	var id string
	deadline := time.Now().Add(10 * time.Second)
	for {
		v, err := rdb.LPop(ctx, k.trq()).Result()
		if err == nil {
			id = v
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no work number in trq: the master did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}
	n, _ := strconv.Atoi(id)
	now, err := rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := rdb.HSet(ctx, k.workers(), id, now.UnixMilli()).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.BLMove(ctx, k.srq(), k.processing(n), "LEFT", "RIGHT", 10*time.Second).Err(); err != nil {
		t.Fatalf("the victim got no task: %v", err)
	}
	return k.processing(n)
}
