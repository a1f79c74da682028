package cluster

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"syscall"
	"time"
)

// MaxOutage is how long Retry (and an Outage) keeps retrying Redis before it gives up.
const MaxOutage = 2 * time.Minute

// The retry policy's back-off: the first wait, doubled after each failure up to the last.
const (
	retryFirstWait = 50 * time.Millisecond
	retryMaxWait   = 2 * time.Second
)

// Transient reports whether err is Redis being briefly unreachable or
// restarting (connection refused or reset, EOF, LOADING, a transaction
// aborted by LOADING), worth a retry.
func Transient(err error) bool {
	if err == nil {
		return false
	}
	var ne net.Error
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.As(err, &ne) {
		return true
	}
	s := err.Error()
	// EXECABORT: a MULTI whose queued commands were refused (LOADING while
	// the append-only file is replayed); nothing of it ran.
	// The Redis error may come wrapped ("cannot complete …: LOADING …").
	return strings.Contains(s, "LOADING ") || strings.Contains(s, "EXECABORT ") || strings.Contains(s, "connection refused") ||
		strings.Contains(s, "connection reset") || strings.Contains(s, "broken pipe")
}

// Retry runs op until it succeeds, fails for good, or Redis has been
// unreachable for MaxOutage; the back-off grows from 50ms to 2s.
func Retry(ctx context.Context, op func() error) error {
	deadline := time.Now().Add(MaxOutage)
	wait := retryFirstWait
	for {
		err := op()
		if !Transient(err) || time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, retryMaxWait)
	}
}

// Outage is Retry's policy for a loop that makes its own calls (a blocking pop, a poll):
// it tracks the loop's run of failed Redis calls. The zero value is ready; one Outage
// belongs to one loop.
type Outage struct {
	since time.Time
	wait  time.Duration
}

// Retry reports whether the loop should try again after err: a transient error (see
// Transient) while the outage has lasted at most MaxOutage, after sleeping the growing
// back-off (false when ctx ends meanwhile). The first failure of a run is logged with
// what the loop was doing.
func (o *Outage) Retry(ctx context.Context, err error, log *slog.Logger, what string) bool {
	if !Transient(err) || ctx.Err() != nil {
		return false
	}
	if o.since.IsZero() {
		o.since, o.wait = time.Now(), retryFirstWait
		log.Warn("Redis unreachable; retrying", "while", what, "err", err)
	}
	if time.Since(o.since) > MaxOutage {
		return false
	}
	select {
	case <-ctx.Done():
		return false
	case <-time.After(o.wait):
	}
	o.wait = min(2*o.wait, retryMaxWait)
	return true
}

// OK ends an outage after a call succeeded, logging its length when there was one.
func (o *Outage) OK(log *slog.Logger, what string) {
	if !o.since.IsZero() {
		log.Info("Redis reachable again", "while", what, "after", time.Since(o.since).Round(time.Millisecond))
		o.since = time.Time{}
	}
}
