package websim

import (
	"context"
	"fmt"
)

// WaitFor waits until cond holds for the log's entries (as Entries returns them), checking
// once at the call and again after every request the log records, and returns nil; it
// returns an error wrapping ctx's when ctx ends first. A handler records its request after
// the answer has been sent (or the connection reset), so a client that has its answer can
// use WaitFor to wait for the entry instead of sleeping. cond must not call the log.
func (l *AccessLog) WaitFor(ctx context.Context, cond func([]Entry) bool) error {
	for {
		l.mu.Lock()
		if l.grew == nil {
			l.grew = make(chan struct{})
		}
		grew := l.grew
		l.mu.Unlock()
		if cond(l.Entries()) {
			return nil
		}
		select {
		case <-grew:
		case <-ctx.Done():
			return fmt.Errorf("cannot wait for the access log: %w", ctx.Err())
		}
	}
}
