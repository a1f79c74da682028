package cluster

import (
	"context"
	"time"
)

// Every calls beat every interval in a goroutine until stop is called or ctx ends: the
// heartbeat of a worker that others take tasks back from when it goes silent (an index
// mapper, a layered worker), a node's periodic report (Reporter). A failed beat goes to
// onErr (nil: dropped) unless the loop is ending; the next tick tries again. The first
// call, usually the registration whose error the caller must see, is the caller's to
// make before.
//
// stop cancels the context beat runs under and returns once no beat is in flight, so
// nothing a beat writes lands after stop returned (a heartbeat key deleted on exit stays
// deleted). It may be called more than once.
func Every(ctx context.Context, interval time.Duration, beat func(context.Context) error, onErr func(error)) (stop func()) {
	hbCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-hbCtx.Done():
				return
			case <-t.C:
				if err := beat(hbCtx); err != nil && hbCtx.Err() == nil && onErr != nil {
					onErr(err)
				}
			}
		}
	}()
	return func() { cancel(); <-done }
}
