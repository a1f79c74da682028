package layered

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/frontier"
	"github.com/spider-crawler/spider/internal/state"
	"github.com/spider-crawler/spider/internal/store"
)

// The revisit schedule of a layered crawl (issue 26): the one schedule of
// every topology, not a format of its own.
//
//   - Every fetch is judged by the crawl's revisit.Policy where it is made
//     (crawl.ScheduleVisit in the task, the rule Scheduler.Finish applies in
//     the other modes: change by content fingerprint, a 304 to a conditional
//     request unchanged, failures on their class's back-off); the verdict
//     travels with the task's result (PageLinks.Sched).
//   - The coordinator writes it into the crawl's revisit schedule, the
//     embedded back-end's crawlstate.Revisits (internal/state) in
//     DATA/layered/schedule: the layered crawl's state (its manifest, its URL
//     set) lives in the coordinator's data directory, with or without Redis,
//     and a process coordinates only with that directory, so the schedule
//     lives beside it. A round's page enters it with Discover then Complete
//     (Outcome.Schedule/Due/Failed); under --revisit off only failures are
//     written (a fetched page would be done for good anyway).
//   - Revisit rounds run once the layered rounds are done (never between
//     them: a round is a depth level, and a revisit is no level): each takes
//     the URLs due (TakeDue, at most revisitBatch), splits them by
//     domain-hash group into KindRevisit tasks that the workers fetch as any
//     task, with the host's politeness and a conditional GET, merges their
//     pages (a 304 adds a record and keeps the copy, a changed page is
//     stored again) and completes each URL with its new schedule entry.
//     Links of a revisited page are not followed: the levels are done.
//   - With --continuous the rounds go on until Ctrl-C or spider control
//     stop; without, they take what was due when the run started (after
//     --retry-failed made the failures due; a failure of this run is due
//     later), as a one-shot spider crawl does, and end.
//
// Crash safety: TakeDue makes URLs pending in the same transaction that
// takes them from the due index; the round's input (with each URL's Seq
// and entry) is written to revisits/round-N/in.json before any task runs,
// and the manifest moves to round N+1 only after every URL of round N was
// completed. After a kill, a round with an input runs again (tasks that
// finished keep their result, merged tasks are not merged again, a
// Complete of a URL no longer pending does nothing); without one, the
// pending URLs (taken, never written down) are the round's input.

// revisitBatch is the most URLs a revisit round takes.
const revisitBatch = 1000

// revisitInput is a revisit round's input, revisits/round-N/in.json.
type revisitInput struct {
	Reqs      []frontier.Request `json:"reqs"`
	Schedules [][]byte           `json:"schedules"`
}

// scheduleDir is where the revisit schedule lives.
func (c *Crawler) scheduleDir() string { return store.DataDir(c.root).Schedule() }

// openSchedule opens the revisit schedule (the coordinator's).
func (c *Crawler) openSchedule() error {
	st, err := state.Open(c.scheduleDir(), state.Options{ExpectedURLs: 100_000, Logger: c.log})
	if err != nil {
		return fmt.Errorf("cannot open the layered crawl's revisit schedule in %s: %w", c.scheduleDir(), err)
	}
	c.sched = st
	return nil
}

// closeSchedule keeps the schedule's status for the summary and closes it.
func (c *Crawler) closeSchedule(ctx context.Context) {
	if c.sched == nil {
		return
	}
	c.rvMu.Lock()
	st := &c.rv
	if rec, due, err := c.sched.Scheduled(context.WithoutCancel(ctx)); err == nil {
		st.Records, st.Due = rec, due
	}
	if next, ok, err := c.sched.NextDue(context.WithoutCancel(ctx)); err == nil && ok {
		st.Next = next
	}
	c.rvMu.Unlock()
	if err := c.sched.Close(); err != nil {
		c.log.Warn("layered: cannot close the revisit schedule", "err", err)
	}
	c.sched = nil
}

// ScheduleStatus is the revisit schedule after Run: its records, those due
// and the earliest due time, and the revisits of this run.
func (c *Crawler) ScheduleStatus() crawl.ScheduleStatus {
	c.rvMu.Lock()
	defer c.rvMu.Unlock()
	return c.rv
}

// count adds one completed fetch to this run's revisit counts.
func (c *Crawler) count(ps crawl.VisitSchedule) {
	if !ps.Observed {
		return
	}
	c.rvMu.Lock()
	defer c.rvMu.Unlock()
	n := &c.rv.Counts
	if ps.Retry {
		n.Retried++
	}
	switch {
	case ps.Failed:
		if !ps.Due.IsZero() {
			n.Failed++
			if n.FailedNext.IsZero() || ps.Due.Before(n.FailedNext) {
				n.FailedNext = ps.Due
			}
		}
	case ps.Revisit:
		n.Revisits++
		if ps.NotModified {
			n.NotModified++
		}
		if ps.Changed {
			n.Changed++
		} else {
			n.Unchanged++
		}
	}
}

// verdict applies the crawl's revisit policy to a fetch of req (its
// Schedule: the entry it was fetched with) that pl reports: the rule of
// every topology (crawl.ScheduleVisit), on the coordinator, so that every
// worker's fetch is judged by one policy.
func (c *Crawler) verdict(req frontier.Request, pl PageLinks) crawl.VisitSchedule {
	if pl.Obs == nil { // a task of an older spider: a page fetched, not judged
		return crawl.VisitSchedule{}
	}
	o := pl.Obs
	v := crawl.Visit{Outcome: pl.Outcome, Conditional: o.Conditional, NotModified: o.NotModified, ETag: o.ETag,
		LastModified: o.LastModified, Fingerprint: o.Fingerprint, ContentHash: o.ContentHash, RetryAfter: o.RetryAfter}
	return crawl.ScheduleVisit(c.policy, req, v, o.At, c.log.Warn)
}

// outcomeOf is the schedule's Complete outcome of a page and its verdict.
func outcomeOf(pl PageLinks, vs crawl.VisitSchedule) state.Outcome {
	o := state.Outcome{Class: pl.Outcome, Schedule: vs.Entry, Due: vs.Due, Failed: vs.Failed}
	if o.Class == "" {
		o.Class = "error"
	}
	return o
}

// scheduleFirst writes the schedule entries of a fetch pass of round r:
// every page whose verdict keeps a record (a page to revisit, a failure to
// retry) and that the schedule has not seen.
func (c *Crawler) scheduleFirst(ctx context.Context, r int, results []*FetchResult) error {
	var reqs []frontier.Request
	pages := map[string]PageLinks{}
	verdicts := map[string]crawl.VisitSchedule{}
	for _, res := range results {
		for _, pl := range res.Pages {
			q := frontier.Request{URL: pl.URL, Depth: r, Priority: r}
			vs := c.verdict(q, pl)
			c.count(vs)
			if vs.Entry == "" && !vs.Failed {
				continue
			}
			if _, dup := pages[pl.URL]; !dup {
				pages[pl.URL], verdicts[pl.URL] = pl, vs
				reqs = append(reqs, q)
			}
		}
	}
	if len(reqs) == 0 {
		return nil
	}
	acc, err := c.sched.Discover(ctx, reqs)
	if err != nil {
		return fmt.Errorf("cannot add round %d's pages to the revisit schedule: %w", r, err)
	}
	for _, q := range acc {
		if _, err := c.sched.Complete(ctx, q, outcomeOf(pages[q.URL], verdicts[q.URL]), nil); err != nil {
			return fmt.Errorf("cannot write the revisit schedule of %s: %w", q.URL, err)
		}
	}
	return nil
}

// revisitRounds runs the revisit rounds once the layered rounds are done
// (see the comment at the top of this file); it returns nil when nothing
// is left due (without --continuous), and ctx's error when it ends (a
// continuous crawl ends so: not finished, the next run goes on).
func (c *Crawler) revisitRounds(ctx context.Context, mp mapper, main *mainStore) error {
	start := c.runStart
	if c.cfg.RetryFailed {
		n, err := c.sched.RetryFailed(ctx, start)
		if err != nil {
			return fmt.Errorf("cannot make the failed URLs due: %w", err)
		}
		c.log.Info("layered: failed URLs due again", "urls", n)
	}
	for {
		at := start
		if c.cfg.Continuous {
			at = time.Now()
		}
		in, err := c.revisitInput(ctx, at)
		if err != nil {
			return err
		}
		if len(in.Reqs) == 0 {
			if !c.cfg.Continuous {
				return nil
			}
			if err := c.waitDue(ctx); err != nil {
				return err
			}
			continue
		}
		if err := c.revisitRound(ctx, mp, main, in); err != nil {
			return err
		}
	}
}

// waitDue sleeps until the schedule's next URL is due (at most a second,
// so that a URL made due by another process is found) or ctx ends.
func (c *Crawler) waitDue(ctx context.Context) error {
	sleep := time.Second
	next, ok, err := c.sched.NextDue(ctx)
	if err != nil {
		return fmt.Errorf("cannot read the next revisit time: %w", err)
	}
	if ok {
		sleep = min(max(time.Until(next), 25*time.Millisecond), time.Second)
	}
	t := time.NewTimer(sleep)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// revisitInput returns the input of the revisit round in progress: the
// one written down, else the URLs left pending by a crash, else up to
// revisitBatch URLs due at now; written down before it is returned.
func (c *Crawler) revisitInput(ctx context.Context, now time.Time) (revisitInput, error) {
	var in revisitInput
	path := filepath.Join(revisitDir(c.root, c.man.Revisit), "in.json")
	if err := readJSON(path, &in); err == nil {
		return in, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return in, err
	}
	var reqs []frontier.Request
	err := c.sched.LoadPending(ctx, func(q frontier.Request) error {
		if len(reqs) < revisitBatch {
			reqs = append(reqs, q)
		}
		return nil
	})
	if err != nil {
		return in, fmt.Errorf("cannot read the revisits in progress: %w", err)
	}
	if len(reqs) == 0 {
		if reqs, err = c.sched.TakeDue(ctx, now, revisitBatch); err != nil {
			return in, fmt.Errorf("cannot take the URLs due for a revisit: %w", err)
		}
		c.rvMu.Lock()
		c.rv.Counts.Taken += int64(len(reqs))
		c.rvMu.Unlock()
	}
	if len(reqs) == 0 {
		return in, nil
	}
	for i := range reqs {
		var s []byte
		if reqs[i].Schedule != "" {
			s = []byte(reqs[i].Schedule)
		}
		in.Schedules = append(in.Schedules, s)
		reqs[i].Schedule = ""
	}
	in.Reqs = reqs
	if err := writeJSON(path, in); err != nil {
		return in, err
	}
	return in, nil
}

// revisitRound fetches a revisit round's URLs as KindRevisit tasks (one per
// domain-hash group), merges their pages, completes every URL in the
// schedule with its new entry and moves the manifest to the next round.
func (c *Crawler) revisitRound(ctx context.Context, mp mapper, main *mainStore, in revisitInput) error {
	n := c.man.Revisit
	byGroup := map[int]*Task{}
	var groups []int
	for i, q := range in.Reqs {
		g := GroupOf(q.URL, c.opt.Groups)
		t := byGroup[g]
		if t == nil {
			t = &Task{Kind: KindRevisit, Round: n, Group: g}
			byGroup[g] = t
			groups = append(groups, g)
		}
		t.Reqs = append(t.Reqs, q)
		var s []byte
		if i < len(in.Schedules) {
			s = in.Schedules[i]
		}
		t.Schedules = append(t.Schedules, s)
	}
	slices.Sort(groups)
	tasks := make([]Task, len(groups))
	for i, g := range groups {
		tasks[i] = *byGroup[g]
	}
	c.log.Info("layered revisit round", "round", n, "urls", len(in.Reqs), "tasks", len(tasks))
	results, err := mp.fetch(ctx, tasks)
	if err != nil {
		return err
	}
	for _, t := range tasks {
		if slices.Contains(c.man.Merged, t.ID()) {
			continue
		}
		if err := main.merge(taskDir(c.root, t)); err != nil {
			return err
		}
		c.man.Merged = append(c.man.Merged, t.ID())
		if err := c.save(); err != nil {
			return err
		}
	}
	pages := map[string]PageLinks{}
	for _, res := range results {
		for _, pl := range res.Pages {
			pages[pl.URL] = pl
		}
	}
	for i, q := range in.Reqs {
		pl, ok := pages[q.URL]
		if !ok {
			continue // not fetched: still pending, the next round takes it
		}
		// The request as taken, its entry the one it was fetched with.
		req := q
		if i < len(in.Schedules) {
			req.Schedule = string(in.Schedules[i])
		}
		vs := c.verdict(req, pl)
		if _, err := c.sched.Complete(ctx, q, outcomeOf(pl, vs), nil); err != nil {
			return fmt.Errorf("cannot write the revisit schedule of %s: %w", q.URL, err)
		}
		c.count(vs)
	}
	if err := c.sched.Sync(); err != nil {
		return fmt.Errorf("cannot save the revisit schedule: %w", err)
	}
	c.man.Revisit, c.man.Merged = n+1, nil
	if err := c.save(); err != nil {
		return err
	}
	if err := os.RemoveAll(revisitDir(c.root, n)); err != nil {
		c.log.Warn("layered: cannot remove a finished revisit round", "round", n, "err", err)
	}
	return nil
}

// revisitResult is a KindRevisit task's result: each URL done with its
// outcome and schedule verdict (no DOM pass: a revisit's links are not
// followed).
func (c *Crawler) revisitResult(dir string, t Task, log *linkLog) (*FetchResult, error) {
	res := &FetchResult{Task: t.ID(), Outcomes: map[string]int{}}
	stored := map[string]bool{}
	r, err := store.OpenRecords(dir, store.Options{Logger: c.log})
	if err != nil {
		return nil, err
	}
	_, err = r.Iterate(func(rec store.Record) error { stored[rec.URL] = rec.PageNo >= 0; return nil })
	r.Close()
	if err != nil {
		return nil, fmt.Errorf("cannot read the records of task %s: %w", t.ID(), err)
	}
	for _, ll := range log.lines {
		res.Fetched++
		res.Outcomes[ll.Outcome]++
		if stored[ll.URL] {
			res.Stored++
		}
		res.Pages = append(res.Pages, PageLinks{URL: ll.URL, Outcome: ll.Outcome, Obs: ll.Obs})
	}
	return res, nil
}
