package topics

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/spider-crawler/spider/internal/exthash"
)

// The task control blocks are kept in an extendible hash table
// (internal/exthash), one record per task, keyed by topic name (or a hash
// of a URL task's URL), so that a restarted crawl resumes every topic's
// slice, counters, pre-emption history and recrawl schedule. Save writes all
// of them in one atomic commit.

// tcbRecord is the stored part of a Task.
type tcbRecord struct {
	SliceTotal     time.Duration `json:"st"`
	SliceRemain    time.Duration `json:"sr"`
	Context        Context       `json:"cp"`
	Pages          int64         `json:"pages"`
	Relevant       int64         `json:"relevant"`
	PeriodPages    int64         `json:"period_pages"`
	PeriodRelevant int64         `json:"period_relevant"`
	Satisfied      bool          `json:"satisfied,omitempty"`
	Preemptions    int64         `json:"preemptions"`
	LastPreempted  time.Time     `json:"last_preempted"`
	PreemptedBy    string        `json:"preempted_by,omitempty"`
	Recrawls       int64         `json:"recrawls"`
	NextRecrawl    time.Time     `json:"next_recrawl"`
	FirstPage      time.Time     `json:"first_page"`
	Shrinks        int64         `json:"shrinks"`
	Grows          int64         `json:"grows"`
	Blocked        int64         `json:"blocked,omitempty"`
}

type metaRecord struct {
	Epoch       int64     `json:"epoch"`
	PeriodStart time.Time `json:"period_start"`
	Switches    int64     `json:"switches"`
	Preemptions int64     `json:"preemptions"`
}

var metaKey = []byte("meta")

func tcbKey(t *Task) []byte {
	if t.Granularity == GranularityURL {
		return []byte("url/" + strconv.FormatUint(xxhash.Sum64String(t.Name), 16))
	}
	return []byte("topic/" + t.Name)
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// Save stores every task's control block and the scheduler's epoch and
// period in tb, in one atomic commit.
func (s *Scheduler) Save(tb *exthash.Table) error {
	s.mu.Lock()
	ops := make([]exthash.Op, 0, len(s.tasks)+1)
	for _, t := range s.tasks {
		rec := tcbRecord{
			SliceTotal: t.SliceTotal, SliceRemain: t.SliceRemain,
			Context: Context{SliceRemain: t.Context.SliceRemain, LastURL: clip(t.Context.LastURL, 256), SavedAt: t.Context.SavedAt},
			Pages:   t.Pages, Relevant: t.Relevant, PeriodPages: t.PeriodPages, PeriodRelevant: t.PeriodRelevant,
			Satisfied: t.satisfied, Preemptions: t.Preemptions, LastPreempted: t.LastPreempted,
			PreemptedBy: clip(t.PreemptedBy, 128), Recrawls: t.Recrawls, NextRecrawl: t.nextRecrawl,
			FirstPage: t.FirstPage, Shrinks: t.Shrinks, Grows: t.Grows, Blocked: t.Blocked,
		}
		b, err := json.Marshal(rec)
		if err != nil {
			s.mu.Unlock()
			return fmt.Errorf("cannot encode task %s: %w", t.Name, err)
		}
		ops = append(ops, exthash.Op{Key: tcbKey(t), Value: b})
	}
	mb, err := json.Marshal(metaRecord{Epoch: s.epoch, PeriodStart: s.periodStart, Switches: s.switches, Preemptions: s.preemptions})
	s.mu.Unlock()
	if err != nil {
		return fmt.Errorf("cannot encode scheduler state: %w", err)
	}
	ops = append(ops, exthash.Op{Key: metaKey, Value: mb})
	if err := tb.Apply(ops); err != nil {
		return fmt.Errorf("cannot save topic task records: %w", err)
	}
	return nil
}

// Load restores the control blocks saved by Save for the tasks of this
// scheduler (tasks not in tb keep their fresh state; records of topics no
// longer configured are ignored). A slice total saved under another
// configuration is kept within the daemon's bounds of the current one.
func (s *Scheduler) Load(tb *exthash.Table) (restored int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.tasks {
		b, ok, err := tb.Get(tcbKey(t))
		if err != nil {
			return restored, fmt.Errorf("cannot read task record of %s: %w", t.Name, err)
		}
		if !ok {
			continue
		}
		var rec tcbRecord
		if err := json.Unmarshal(b, &rec); err != nil {
			return restored, fmt.Errorf("cannot decode task record of %s: %w", t.Name, err)
		}
		t.SliceTotal = min(max(rec.SliceTotal, time.Duration(s.cfg.MinSlice)), 4*t.levelSlice)
		t.SliceRemain = min(rec.SliceRemain, t.SliceTotal)
		t.Context = rec.Context
		t.Pages, t.Relevant, t.PeriodPages, t.PeriodRelevant = rec.Pages, rec.Relevant, rec.PeriodPages, rec.PeriodRelevant
		t.satisfied = rec.Satisfied
		t.Preemptions, t.LastPreempted, t.PreemptedBy = rec.Preemptions, rec.LastPreempted, rec.PreemptedBy
		t.Recrawls, t.nextRecrawl, t.FirstPage = rec.Recrawls, rec.NextRecrawl, rec.FirstPage
		t.Shrinks, t.Grows, t.Blocked = rec.Shrinks, rec.Grows, rec.Blocked
		restored++
	}
	b, ok, err := tb.Get(metaKey)
	if err != nil {
		return restored, fmt.Errorf("cannot read scheduler record: %w", err)
	}
	if ok {
		var m metaRecord
		if err := json.Unmarshal(b, &m); err != nil {
			return restored, fmt.Errorf("cannot decode scheduler record: %w", err)
		}
		s.epoch, s.periodStart, s.switches, s.preemptions = m.Epoch, m.PeriodStart, m.Switches, m.Preemptions
	}
	return restored, nil
}
