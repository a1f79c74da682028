package masterworker

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
)

// TestDrainWake: a pop blocked on an empty list returns as soon as the
// master's loops have ended and wakePops ran, not after popWait (the
// master's exit at the end of a crawl waited for it, issue 23); a wake-up
// found while the loops run (left by an earlier run) is dropped and the
// values around it are used; unwake removes one no pop took.
func TestDrainWake(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	m := &Master{rdb: rdb, log: slog.New(slog.DiscardHandler), k: newKeys("wake")}
	ctx := context.Background()

	// A stale wake-up between two results.
	rdb.RPush(ctx, m.k.nrq(), "a", popWake, "b")
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var got []string
	done := make(chan error, 1)
	go func() {
		done <- m.drain(runCtx, m.k.nrq(), "results", func(raw string) error {
			got = append(got, raw)
			return nil
		})
	}()
	// The loops end while drain is blocked in its pop of the empty list.
	for deadline := time.Now().Add(10 * time.Second); !blockedPop(rdb.ClientList(ctx).Val()); {
		if time.Now().After(deadline) {
			t.Fatal("drain never blocked in its pop")
		}
		time.Sleep(5 * time.Millisecond)
	}
	start := time.Now()
	cancel()
	m.wakePops(ctx)
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("drain returned %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("drain did not return")
	}
	// popWait is 1 s: returning well before it shows the wake-up ended
	// the pop (a generous bound, for a loaded machine).
	if el := time.Since(start); el >= popWait {
		t.Errorf("drain returned after %v, want the wake-up to end its pop before popWait (%v)", el, popWait)
	}
	if len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Fatalf("used %q, want [a b]", got)
	}
	// ans kept its wake-up (no pop took it): unwake removes it.
	if n := rdb.LLen(ctx, m.k.ans()).Val(); n != 1 {
		t.Fatalf("ans holds %d values after wakePops, want 1", n)
	}
	m.unwake(ctx)
	for _, key := range []string{m.k.nrq(), m.k.ans()} {
		if n := rdb.LLen(ctx, key).Val(); n != 0 {
			t.Errorf("%s holds %d values after unwake, want 0", key, n)
		}
	}
}

// blockedPop reports whether CLIENT LIST shows a client blocked in BLPOP.
func blockedPop(clients string) bool {
	for _, line := range strings.Split(clients, "\n") {
		if strings.Contains(line, " flags=b ") && strings.Contains(line, " cmd=blpop ") {
			return true
		}
	}
	return false
}

// TestStartPoll: a worker waiting for its master asks again after 10 ms
// at first, then twice as long each time, never more than 200 ms apart.
func TestStartPoll(t *testing.T) {
	var p startPoll
	want := []time.Duration{10, 20, 40, 80, 160, 200, 200}
	for i, w := range want {
		if got := p.next(); got != w*time.Millisecond {
			t.Fatalf("poll %d: %v, want %v", i, got, w*time.Millisecond)
		}
	}
}
