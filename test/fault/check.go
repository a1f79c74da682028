package fault

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spider-crawler/spider/internal/store"
	"github.com/spider-crawler/spider/internal/websim"
)

// Records reads the records of every data directory and returns the last record of each
// URL (a URL refetched after a kill has several; readers keep the last one) and the
// number of unreadable lines skipped. A directory without records.jsonl holds no records
// (a worker that fetched nothing).
func Records(dirs ...string) (map[string]store.Record, int, error) {
	out := map[string]store.Record{}
	corrupt := 0
	for _, d := range dirs {
		if _, err := os.Stat(d + "/" + store.RecordsFileName); errors.Is(err, os.ErrNotExist) {
			continue
		}
		rs, err := store.OpenRecords(d, store.Options{})
		if err != nil {
			return nil, 0, fmt.Errorf("cannot open the records of %s: %w", d, err)
		}
		n, err := rs.Iterate(func(r store.Record) error { out[r.URL] = r; return nil })
		rs.Close()
		if err != nil {
			return nil, 0, fmt.Errorf("cannot read the records of %s: %w", d, err)
		}
		corrupt += n
	}
	return out, corrupt, nil
}

// Copy is one record of a URL recorded more than once (Copies): the index of its
// directory among the dirs given and when the URL was fetched.
type Copy struct {
	Dir       int
	FetchedAt time.Time
}

// Copies returns the URLs recorded more than once in dirs (twice in one directory or in
// several), each with every record of it, in the order read. A directory without
// records.jsonl holds no records.
func Copies(dirs ...string) (map[string][]Copy, error) {
	all := map[string][]Copy{}
	for i, d := range dirs {
		if _, err := os.Stat(d + "/" + store.RecordsFileName); errors.Is(err, os.ErrNotExist) {
			continue
		}
		rs, err := store.OpenRecords(d, store.Options{})
		if err != nil {
			return nil, fmt.Errorf("cannot open the records of %s: %w", d, err)
		}
		_, err = rs.Iterate(func(r store.Record) error {
			all[r.URL] = append(all[r.URL], Copy{Dir: i, FetchedAt: r.FetchedAt})
			return nil
		})
		rs.Close()
		if err != nil {
			return nil, fmt.Errorf("cannot read the records of %s: %w", d, err)
		}
	}
	for u, in := range all {
		if len(in) < 2 {
			delete(all, u)
		}
	}
	return all, nil
}

// Lost returns, sorted, the ground-truth URLs (Truth.MustFetch) that have no record.
func Lost(truth *websim.Truth, recs map[string]store.Record) []string {
	var lost []string
	for _, u := range truth.MustFetch {
		if _, ok := recs[u]; !ok {
			lost = append(lost, u)
		}
	}
	sort.Strings(lost)
	return lost
}

// Repeats returns the number of repeated requests in the access log (the sum over
// AccessLog.Duplicates of count−1: requests of a URL after it had been answered below
// 500, robots.txt and retries after resets and 5xx excluded) and the largest number of
// requests of one such URL.
func Repeats(log *websim.AccessLog) (extra, worst int) {
	for _, n := range log.Duplicates() {
		extra += n - 1
		worst = max(worst, n)
	}
	return extra, worst
}

// FirstRequestAfter returns how long after t the web received its first request (robots.txt
// included), and false when no request came after t.
func FirstRequestAfter(log *websim.AccessLog, t time.Time) (time.Duration, bool) {
	var best time.Time
	for _, e := range log.Entries() {
		if e.Time.After(t) && (best.IsZero() || e.Time.Before(best)) {
			best = e.Time
		}
	}
	if best.IsZero() {
		return 0, false
	}
	return best.Sub(t), true
}

// Row is one line of the reliability table: a fault scenario and what its runs showed.
type Row struct {
	// Fault names the scenario ("kill -9 single-node crawl" …).
	Fault string `json:"fault"`
	// Runs is the number of crawls run, Faults the number of faults injected in them.
	Runs   int `json:"runs"`
	Faults int `json:"faults"`
	// URLs is the ground truth's size (per run), Lost the ground-truth URLs never fetched
	// (all runs).
	URLs int `json:"urls"`
	Lost int `json:"lost"`
	// BodiesChecked counts the stored bodies compared with the web (all runs; 0: the
	// scenario does not compare bodies), WrongBodies those that were not the body the web
	// serves for their record's URL (BodyCheck).
	BodiesChecked int `json:"bodies_checked,omitempty"`
	WrongBodies   int `json:"wrong_bodies,omitempty"`
	// DroppedBytes counts the written but unsynced bytes a simulated power loss dropped
	// (all runs; lazyfs).
	DroppedBytes int64 `json:"dropped_bytes,omitempty"`
	// Repeats are repeated requests (all runs), Bound the in-flight bound they must stay
	// under (all runs).
	Repeats int `json:"repeats"`
	Bound   int `json:"bound"`
	// Failed counts processes that exited with an error or had to be killed at the
	// deadline (all runs); a healthy node rides a fault out.
	Failed int `json:"failed"`
	// RecoveryMax and RecoveryMean are the times from the end of a fault (restart, link
	// restored, Redis back, space freed) to the next request the web received.
	RecoveryMax  time.Duration `json:"recovery_max_ns"`
	RecoveryMean time.Duration `json:"recovery_mean_ns"`
	// Equal says whether index and PageRank matched a clean run's ("" when not compared).
	Equal string `json:"equal,omitempty"`
	// Seed reproduces the runs (SPIDER_FAULT_SEED).
	Seed uint64 `json:"seed"`
	// Note is free text (modes used, outcomes, limits).
	Note string `json:"note,omitempty"`
}

// Recovery fills RecoveryMax and RecoveryMean from samples.
func (r *Row) Recovery(samples []time.Duration) {
	var sum time.Duration
	for _, s := range samples {
		sum += s
		r.RecoveryMax = max(r.RecoveryMax, s)
	}
	if len(samples) > 0 {
		r.RecoveryMean = sum / time.Duration(len(samples))
	}
}

// AppendRow appends r as one JSON line to the file at path (created if needed). An empty
// path does nothing.
func AppendRow(path string, r Row) error {
	if path == "" {
		return nil
	}
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("cannot encode a reliability row: %w", err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("cannot open the fault report %s: %w", path, err)
	}
	_, err = f.Write(append(b, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("cannot write the fault report %s: %w", path, err)
	}
	return nil
}

// ReadRows reads the JSON lines AppendRow wrote.
func ReadRows(path string) ([]Row, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read the fault report: %w", err)
	}
	var rows []Row
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if line == "" {
			continue
		}
		var r Row
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			return nil, fmt.Errorf("cannot read line %d of the fault report %s: %w", i+1, path, err)
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// Table formats rows as a Markdown table, in the order given.
func Table(rows []Row) string {
	var b strings.Builder
	b.WriteString("| fault | runs | faults | URLs/run | URLs lost | wrong bodies (checked) | unsynced bytes dropped | repeated fetches (bound) | processes failed | recovery max / mean | index & rank = clean | seed | notes |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---:|---|\n")
	for _, r := range rows {
		eq := r.Equal
		if eq == "" {
			eq = "—"
		}
		rec := "n/a"
		if r.RecoveryMax > 0 {
			rec = r.RecoveryMax.Round(time.Millisecond).String() + " / " + r.RecoveryMean.Round(time.Millisecond).String()
		}
		bodies, dropped := "—", "—"
		if r.BodiesChecked > 0 {
			bodies = fmt.Sprintf("%d (of %d)", r.WrongBodies, r.BodiesChecked)
		}
		if r.DroppedBytes > 0 {
			dropped = fmt.Sprint(r.DroppedBytes)
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %s | %s | %d (≤ %d) | %d | %s | %s | %d | %s |\n", r.Fault, r.Runs, r.Faults, r.URLs, r.Lost,
			bodies, dropped, r.Repeats, r.Bound, r.Failed, rec, eq, r.Seed, r.Note)
	}
	return b.String()
}
