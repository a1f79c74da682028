package cluster

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"time"
)

// MaxOutage is how long Retry keeps retrying Redis before it gives up.
const MaxOutage = 2 * time.Minute

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
	wait := 50 * time.Millisecond
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
		wait = min(2*wait, 2*time.Second)
	}
}
