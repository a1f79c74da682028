package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"syscall"
	"testing"
	"time"
)

// TestOutage: an Outage retries transient errors with Retry's back-off, for at most
// MaxOutage from the first failure, never after ctx ended, and OK starts a new outage.
func TestOutage(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	refused := fmt.Errorf("cannot pop: %w", syscall.ECONNREFUSED)
	tests := []struct {
		name     string
		err      error
		since    time.Duration // how long ago the outage began (0: none yet)
		cancel   bool
		want     bool
		wantWait time.Duration // the next back-off after a retry
	}{
		{"first transient error", refused, 0, false, true, 2 * retryFirstWait},
		{"LOADING", errors.New("LOADING Redis is loading the dataset in memory"), 0, false, true, 2 * retryFirstWait},
		{"not transient", errors.New("WRONGTYPE Operation against a key"), 0, false, false, 0},
		{"outage too long", refused, MaxOutage + time.Second, false, false, 0},
		{"context ended", refused, 0, true, false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancel {
				cancel()
			}
			var o Outage
			if tc.since > 0 {
				o.since, o.wait = time.Now().Add(-tc.since), retryFirstWait
			}
			if got := o.Retry(ctx, tc.err, log, "testing"); got != tc.want {
				t.Fatalf("Retry = %v, want %v", got, tc.want)
			}
			if tc.want && o.wait != tc.wantWait {
				t.Fatalf("next wait %v, want %v", o.wait, tc.wantWait)
			}
		})
	}

	// The back-off stops growing at retryMaxWait; OK ends the outage.
	o := Outage{since: time.Now(), wait: retryMaxWait/2 + 100*time.Millisecond}
	if !o.Retry(context.Background(), syscall.ECONNRESET, log, "testing") || o.wait != retryMaxWait {
		t.Fatalf("after a wait of over half the largest, the next is %v, want %v", o.wait, retryMaxWait)
	}
	o.OK(log, "testing")
	if !o.since.IsZero() {
		t.Fatal("OK did not end the outage")
	}
}
