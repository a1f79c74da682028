package crawl

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/spider-crawler/spider/internal/frontier"
)

// Run states reported by Engine.RunState.
const (
	StateIdle     = "idle"     // Run has not started (or the engine was never run)
	StateRunning  = "running"  // URLs are being handed out
	StatePaused   = "paused"   // Pause: no new URL is handed out; fetches in flight finish
	StateStopping = "stopping" // Stop, the page limit or the end of Run: no new URL will be handed out
)

// ErrNotRunning is returned by the control methods of an Engine whose Run
// has not started or has already returned.
var ErrNotRunning = errors.New("the crawl is not running in this process")

// control is the Engine's run control: the hand-out cancel function of the
// current Run, guarded so that Stop can be called from any goroutine (an
// HTTP handler) while Run starts and ends.
type control struct {
	mu      sync.Mutex
	handOut context.Context // the current Run's hand-out context; nil before Run
	stop    func()          // cancels handOut
	stopped bool            // Stop was called
}

// startHandOut records the hand-out context of a Run and its cancel
// function; a Stop that came before Run takes effect at once.
func (e *Engine) startHandOut(ctx context.Context, stop context.CancelFunc) {
	e.ctl.mu.Lock()
	e.stop = stop
	e.ctl.handOut, e.ctl.stop = ctx, stop
	stopped := e.ctl.stopped
	e.ctl.mu.Unlock()
	if stopped {
		stop()
	}
}

// running returns the hand-out context when Run is handing out URLs.
func (e *Engine) running() (context.Context, bool) {
	e.ctl.mu.Lock()
	defer e.ctl.mu.Unlock()
	if e.ctl.handOut == nil || e.ctl.handOut.Err() != nil {
		return nil, false
	}
	return e.ctl.handOut, true
}

// RunState reports StateIdle, StateRunning, StatePaused or StateStopping.
// It is safe to call at any time, from any goroutine.
func (e *Engine) RunState() string {
	e.ctl.mu.Lock()
	h := e.ctl.handOut
	e.ctl.mu.Unlock()
	switch {
	case h == nil:
		return StateIdle
	case h.Err() != nil:
		return StateStopping
	case e.fr != nil && e.fr.Stats().Paused:
		return StatePaused
	}
	return StateRunning
}

// Pause stops handing out URLs until Resume: fetches in flight finish and
// are recorded; workers wait. It returns ErrNotRunning when Run is not
// handing out URLs. Pausing twice is not an error.
func (e *Engine) Pause() error {
	if _, ok := e.running(); !ok {
		return fmt.Errorf("cannot pause: %w", ErrNotRunning)
	}
	e.fr.Pause()
	return nil
}

// Resume undoes Pause. It returns ErrNotRunning when Run is not handing
// out URLs. Resuming a crawl that is not paused is not an error.
func (e *Engine) Resume() error {
	if _, ok := e.running(); !ok {
		return fmt.Errorf("cannot resume: %w", ErrNotRunning)
	}
	e.fr.Resume()
	return nil
}

// Stop ends the hand-out of URLs for good: fetches in flight finish and
// are recorded, then Run returns nil. What is still pending stays in the
// crawl state, so running the same crawl again resumes it. Stop before Run
// makes the next Run stop at once; Stop is idempotent and safe from any
// goroutine.
func (e *Engine) Stop() {
	e.ctl.mu.Lock()
	e.ctl.stopped = true
	stop := e.ctl.stop
	e.ctl.mu.Unlock()
	if stop != nil {
		stop()
	}
	if e.fr != nil {
		e.fr.Resume() // paused workers must see the hand-out end
	}
}

// AddSeeds normalises raw URLs and records them as depth-0 seeds: URLs
// the crawl has already seen are skipped, new ones are queued. It returns
// how many were new. A URL that cannot be normalised fails the whole call
// before anything is recorded, with an error naming it. Seeds added while
// Run is handing out URLs are crawled in this run; otherwise
// ErrNotRunning is returned and nothing is recorded. Note that the scope
// filters were built from the configured seeds: with --scope seeds, links
// of a new seed's host outside that scope are not followed.
func (e *Engine) AddSeeds(ctx context.Context, raw []string) (int, error) {
	if len(raw) == 0 {
		return 0, errors.New("cannot add seeds: no URL given")
	}
	if _, ok := e.running(); !ok {
		return 0, fmt.Errorf("cannot add seeds: %w", ErrNotRunning)
	}
	reqs := make([]frontier.Request, 0, len(raw))
	for _, s := range raw {
		u, err := e.fetcher.norm.Parse(s)
		if err != nil {
			return 0, fmt.Errorf("cannot add seed %q: it is not a usable http(s) URL: %w", s, err)
		}
		reqs = append(reqs, e.fetcher.request(u, 0, 0))
	}
	news, err := e.st.Discover(ctx, reqs)
	if err != nil {
		return 0, fmt.Errorf("cannot record seeds: %w", err)
	}
	if err := e.fr.PushAll(news); err != nil {
		return 0, fmt.Errorf("cannot queue seeds: %w", err)
	}
	return len(news), nil
}

// Pause stops the hand-out of new URLs by Next (leases out finish); it is
// the run control of a crawl whose loop is not Engine.Run (a peer, a
// master). Safe from any goroutine.
func (s *Scheduler) Pause() { s.fr.Pause() }

// Resume undoes Pause.
func (s *Scheduler) Resume() { s.fr.Resume() }

// AddSeeds records reqs (built by Fetcher.Requests) in the State as if
// discovered and queues those that are new here; it returns how many were.
// A State that routes URLs (a peer's buckets) sends the others to their
// owners.
func (s *Scheduler) AddSeeds(ctx context.Context, reqs []frontier.Request) (int, error) {
	news, err := s.st.Discover(ctx, reqs)
	if err != nil {
		return 0, fmt.Errorf("cannot record seeds: %w", err)
	}
	if err := s.fr.PushAll(news); err != nil {
		return 0, fmt.Errorf("cannot queue seeds: %w", err)
	}
	return len(news), nil
}

// Requests builds depth-0 requests of raw URLs added to a running crawl;
// the crawl's rules apply as to a discovered link (length, suffix, scope,
// hosts). The URLs it cannot use are reported in the joined error, the
// others returned.
func (f *Fetcher) Requests(raw []string) ([]frontier.Request, error) {
	var out []frontier.Request
	var errs []error
	for _, s := range raw {
		u, err := f.norm.Parse(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("seed %q is not a usable http(s) URL: %w", s, err))
			continue
		}
		if err := f.chain.Check(u, 0); err != nil {
			errs = append(errs, fmt.Errorf("seed %q is outside the crawl's rules: %w", s, err))
			continue
		}
		out = append(out, f.request(u, 0, 0))
	}
	return out, errors.Join(errs...)
}
