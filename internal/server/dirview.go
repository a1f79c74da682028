package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/store"
)

// Defaults of DirView.
const (
	// RateWindow is the span PagesPerSec is averaged over.
	RateWindow = 5 * time.Second
	// SeriesPoints is the most points in CrawlStatus.Series.
	SeriesPoints = 120
	// RecentErrors is how many recent errors a snapshot lists.
	RecentErrors = 20
	// refreshEvery is the least time between two reads of records.jsonl.
	refreshEvery = 500 * time.Millisecond
)

// DirView is a CrawlView over a data directory's records.jsonl. It reads
// the file incrementally (only complete lines, opened read-only, so it
// never disturbs a crawl writing it) and keeps, like crawl.Stats, the last
// record of each URL. Safe for concurrent use.
type DirView struct {
	dir string
	now func() time.Time

	mu      sync.Mutex
	read    time.Time // last refresh
	off     int64     // bytes of records.jsonl consumed
	size    int64     // file size at the last refresh
	corrupt int
	last    map[string]string // URL → outcome of its last record
	rows    map[string]int64
	outs    map[string]int64
	hosts   map[string]int64
	bytes   int64
	perSec  map[int64]int64 // completions by FetchedAt second
	first   int64           // first FetchedAt second seen; 0 = none
	latest  int64           // latest FetchedAt second seen
	errs    []RecentError   // ring of the latest errors, oldest first
}

// NewDirView views the crawl in dataDir; now may be nil (time.Now). The
// directory need not hold a crawl yet: the snapshot is then empty.
func NewDirView(dataDir string, now func() time.Time) *DirView {
	if now == nil {
		now = time.Now
	}
	v := &DirView{dir: dataDir, now: now}
	v.reset()
	return v
}

func (v *DirView) reset() {
	v.off, v.size, v.corrupt, v.bytes, v.first, v.latest = 0, 0, 0, 0, 0, 0
	v.last = map[string]string{}
	v.rows = map[string]int64{}
	v.outs = map[string]int64{}
	v.hosts = map[string]int64{}
	v.perSec = map[int64]int64{}
	v.errs = nil
}

// recordLine holds the fields of a store.Record the dashboard uses.
type recordLine struct {
	URL       string    `json:"url"`
	Status    int       `json:"status"`
	Outcome   string    `json:"outcome"`
	FetchedAt time.Time `json:"fetched_at"`
	Size      int       `json:"size"`
	Error     string    `json:"error"`
}

// refresh reads the lines appended since the last call. A file that
// shrank (a new crawl in the same directory) is read again from the start.
func (v *DirView) refresh() error {
	path := filepath.Join(v.dir, store.RecordsFileName)
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		v.reset()
		return nil
	}
	if err != nil {
		return fmt.Errorf("cannot read %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("cannot read %s: %w", path, err)
	}
	if fi.Size() < v.size {
		v.reset()
	}
	v.size = fi.Size()
	if _, err := f.Seek(v.off, io.SeekStart); err != nil {
		return fmt.Errorf("cannot read %s: %w", path, err)
	}
	br := bufio.NewReaderSize(f, 1<<20)
	for {
		line, err := br.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			return nil // a half-written last line is read next time
		}
		if err != nil {
			return fmt.Errorf("cannot read %s: %w", path, err)
		}
		v.off += int64(len(line))
		v.apply(line[:len(line)-1])
	}
}

// apply counts one record line, replacing the URL's previous record.
func (v *DirView) apply(line []byte) {
	if len(bytes.TrimSpace(line)) == 0 {
		return
	}
	var r recordLine
	if err := json.Unmarshal(line, &r); err != nil || r.URL == "" {
		v.corrupt++
		return
	}
	if prev, ok := v.last[r.URL]; ok {
		v.rows[crawl.Row(prev)]--
		v.outs[prev]--
	} else {
		v.hosts[hostOf(r.URL)]++
	}
	v.last[r.URL] = r.Outcome
	row := crawl.Row(r.Outcome)
	v.rows[row]++
	v.outs[r.Outcome]++
	v.bytes += int64(r.Size)
	sec := r.FetchedAt.Unix()
	if !r.FetchedAt.IsZero() {
		v.perSec[sec]++
		if v.first == 0 || sec < v.first {
			v.first = sec
		}
		v.latest = max(v.latest, sec)
	}
	if row != crawl.Row200 && row != crawl.Row30x {
		v.errs = append(v.errs, RecentError{At: r.FetchedAt.UTC(), URL: r.URL, Outcome: r.Outcome, Status: r.Status, Error: r.Error})
		if len(v.errs) > 2*RecentErrors {
			v.errs = append(v.errs[:0], v.errs[len(v.errs)-RecentErrors:]...)
		}
	}
}

// Snapshot reads what was appended to records.jsonl (at most every
// 500 ms) and summarises the crawl. State is "running" while a crawl
// process holds the directory (Locked), "stopped" when records exist but
// no process does (finished or interrupted: the directory cannot tell),
// "unknown" when there are no records yet.
func (v *DirView) Snapshot(ctx context.Context) (*CrawlStatus, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	now := v.now()
	if now.Sub(v.read) >= refreshEvery || v.read.IsZero() {
		if err := v.refresh(); err != nil {
			return nil, err
		}
		v.read = now
	}
	st := &CrawlStatus{
		Source: "data-dir", State: "unknown", Pages: int64(len(v.last)), Bytes: v.bytes,
		Updated: now.UTC(), Series: []RatePoint{}, Nodes: []Node{}, Topics: []Topic{}, Errors: []RecentError{},
	}
	if Locked(v.dir) {
		st.State = "running"
	} else if len(v.last) > 0 {
		st.State = "stopped"
	}
	var recent int64
	nowSec := now.Unix()
	for s := nowSec - int64(RateWindow/time.Second) + 1; s <= nowSec; s++ {
		recent += v.perSec[s]
	}
	st.PagesPerSec = float64(recent) / RateWindow.Seconds()
	st.Series = v.series(nowSec)
	for _, row := range crawl.TableRows {
		st.Rows = append(st.Rows, Count{row, v.rows[row]})
	}
	st.Outcomes = sortedCounts(v.outs, 0)
	st.TopHosts = sortedCounts(v.hosts, 10)
	n := min(len(v.errs), RecentErrors)
	for i := len(v.errs) - 1; i >= len(v.errs)-n; i-- {
		st.Errors = append(st.Errors, v.errs[i]) // newest first
	}
	return st, nil
}

// series gives pages/s in up to SeriesPoints equal steps covering the
// crawl from its first record to its latest (or to now while the latest
// record is recent), one second per step for a short crawl.
func (v *DirView) series(nowSec int64) []RatePoint {
	if v.first == 0 {
		return []RatePoint{}
	}
	end := v.latest
	if nowSec > end && nowSec-end <= 2*SeriesPoints {
		end = nowSec // live: let the chart run on to now
	}
	span := end - v.first + 1
	step := max(1, (span+SeriesPoints-1)/SeriesPoints)
	points := (span + step - 1) / step
	start := end - step*points + 1
	out := make([]RatePoint, 0, SeriesPoints)
	for t := start; t <= end; t += step {
		var n int64
		for s := t; s < t+step && s <= end; s++ {
			n += v.perSec[s]
		}
		out = append(out, RatePoint{T: t, Step: step, PagesPerSec: float64(n) / float64(step)})
	}
	return out
}

// sortedCounts lists m by count descending, ties by name; n > 0 keeps
// the first n. Zero counts are left out.
func sortedCounts(m map[string]int64, n int) []Count {
	out := make([]Count, 0, len(m))
	for k, c := range m {
		if c > 0 {
			out = append(out, Count{k, c})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Name < out[j].Name
	})
	if n > 0 && len(out) > n {
		out = out[:n]
	}
	return out
}
