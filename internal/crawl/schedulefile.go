package crawl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spider-crawler/spider/internal/crawlstate"
	"github.com/spider-crawler/spider/internal/state"
	"github.com/spider-crawler/spider/internal/store"
)

// The revisit schedule as spider status and the dashboard show it (issue
// 26). A data directory's schedule lives in its bbolt state, which a
// running crawl holds locked; so the engine writes its figures to
// DATA/ScheduleFile every ScheduleFileEvery while it runs (and once at the
// end of each run), and ReadSchedule reads the state itself when no crawl
// holds it, the file when one does.

// ScheduleFile is the name of the schedule's figures in a data directory.
const ScheduleFile = "schedule.json"

// ScheduleFileEvery is how often a running engine rewrites ScheduleFile.
const ScheduleFileEvery = 2 * time.Second

// ScheduleSnapshot is a crawl's revisit schedule at At: the State's
// crawlstate.ScheduleCounts. Live reports that it was read from the state
// (false: from the file a running crawl wrote).
type ScheduleSnapshot struct {
	crawlstate.ScheduleCounts
	At   time.Time
	Live bool
}

// scheduleFile is ScheduleFile's JSON.
type scheduleFile struct {
	Records int64     `json:"records"`
	Due     int64     `json:"due"`
	Overdue int64     `json:"overdue"`
	Failed  int64     `json:"failed"`
	NextDue time.Time `json:"next_due,omitzero"`
	At      time.Time `json:"at"`
}

// ScheduleCounts reads the State's revisit schedule at now; ok is false
// when the State keeps none (no crawlstate.Rescheduler).
func (s *Scheduler) ScheduleCounts(ctx context.Context, now time.Time) (c crawlstate.ScheduleCounts, ok bool, err error) {
	rs, ok := s.st.(crawlstate.Rescheduler)
	if !ok {
		return c, false, nil
	}
	c, err = rs.ScheduleCounts(ctx, now)
	if err != nil {
		return c, true, fmt.Errorf("cannot read the revisit schedule: %w", err)
	}
	return c, true, nil
}

// writeScheduleFile writes the schedule's figures at now to
// DATA/ScheduleFile (a new file renamed over the old one). A crawl that
// has no schedule and never had one writes nothing.
func (e *Engine) writeScheduleFile(ctx context.Context) error {
	now := e.rv.now()
	c, ok, err := e.ScheduleCounts(ctx, now)
	if err != nil || !ok {
		return err
	}
	path := filepath.Join(e.cfg.Data, ScheduleFile)
	if c.Records == 0 {
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return nil
		}
	}
	b, err := json.Marshal(scheduleFile{Records: c.Records, Due: c.Due, Overdue: c.Overdue, Failed: c.Failed, NextDue: c.Next.UTC(), At: now.UTC()})
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("cannot write the revisit schedule's figures: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("cannot write the revisit schedule's figures: %w", err)
	}
	return nil
}

// scheduleFileLoop rewrites ScheduleFile every ScheduleFileEvery until
// ctx ends; a failure is logged once and the loop goes on. Counting walks
// the failed set and the overdue part of the due index, which grow with the
// crawl: the next write waits at least 20 times as long as the last one
// took, so the figures never cost more than about 5 % of a core.
func (e *Engine) scheduleFileLoop(ctx context.Context) {
	t := time.NewTimer(ScheduleFileEvery)
	defer t.Stop()
	logged := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		start := time.Now()
		err := e.writeScheduleFile(ctx)
		t.Reset(max(ScheduleFileEvery, 20*time.Since(start)))
		if err != nil && !logged && ctx.Err() == nil {
			logged = true
			e.log.Warn("cannot write the revisit schedule's figures for spider status", "err", err)
		}
	}
}

// ReadSchedule reads the revisit schedule of the crawl in dataDir at now:
// from its state when no crawl holds the directory (Live), else from the
// ScheduleFile the running crawl rewrites. ok is false when the crawl has
// no schedule (no revisit record: a one-shot crawl with --revisit off and
// no failure to retry, or a directory older than the schedule), so callers
// show nothing.
func ReadSchedule(dataDir string, now time.Time) (snap ScheduleSnapshot, ok bool, err error) {
	c, err := state.ReadScheduleCounts(store.DataDir(dataDir).State(), now)
	if err == nil {
		return ScheduleSnapshot{ScheduleCounts: c, At: now, Live: true}, c.Records > 0, nil
	}
	if !errors.Is(err, state.ErrLocked) {
		return snap, false, err
	}
	b, ferr := os.ReadFile(filepath.Join(dataDir, ScheduleFile))
	if errors.Is(ferr, os.ErrNotExist) {
		return snap, false, nil // the running crawl has not written one (yet, or has no schedule)
	}
	if ferr != nil {
		return snap, false, fmt.Errorf("cannot read the revisit schedule's figures: %w", ferr)
	}
	var f scheduleFile
	if err := json.Unmarshal(b, &f); err != nil {
		return snap, false, fmt.Errorf("cannot read the revisit schedule's figures in %s: %w (the crawl rewrites it every %s)", filepath.Join(dataDir, ScheduleFile), err, ScheduleFileEvery)
	}
	snap = ScheduleSnapshot{ScheduleCounts: crawlstate.ScheduleCounts{Records: f.Records, Due: f.Due, Overdue: f.Overdue, Failed: f.Failed, Next: f.NextDue}, At: f.At}
	return snap, f.Records > 0, nil
}
