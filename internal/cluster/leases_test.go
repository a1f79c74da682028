package cluster

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
)

const testTTL = 900 * time.Millisecond

// lostLog records OnLost calls with their times.
type lostLog struct {
	mu   sync.Mutex
	lost []Lease
	at   []time.Time
}

func (l *lostLog) add(ls Lease) {
	l.mu.Lock()
	l.lost = append(l.lost, ls)
	l.at = append(l.at, time.Now())
	l.mu.Unlock()
}

func (l *lostLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.lost)
}

func mustLeases(t testing.TB, rdb redis.UniversalClient, keys Keys, node string, cfg LeasesConfig) *BucketLeases {
	t.Helper()
	l, err := NewBucketLeases(rdb, keys, node, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Abandon)
	return l
}

// appendScript appends ARGV[1] to the list KEYS[1] of a bucket, under the lease.
var appendScript = NewFencedScript(`return redis.call('RPUSH', KEYS[1], ARGV[1])`)

func TestLeaseAcquireRenewRelease(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testCtx(t)
	keys := mustKeys(t, "l1")
	var lostA lostLog
	a := mustLeases(t, srv.Client(), keys, "a", LeasesConfig{TTL: testTTL, OnLost: lostA.add})
	b := mustLeases(t, srv.Client(), keys, "b", LeasesConfig{TTL: testTTL})
	la, err := a.Acquire(ctx, 7)
	if err != nil || la.Token <= 0 || la.Bucket != 7 {
		t.Fatalf("Acquire = %+v, %v", la, err)
	}
	if again, err := a.Acquire(ctx, 7); err != nil || again != la {
		t.Fatalf("re-Acquire of a held lease = %+v, %v; want %+v", again, err, la)
	}
	_, err = b.Acquire(ctx, 7)
	var he *HeldError
	if !errors.As(err, &he) || !errors.Is(err, ErrHeld) || he.Holder != OwnerValue("a", la.Token) {
		t.Fatalf("b.Acquire of a's bucket: %v", err)
	}
	// Renewal keeps the lease for many TTLs (time is the subject).
	time.Sleep(3 * testTTL)
	node, tok, ttl, err := a.Holder(ctx, 7)
	if err != nil || node != "a" || tok != la.Token || ttl <= testTTL/3 {
		t.Fatalf("Holder after 3 TTLs = %q %d %v %v", node, tok, ttl, err)
	}
	if lostA.count() != 0 {
		t.Fatalf("lost %v while Redis was fine", lostA.lost)
	}
	if got := a.Held(); !slices.Equal(got, []Lease{la}) {
		t.Fatalf("Held = %v", got)
	}
	if ok, err := a.Release(ctx, 7); !ok || err != nil {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	if ok, _ := a.Release(ctx, 7); ok {
		t.Fatal("second Release reported the lease held")
	}
	lb, err := b.Acquire(ctx, 7)
	if err != nil || lb.Token <= la.Token {
		t.Fatalf("b after release: %+v, %v (a's token %d)", lb, err, la.Token)
	}
	// a's writes under its old token are fenced, b's go through.
	data := keys.Bucket(7, "log")
	if _, err := appendScript.Run(ctx, srv.Client(), keys, "a", la, []string{data}, "a"); !errors.Is(err, ErrFenced) {
		t.Fatalf("write with a stale token: %v, want ErrFenced", err)
	}
	if n, err := appendScript.Run(ctx, srv.Client(), keys, "b", lb, []string{data}, "b"); err != nil || n.(int64) != 1 {
		t.Fatalf("write under the lease = %v, %v", n, err)
	}
	if ok, err := CheckOwner(ctx, srv.Client(), keys, 7, "b", lb.Token); !ok || err != nil {
		t.Fatalf("CheckOwner(b) = %v, %v", ok, err)
	}
	if ok, _ := CheckOwner(ctx, srv.Client(), keys, 7, "a", la.Token); ok {
		t.Fatal("CheckOwner(a, stale token) = true")
	}
	// A restarted b (same ID, no local state) takes its own lease over with a new token,
	// fencing the old incarnation.
	b2 := mustLeases(t, srv.Client(), keys, "b", LeasesConfig{TTL: testTTL})
	lb2, err := b2.Acquire(ctx, 7)
	if err != nil || lb2.Token <= lb.Token {
		t.Fatalf("takeover by a new incarnation: %+v, %v", lb2, err)
	}
	if _, err := appendScript.Run(ctx, srv.Client(), keys, "b", lb, []string{data}, "old"); !errors.Is(err, ErrFenced) {
		t.Fatalf("old incarnation's write: %v, want ErrFenced", err)
	}
	// The old incarnation learns it lost the lease at its next renewal.
	eventually(t, testTTL, "old incarnation reports the loss", func() bool { _, ok := b.Token(7); return !ok })
	if err := b2.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b2.Acquire(ctx, 1); !errors.Is(err, ErrClosed) {
		t.Fatalf("Acquire after Close: %v", err)
	}
	if node, _, _, _ := Holder(ctx, srv.Client(), keys, 7); node != "" {
		t.Fatalf("lease held by %q after Close", node)
	}
}

func TestLeaseAcquireMany(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testCtx(t)
	keys := mustKeys(t, "l2")
	// A longer TTL than testTTL: a renewal round of 600 leases must fit in TTL/3 also on
	// a loaded machine under -race (with 900 ms, a starved round lost all 600).
	const ttl = 3 * time.Second
	a := mustLeases(t, srv.Client(), keys, "a", LeasesConfig{TTL: ttl})
	b := mustLeases(t, srv.Client(), keys, "b", LeasesConfig{TTL: ttl})
	all := make([]int, 1000)
	for i := range all {
		all[i] = i
	}
	got, busy, err := a.AcquireMany(ctx, all[:600])
	if err != nil || len(got) != 600 || len(busy) != 0 {
		t.Fatalf("a.AcquireMany = %d, %d, %v", len(got), len(busy), err)
	}
	got, busy, err = b.AcquireMany(ctx, all)
	if err != nil || len(got) != 400 || len(busy) != 600 {
		t.Fatalf("b.AcquireMany = %d got, %d busy, %v", len(got), len(busy), err)
	}
	if busy[0].Bucket != 0 || got[0].Bucket != 600 {
		t.Fatalf("order: busy[0]=%d got[0]=%d", busy[0].Bucket, got[0].Bucket)
	}
	// All 1000 leases survive several renewal rounds (time is the subject).
	time.Sleep(2 * ttl)
	if len(a.Held()) != 600 || len(b.Held()) != 400 {
		t.Fatalf("held after renewals: a %d, b %d", len(a.Held()), len(b.Held()))
	}
	rel, err := a.ReleaseMany(ctx, all)
	if err != nil || len(rel) != 600 {
		t.Fatalf("ReleaseMany = %d, %v", len(rel), err)
	}
}

// TestLeaseExclusiveUnderContention runs N nodes fighting over a few buckets: at any
// moment at most one holds a bucket (checked with a counter the holder raises while it
// works), tokens increase with every holding, and the fenced log of each bucket lists
// tokens in increasing order.
func TestLeaseExclusiveUnderContention(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testCtx(t)
	keys := mustKeys(t, "l3")
	const nodes, buckets = 8, 3
	var busy [buckets]atomic.Int32
	var violations, holdings atomic.Int64
	var wg sync.WaitGroup
	stop := time.Now().Add(1500 * time.Millisecond)
	for n := range nodes {
		id := fmt.Sprint("n", n)
		l := mustLeases(t, srv.Client(), keys, id, LeasesConfig{TTL: testTTL})
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(n), 1))
			for time.Now().Before(stop) {
				b := rng.IntN(buckets)
				ls, err := l.Acquire(ctx, b)
				if err != nil {
					continue
				}
				if busy[b].Add(1) != 1 {
					violations.Add(1)
				}
				holdings.Add(1)
				if _, err := appendScript.Run(ctx, srv.Client(), keys, id, ls, []string{keys.Bucket(b, "log")}, OwnerValue(id, ls.Token)); err != nil {
					t.Errorf("%s: fenced write under a held lease: %v", id, err)
				}
				time.Sleep(time.Duration(rng.IntN(2000)) * time.Microsecond) // time is the subject: a random holding time
				busy[b].Add(-1)
				if _, err := l.Release(ctx, b); err != nil {
					t.Errorf("%s: release: %v", id, err)
				}
			}
		}()
	}
	wg.Wait()
	if v := violations.Load(); v != 0 {
		t.Fatalf("%d times two nodes held one bucket", v)
	}
	if holdings.Load() < 30 {
		t.Fatalf("only %d holdings in 1.5 s: contention test too weak", holdings.Load())
	}
	for b := range buckets {
		log, err := srv.Client().LRange(ctx, keys.Bucket(b, "log"), 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		var prev int64
		for _, v := range log {
			_, tok, err := ParseOwnerValue(v)
			if err != nil || tok <= prev {
				t.Fatalf("bucket %d log: token %d after %d (%v)", b, tok, prev, err)
			}
			prev = tok
		}
	}
	t.Logf("%d holdings by %d nodes over %d buckets, no overlap", holdings.Load(), nodes, buckets)
}

// TestLeaseLostOnRedisKill kills Redis under a node holding leases: the node reports them
// lost after 2·TTL/3 without a renewal, before the TTL ends. Redis comes back from its
// AOF; another node can take the buckets only once the leases expired, with larger
// tokens, and the first node's writes are fenced.
func TestLeaseLostOnRedisKill(t *testing.T) {
	srv := redistest.Start(t, redistest.AppendOnly())
	ctx := testCtx(t)
	keys := mustKeys(t, "l4")
	var lost lostLog
	a := mustLeases(t, srv.Client(), keys, "a", LeasesConfig{TTL: testTTL, OnLost: lost.add})
	var held []Lease
	for b := range 5 {
		ls, err := a.Acquire(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, ls)
	}
	time.Sleep(testTTL / 2) // time is the subject: a renewal or two before the outage
	killed := time.Now()
	srv.Kill()
	eventually(t, 2*testTTL, "leases reported lost", func() bool { return lost.count() == 5 })
	lost.mu.Lock()
	lastLost := slices.MaxFunc(lost.at, time.Time.Compare)
	for i, at := range lost.at {
		// The last renewal was sent at most TTL/3 before the kill; the loss is reported
		// 2·TTL/3 after it: within 2·TTL/3 of the kill (plus scheduling), before the TTL.
		if d := at.Sub(killed); d > 2*testTTL/3+50*time.Millisecond || d >= testTTL {
			t.Errorf("lease %d reported lost %v after the kill (TTL %v)", lost.lost[i].Bucket, d, testTTL)
		}
	}
	lost.mu.Unlock()
	if len(a.Held()) != 0 {
		t.Fatalf("still held after loss: %v", a.Held())
	}
	srv.Restart()
	b := mustLeases(t, srv.Client(), keys, "b", LeasesConfig{TTL: testTTL})
	for _, old := range held {
		var got Lease
		eventually(t, 3*testTTL, "b takes the bucket", func() bool {
			var err error
			got, err = b.Acquire(ctx, old.Bucket)
			return err == nil
		})
		if !time.Now().After(lastLost) {
			t.Fatalf("b took bucket %d before a reported it lost", old.Bucket)
		}
		if got.Token <= old.Token {
			t.Fatalf("bucket %d: token %d after a restart, not above %d", old.Bucket, got.Token, old.Token)
		}
		if _, err := appendScript.Run(ctx, srv.Client(), keys, "a", old, []string{keys.Bucket(old.Bucket, "log")}, "late"); !errors.Is(err, ErrFenced) {
			t.Fatalf("a's late write: %v, want ErrFenced", err)
		}
	}
}

// TestLeaseTokensSurviveDataLoss restarts Redis without persistence: the fence counters
// are gone, yet new tokens are larger than the old ones (they follow the server clock).
func TestLeaseTokensSurviveDataLoss(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testCtx(t)
	keys := mustKeys(t, "l5")
	var lost lostLog
	a := mustLeases(t, srv.Client(), keys, "a", LeasesConfig{TTL: testTTL, OnLost: lost.add})
	var max int64
	for range 50 {
		ls, err := a.Acquire(ctx, 3)
		if err != nil {
			t.Fatal(err)
		}
		max = ls.Token
		if _, err := a.Release(ctx, 3); err != nil {
			t.Fatal(err)
		}
	}
	old, err := a.Acquire(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	srv.Kill()
	srv.Restart()
	// Redis forgot the lease: the next renewal says so and the lease is reported lost.
	eventually(t, testTTL, "lost after Redis forgot it", func() bool { return lost.count() == 1 })
	b := mustLeases(t, srv.Client(), keys, "b", LeasesConfig{TTL: testTTL})
	nb, err := b.Acquire(ctx, 3)
	if err != nil || nb.Token <= old.Token || old.Token <= max {
		t.Fatalf("after data loss: token %d (old %d, before %d), %v", nb.Token, old.Token, max, err)
	}
}

func TestFencedScriptKeysAndArgs(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testCtx(t)
	keys := mustKeys(t, "l6")
	a := mustLeases(t, srv.Client(), keys, "a", LeasesConfig{TTL: testTTL})
	ls, err := a.Acquire(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	echo := NewFencedScript(`return {#KEYS, KEYS[1], KEYS[2], #ARGV, ARGV[1], ARGV[2]}`)
	res, err := echo.Run(ctx, srv.Client(), keys, "a", ls, []string{keys.Bucket(2, "x"), keys.Bucket(2, "y")}, "p", 5)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprint([]any{int64(2), keys.Bucket(2, "x"), keys.Bucket(2, "y"), int64(2), "p", "5"})
	if fmt.Sprint(res) != want {
		t.Fatalf("script saw %v, want %v", res, want)
	}
	// A script error that is not a fence refusal is reported as such.
	bad := NewFencedScript(`return redis.error_reply('OOPS broken')`)
	if _, err := bad.Run(ctx, srv.Client(), keys, "a", ls, nil); err == nil || errors.Is(err, ErrFenced) {
		t.Fatalf("body error: %v", err)
	}
	// The snippet alone, pasted into a hand-written script.
	custom := CheckOwnerLua + `if spider_check_owner(KEYS[1], ARGV[1]) then return 'yes' end return 'no'`
	got, err := srv.Client().Eval(ctx, custom, []string{keys.Owner(2)}, OwnerValue("a", ls.Token)).Text()
	if err != nil || got != "yes" {
		t.Fatalf("CheckOwnerLua = %q, %v", got, err)
	}
}
