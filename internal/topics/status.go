package topics

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"
)

// StatusFile is the topics status file, relative to a crawl's data
// directory; the crawl rewrites it on every daemon tick.
const StatusFile = "topics/status.json"

// ErrNoStatus is returned by ReadStatus for a data directory of a crawl
// that ran without --topics.
var ErrNoStatus = errors.New("no topics status: the crawl did not run with --topics")

// Status is a snapshot of the scheduler for spider stats and status, and
// the JSON of the status file (snake_case keys, durations in keys ending
// _ms, RFC 3339 times: the style of every JSON spider prints).
type Status struct {
	Updated     time.Time    `json:"updated"`
	Epoch       int64        `json:"epoch"`
	PeriodMS    int64        `json:"period_ms"` // the scheduling period`
	PeriodStart time.Time    `json:"period_start"`
	Running     string       `json:"running"`
	Switches    int64        `json:"switches"`
	Preemptions int64        `json:"preemptions"`
	Tasks       []TaskStatus `json:"tasks"`
}

// TaskStatus is one task's line of the status.
type TaskStatus struct {
	ID             uint32    `json:"id"`
	Theme          uint32    `json:"theme"`
	Name           string    `json:"name"`
	Description    string    `json:"description,omitempty"`
	Granularity    string    `json:"granularity"`
	Priority       int       `json:"priority"`
	State          string    `json:"state"`
	SliceTotalMS   int64     `json:"slice_total_ms"`
	SliceRemainMS  int64     `json:"slice_remain_ms"`
	Queued         int       `json:"queued"`
	Pages          int64     `json:"pages"`
	Relevant       int64     `json:"relevant"`
	Yield          float64   `json:"yield"`
	PeriodRelevant int64     `json:"period_relevant"`
	MinPages       int       `json:"min_pages"`
	Preemptions    int64     `json:"preemptions"`
	LastPreempted  time.Time `json:"last_preempted,omitzero"`
	PreemptedBy    string    `json:"preempted_by,omitempty"`
	Recrawls       int64     `json:"recrawls"`
	FirstPage      time.Time `json:"first_page,omitzero"`
	Shrinks        int64     `json:"shrinks"`
	Grows          int64     `json:"grows"`
	// Blocked counts the task's URLs robots.txt disallowed (no page).
	Blocked int64 `json:"blocked"`
	// Note explains a figure a reader would otherwise take for a fault,
	// e.g. a topic with no page because robots.txt refused every URL.
	Note string `json:"note,omitempty"`
}

// Status returns the scheduler's current status.
func (s *Scheduler) Status(now time.Time) Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Status{Updated: now, Epoch: s.epoch, PeriodMS: time.Duration(s.cfg.Period).Milliseconds(), PeriodStart: s.periodStart,
		Switches: s.switches, Preemptions: s.preemptions}
	if s.running != nil {
		st.Running = s.running.Name
	}
	for _, t := range s.tasks {
		ts := TaskStatus{
			ID: t.ID, Theme: t.Theme, Name: t.Name, Description: t.Description, Granularity: t.Granularity.String(),
			Priority: t.Priority, State: t.State.String(), SliceTotalMS: t.SliceTotal.Milliseconds(),
			SliceRemainMS: t.SliceRemain.Milliseconds(), Queued: t.Queued, Pages: t.Pages, Relevant: t.Relevant,
			PeriodRelevant: t.PeriodRelevant, MinPages: t.minPages, Preemptions: t.Preemptions,
			LastPreempted: t.LastPreempted, PreemptedBy: t.PreemptedBy, Recrawls: t.Recrawls, FirstPage: t.FirstPage,
			Shrinks: t.Shrinks, Grows: t.Grows, Blocked: t.Blocked,
		}
		if t.Pages > 0 {
			ts.Yield = float64(t.Relevant) / float64(t.Pages)
		}
		if t.Pages == 0 && t.Blocked > 0 {
			ts.Note = fmt.Sprintf("no page: robots.txt disallowed all %d of its URLs requested so far", t.Blocked)
		}
		st.Tasks = append(st.Tasks, ts)
	}
	return st
}

// WriteStatus writes st to dataDir/StatusFile atomically (a temporary file
// renamed over the old one).
func WriteStatus(dataDir string, st Status) error {
	path := filepath.Join(dataDir, StatusFile)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("cannot write topics status: %w", err)
	}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("cannot encode topics status: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("cannot write topics status: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("cannot write topics status: %w", err)
	}
	return nil
}

// ReadStatus reads the status file of the crawl in dataDir; ErrNoStatus
// (wrapped) when there is none.
func ReadStatus(dataDir string) (Status, error) {
	var st Status
	b, err := os.ReadFile(filepath.Join(dataDir, StatusFile))
	if errors.Is(err, os.ErrNotExist) {
		return st, fmt.Errorf("%s: %w", dataDir, ErrNoStatus)
	}
	if err != nil {
		return st, fmt.Errorf("cannot read topics status: %w", err)
	}
	// A file written before the JSON style of issue 20 has "period" as a
	// Go duration string ("1m0s") instead of "period_ms".
	var old struct {
		Period string `json:"period"`
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("cannot decode topics status %s (rerun the crawl to rewrite it): %w", filepath.Join(dataDir, StatusFile), err)
	}
	if st.PeriodMS == 0 && json.Unmarshal(b, &old) == nil && old.Period != "" {
		if d, err := time.ParseDuration(old.Period); err == nil {
			st.PeriodMS = d.Milliseconds()
		}
	}
	return st, nil
}

// Print writes the status as a table: one line per task.
func (st Status) Print(w io.Writer) {
	fmt.Fprintf(w, "topics: epoch %d, period %s, running %s, %d switches, %d pre-emptions (as of %s)\n",
		st.Epoch, ms(st.PeriodMS), st.Running, st.Switches, st.Preemptions, st.Updated.Format(time.RFC3339))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  task\tprio\tG\tstate\tslice ST/SR\tqueued\tpages\trelevant\tyield\tperiod\tpre-empted\trecrawls")
	for _, t := range st.Tasks {
		pre := "never"
		if !t.LastPreempted.IsZero() {
			pre = fmt.Sprintf("%d× last %s by %s", t.Preemptions, t.LastPreempted.Format("15:04:05.000"), t.PreemptedBy)
		}
		period := fmt.Sprintf("%d/%d", t.PeriodRelevant, t.MinPages)
		if t.Name == OtherTopic {
			period = "-"
		}
		fmt.Fprintf(tw, "  %s\t%d\t%s\t%s\t%s/%s\t%d\t%d\t%d\t%.2f\t%s\t%s\t%d\n", t.Name, t.Priority, t.Granularity, t.State,
			ms(t.SliceTotalMS), ms(t.SliceRemainMS), t.Queued, t.Pages, t.Relevant, t.Yield, period, pre, t.Recrawls)
	}
	tw.Flush()
	for _, t := range st.Tasks {
		if t.Note != "" {
			fmt.Fprintf(w, "  note: %s: %s\n", t.Name, t.Note)
		}
	}
}

func ms(n int64) string { return (time.Duration(n) * time.Millisecond).String() }
