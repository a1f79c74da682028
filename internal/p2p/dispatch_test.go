package p2p

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
	"github.com/spider-crawler/spider/internal/frontier"
)

// TestDispatcherGroupCommit: a send is flushed at once (no wait for the
// timer), URLs for one destination go in batches of at most size, and the
// sent counter counts every URL.
func TestDispatcherGroupCommit(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	k := newQKeys("gc")
	d := newDispatcher(rdb, k, "a", 64, func(int) string { return "b" }, time.Hour, 2, slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go d.run(ctx)
	var rs []frontier.Request
	for i := range 5 {
		rs = append(rs, frontier.Request{URL: fmt.Sprintf("http://h%d.test/", i)})
	}
	start := time.Now()
	if err := d.send(map[string][]frontier.Request{"b": rs})(); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Fatalf("send waited %v: the flush waited for the (1 h) timer", el)
	}
	raw, err := rdb.LRange(ctx, k.inbox("b"), 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range raw {
		b, err := decodeBatch(r)
		if err != nil {
			t.Fatal(err)
		}
		if len(b.URLs) > 2 || b.From != "a" {
			t.Errorf("batch from %q with %d URLs, want from a with at most 2", b.From, len(b.URLs))
		}
		n += len(b.URLs)
	}
	if len(raw) != 3 || n != 5 {
		t.Errorf("%d batches with %d URLs, want 3 with 5", len(raw), n)
	}
	if sent, _ := rdb.HGet(ctx, k.sent(), "a>b").Int(); sent != 5 {
		t.Errorf("sent a>b = %d, want 5", sent)
	}
}
