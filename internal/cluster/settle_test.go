package cluster

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
)

// TestSettle checks which member list settle returns: it counts the quiet
// window from the registration, takes the changes that come within it, and
// returns at once when the registration is older than its cap.
func TestSettle(t *testing.T) {
	v1, v2 := View{Epoch: 1}, View{Epoch: 2}
	tests := []struct {
		name  string
		from  time.Time
		quiet time.Duration
		later []View // views waiting in the channel, then it is closed
		want  int64
	}{
		{"registration older than the cap: the first list, changes not read", time.Now().Add(-time.Minute), time.Second, []View{v2}, 1},
		{"a change within the window is taken", time.Now(), time.Minute, []View{v2}, 2},
		{"the same epoch again changes nothing", time.Now(), time.Minute, []View{v1}, 1},
		{"zero registration time: counted from now", time.Time{}, time.Minute, []View{v2}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			views := make(chan View, len(tt.later))
			for _, v := range tt.later {
				views <- v
			}
			close(views)
			if got := settle(testCtx(t), views, v1, tt.quiet, tt.from); got.Epoch != tt.want {
				t.Fatalf("settle returned epoch %d, want %d", got.Epoch, tt.want)
			}
		})
	}
}

// TestCoordinatorStartedTogether: nodes started together (joined within a
// fraction of the settle time, which p2p nodes use at 100 ms) split the
// buckets at once: every bucket is acquired exactly once, by the node the
// table of both members names, and none is released or lost on the way
// (no hand-over back and forth). Asserted on the events, not on times.
func TestCoordinatorStartedTogether(t *testing.T) {
	for _, gap := range []time.Duration{0, 20 * time.Millisecond} {
		t.Run(fmt.Sprintf("joined %v apart", gap), func(t *testing.T) {
			srv := redistest.Start(t)
			rdb := srv.Client()
			ctx := testCtx(t)
			keys := mustKeys(t, "together")
			var mu sync.Mutex
			acquired := map[int][]string{} // bucket → nodes that acquired it, in order
			others := map[string]int{}     // node → Released and Lost events
			var wg sync.WaitGroup
			var ms []*Membership
			var cancels []context.CancelFunc
			for i, id := range []string{"n1", "n2"} {
				if i > 0 {
					time.Sleep(gap)
				}
				m := NewMembership(rdb, keys, coordMembership)
				if _, err := m.Join(ctx, Member{ID: id, Weight: 1}); err != nil {
					t.Fatal(err)
				}
				ms = append(ms, m)
				c, err := NewCoordinator(rdb, m, CoordinatorConfig{Buckets: coordBuckets, Leases: LeasesConfig{TTL: 5 * time.Second},
					Retry: 50 * time.Millisecond, Settle: 100 * time.Millisecond})
				if err != nil {
					t.Fatal(err)
				}
				rctx, cancel := context.WithCancel(ctx)
				cancels = append(cancels, cancel)
				wg.Add(2)
				go func() { defer wg.Done(); _ = c.Run(rctx) }()
				go func() {
					defer wg.Done()
					for ev := range c.Events() {
						if rctx.Err() != nil {
							continue // the stop's releases
						}
						mu.Lock()
						if ev.Kind == Acquired {
							acquired[ev.Bucket] = append(acquired[ev.Bucket], id)
						} else {
							others[id]++
						}
						mu.Unlock()
					}
				}()
			}
			table, _ := expectedTable(t, ctx, ms[0])
			if countOwned(table)["n2"] == 0 {
				t.Fatalf("the table gives n2 nothing: %v", countOwned(table))
			}
			eventually(t, convergeWithin, "every bucket acquired", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(acquired) == coordBuckets
			})
			time.Sleep(300 * time.Millisecond) // a late hand-over would show by now (Retry 50 ms)
			for _, cancel := range cancels {
				cancel()
			}
			wg.Wait()
			for _, m := range ms {
				m.Close()
			}
			for b, ids := range acquired {
				if len(ids) != 1 || ids[0] != table[b] {
					t.Errorf("bucket %d acquired by %v, want once by %s", b, ids, table[b])
				}
			}
			if len(others) > 0 {
				t.Errorf("buckets released or lost while both nodes ran: %v", others)
			}
		})
	}
}

// TestCoordinatorFirst: the buckets of CoordinatorConfig.First are
// acquired and announced before the rest of the node's share.
func TestCoordinatorFirst(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	ctx := testCtx(t)
	keys := mustKeys(t, "first")
	m := NewMembership(rdb, keys, coordMembership)
	if _, err := m.Join(ctx, Member{ID: "n1", Weight: 1}); err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	first := []int{100, 5, 77}
	c, err := NewCoordinator(rdb, m, CoordinatorConfig{Buckets: coordBuckets, Leases: LeasesConfig{TTL: 5 * time.Second}, First: first})
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(rctx) }()
	var order []int
	for ev := range c.Events() {
		if ev.Kind != Acquired {
			t.Fatalf("unexpected %v event for bucket %d", ev.Kind, ev.Bucket)
		}
		order = append(order, ev.Bucket)
		if len(order) == coordBuckets {
			break
		}
	}
	cancel()
	for range c.Events() {
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := order[:3]; got[0] != 5 || got[1] != 77 || got[2] != 100 {
		t.Fatalf("first buckets announced %v, want [5 77 100]", got)
	}
	seen := map[int]bool{}
	for _, b := range order {
		seen[b] = true
	}
	if len(seen) != coordBuckets {
		t.Fatalf("%d distinct buckets announced, want %d", len(seen), coordBuckets)
	}
}
