package server

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/crawlstate"
	"github.com/spider-crawler/spider/internal/frontier"
)

// Engine is what the server uses of a crawl running in this process.
type Engine interface {
	Progress() crawl.Progress
	RunState() string
	Pause() error
	Resume() error
	Stop()
	AddSeeds(ctx context.Context, urls []string) (int, error)
	// HostStates reports the politeness state of each host (host[:port]),
	// in order; ok is false when politeness is not kept per host (--per-ip).
	HostStates(hosts []string) (states []frontier.KeyState, ok bool)
	// Config is the crawl's effective configuration.
	Config() crawl.Config
}

var _ Engine = (*crawl.Engine)(nil)

// ScheduleEngine is an Engine that keeps a revisit schedule (issue 26):
// the dashboard shows it. crawl.Engine is one; an Engine that is not
// shows none.
type ScheduleEngine interface {
	// ScheduleCounts reads the state's schedule at now; ok is false when
	// the state keeps none.
	ScheduleCounts(ctx context.Context, now time.Time) (c crawlstate.ScheduleCounts, ok bool, err error)
	// RevisitCounts are this run's revisits.
	RevisitCounts() crawl.RevisitCounts
}

var _ ScheduleEngine = (*crawl.Engine)(nil)

// EngineView is the CrawlView and Controller of a crawl running in this
// process (spider crawl --addr): counts and errors come from its data
// directory's records, queue depths and state from the engine.
type EngineView struct {
	eng      Engine
	dir      *DirView
	now      func() time.Time
	finished atomic.Bool
}

var (
	_ CrawlView  = (*EngineView)(nil)
	_ Controller = (*EngineView)(nil)
)

// NewEngineView views eng, which writes its records into dataDir; now
// may be nil (time.Now).
func NewEngineView(eng Engine, dataDir string, now func() time.Time) *EngineView {
	if now == nil {
		now = time.Now
	}
	return &EngineView{eng: eng, dir: NewDirView(dataDir, now), now: now}
}

// Finished marks the engine's Run as returned: the state becomes
// "finished" and control calls answer ErrConflict.
func (v *EngineView) Finished() { v.finished.Store(true) }

// Snapshot implements CrawlView.
func (v *EngineView) Snapshot(ctx context.Context) (*CrawlStatus, error) {
	st, err := v.dir.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	st.Source = "in-process"
	st.Control = !v.finished.Load()
	st.Config = NewCrawlConfig(v.eng.Config())
	st.State = v.eng.RunState()
	if v.finished.Load() {
		st.State = "finished"
		return st, nil
	}
	p := v.eng.Progress()
	st.Queue = &Queue{Queued: int64(p.Queued), InFlight: int64(p.InFlight), Hosts: int64(p.Hosts)}
	v.hostClock(st)
	v.engineSchedule(ctx, st)
	v.engineTopics(st)
	return st, nil
}

// engineSchedule fills st.Schedule from the engine's own state (exact,
// not the file it writes for other processes) with this run's revisits;
// the dashboard shows none for a crawl without a schedule.
func (v *EngineView) engineSchedule(ctx context.Context, st *CrawlStatus) {
	se, ok := v.eng.(ScheduleEngine)
	if !ok {
		return
	}
	now := v.now()
	c, ok, err := se.ScheduleCounts(ctx, now)
	if err != nil || !ok {
		return
	}
	run := se.RevisitCounts()
	st.Schedule = NewSchedule(c, now)
	if st.Schedule == nil && run == (crawl.RevisitCounts{}) {
		return
	}
	if st.Schedule == nil {
		st.Schedule = &Schedule{At: now.UTC()}
	}
	st.Schedule.Run = NewScheduleRun(run)
}

// hostClock fills the politeness fields of st.Hosts from the engine's
// frontier: the time to each host's next allowed start, rounded up to the
// millisecond, 0 when it may start now.
func (v *EngineView) hostClock(st *CrawlStatus) {
	names := make([]string, len(st.Hosts))
	for i, h := range st.Hosts {
		names[i] = h.Host
	}
	states, ok := v.eng.HostStates(names)
	if !ok || len(states) != len(names) {
		return
	}
	st.HostClock = true
	now := v.now()
	for i, ks := range states {
		h := &st.Hosts[i]
		h.InFlight, h.Queued = ks.Leases, ks.Queued
		if wait := ks.Next.Sub(now); !ks.Next.IsZero() && wait > 0 {
			h.NextFetchMS = (wait + time.Millisecond - 1).Milliseconds()
		}
	}
}

// engineErr maps the engine's errors to the server's.
func (v *EngineView) engineErr(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, crawl.ErrNotRunning) {
		return fmt.Errorf("%w: %w", ErrConflict, err)
	}
	return err
}

func (v *EngineView) check(what string) error {
	if v.finished.Load() {
		return fmt.Errorf("%w: cannot %s: the crawl has finished", ErrConflict, what)
	}
	return nil
}

// Pause implements Controller.
func (v *EngineView) Pause(context.Context) error {
	if err := v.check("pause"); err != nil {
		return err
	}
	return v.engineErr(v.eng.Pause())
}

// Resume implements Controller.
func (v *EngineView) Resume(context.Context) error {
	if err := v.check("resume"); err != nil {
		return err
	}
	return v.engineErr(v.eng.Resume())
}

// Stop implements Controller: the crawl stops handing out URLs, finishes
// its fetches in flight and ends; running it again resumes it.
func (v *EngineView) Stop(context.Context) error {
	if err := v.check("stop"); err != nil {
		return err
	}
	v.eng.Stop()
	return nil
}

// AddSeeds implements Controller. Every URL must be an absolute http(s)
// URL; otherwise nothing is added and the error wraps ErrInvalid.
func (v *EngineView) AddSeeds(ctx context.Context, urls []string) (int, error) {
	if err := v.check("add seeds"); err != nil {
		return 0, err
	}
	for _, s := range urls {
		if err := CheckSeed(s); err != nil {
			return 0, err
		}
	}
	n, err := v.eng.AddSeeds(ctx, urls)
	return n, v.engineErr(err)
}

// checkSeed accepts absolute http and https URLs with a host.
func CheckSeed(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%w: seed %q is not an absolute http(s) URL: give URLs like https://example.org/", ErrInvalid, s)
	}
	return nil
}

// hostOf is the host[:port] of a URL, "" if it does not parse.
func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Host
}
