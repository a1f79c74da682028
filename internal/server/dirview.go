package server

import (
	"bytes"
	"container/heap"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/store"
	"github.com/spider-crawler/spider/internal/topics"
)

// Defaults of DirView.
const (
	// RateWindow is the span PagesPerSec is averaged over.
	RateWindow = 5 * time.Second
	// SeriesPoints is the most points in CrawlStatus.Series.
	SeriesPoints = 120
	// RecentErrors is how many recent errors a snapshot lists.
	RecentErrors = 20
	// MaxHostRows is how many hosts CrawlStatus.Hosts lists at most (those
	// with the most pages): a crawl of 100 000 hosts still sends a few
	// kilobytes a second per open dashboard.
	MaxHostRows = 50
	// maxExampleError bounds an example's error text, in runes.
	maxExampleError = 200
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
	read    time.Time          // last refresh
	tail    *store.RecordsTail // records.jsonl, read up to its last complete line
	corrupt int
	last    map[string]string // URL → outcome of its last record
	rows    map[string]int64
	outs    map[string]int64
	hosts   map[string]*hostStat
	failEx  map[string][]crawl.FailedURL // failure class → its first examples
	bytes   int64
	perSec  map[int64]int64 // completions by FetchedAt second
	first   int64           // first FetchedAt second seen; 0 = none
	latest  int64           // latest FetchedAt second seen
	errs    []RecentError   // ring of the latest errors, oldest first
	sched   *Schedule       // the revisit schedule at the last refresh (nil: none)
}

// readSchedule reads the directory's revisit schedule
// (crawl.ReadSchedule) into v.sched; nil when it has none or cannot be
// read (a damaged state is for spider fsck to report, not the dashboard).
func (v *DirView) readSchedule(now time.Time) {
	snap, ok, err := crawl.ReadSchedule(v.dir, now)
	if err != nil || !ok {
		v.sched = nil
		return
	}
	v.sched = NewSchedule(snap.ScheduleCounts, snap.At)
}

// NewDirView views the crawl in dataDir; now may be nil (time.Now). The
// directory need not hold a crawl yet: the snapshot is then empty.
func NewDirView(dataDir string, now func() time.Time) *DirView {
	if now == nil {
		now = time.Now
	}
	v := &DirView{dir: dataDir, now: now, tail: store.NewRecordsTail(dataDir, 0)}
	v.reset()
	return v
}

func (v *DirView) reset() {
	v.tail.Reset()
	v.corrupt, v.bytes, v.first, v.latest = 0, 0, 0, 0
	v.last = map[string]string{}
	v.rows = map[string]int64{}
	v.outs = map[string]int64{}
	v.hosts = map[string]*hostStat{}
	v.failEx = map[string][]crawl.FailedURL{}
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
	Duration  int64     `json:"duration_ms"`
}

// hostStat is what DirView counts per host.
type hostStat struct {
	pages   int64 // distinct URLs
	errors  int64 // of which the last record failed
	fetches int64 // records (every attempt recorded)
	msSum   int64 // their duration_ms
}

// refresh reads the lines appended since the last call (v.tail: complete
// lines only, a half-written last line is read next time). A file that
// shrank (a new crawl in the same directory) is read again from the start.
func (v *DirView) refresh() error {
	apply := func(line []byte, _ int64) bool {
		v.apply(line)
		return true
	}
	err := v.tail.Read(-1, apply)
	if errors.Is(err, store.ErrRecordsShrank) {
		v.reset()
		err = v.tail.Read(-1, apply)
	}
	switch {
	case errors.Is(err, os.ErrNotExist):
		v.reset()
		return nil
	case err != nil:
		return fmt.Errorf("cannot read %s: %w", v.tail.Path(), err)
	}
	return nil
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
	host := hostOf(r.URL)
	hs := v.hosts[host]
	if hs == nil {
		hs = &hostStat{}
		v.hosts[host] = hs
	}
	if prev, ok := v.last[r.URL]; ok {
		v.rows[crawl.Row(prev)]--
		v.outs[prev]--
		if crawl.Failed(prev) {
			hs.errors--
			if prev != r.Outcome {
				v.dropExample(prev, r.URL)
			}
		}
	} else {
		hs.pages++
	}
	hs.fetches++
	hs.msSum += max(r.Duration, 0)
	if crawl.Failed(r.Outcome) {
		hs.errors++
		v.addExample(r.Outcome, r.URL, r.Error)
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
		v.readSchedule(now)
	}
	st := &CrawlStatus{
		Source: "data-dir", State: "unknown", Pages: int64(len(v.last)), Bytes: v.bytes,
		Updated: now.UTC(), Series: []RatePoint{}, Nodes: []Node{}, Topics: []Topic{}, TopicNodes: []topics.NodeLoad{}, Errors: []RecentError{},
		Hosts: []HostRow{}, Failures: []crawl.FailureClass{},
	}
	if Locked(v.dir) {
		st.State = "running"
	} else if len(v.last) > 0 {
		st.State = "stopped"
	}
	dirTopics(v.dir, st)
	st.Schedule = v.sched
	if st.Schedule != nil {
		c := *st.Schedule
		st.Schedule = &c
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
	st.Outcomes = SortedCounts(v.outs, 0)
	st.Hosts, st.HostsTotal = v.topHosts(MaxHostRows)
	st.TopHosts = []Count{}
	for _, h := range st.Hosts[:min(len(st.Hosts), 10)] {
		st.TopHosts = append(st.TopHosts, Count{h.Host, h.Pages})
	}
	st.Failures = v.failures()
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
func SortedCounts(m map[string]int64, n int) []Count {
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

// addExample records url as an example of failure class outcome, if the
// class has fewer than crawl.MaxFailureExamples (a URL recorded again in
// the same class keeps its place, with its latest error).
func (v *DirView) addExample(outcome, url, errText string) {
	ex := v.failEx[outcome]
	errText = shorten(errText, maxExampleError)
	for i := range ex {
		if ex[i].URL == url {
			ex[i].Error = errText
			return
		}
	}
	if len(ex) < crawl.MaxFailureExamples {
		v.failEx[outcome] = append(ex, crawl.FailedURL{URL: url, Error: errText})
	}
}

// dropExample removes url from the examples of class outcome: its latest
// record ended otherwise. A later failure of the class takes its place.
func (v *DirView) dropExample(outcome, url string) {
	ex := v.failEx[outcome]
	for i := range ex {
		if ex[i].URL == url {
			v.failEx[outcome] = append(ex[:i:i], ex[i+1:]...)
			return
		}
	}
}

// failures lists the failure classes with URLs, the largest first (ties
// by class), as crawl.Summary does.
func (v *DirView) failures() []crawl.FailureClass {
	out := []crawl.FailureClass{}
	for class, n := range v.outs {
		if n <= 0 || !crawl.Failed(class) {
			continue
		}
		out = append(out, crawl.FailureClass{Class: class, URLs: n, Hint: crawl.Hint(class),
			Examples: append([]crawl.FailedURL{}, v.failEx[class]...)})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].URLs != out[j].URLs {
			return out[i].URLs > out[j].URLs
		}
		return out[i].Class < out[j].Class
	})
	return out
}

// topHosts returns the n hosts with the most pages (ties by name), and
// how many hosts have pages. It keeps a heap of n, so a snapshot of a
// crawl of many hosts costs O(hosts · log n) and sends n rows.
func (v *DirView) topHosts(n int) ([]HostRow, int64) {
	h := &hostHeap{}
	var total int64
	for name, hs := range v.hosts {
		if hs.pages <= 0 {
			continue
		}
		total++
		e := hostEntry{name, hs}
		switch {
		case h.Len() < n:
			heap.Push(h, e)
		case h.less(h.e[0], e):
			h.e[0] = e
			heap.Fix(h, 0)
		}
	}
	rows := make([]HostRow, h.Len())
	for i := len(rows) - 1; i >= 0; i-- {
		e := heap.Pop(h).(hostEntry)
		r := HostRow{Host: e.name, Pages: e.hs.pages, Errors: e.hs.errors}
		if e.hs.fetches > 0 {
			r.MeanLatencyMS = math.Round(float64(e.hs.msSum)/float64(e.hs.fetches)*10) / 10
		}
		rows[i] = r
	}
	return rows, total
}

type hostEntry struct {
	name string
	hs   *hostStat
}

// hostHeap is a min-heap of hosts: the root is the host that ranks last
// (fewest pages, then the greatest name).
type hostHeap struct{ e []hostEntry }

// less reports whether a ranks below b.
func (h *hostHeap) less(a, b hostEntry) bool {
	if a.hs.pages != b.hs.pages {
		return a.hs.pages < b.hs.pages
	}
	return a.name > b.name
}

func (h *hostHeap) Len() int           { return len(h.e) }
func (h *hostHeap) Less(i, j int) bool { return h.less(h.e[i], h.e[j]) }
func (h *hostHeap) Swap(i, j int)      { h.e[i], h.e[j] = h.e[j], h.e[i] }
func (h *hostHeap) Push(x any)         { h.e = append(h.e, x.(hostEntry)) }
func (h *hostHeap) Pop() any {
	x := h.e[len(h.e)-1]
	h.e = h.e[:len(h.e)-1]
	return x
}

// shorten cuts s to its first line and at most n runes, marking a cut
// with "…".
func shorten(s string, n int) string {
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = s[:i] + " …"
	}
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}
