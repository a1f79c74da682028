package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
	"github.com/spider-crawler/spider/internal/partition"
)

const coordBuckets = 128

var coordMembership = MembershipConfig{Heartbeat: 100 * time.Millisecond, TTL: time.Second, Poll: 100 * time.Millisecond}

// ownership is the test's record of who works on which bucket, fed by every node's
// Drain hook and events; it flags two workers on one bucket and tokens going back.
type ownership struct {
	mu         sync.Mutex
	owner      map[int]string
	lastToken  map[int]int64
	violations []string
	acquired   int
}

func newOwnership() *ownership {
	return &ownership{owner: map[int]string{}, lastToken: map[int]int64{}}
}

func (o *ownership) start(node string, b int, token int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if cur := o.owner[b]; cur != "" && cur != node {
		o.violations = append(o.violations, fmt.Sprintf("bucket %d: %s acquired while %s works on it", b, node, cur))
	}
	if token <= o.lastToken[b] {
		o.violations = append(o.violations, fmt.Sprintf("bucket %d: token %d not above %d", b, token, o.lastToken[b]))
	}
	o.owner[b], o.lastToken[b] = node, token
	o.acquired++
}

func (o *ownership) stop(node string, b int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.owner[b] == node {
		delete(o.owner, b)
	}
}

func (o *ownership) stopAll(node string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for b, n := range o.owner {
		if n == node {
			delete(o.owner, b)
		}
	}
}

func (o *ownership) snapshot() (map[int]string, []string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	cp := make(map[int]string, len(o.owner))
	for b, n := range o.owner {
		cp[b] = n
	}
	return cp, append([]string(nil), o.violations...)
}

type testNode struct {
	id      string
	m       *Membership
	c       *Coordinator
	cancel  context.CancelFunc
	runErr  chan error
	drained sync.WaitGroup
	writes  int
}

// startNode joins a node and runs its coordinator; events feed own.
func startNode(t *testing.T, rdb redis.UniversalClient, keys Keys, id string, weight int, own *ownership) *testNode {
	t.Helper()
	ctx := testCtx(t)
	n := &testNode{id: id, runErr: make(chan error, 1)}
	n.m = NewMembership(rdb, keys, coordMembership)
	if _, err := n.m.Join(ctx, Member{ID: id, Weight: weight}); err != nil {
		t.Fatal(err)
	}
	c, err := NewCoordinator(rdb, n.m, CoordinatorConfig{
		Buckets: coordBuckets,
		Leases:  LeasesConfig{TTL: testTTL},
		Retry:   50 * time.Millisecond,
		Drain: func(ctx context.Context, b int) error {
			own.stop(id, b) // the node stops working on b before the lease goes
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	n.c = c
	rctx, cancel := context.WithCancel(ctx)
	n.cancel = cancel
	go func() { n.runErr <- c.Run(rctx) }()
	n.drained.Add(1)
	go func() {
		defer n.drained.Done()
		for ev := range c.Events() {
			switch ev.Kind {
			case Acquired:
				if !c.Current(ev) {
					continue // read late: released since (its Released event follows)
				}
				own.start(id, ev.Bucket, ev.Token)
				_, err := appendScript.Run(ctx, rdb, keys, id, Lease{Bucket: ev.Bucket, Token: ev.Token}, []string{keys.Bucket(ev.Bucket, "log")}, id)
				if err == nil {
					n.writes++
				} else if !errors.Is(err, ErrFenced) {
					t.Errorf("%s: write to bucket %d: %v", id, ev.Bucket, err)
				}
			case Released, Lost:
				own.stop(id, ev.Bucket)
			}
		}
	}()
	t.Cleanup(func() { n.cancel(); n.m.Close() })
	return n
}

// stopGracefully leaves the membership and stops the coordinator (releasing).
func (n *testNode) stopGracefully(t *testing.T) {
	t.Helper()
	if err := n.m.Leave(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	n.cancel()
	if err := <-n.runErr; err != nil {
		t.Fatalf("%s: Run: %v", n.id, err)
	}
	n.drained.Wait()
}

// crash stops the node as kill -9 would: no leave, no release, no more renewals.
func (n *testNode) crash(own *ownership) {
	n.m.Close()
	n.c.Leases().Abandon()
	own.stopAll(n.id)
	n.cancel()
	<-n.runErr
	n.drained.Wait()
}

// expectedTable computes the bucket table from the live members, as every node does.
func expectedTable(t *testing.T, ctx context.Context, obs *Membership) ([]string, View) {
	t.Helper()
	v, err := obs.Members(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r, err := v.Ring()
	if err != nil {
		return nil, v
	}
	return r.Balanced(coordBuckets, 0), v
}

// converged reports whether every bucket is worked on by, and leased in Redis to, the
// node the table names.
func converged(ctx context.Context, rdb redis.UniversalClient, keys Keys, own *ownership, table []string) bool {
	if table == nil {
		return false
	}
	owners, _ := own.snapshot()
	pipe := rdb.Pipeline()
	gets := make([]*redis.StringCmd, len(table))
	for b := range table {
		gets[b] = pipe.Get(ctx, keys.Owner(b))
	}
	_, _ = pipe.Exec(ctx)
	for b, want := range table {
		if owners[b] != want {
			return false
		}
		node, _, err := ParseOwnerValue(gets[b].Val())
		if err != nil || node != want {
			return false
		}
	}
	return true
}

func waitConverged(t *testing.T, ctx context.Context, rdb redis.UniversalClient, keys Keys, own *ownership, obs *Membership, d time.Duration, what string) []string {
	t.Helper()
	var table []string
	start := time.Now()
	eventually(t, d, what, func() bool {
		table, _ = expectedTable(t, ctx, obs)
		return converged(ctx, rdb, keys, own, table)
	})
	t.Logf("%s: converged in %v", what, time.Since(start).Round(time.Millisecond))
	return table
}

func countOwned(table []string) map[string]int {
	c := map[string]int{}
	for _, id := range table {
		c[id]++
	}
	return c
}

// runRebalance drives nodes joining, leaving and crashing over rdb and checks that every
// bucket ends with the node the ring names and that no bucket ever had two workers.
func runRebalance(t *testing.T, rdb func() redis.UniversalClient) {
	ctx := testCtx(t)
	keys := mustKeys(t, "co")
	own := newOwnership()
	obs := NewMembership(rdb(), keys, coordMembership)

	n1 := startNode(t, rdb(), keys, "n1", 1, own)
	n2 := startNode(t, rdb(), keys, "n2", 2, own)
	t1 := waitConverged(t, ctx, rdb(), keys, own, obs, convergeWithin, "n1+n2")
	if c := countOwned(t1); c["n1"] < 40 || c["n2"] < 80 {
		t.Fatalf("shares n1=%d n2=%d of %d, want about 1:2", c["n1"], c["n2"], coordBuckets)
	}

	n3 := startNode(t, rdb(), keys, "n3", 1, own)
	t2 := waitConverged(t, ctx, rdb(), keys, own, obs, convergeWithin, "n3 joined")
	needless := 0
	for b := range t1 {
		if t1[b] != t2[b] && t2[b] != "n3" {
			needless++
		}
	}
	t.Logf("n3 joined: %d of %d buckets moved to it, %d moved elsewhere (bounded-load shedding)", countOwned(t2)["n3"], coordBuckets, needless)
	if needless > coordBuckets/20 {
		t.Fatalf("%d buckets moved between old nodes on a join", needless)
	}

	// Graceful leave: the others take n2's buckets as soon as it releases them, well
	// before a lease TTL.
	left := time.Now()
	n2.stopGracefully(t)
	waitConverged(t, ctx, rdb(), keys, own, obs, convergeWithin, "n2 left")
	if d := time.Since(left); d > testTTL {
		t.Errorf("graceful hand-over took %v, more than a lease TTL (%v)", d, testTTL)
	}

	// Crash: n3's buckets move after its member TTL and lease TTL.
	n3.crash(own)
	table := waitConverged(t, ctx, rdb(), keys, own, obs, convergeWithin, "n3 crashed")
	if c := countOwned(table); c["n1"] != coordBuckets {
		t.Fatalf("n1 owns %d buckets alone, want all %d", c["n1"], coordBuckets)
	}
	if len(n1.c.Owned()) != coordBuckets {
		t.Fatalf("n1.Owned() = %d leases", len(n1.c.Owned()))
	}
	n1.stopGracefully(t)
	_, violations := own.snapshot()
	for _, v := range violations {
		t.Error(v)
	}
	// Every bucket's fenced log lists tokens of successive holders only.
	for b := range coordBuckets {
		if node, _, _, _ := Holder(ctx, rdb(), keys, b); node != "" {
			t.Fatalf("bucket %d still leased to %s after every node stopped", b, node)
		}
	}
	t.Logf("%d acquisitions, %d fenced writes, no bucket with two workers", own.acquired, n1.writes+n2.writes+n3.writes)
}

func TestCoordinatorRebalance(t *testing.T) {
	srv := redistest.Start(t)
	runRebalance(t, func() redis.UniversalClient { return srv.Client() })
}

func TestCoordinatorPlainTable(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testCtx(t)
	rdb := srv.Client()
	keys := mustKeys(t, "plain")
	m := NewMembership(rdb, keys, coordMembership)
	if _, err := m.Join(ctx, Member{ID: "p", Weight: 1}); err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	other := NewMembership(rdb, keys, coordMembership)
	if _, err := other.Join(ctx, Member{ID: "q", Weight: 3}); err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	c, err := NewCoordinator(rdb, m, CoordinatorConfig{Buckets: 64, Plain: true, Leases: LeasesConfig{TTL: testTTL}, Retry: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(rctx) }()
	ring, _ := partition.NewRing([]partition.Member{{ID: "p", Weight: 1}, {ID: "q", Weight: 3}})
	want := 0
	for _, id := range ring.Owners(64) {
		if id == "p" {
			want++
		}
	}
	got := 0
	for ev := range c.Events() {
		if ev.Kind == Acquired {
			got++
			if ring.Owner(ev.Bucket) != "p" {
				t.Fatalf("acquired bucket %d, which the plain ring gives to %s", ev.Bucket, ring.Owner(ev.Bucket))
			}
		}
		if got == want {
			break
		}
	}
	if v := c.View(); !v.Has("p") || !v.Has("q") {
		t.Fatalf("View = %v", ids(v))
	}
	cancel()
	released := 0
	for ev := range c.Events() {
		if ev.Kind == Released {
			released++
		}
	}
	if err := <-done; err != nil || released != want {
		t.Fatalf("Run = %v, released %d of %d on stop", err, released, want)
	}
}

func TestCoordinatorNeedsJoin(t *testing.T) {
	srv := redistest.Start(t)
	m := NewMembership(srv.Client(), mustKeys(t, "nj"), coordMembership)
	if _, err := NewCoordinator(srv.Client(), m, CoordinatorConfig{}); !errors.Is(err, ErrNotJoined) {
		t.Fatalf("NewCoordinator before Join: %v", err)
	}
}

// TestCoordinatorLosesOnRedisKill: Redis dies under a running coordinator; every bucket
// is reported Lost before the lease TTL; Redis comes back (AOF) and the node gets its
// buckets back with larger tokens.
func TestCoordinatorLosesOnRedisKill(t *testing.T) {
	srv := redistest.Start(t, redistest.AppendOnly())
	ctx := testCtx(t)
	rdb := srv.Client()
	keys := mustKeys(t, "ck")
	own := newOwnership()
	obs := NewMembership(srv.Client(), keys, coordMembership)
	n := startNode(t, rdb, keys, "solo", 1, own)
	waitConverged(t, ctx, rdb, keys, own, obs, convergeWithin, "solo owns all")
	killed := time.Now()
	srv.Kill()
	eventually(t, testTTL, "all buckets lost", func() bool {
		owners, _ := own.snapshot()
		return len(owners) == 0
	})
	if d := time.Since(killed); d >= testTTL {
		t.Fatalf("losses reported %v after the kill, not before the TTL %v", d, testTTL)
	}
	srv.Restart()
	waitConverged(t, ctx, rdb, keys, own, obs, convergeWithin, "solo back after restart")
	_, violations := own.snapshot()
	for _, v := range violations {
		t.Error(v)
	}
	n.stopGracefully(t)
}
