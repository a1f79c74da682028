package crawl

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/spider-crawler/spider/internal/crawlstate"
	"github.com/spider-crawler/spider/internal/frontier"
	"github.com/spider-crawler/spider/internal/revisit"
)

// The revisit schedule (issue 26) in the scheduling role. Scheduler.Finish
// turns every Visit into the URL's schedule entry (revisit.Entry, carried by
// the request as frontier.Request.Schedule and kept by the State as
// crawlstate.Outcome.Schedule/Due/Failed) with one revisit.Policy, whatever
// the topology: the engine, the master–worker master and the p2p nodes all
// finish visits here. The rules:
//
//   - change is judged by the content fingerprint (the text's, or the body's
//     for a non-HTML page), never by validators: an ETag that changes with
//     the same fingerprint is no change;
//   - a 304 to a conditional request is "unchanged"; a 304 to a request
//     without validators is a failure (revisit.ClassProtocol);
//   - a Last-Modified in the future is not kept (never sent back);
//   - a failure (DNS, refused, time-out, 5xx, 429, 404, 410 …) is retried on
//     its class's back-off (revisit.RetryAfter) in every mode, --revisit off
//     included, and marked Failed so --retry-failed makes it due at once;
//   - a fetched page is revisited only with --revisit fixed or adaptive;
//     under off its record is removed (done for good). Redirects, robots.txt
//     exclusions and too-many-redirects are done for good in every mode.
//
// TakeDue and FeedRevisits move due URLs from a crawlstate.Revisits into the
// frontier; the engine calls them at Start (one-shot crawls: everything due
// then) and in a loop (--continuous).

// RevisitPolicy returns the revisit policy of c (validated, defaults filled).
func (c Config) RevisitPolicy() (revisit.Policy, error) {
	mode := revisit.ModeOff
	if c.Revisit != "" {
		m, err := revisit.ParseMode(c.Revisit)
		if err != nil {
			return revisit.Policy{}, err
		}
		mode = m
	}
	// The interval of a page that changes at every visit (Policy.Target) is
	// the first one: slower pages get longer intervals.
	p := revisit.Policy{Mode: mode, Initial: time.Duration(c.RevisitInitial), Min: time.Duration(c.RevisitMin), Max: time.Duration(c.RevisitMax),
		Target: time.Duration(c.RevisitInitial)}
	bounds := func(m map[string]RevisitBounds) map[string]revisit.Bounds {
		if len(m) == 0 {
			return nil
		}
		out := make(map[string]revisit.Bounds, len(m))
		for k, b := range m {
			out[k] = revisit.Bounds{Min: time.Duration(b.Min), Max: time.Duration(b.Max)}
		}
		return out
	}
	p.Hosts, p.Topics = bounds(c.RevisitHosts), bounds(c.RevisitTopics)
	if err := p.Validate(); err != nil {
		return revisit.Policy{}, fmt.Errorf("cannot use the revisit settings: %w", err)
	}
	return p, nil
}

// revisitState is the Scheduler's revisit bookkeeping.
type revisitState struct {
	policy revisit.Policy
	now    func() time.Time // the clock of Due times (tests move it)

	wake chan struct{} // a revisit finished: FeedRevisits may take more (capacity 1)

	pushMu sync.Mutex
	pushed chan struct{} // closed (and replaced) when due URLs were queued: idle fetch workers look again

	outMu sync.Mutex
	out   map[string]struct{} // URLs taken from the schedule by TakeDue, not yet finished

	revisits, notModified, changed, unchanged, retried, failed, taken, hinted atomic.Int64

	mu         sync.Mutex
	failedNext time.Time // earliest Due of a failure scheduled in this run
	sleepUntil time.Time // when FeedRevisits looks again (a Due before it wakes it)

	m *revisitMetrics
}

// revisitMetrics are the revisit schedule's Prometheus series.
type revisitMetrics struct {
	revisits    *prometheus.CounterVec
	failed      *prometheus.CounterVec
	taken       prometheus.Counter
	notModified prometheus.Counter
	hinted      prometheus.Counter
}

func newRevisitState(cfg Config, reg prometheus.Registerer) (*revisitState, error) {
	p, err := cfg.RevisitPolicy()
	if err != nil {
		return nil, err
	}
	m := &revisitMetrics{
		revisits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "spider_revisits_total", Help: "Revisits of fetched pages completed, by result: changed, unchanged (a new fetch with the same fingerprint, or a 304 to a conditional request), failed.",
		}, []string{"result"}),
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "spider_failures_scheduled_total", Help: "Failed fetches scheduled for a retry on their class's back-off (final: not retried unless --retry-failed), by failure class.",
		}, []string{"class", "final"}),
		taken: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "spider_revisits_taken_total", Help: "Due URLs (revisits and retries of failures) moved from the schedule into the frontier.",
		}),
		notModified: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "spider_not_modified_total", Help: "Conditional requests answered 304 Not Modified (no body).",
		}),
	}
	m.hinted = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "spider_revisit_hints_total", Help: "Fetches of URLs already seen brought forward by a sitemap <lastmod> after the last fetch (at most once per lastmod, not before --revisit-min after the last fetch).",
	})
	if reg != nil {
		reg.MustRegister(m.revisits, m.failed, m.taken, m.notModified, m.hinted)
	}
	return &revisitState{policy: p, now: time.Now, wake: make(chan struct{}, 1), pushed: make(chan struct{}), out: map[string]struct{}{}, m: m}, nil
}

// RevisitCounts are the revisit schedule's counts of one run.
type RevisitCounts struct {
	// Revisits are completions of URLs fetched before (2xx or 304 then);
	// NotModified of them were answered 304 to a conditional request,
	// Changed saw a new fingerprint, Unchanged did not (304s included).
	Revisits, NotModified, Changed, Unchanged int64
	// Retried are completions of URLs whose previous fetch had failed.
	Retried int64
	// Failed are failures scheduled for a retry (not final); FailedNext
	// is the earliest of their Due times (zero: none).
	Failed     int64
	FailedNext time.Time
	// Taken are the due URLs moved into the frontier (TakeDue).
	Taken int64
	// Hinted are the fetches of URLs already seen that a sitemap's
	// <lastmod> brought forward (hints.go).
	Hinted int64
}

// RevisitCounts returns this run's revisit counts.
func (s *Scheduler) RevisitCounts() RevisitCounts {
	r := s.rv
	r.mu.Lock()
	next := r.failedNext
	r.mu.Unlock()
	return RevisitCounts{
		Revisits: r.revisits.Load(), NotModified: r.notModified.Load(), Changed: r.changed.Load(), Unchanged: r.unchanged.Load(),
		Retried: r.retried.Load(), Failed: r.failed.Load(), FailedNext: next, Taken: r.taken.Load(), Hinted: r.hinted.Load(),
	}
}

// schedule is what Finish records about a URL's revisit schedule.
type schedule struct {
	entry    string    // Outcome.Schedule ("" removes the URL's record)
	due      time.Time // Outcome.Due
	failed   bool      // Outcome.Failed
	revisit  bool      // the URL had been fetched before (2xx or 304)
	retry    bool      // its previous fetch had failed
	changed  bool      // the fetch saw a new fingerprint
	notMod   bool      // a 304 to a conditional request
	class    revisit.Class
	observed bool // the outcome is one the schedule follows
}

// scheduleOf applies v (a visit of req, not a retry) to req's schedule
// entry with the policy at now.
func (r *revisitState) scheduleOf(req frontier.Request, v Visit, now time.Time, log func(msg string, args ...any)) schedule {
	return scheduleVisit(r.policy, req, v, now, log)
}

// VisitSchedule is what the revisit policy made of one visit: the fields
// of crawlstate.Outcome (Schedule, Due, Failed) and what the visit was for
// the schedule's counts.
type VisitSchedule struct {
	// Entry, Due and Failed are crawlstate.Outcome's Schedule, Due and
	// Failed. Observed is false for an outcome the schedule does not follow
	// (a redirect, a robots.txt exclusion): the URL is done for good.
	Entry    string
	Due      time.Time
	Failed   bool
	Observed bool
	// Revisit: the URL had been fetched before (2xx or 304); Retry: its
	// previous fetch had failed; Changed: the fetch saw a new fingerprint;
	// NotModified: a 304 to a conditional request.
	Revisit, Retry, Changed, NotModified bool
}

// ScheduleVisit applies the revisit policy p to v, a visit of req that is
// not a retry (Visit.Retry false), at now: the rule Scheduler.Finish
// applies to every visit, for a topology that completes its visits without
// a Scheduler (the layered crawl's coordinator, which writes the result
// into a crawlstate.Revisits with Complete). An unreadable req.Schedule
// starts again as new, reported to log.
func ScheduleVisit(p revisit.Policy, req frontier.Request, v Visit, now time.Time, log func(msg string, args ...any)) VisitSchedule {
	sc := scheduleVisit(p, req, v, now, log)
	return VisitSchedule{Entry: sc.entry, Due: sc.due, Failed: sc.failed, Observed: sc.observed,
		Revisit: sc.revisit, Retry: sc.retry, Changed: sc.changed, NotModified: sc.notMod}
}

// scheduleVisit is ScheduleVisit, the one place the policy meets a visit.
func scheduleVisit(policy revisit.Policy, req frontier.Request, v Visit, now time.Time, log func(msg string, args ...any)) schedule {
	var e revisit.Entry
	if req.Schedule != "" {
		var err error
		if e, err = revisit.UnmarshalEntry([]byte(req.Schedule)); err != nil {
			log("cannot read a URL's revisit schedule; it starts again as new", "url", req.URL, "err", err)
			e = revisit.Entry{}
		}
	}
	out := schedule{revisit: !e.LastFetch.IsZero(), retry: e.Failures > 0}
	o, ok := observationOf(v, now)
	if !ok {
		return out // done for good: the record (if any) is removed
	}
	out.observed = true
	out.failed = o.Outcome == revisit.Failed || o.Outcome == revisit.NotModified && !o.Conditional
	out.notMod = o.Outcome == revisit.NotModified && o.Conditional
	out.changed = policy.Observe(&e, o, hostname(req.URL), req.Topic)
	if out.failed {
		out.class = e.FailClass
	}
	if !out.failed && policy.Mode == revisit.ModeOff {
		return out // fetched once, done
	}
	out.entry = string(e.AppendBinary(nil))
	out.due = e.Next
	return out
}

// observationOf maps a visit to the revisit policy's observation; ok is
// false for outcomes the schedule does not follow (a redirect, robots.txt
// exclusion, too many redirects).
func observationOf(v Visit, now time.Time) (o revisit.Observation, ok bool) {
	o = revisit.Observation{At: now, Conditional: v.Conditional, ETag: v.ETag, LastModified: v.LastModified, RetryAfter: v.RetryAfter}
	if code, err := strconv.Atoi(v.Outcome); err == nil {
		switch {
		case code == 304 || v.NotModified:
			o.Outcome = revisit.NotModified
		case code >= 200 && code < 300:
			o.Outcome, o.Fingerprint = revisit.Fetched, v.Fingerprint
			if o.Fingerprint == 0 {
				o.Fingerprint = v.ContentHash
			}
		case code >= 300 && code < 400:
			return o, false
		default:
			o.Outcome, o.Class = revisit.Failed, statusClass(code)
		}
		return o, true
	}
	var c revisit.Class
	switch v.Outcome {
	case OutcomeRobots, OutcomeTooManyRedirects, OutcomeNoSitemap:
		return o, false
	case OutcomeSitemap:
		// A sitemap read: revisited like a page (a continuous crawl reads
		// it again for new URLs); its content is not fingerprinted, so it
		// is never seen to change and its interval grows to the bound.
		o.Outcome, o.Fingerprint = revisit.Fetched, v.ContentHash
		return o, true
	case OutcomeDNS:
		c = revisit.ClassDNS
	case OutcomeRefused, OutcomeReset, OutcomeUnreachable, OutcomeTLS:
		c = revisit.ClassConnect
	case OutcomeTimeout:
		c = revisit.ClassTimeout
	case OutcomeRobotsUnavailable:
		c = revisit.ClassServer
	case OutcomeForbiddenAddress:
		c = revisit.ClassGone // a setting (--allow-private), not the network: final
	default:
		c = revisit.ClassNone
	}
	o.Outcome, o.Class = revisit.Failed, c
	return o, true
}

// statusClass is the failure class of an HTTP status that is not 2xx/3xx.
func statusClass(code int) revisit.Class {
	switch {
	case code == 429 || code == 503:
		return revisit.ClassThrottled
	case code >= 500:
		return revisit.ClassServer
	case code == 404:
		return revisit.ClassNotFound
	}
	return revisit.ClassGone // 410 and the other 4xx: final, until --retry-failed
}

// hostname is the host name of a URL, without port (the key of the
// per-host revisit bounds).
func hostname(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Hostname()
}

// outstanding is the number of URLs taken from the schedule and not yet
// finished.
func (r *revisitState) outstanding() int {
	r.outMu.Lock()
	defer r.outMu.Unlock()
	return len(r.out)
}

// taking marks urls taken from the schedule (FeedRevisits counts them).
func (r *revisitState) taking(reqs []frontier.Request) {
	r.outMu.Lock()
	for _, q := range reqs {
		r.out[q.URL] = struct{}{}
	}
	r.outMu.Unlock()
}

// finished ends url's count as taken, if it was, and wakes FeedRevisits.
func (r *revisitState) finished(url string) {
	r.outMu.Lock()
	_, ok := r.out[url]
	delete(r.out, url)
	r.outMu.Unlock()
	if ok {
		r.signal()
	}
}

// queued returns a channel closed when due URLs are next queued.
func (r *revisitState) queued() <-chan struct{} {
	r.pushMu.Lock()
	defer r.pushMu.Unlock()
	return r.pushed
}

// notifyQueued closes the channel queued returned.
func (r *revisitState) notifyQueued() {
	r.pushMu.Lock()
	close(r.pushed)
	r.pushed = make(chan struct{})
	r.pushMu.Unlock()
}

// signal wakes FeedRevisits (at most one wake-up is pending).
func (r *revisitState) signal() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// count records a finished schedule in the counters and metrics, and
// wakes FeedRevisits when the URL is due before it would look again.
func (r *revisitState) count(sc schedule) {
	if !sc.due.IsZero() {
		r.mu.Lock()
		early := sc.due.Before(r.sleepUntil)
		r.mu.Unlock()
		if early {
			r.signal()
		}
	}
	if !sc.observed {
		return
	}
	if sc.retry {
		r.retried.Add(1)
	}
	switch {
	case sc.failed:
		final := sc.due.IsZero()
		r.m.failed.WithLabelValues(sc.class.String(), strconv.FormatBool(final)).Inc()
		if sc.revisit {
			r.m.revisits.WithLabelValues("failed").Inc()
		}
		if !final {
			r.failed.Add(1)
			r.mu.Lock()
			if r.failedNext.IsZero() || sc.due.Before(r.failedNext) {
				r.failedNext = sc.due
			}
			r.mu.Unlock()
		}
	case sc.revisit:
		r.revisits.Add(1)
		if sc.notMod {
			r.notModified.Add(1)
			r.m.notModified.Inc()
		}
		if sc.changed {
			r.changed.Add(1)
			r.m.revisits.WithLabelValues("changed").Inc()
		} else {
			r.unchanged.Add(1)
			r.m.revisits.WithLabelValues("unchanged").Inc()
		}
	}
}

// revisits returns the State's revisit schedule, or nil when the State
// keeps none.
func (s *Scheduler) revisits() crawlstate.Revisits {
	rv, _ := s.st.(crawlstate.Revisits)
	return rv
}

// TakeDue moves up to max URLs due at now from rv (the State's revisit
// schedule, crawlstate.Revisits) into the frontier: rv makes them pending
// again, the frontier queues them at the head of their hosts' queues
// (frontier.PushUrgent: a revisit does not wait behind every new URL of its
// host; politeness still applies), so max should stay small: FeedRevisits
// keeps the URLs taken and not yet finished within the revisit share. It
// returns how many. The master–worker master and the p2p nodes call it
// with their State; the engine with its own (Start, FeedRevisits).
func (s *Scheduler) TakeDue(ctx context.Context, rv crawlstate.Revisits, now time.Time, max int) (int, error) {
	return s.takeDue(ctx, rv, now, max, true)
}

// takeDue is TakeDue; track counts the URLs as outstanding (FeedRevisits).
func (s *Scheduler) takeDue(ctx context.Context, rv crawlstate.Revisits, now time.Time, max int, track bool) (int, error) {
	if max <= 0 {
		return 0, nil
	}
	reqs, err := rv.TakeDue(ctx, now, max)
	if err != nil {
		return 0, fmt.Errorf("cannot take the URLs due for a revisit: %w", err)
	}
	if len(reqs) == 0 {
		return 0, nil
	}
	push := s.fr.PushAll
	if track {
		s.rv.taking(reqs)
		push = s.fr.PushUrgent
	}
	s.rv.taken.Add(int64(len(reqs)))
	s.rv.m.taken.Add(float64(len(reqs)))
	if err := push(reqs); err != nil {
		return 0, fmt.Errorf("cannot queue the URLs due for a revisit: %w", err)
	}
	s.rv.notifyQueued()
	return len(reqs), nil
}

// TakeAllDue moves every URL due at now from rv into the frontier, in
// batches, queued like new URLs (by depth, spilled beyond the memory
// budget: a one-shot crawl's start, where no share applies), and returns
// how many.
func (s *Scheduler) TakeAllDue(ctx context.Context, rv crawlstate.Revisits, now time.Time) (int, error) {
	const batch = 1000
	total := 0
	for {
		n, err := s.takeDue(ctx, rv, now, batch, false)
		total += n
		if err != nil || n < batch {
			return total, err
		}
	}
}

// FeedRevisits takes due URLs from rv into the frontier until ctx ends (a
// continuous crawl): while new URLs wait in the frontier, revisits
// outstanding (taken, not yet finished) stay within Config.RevisitShare of
// Config.Concurrency; when none wait, up to twice Concurrency are taken at
// a time, so revisits use the free capacity. With nothing due it sleeps
// until rv's NextDue (at most maxFeedSleep, so a URL another process made
// due is found), or until a revisit finishes. It returns nil when ctx ends
// and the first error of rv otherwise.
func (s *Scheduler) FeedRevisits(ctx context.Context, rv crawlstate.Revisits) error {
	share := max(1, int(math.Ceil(s.cfg.RevisitShare*float64(s.cfg.Concurrency))))
	idle := 2 * s.cfg.Concurrency
	fail := func(err error) error {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	for {
		now := s.rv.now()
		out := s.rv.outstanding()
		st := s.fr.Stats()
		waiting := st.Queued + int(st.Spilled) + st.Leased - out // new URLs (and retries) waiting
		limit := idle
		if waiting > 0 {
			limit = share
		}
		want := limit - out
		// NextDue first: a read, where TakeDue writes even when nothing is due.
		next, has, err := rv.NextDue(ctx)
		if err != nil {
			return fail(fmt.Errorf("cannot read the next revisit time: %w", err))
		}
		n := 0
		if want > 0 && has && !next.After(now) {
			if n, err = s.TakeDue(ctx, rv, now, want); err != nil {
				return fail(err)
			}
		}
		sleep := maxFeedSleep
		switch {
		case want <= 0 || n > 0 && n == want:
			// At the bound, or more may be due: look again when a revisit
			// finishes, or soon.
			sleep = minFeedSleep * 4
		case has && n == 0:
			sleep = min(max(next.Sub(now), minFeedSleep), maxFeedSleep)
		case has:
			sleep = minFeedSleep
		}
		s.rv.mu.Lock()
		s.rv.sleepUntil = now.Add(sleep)
		s.rv.mu.Unlock()
		t := time.NewTimer(sleep)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-s.rv.wake:
		case <-t.C:
		}
		t.Stop()
	}
}

// The continuous crawl's feeding loop sleeps between minFeedSleep and
// maxFeedSleep.
const (
	minFeedSleep = 25 * time.Millisecond
	maxFeedSleep = 5 * time.Second
)

// ScheduleStatus is the revisit schedule of a crawl as its summary shows
// it: the State's records and due index (crawlstate.Revisits.Scheduled,
// NextDue) and this run's counts.
type ScheduleStatus struct {
	// Records are the URLs with a revisit record (pages to revisit,
	// failures to retry); Due of them are in the due index, the earliest
	// at Next (zero: none).
	Records, Due int64
	Next         time.Time
	Counts       RevisitCounts
}

// ScheduleStatus reads the State's revisit schedule; ok is false when the
// State keeps none. Call it before Close.
func (s *Scheduler) ScheduleStatus(ctx context.Context) (st ScheduleStatus, ok bool, err error) {
	st.Counts = s.RevisitCounts()
	rv := s.revisits()
	if rv == nil {
		return st, false, nil
	}
	if st.Records, st.Due, err = rv.Scheduled(ctx); err != nil {
		return st, true, fmt.Errorf("cannot read the revisit schedule: %w", err)
	}
	next, has, err := rv.NextDue(ctx)
	if err != nil {
		return st, true, fmt.Errorf("cannot read the revisit schedule: %w", err)
	}
	if has {
		st.Next = next
	}
	return st, true, nil
}

// Print writes the schedule's lines of the crawl summary at now: the
// revisits of this run, the failures that will be retried and when, and,
// when this run fetched nothing (fetched), when the next URL is due.
func (st ScheduleStatus) Print(w io.Writer, now time.Time, fetched int64) {
	c := st.Counts
	if c.Revisits > 0 || c.Retried > 0 {
		fmt.Fprintf(w, "revisits: %d (not modified, 304: %d; changed: %d; unchanged: %d); retries of failed URLs: %d\n",
			c.Revisits, c.NotModified, c.Changed, c.Unchanged, c.Retried)
	}
	if c.Hinted > 0 {
		fmt.Fprintf(w, "revisits brought forward by a sitemap's lastmod: %d\n", c.Hinted)
	}
	if c.Failed > 0 {
		fmt.Fprintf(w, "%d failed %s will be retried after %s; spider crawl --retry-failed retries them now\n",
			c.Failed, "URL"+plural(c.Failed), when(c.FailedNext, now))
		return
	}
	if fetched == 0 && !st.Next.IsZero() {
		fmt.Fprintf(w, "nothing was due yet: %d %s scheduled, the next at %s; spider crawl --retry-failed retries failed URLs now\n",
			st.Due, "URL"+plural(st.Due), when(st.Next, now))
	}
}

// when writes t for a person at now: "15:04:05 UTC (in 1m30s)", with the
// date when it is not today.
func when(t, now time.Time) string {
	t, now = t.UTC(), now.UTC()
	layout := "15:04:05 UTC"
	if t.YearDay() != now.YearDay() || t.Year() != now.Year() {
		layout = "2006-01-02 15:04:05 UTC"
	}
	d := t.Sub(now)
	if d <= 0 {
		return t.Format(layout) + " (now)"
	}
	return fmt.Sprintf("%s (in %s)", t.Format(layout), d.Round(time.Second))
}
