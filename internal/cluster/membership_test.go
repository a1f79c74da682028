package cluster

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
)

// fastMembership is quick enough for tests: heartbeat 50 ms, TTL 300 ms.
var fastMembership = MembershipConfig{Heartbeat: 50 * time.Millisecond, TTL: 300 * time.Millisecond, Poll: 50 * time.Millisecond}

func ids(v View) []string {
	out := make([]string, len(v.Members))
	for i, m := range v.Members {
		out[i] = m.ID
	}
	return out
}

func TestMembershipJoinHeartbeatExpiry(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testCtx(t)
	keys := mustKeys(t, "m1")
	a := NewMembership(srv.Client(), keys, fastMembership)
	b := NewMembership(srv.Client(), keys, fastMembership)
	e1, err := a.Join(ctx, Member{ID: "a", Weight: 150, Addr: "127.0.0.1:1", Meta: map[string]string{"v": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	e2, err := b.Join(ctx, Member{ID: "b", Weight: 80})
	if err != nil {
		t.Fatal(err)
	}
	if e2 <= e1 || e1 <= 0 {
		t.Fatalf("epochs %d then %d, want increasing and positive", e1, e2)
	}
	// Heartbeats keep both alive well past the TTL (time is the subject).
	time.Sleep(3 * fastMembership.TTL)
	v, err := a.Members(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(v); len(got) != 2 || got[0] != "a" || got[1] != "b" || v.Epoch != e2 {
		t.Fatalf("members %v at epoch %d, want [a b] at %d", got, v.Epoch, e2)
	}
	ma := v.Members[0]
	if ma.Weight != 150 || ma.Addr != "127.0.0.1:1" || ma.Meta["v"] != "1" || ma.Deadline.IsZero() {
		t.Fatalf("member a = %+v", ma)
	}
	// Load travels with the heartbeat.
	a.SetLoad(Load{PagesPerSec: 12.5, Queue: 42})
	eventually(t, 6*time.Second, "load published", func() bool {
		v, _ := b.Members(ctx)
		return len(v.Members) == 2 && v.Members[0].Load.Queue == 42 && v.Members[0].Load.PagesPerSec == 12.5
	})
	// b's heartbeats stop (as in a crash): a sees it expire after the TTL (counted from
	// its last heartbeat, at most a heartbeat interval or so before Close), not before.
	stopped := time.Now()
	b.Close()
	var gone time.Time
	eventually(t, 9*time.Second, "b expires", func() bool {
		v, err := a.Members(ctx)
		if err == nil && len(v.Members) == 1 {
			gone = time.Now()
			return true
		}
		return false
	})
	if d := gone.Sub(stopped); d < fastMembership.TTL-2*fastMembership.Heartbeat {
		t.Fatalf("b expired %v after its last heartbeat, before the TTL %v", d, fastMembership.TTL)
	}
	v, _ = a.Members(ctx)
	if v.Epoch <= e2 || !v.Has("a") || v.Has("b") {
		t.Fatalf("after expiry: %v at epoch %d (was %d)", ids(v), v.Epoch, e2)
	}
	// a leaves: gone at once, epoch raised again.
	if err := a.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	v2, _ := b.Members(ctx)
	if len(v2.Members) != 0 || v2.Epoch <= v.Epoch {
		t.Fatalf("after leave: %v at epoch %d (was %d)", ids(v2), v2.Epoch, v.Epoch)
	}
	if err := a.Leave(ctx); !errors.Is(err, ErrNotJoined) {
		t.Fatalf("second Leave: %v, want ErrNotJoined", err)
	}
}

func TestMembershipJoinRules(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testCtx(t)
	keys := mustKeys(t, "m2")
	m := NewMembership(srv.Client(), keys, fastMembership)
	if _, err := m.Join(ctx, Member{ID: "bad id", Weight: 1}); !errors.Is(err, ErrBadName) {
		t.Fatalf("bad id: %v", err)
	}
	if _, err := m.Join(ctx, Member{ID: "x", Weight: 0}); err == nil {
		t.Fatal("weight 0 accepted")
	}
	e1, err := m.Join(ctx, Member{ID: "x", Weight: 3})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Join(ctx, Member{ID: "x", Weight: 3}); !errors.Is(err, ErrJoined) {
		t.Fatalf("double join: %v", err)
	}
	// A restarted node (same ID, same weight) does not change the epoch…
	m.Close()
	e2, err := m.Join(ctx, Member{ID: "x", Weight: 3})
	if err != nil || e2 != e1 {
		t.Fatalf("rejoin with the same weight: epoch %d → %d, %v", e1, e2, err)
	}
	// …a new weight does.
	m.Close()
	e3, err := m.Join(ctx, Member{ID: "x", Weight: 4})
	if err != nil || e3 <= e2 {
		t.Fatalf("rejoin with a new weight: epoch %d → %d, %v", e2, e3, err)
	}
	v, _ := m.Members(ctx)
	if len(v.Members) != 1 || v.Members[0].Weight != 4 {
		t.Fatalf("members %+v", v.Members)
	}
	// Another crawl on the same Redis is not affected.
	other := NewMembership(srv.Client(), mustKeys(t, "m2b"), fastMembership)
	if v, _ := other.Members(ctx); len(v.Members) != 0 {
		t.Fatalf("crawl m2b sees %v", ids(v))
	}
	if err := m.Leave(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestMembershipRejoinsAfterExpiry(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testCtx(t)
	keys := mustKeys(t, "m3")
	m := NewMembership(srv.Client(), keys, fastMembership)
	if _, err := m.Join(ctx, Member{ID: "n", Weight: 1}); err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	v0, _ := m.Members(ctx)
	// Redis loses the member list (as after a restart without persistence).
	if err := srv.Client().Del(ctx, keys.Members(), keys.Info()).Err(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 6*time.Second, "re-registered", func() bool {
		v, _ := m.Members(ctx)
		return v.Has("n") && v.Epoch > v0.Epoch
	})
}

func TestMembershipSurvivesRedisRestart(t *testing.T) {
	srv := redistest.Start(t) // no persistence: Redis comes back empty
	ctx := testCtx(t)
	keys := mustKeys(t, "m4")
	m := NewMembership(srv.Client(), keys, fastMembership)
	e1, err := m.Join(ctx, Member{ID: "n", Weight: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	srv.Kill()
	time.Sleep(2 * fastMembership.Heartbeat) // time is the subject: the outage's length
	srv.Restart()
	eventually(t, 9*time.Second, "re-registered after restart", func() bool {
		v, err := m.Members(ctx)
		// The epoch keeps increasing although Redis lost its counter.
		return err == nil && v.Has("n") && v.Epoch > e1
	})
}

func TestMembershipWatch(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testCtx(t)
	keys := mustKeys(t, "m5")
	// A long poll: changes must arrive through pub/sub.
	cfg := fastMembership
	cfg.Poll = 10 * time.Second
	w := NewMembership(srv.Client(), keys, cfg)
	wctx, cancel := context.WithCancel(ctx)
	views := w.Watch(wctx)
	first := <-views
	if len(first.Members) != 0 {
		t.Fatalf("first view %v, want empty", ids(first))
	}
	a := NewMembership(srv.Client(), keys, fastMembership)
	start := time.Now()
	if _, err := a.Join(ctx, Member{ID: "a", Weight: 1}); err != nil {
		t.Fatal(err)
	}
	select {
	case v := <-views:
		if !v.Has("a") || v.Epoch <= first.Epoch {
			t.Fatalf("view after join: %v at %d", ids(v), v.Epoch)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("join seen after %v despite pub/sub", d)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("no view after a join")
	}
	if err := a.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case v := <-views:
		if v.Has("a") {
			t.Fatalf("view after leave still has a: %v", ids(v))
		}
	case <-time.After(3 * time.Second):
		t.Fatal("no view after a leave")
	}
	cancel()
	for range views {
	}
}

// TestMembershipDeadlinesUseServerClock checks that deadlines come from Redis TIME: a
// member's deadline is the server's time plus the TTL.
func TestMembershipDeadlinesUseServerClock(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testCtx(t)
	rdb := srv.Client()
	keys := mustKeys(t, "m6")
	m := NewMembership(rdb, keys, MembershipConfig{Heartbeat: time.Hour, TTL: 10 * time.Hour})
	if _, err := m.Join(ctx, Member{ID: "n", Weight: 1}); err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	now, err := rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	v, _ := m.Members(ctx)
	if d := v.Members[0].Deadline.Sub(now.Add(10 * time.Hour)); d > time.Second || d < -time.Second {
		t.Fatalf("deadline %v, want server time %v + 10h", v.Members[0].Deadline, now)
	}
	score, _ := rdb.ZScore(ctx, keys.Members(), "n").Result()
	if int64(score) != v.Members[0].Deadline.UnixMilli() {
		t.Fatalf("zset score %v, deadline %v", score, v.Members[0].Deadline.UnixMilli())
	}
}

// TestMembershipRefusesLiveID: a second process claiming a live member's ID is refused
// with a message naming the holder and --node-id; the holder stays listed as it was.
func TestMembershipRefusesLiveID(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testCtx(t)
	keys := mustKeys(t, "m7")
	a := NewMembership(srv.Client(), keys, fastMembership)
	if _, err := a.Join(ctx, Member{ID: "same", Weight: 7, PID: 4242, Host: "hostA"}); err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	v0, _ := a.Members(ctx)
	b := NewMembership(srv.Client(), keys, fastMembership)
	_, err := b.Join(ctx, Member{ID: "same", Weight: 9, PID: 99, Host: "hostB"})
	if !errors.Is(err, ErrNodeIDInUse) {
		t.Fatalf("second join with a live id: %v, want ErrNodeIDInUse", err)
	}
	var ie *IDInUseError
	if !errors.As(err, &ie) || ie.Holder.PID != 4242 || ie.Holder.Host != "hostA" || ie.LastSeen < 0 || ie.LastSeen > fastMembership.TTL {
		t.Fatalf("error %#v: want the holder's pid 4242, host hostA, last seen within the TTL", err)
	}
	for _, want := range []string{`node id "same" is in use by a live node (pid 4242 on host hostA, last seen `, "s ago): give each node its own --node-id, or leave --node-id unset"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("message %q lacks %q", err, want)
		}
	}
	// Nothing of b was written, and a's heartbeats go on under its own record.
	time.Sleep(3 * fastMembership.Heartbeat)
	v, _ := a.Members(ctx)
	if len(v.Members) != 1 || v.Members[0].Weight != 7 || v.Members[0].PID != 4242 || v.Epoch != v0.Epoch {
		t.Fatalf("after the refused join: %+v at epoch %d (was %d)", v.Members, v.Epoch, v0.Epoch)
	}
	// The refused membership did not join: leaving it fails and removes nothing.
	if err := b.Leave(ctx); !errors.Is(err, ErrNotJoined) {
		t.Fatalf("Leave of the refused membership: %v", err)
	}
	// A custom hint replaces the --node-id advice (workers, §0 hosts).
	cfg := fastMembership
	cfg.IDHint = "give each host its own --host-id"
	c := NewMembership(srv.Client(), keys, cfg)
	if _, err := c.Join(ctx, Member{ID: "same", Weight: 1}); err == nil || !strings.HasSuffix(err.Error(), ": give each host its own --host-id") {
		t.Fatalf("join with a custom hint: %v", err)
	}
}

// TestMembershipTakesBackExpiredOrSameInstance: a node restarted after a crash takes
// its ID back at once when it brings the same Instance (its data directory's token),
// and after the old heartbeat's expiry otherwise.
func TestMembershipTakesBackExpiredOrSameInstance(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testCtx(t)
	keys := mustKeys(t, "m8")
	old := NewMembership(srv.Client(), keys, fastMembership)
	if _, err := old.Join(ctx, Member{ID: "n", Weight: 1, Instance: "dir-token"}); err != nil {
		t.Fatal(err)
	}
	old.Close() // a crash: the heartbeats stop, the record stays until its deadline
	again := NewMembership(srv.Client(), keys, fastMembership)
	if _, err := again.Join(ctx, Member{ID: "n", Weight: 1, Instance: "dir-token"}); err != nil {
		t.Fatalf("restart with the same instance: %v", err)
	}
	again.Close()
	other := NewMembership(srv.Client(), keys, fastMembership)
	if _, err := other.Join(ctx, Member{ID: "n", Weight: 1}); !errors.Is(err, ErrNodeIDInUse) {
		t.Fatalf("another instance before the expiry: %v, want ErrNodeIDInUse", err)
	}
	// After the deadline (the record may still be listed: nobody read the list) the ID is
	// free again.
	time.Sleep(fastMembership.TTL + 2*fastMembership.Heartbeat) // time is the subject: the TTL
	if _, err := other.Join(ctx, Member{ID: "n", Weight: 1}); err != nil {
		t.Fatalf("another instance after the expiry: %v", err)
	}
	defer other.Close()
	v, _ := other.Members(ctx)
	if len(v.Members) != 1 || v.Members[0].Instance == "dir-token" {
		t.Fatalf("members %+v, want n under the new instance", v.Members)
	}
}

// TestMembershipTakenWhileStalled: a member that expired (stalled past its TTL) and
// whose ID another process joined with meanwhile learns it on its next heartbeat
// (Taken), stops claiming the ID, and its Leave does not remove the new holder.
func TestMembershipTakenWhileStalled(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testCtx(t)
	rdb := srv.Client()
	keys := mustKeys(t, "m9")
	a := NewMembership(rdb, keys, fastMembership)
	if _, err := a.Join(ctx, Member{ID: "n", Weight: 1, Host: "hostA"}); err != nil {
		t.Fatal(err)
	}
	// a's deadline passes as if it stalled: remove its listing (what Members does after
	// the deadline), then b joins under the same ID before a's next heartbeat.
	if err := rdb.Del(ctx, keys.Members(), keys.Info()).Err(); err != nil {
		t.Fatal(err)
	}
	b := NewMembership(rdb, keys, fastMembership)
	if _, err := b.Join(ctx, Member{ID: "n", Weight: 1, Host: "hostB"}); err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	select {
	case err := <-a.Taken():
		var ie *IDInUseError
		if !errors.As(err, &ie) || ie.Holder.Host != "hostB" {
			t.Fatalf("Taken: %v, want the holder on hostB", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a was not told that its id was taken")
	}
	if err := a.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * fastMembership.Heartbeat)
	v, _ := b.Members(ctx)
	if len(v.Members) != 1 || v.Members[0].Host != "hostB" {
		t.Fatalf("members %+v, want n of hostB only", v.Members)
	}
}

// TestMembershipCheck: Check answers as Join would, and writes nothing.
func TestMembershipCheck(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testCtx(t)
	keys := mustKeys(t, "m10")
	a := NewMembership(srv.Client(), keys, fastMembership)
	if err := a.Check(ctx, "x", "tok-a"); err != nil {
		t.Fatalf("free id: %v", err)
	}
	if n, _ := srv.Client().Exists(ctx, keys.Members(), keys.Info(), keys.Epoch()).Result(); n != 0 {
		t.Fatalf("Check wrote %d keys", n)
	}
	if _, err := a.Join(ctx, Member{ID: "x", Weight: 1, Instance: "tok-a"}); err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b := NewMembership(srv.Client(), keys, fastMembership)
	if err := b.Check(ctx, "x", "tok-a"); err != nil {
		t.Fatalf("same instance: %v", err)
	}
	if err := b.Check(ctx, "x", "tok-b"); !errors.Is(err, ErrNodeIDInUse) {
		t.Fatalf("other instance: %v, want ErrNodeIDInUse", err)
	}
	if err := b.Check(ctx, "x", ""); !errors.Is(err, ErrNodeIDInUse) {
		t.Fatalf("b's own random instance: %v, want ErrNodeIDInUse", err)
	}
	if err := b.Check(ctx, "y", "tok-b"); err != nil {
		t.Fatalf("another id: %v", err)
	}
}
