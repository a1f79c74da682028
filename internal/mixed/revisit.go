package mixed

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"net/url"
	"sync"
	"time"

	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/frontier"
	"github.com/spider-crawler/spider/internal/revisit"
	"github.com/spider-crawler/spider/internal/state"
	"github.com/spider-crawler/spider/internal/store"
	"github.com/spider-crawler/spider/internal/urls"
)

// The revisit schedule of a §0 host (issue 26): the one schedule of every
// topology, not a format of its own.
//
//   - A host keeps the schedule of the URLs it fetched, in the embedded
//     back-end's crawlstate.Revisits in its data directory (DATA/schedule):
//     the protocol gives each site to one host, whose data directory holds
//     its pages, and a host restarted on that directory takes its address
//     and its tasks back; so it takes its schedule back too.
//   - Every fetch is judged with the crawl's revisit policy
//     (crawl.ScheduleVisit, the rule Scheduler.Finish applies in the other
//     modes) and written (Discover, then Complete with
//     Outcome.Schedule/Due/Failed) before the protocol's task is completed:
//     a kill in between fetches the task again and leaves the entry.
//   - Due URLs (TakeDue: pending in the schedule until their completion is
//     written) enter the host's frontier at the head of their host's queue,
//     under the same politeness, never through the protocol (they are known
//     URLs); while tasks of new URLs are held, revisits in flight stay within
//     --revisit-share of --concurrency. A revisit sends the stored
//     validators; its links are not submitted (they were when the page was
//     first fetched).
//   - With --continuous the host does not stop when the system is done; it
//     revisits until its context ends. Without, it takes what was due when it
//     started (after --retry-failed made the failures due).
//
// Crash safety: URLs taken and not completed are pending in the schedule
// and are queued again when the host starts.

// hostRevisits is one host's revisit schedule and its feeding state.
type hostRevisits struct {
	policy     revisit.Policy
	st         *state.Store
	start      time.Time
	continuous bool
	// retryFailed: --retry-failed, every failure due at start.
	retryFailed bool
	share       int // revisits in flight while new URLs wait
	idle        int // revisits in flight otherwise
	log         *slog.Logger

	mu       sync.Mutex
	out      map[string]frontier.Request // taken from the schedule, not completed
	drained  bool                        // one-shot: nothing more due at start
	counts   crawl.RevisitCounts
	wakeFeed chan struct{}
}

// wantsRevisits reports whether a crawl keeps a revisit schedule on its
// hosts: --revisit fixed|adaptive, --continuous or --retry-failed.
func wantsRevisits(cfg crawl.Config) bool {
	return cfg.Continuous || cfg.RetryFailed || cfg.Revisit != "" && cfg.Revisit != crawl.RevisitOff
}

// openRevisits opens the host's schedule when the crawl wants one
// (wantsRevisits); nil otherwise.
func openRevisits(cfg crawl.Config, log *slog.Logger) (*hostRevisits, error) {
	if !wantsRevisits(cfg) {
		return nil, nil
	}
	p, err := cfg.RevisitPolicy()
	if err != nil {
		return nil, err
	}
	st, err := state.Open(store.DataDir(cfg.Data).Schedule(), state.Options{ExpectedURLs: 100_000, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("cannot open this host's revisit schedule in %s: %w", store.DataDir(cfg.Data).Schedule(), err)
	}
	conc := max(cfg.Concurrency, 1)
	return &hostRevisits{policy: p, st: st, start: time.Now(), continuous: cfg.Continuous, retryFailed: cfg.RetryFailed, log: log,
		share: max(1, int(math.Ceil(cfg.RevisitShare*float64(conc)))), idle: 2 * conc,
		out: map[string]frontier.Request{}, wakeFeed: make(chan struct{}, 1)}, nil
}

func (r *hostRevisits) close() error { return r.st.Close() }

// taken reports whether u is a revisit in flight, and its request.
func (r *hostRevisits) taken(u string) (frontier.Request, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	q, ok := r.out[u]
	return q, ok
}

// finished reports whether a one-shot host has no revisit left to do.
func (r *hostRevisits) finished() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.continuous && r.drained && len(r.out) == 0
}

// Counts returns this run's revisit counts.
func (r *hostRevisits) Counts() crawl.RevisitCounts {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts
}

// count adds a verdict to the counts.
func (r *hostRevisits) count(vs crawl.VisitSchedule) {
	if !vs.Observed {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	n := &r.counts
	if vs.Retry {
		n.Retried++
	}
	switch {
	case vs.Failed:
		if !vs.Due.IsZero() {
			n.Failed++
			if n.FailedNext.IsZero() || vs.Due.Before(n.FailedNext) {
				n.FailedNext = vs.Due
			}
		}
	case vs.Revisit:
		n.Revisits++
		if vs.NotModified {
			n.NotModified++
		}
		if vs.Changed {
			n.Changed++
		} else {
			n.Unchanged++
		}
	}
}

func outcome(v crawl.Visit, vs crawl.VisitSchedule) state.Outcome {
	o := state.Outcome{Class: v.Outcome, Schedule: vs.Entry, Due: vs.Due, Failed: vs.Failed}
	if o.Class == "" {
		o.Class = "error"
	}
	return o
}

// first writes the schedule entry of a task's fetch (not a revisit), before
// the protocol's task is completed.
func (r *hostRevisits) first(ctx context.Context, req frontier.Request, v crawl.Visit) error {
	q := frontier.Request{URL: req.URL, Depth: req.Depth, Priority: req.Depth}
	vs := crawl.ScheduleVisit(r.policy, q, v, time.Now(), r.log.Warn)
	r.count(vs)
	if vs.Entry == "" && !vs.Failed {
		return nil
	}
	acc, err := r.st.Discover(ctx, []frontier.Request{q})
	if err != nil {
		return fmt.Errorf("cannot add %s to the revisit schedule: %w", req.URL, err)
	}
	for _, a := range acc {
		if _, err := r.st.Complete(ctx, a, outcome(v, vs), nil); err != nil {
			return fmt.Errorf("cannot write the revisit schedule of %s: %w", req.URL, err)
		}
	}
	return nil
}

// finish completes a revisit in the schedule with its new entry.
func (r *hostRevisits) finish(ctx context.Context, req frontier.Request, v crawl.Visit) error {
	vs := crawl.ScheduleVisit(r.policy, req, v, time.Now(), r.log.Warn)
	if _, err := r.st.Complete(ctx, req, outcome(v, vs), nil); err != nil {
		return fmt.Errorf("cannot write the revisit schedule of %s: %w", req.URL, err)
	}
	r.count(vs)
	r.mu.Lock()
	delete(r.out, req.URL)
	r.mu.Unlock()
	select {
	case r.wakeFeed <- struct{}{}:
	default:
	}
	return nil
}

// push queues reqs (taken from the schedule) at the head of their hosts'
// queues.
func (r *hostRevisits) push(fr *frontier.Frontier, reqs []frontier.Request) error {
	out := make([]frontier.Request, 0, len(reqs))
	r.mu.Lock()
	for _, q := range reqs {
		u, err := url.Parse(q.URL)
		if err != nil || u.Host == "" {
			continue
		}
		q.Key = urls.HostPort(u)
		r.out[q.URL] = q
		out = append(out, q)
	}
	r.mu.Unlock()
	return fr.PushUrgent(out)
}

// feed queues the revisits: first those a crash left pending, then, after
// --retry-failed, the URLs due (at start for a one-shot host; as they come
// due for a continuous one) within the share, until ctx ends.
func (r *hostRevisits) feed(ctx context.Context, fr *frontier.Frontier, newWaiting func() bool) error {
	var left []frontier.Request
	if err := r.st.LoadPending(ctx, func(q frontier.Request) error { left = append(left, q); return nil }); err != nil {
		return fmt.Errorf("cannot read the revisits in progress: %w", err)
	}
	if err := r.push(fr, left); err != nil {
		return err
	}
	if r.retryFailed {
		n, err := r.st.RetryFailed(ctx, r.start)
		if err != nil {
			return fmt.Errorf("cannot make the failed URLs due: %w", err)
		}
		r.log.Info("failed URLs due again", "urls", n)
	}
	for ctx.Err() == nil {
		r.mu.Lock()
		n := len(r.out)
		r.mu.Unlock()
		limit := r.idle
		if newWaiting() {
			limit = r.share
		}
		at := r.start
		if r.continuous {
			at = time.Now()
		}
		got := 0
		if want := limit - n; want > 0 {
			reqs, err := r.st.TakeDue(ctx, at, want)
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("cannot take the URLs due for a revisit: %w", err)
			}
			r.mu.Lock()
			r.counts.Taken += int64(len(reqs))
			r.mu.Unlock()
			if err := r.push(fr, reqs); err != nil {
				return err
			}
			got = len(reqs)
			if got < want && !r.continuous {
				r.mu.Lock()
				r.drained = true
				r.mu.Unlock()
			}
		}
		sleep := time.Second
		if got > 0 {
			sleep = 25 * time.Millisecond
		} else if next, ok, err := r.st.NextDue(ctx); err == nil && ok {
			sleep = min(max(time.Until(next), 25*time.Millisecond), time.Second)
		}
		t := time.NewTimer(sleep)
		select {
		case <-ctx.Done():
		case <-t.C:
		case <-r.wakeFeed:
		}
		t.Stop()
	}
	return nil
}
