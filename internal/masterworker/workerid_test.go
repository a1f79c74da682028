package masterworker

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
)

// TestWorkNumbersNeverShared: work numbers come from trq (LPOP), so workers taking them
// at once never get the same one; and a worker declared dead while stalled, whose number
// another worker took meanwhile, learns on its next heartbeat that the number is no
// longer its own (it would otherwise share that worker's processing list).
func TestWorkNumbersNeverShared(t *testing.T) {
	rs := redistest.Start(t)
	rdb := rs.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	k := newKeys("ids")
	const n = 40
	for i := 1; i <= n; i++ {
		if err := rdb.RPush(ctx, k.trq(), i).Err(); err != nil {
			t.Fatal(err)
		}
	}
	newWorker := func(token string) *Worker {
		return &Worker{rdb: rdb, k: k, instance: token, log: slog.New(slog.DiscardHandler), opt: Options{Heartbeat: time.Second}}
	}
	var mu sync.Mutex
	got := map[int]bool{}
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id, err := newWorker("w" + strconv.Itoa(i)).takeNumber(ctx)
			mu.Lock()
			defer mu.Unlock()
			if err != nil || id == 0 || got[id] {
				t.Errorf("worker %d took number %d (%v): taken before, or none", i, id, err)
			}
			got[id] = true
		}()
	}
	wg.Wait()

	// The stall: a holds number 7; the master declares it dead (what requeue does) and b
	// takes 7 and registers.
	rdb.RPush(ctx, k.trq(), 7)
	a := newWorker("token-a")
	if a.id, _ = a.takeNumber(ctx); a.id != 7 {
		t.Fatalf("a took %d, want 7", a.id)
	}
	if err := a.beat(ctx, true); err != nil {
		t.Fatal(err)
	}
	if err := a.beat(ctx, false); err != nil {
		t.Fatalf("a's own heartbeat: %v", err)
	}
	pipe := rdb.TxPipeline()
	pipe.HDel(ctx, k.workers(), "7")
	pipe.HDel(ctx, k.owners(), "7")
	pipe.RPush(ctx, k.trq(), 7)
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	b := newWorker("token-b")
	if b.id, _ = b.takeNumber(ctx); b.id != 7 {
		t.Fatalf("b took %d, want 7", b.id)
	}
	if err := b.beat(ctx, true); err != nil {
		t.Fatal(err)
	}
	if err := a.beat(ctx, false); !errors.Is(err, errDeclaredDead) {
		t.Fatalf("a's heartbeat after b took its number: %v, want errDeclaredDead", err)
	}
	if err := b.beat(ctx, false); err != nil {
		t.Fatalf("b's heartbeat: %v", err)
	}
}
