package cluster

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
)

func mustLock(t *testing.T, rdb redis.Cmdable, key, value string, ttl time.Duration) *Lock {
	t.Helper()
	l, err := NewLock(rdb, key, value, ttl)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestLock: one holder at a time; renew and release only by the value
// that holds it, so a holder whose lock expired and was taken over can
// neither extend nor delete the new holder's. Fails if TryAcquire takes a
// held lock, Renew or Release act on another value's lock, or Renew does
// not extend the TTL.
func TestLock(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	ctx := testCtx(t)
	a := mustLock(t, rdb, "lk", "a/1", time.Second)
	b := mustLock(t, rdb, "lk", "b/2", time.Second)
	steps := []struct {
		name string
		op   func() (bool, error)
		want bool
	}{
		{"a takes the free lock", func() (bool, error) { return a.TryAcquire(ctx) }, true},
		{"b cannot take a's lock", func() (bool, error) { return b.TryAcquire(ctx) }, false},
		{"a does not take its own lock twice", func() (bool, error) { return a.TryAcquire(ctx) }, false},
		{"b cannot renew a's lock", func() (bool, error) { return b.Renew(ctx) }, false},
		{"b cannot release a's lock", func() (bool, error) { return b.Release(ctx) }, false},
		{"a renews", func() (bool, error) { return a.Renew(ctx) }, true},
		{"a releases", func() (bool, error) { return a.Release(ctx) }, true},
		{"a cannot release twice", func() (bool, error) { return a.Release(ctx) }, false},
		{"a cannot renew a released lock", func() (bool, error) { return a.Renew(ctx) }, false},
		{"b takes it", func() (bool, error) { return b.TryAcquire(ctx) }, true},
		{"a, late, cannot renew b's", func() (bool, error) { return a.Renew(ctx) }, false},
	}
	for _, s := range steps {
		got, err := s.op()
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if got != s.want {
			t.Fatalf("%s: got %v, want %v", s.name, got, s.want)
		}
	}
	if v := rdb.Get(ctx, "lk").Val(); v != "b/2" {
		t.Fatalf("lock holds %q, want b's value", v)
	}
	// Renew sets a full TTL again.
	rdb.PExpire(ctx, "lk", 100*time.Millisecond)
	if ok, err := b.Renew(ctx); !ok || err != nil {
		t.Fatalf("renew: %v %v", ok, err)
	}
	if ttl := rdb.PTTL(ctx, "lk").Val(); ttl < 500*time.Millisecond {
		t.Fatalf("TTL after renew %v, want about 1s", ttl)
	}
	// An expired lock is free for anyone.
	rdb.PExpire(ctx, "lk", time.Millisecond)
	time.Sleep(20 * time.Millisecond)
	if ok, err := a.TryAcquire(ctx); !ok || err != nil {
		t.Fatalf("a cannot take an expired lock: %v %v", ok, err)
	}
}

// TestLockKeep: Keep holds the lock past several TTLs, returns nil when its
// context ends, and ErrLockLost as soon as another process holds the key.
// Fails if Keep lets the lock expire, misses the loss, or reports a loss
// on cancellation.
func TestLockKeep(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	ctx := testCtx(t)
	const ttl = 300 * time.Millisecond
	a := mustLock(t, rdb, "keep", "a", ttl)
	if ok, _ := a.TryAcquire(ctx); !ok {
		t.Fatal("cannot take the lock")
	}
	kctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.Keep(kctx, nil) }()
	time.Sleep(4 * ttl)
	if v := rdb.Get(ctx, "keep").Val(); v != "a" {
		t.Fatalf("after 4 TTLs under Keep the lock holds %q", v)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Keep after cancel: %v, want nil", err)
	}

	go func() { done <- a.Keep(ctx, nil) }()
	rdb.Set(ctx, "keep", "intruder", 0) // taken over (as after an expiry)
	select {
	case err := <-done:
		if !errors.Is(err, ErrLockLost) {
			t.Fatalf("Keep = %v, want ErrLockLost", err)
		}
	case <-time.After(10 * ttl):
		t.Fatal("Keep did not notice the lock was taken")
	}
	if v := rdb.Get(ctx, "keep").Val(); v != "intruder" {
		t.Fatalf("the new holder's lock was changed to %q", v)
	}
}

// TestLockKeepTransient: a renewal that fails on the way (here: Redis
// paused for longer than the client's read time-out, shorter than the TTL)
// is reported to the callback and retried, not taken for a loss. Fails if
// Keep gives up, or never reports the failed renewal.
func TestLockKeepTransient(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testCtx(t)
	rdb := srv.Client()
	impatient := redis.NewClient(&redis.Options{Addr: srv.Addr(), ReadTimeout: 100 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { impatient.Close() })
	const ttl = 3 * time.Second
	a := mustLock(t, impatient, "tr", "a", ttl)
	if ok, err := a.TryAcquire(ctx); !ok || err != nil {
		t.Fatalf("cannot take the lock: %v", err)
	}
	var fails atomic.Int32
	kctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.Keep(kctx, func(error) { fails.Add(1) }) }()
	if err := rdb.Do(ctx, "CLIENT", "PAUSE", "1500", "ALL").Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2*ttl/3 + ttl/6) // the first renewal (at TTL/3) in the pause, the second after it
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Keep = %v, want nil: a pause shorter than the TTL is not a loss", err)
	}
	if fails.Load() == 0 {
		t.Error("no renewal failure reported during the pause")
	}
	if v := rdb.Get(ctx, "tr").Val(); v != "a" {
		t.Fatalf("lock holds %q after the pause", v)
	}
}

func TestNewLockBad(t *testing.T) {
	for _, c := range []struct {
		key, value string
		ttl        time.Duration
	}{{"", "v", time.Second}, {"k", "", time.Second}, {"k", "v", 0}, {"k", "v", time.Millisecond}} {
		if _, err := NewLock(nil, c.key, c.value, c.ttl); err == nil {
			t.Errorf("NewLock(%q, %q, %v) accepted", c.key, c.value, c.ttl)
		}
	}
}
