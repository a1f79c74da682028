package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/store"
)

// clock is a settable time source.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func recLine(t *testing.T, r store.Record) string {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b) + "\n"
}

func appendFile(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

func snapshotJSON(t *testing.T, v CrawlView) ([]byte, *CrawlStatus) {
	t.Helper()
	st, err := v.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n'), st
}

// TestDirView reads a records file with a re-recorded URL, a corrupt line
// and a half-written last line; appends are picked up incrementally, and a
// new (shorter) file is read from scratch.
func TestDirView(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, store.RecordsFileName)
	t0 := time.Date(2026, 3, 30, 8, 0, 0, 0, time.UTC)
	clk := &clock{t0.Add(10 * time.Second)}
	v := NewDirView(dir, clk.now)

	if b, st := snapshotJSON(t, v); st.Pages != 0 || st.State != "unknown" {
		t.Fatalf("empty directory: %s", b)
	}

	var lines string
	for i := range 8 {
		r := store.Record{URL: fmt.Sprintf("http://www.d%d.test/p%d", i%3, i), Status: 200, Outcome: "200",
			FetchedAt: t0.Add(time.Duration(i) * time.Second), Size: 1000}
		lines += recLine(t, r)
	}
	lines += recLine(t, store.Record{URL: "http://www.d0.test/missing", Status: 404, Outcome: "404", FetchedAt: t0.Add(8 * time.Second)})
	lines += recLine(t, store.Record{URL: "http://www.d1.test/<script>alert(1)</script>", Outcome: "timeout", FetchedAt: t0.Add(9 * time.Second), Error: "first byte after 2s"})
	lines += "{not json\n"
	// p0 fetched again after a kill: its last record counts.
	lines += recLine(t, store.Record{URL: "http://www.d0.test/p0", Status: 503, Outcome: "503", FetchedAt: t0.Add(9 * time.Second), Error: "503 Service Unavailable"})
	lines += `{"url": "http://www.d2.test/half", "status": 2` // being written
	appendFile(t, path, lines)
	clk.t = clk.t.Add(time.Second)

	b, st := snapshotJSON(t, v)
	golden(t, "dirview_1.json", b)
	if st.Pages != 10 {
		t.Fatalf("pages %d, want 10 (the half line is not read yet)", st.Pages)
	}

	appendFile(t, path, `00, "outcome": "200", "fetched_at": "2026-03-30T08:00:10Z", "size": 10}`+"\n")
	clk.t = clk.t.Add(time.Second)
	_, st = snapshotJSON(t, v)
	if st.Pages != 11 {
		t.Fatalf("after completing the half line: pages %d, want 11", st.Pages)
	}
	clk.t = clk.t.Add(100 * time.Millisecond)
	appendFile(t, path, recLine(t, store.Record{URL: "http://x.test/", Outcome: "200", FetchedAt: clk.t}))
	if _, st = snapshotJSON(t, v); st.Pages != 11 {
		t.Fatalf("re-read within 500 ms: pages %d", st.Pages)
	}

	// A new crawl in the same directory: a shorter file.
	if err := os.WriteFile(path, []byte(recLine(t, store.Record{URL: "http://new.test/", Outcome: "200", FetchedAt: t0})), 0o644); err != nil {
		t.Fatal(err)
	}
	clk.t = clk.t.Add(time.Second)
	if _, st = snapshotJSON(t, v); st.Pages != 1 || st.TopHosts[0].Name != "new.test" {
		t.Fatalf("after the file was replaced: %+v", st)
	}
}

// TestDirViewSeries: a long crawl is shown in at most SeriesPoints steps.
func TestDirViewSeries(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Date(2026, 3, 30, 8, 0, 0, 0, time.UTC)
	var lines string
	for i := range 1000 {
		lines += recLine(t, store.Record{URL: fmt.Sprintf("http://a.test/%d", i), Outcome: "200", FetchedAt: t0.Add(time.Duration(i) * time.Second)})
	}
	appendFile(t, filepath.Join(dir, store.RecordsFileName), lines)
	v := NewDirView(dir, func() time.Time { return t0.Add(24 * time.Hour) })
	_, st := snapshotJSON(t, v)
	if n := len(st.Series); n == 0 || n > SeriesPoints {
		t.Fatalf("%d points", n)
	}
	var total float64
	for _, p := range st.Series {
		total += p.PagesPerSec * float64(p.Step)
		if p.Step != st.Series[0].Step {
			t.Fatalf("uneven steps: %+v", st.Series)
		}
	}
	if total != 1000 {
		t.Fatalf("series sums to %v pages, want 1000", total)
	}
	if st.PagesPerSec != 0 || st.State != "stopped" {
		t.Fatalf("a day later: %v pages/s, state %q", st.PagesPerSec, st.State)
	}
}

func FuzzDirViewApply(f *testing.F) {
	f.Add([]byte(`{"url":"http://a.test/","status":200,"outcome":"200","fetched_at":"2026-03-30T08:00:00Z","size":5}`))
	f.Add([]byte(`{"url":"http://a.test/","outcome":"timeout","error":"x"}`))
	f.Add([]byte(`{"url":""}`))
	f.Add([]byte(`{"url":"%zz","fetched_at":"0001-01-01T00:00:00Z"}`))
	f.Add([]byte(`[1,2]`))
	f.Fuzz(func(t *testing.T, line []byte) {
		v := NewDirView(t.TempDir(), nil)
		v.apply(line)
		v.apply(line) // the same URL again replaces, never double-counts
		var rows int64
		for _, n := range v.rows {
			rows += n
		}
		if rows != int64(len(v.last)) {
			t.Fatalf("rows sum %d for %d URLs", rows, len(v.last))
		}
		var pages int64
		for h, hs := range v.hosts {
			pages += hs.pages
			if hs.errors < 0 || hs.errors > hs.pages || hs.msSum < 0 {
				t.Fatalf("host %q: %+v", h, *hs)
			}
		}
		if pages != int64(len(v.last)) {
			t.Fatalf("host pages sum %d for %d URLs", pages, len(v.last))
		}
		if _, err := v.Snapshot(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// TestDirViewHostsAndFailures: the host table counts each host's pages
// (distinct URLs), errors (URLs whose last record failed) and mean fetch
// time; it is bounded to MaxHostRows hosts with the most pages; failures
// are grouped by class with their first examples, and a URL recorded
// again with another outcome leaves its old class.
func TestDirViewHostsAndFailures(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, store.RecordsFileName)
	t0 := time.Date(2026, 3, 30, 8, 0, 0, 0, time.UTC)
	clk := &clock{t0.Add(time.Minute)}
	v := NewDirView(dir, clk.now)
	var lines string
	add := func(r store.Record) {
		r.FetchedAt = t0
		lines += recLine(t, r)
	}
	// big.test: 3 pages, 10 ms and 30 ms; one 404 later fetched again as 200.
	add(store.Record{URL: "http://big.test/a", Outcome: "200", Status: 200, DurationMS: 10})
	add(store.Record{URL: "http://big.test/b", Outcome: "404", Status: 404, DurationMS: 30})
	add(store.Record{URL: "http://big.test/c", Outcome: "200", Status: 200, DurationMS: 20})
	add(store.Record{URL: "http://big.test/b", Outcome: "200", Status: 200, DurationMS: 20})
	// loop.test: redirect chains too long, five of them (three examples kept).
	for i := range 5 {
		add(store.Record{URL: fmt.Sprintf("http://loop.test/%d", i), Outcome: crawl.OutcomeTooManyRedirects, DurationMS: 5})
	}
	// dns failure with a long multi-line error.
	add(store.Record{URL: "http://nx.invalid/", Outcome: crawl.OutcomeDNS, Error: "lookup nx.invalid: no such host\nsecond line " + strings.Repeat("x", 500)})
	// Many small hosts: one page each.
	for i := range MaxHostRows + 30 {
		add(store.Record{URL: fmt.Sprintf("http://h%03d.test/", i), Outcome: "200", Status: 200, DurationMS: 1})
	}
	appendFile(t, path, lines)
	b, st := snapshotJSON(t, v)

	if len(st.Hosts) != MaxHostRows || st.HostsTotal != int64(MaxHostRows+30+3) {
		t.Fatalf("%d host rows of %d hosts, want %d of %d", len(st.Hosts), st.HostsTotal, MaxHostRows, MaxHostRows+33)
	}
	want := []HostRow{
		{Host: "loop.test", Pages: 5, Errors: 5, MeanLatencyMS: 5},
		{Host: "big.test", Pages: 3, Errors: 0, MeanLatencyMS: 20},
		{Host: "h000.test", Pages: 1, MeanLatencyMS: 1},
	}
	for i, w := range want {
		if st.Hosts[i] != w {
			t.Errorf("host row %d: %+v, want %+v", i, st.Hosts[i], w)
		}
	}
	if last := st.Hosts[MaxHostRows-1].Host; last != "h047.test" {
		t.Errorf("last host row %q, want h047.test (ties by name)", last)
	}
	if len(st.TopHosts) != 10 || st.TopHosts[0] != (Count{"loop.test", 5}) {
		t.Errorf("top_hosts %+v", st.TopHosts)
	}
	classes := map[string]crawl.FailureClass{}
	for _, fc := range st.Failures {
		classes[fc.Class] = fc
	}
	if len(st.Failures) != 2 || st.Failures[0].Class != crawl.OutcomeTooManyRedirects {
		t.Fatalf("failures %+v, want too many redirects then dns (the 404 was fetched again)", st.Failures)
	}
	redir := classes[crawl.OutcomeTooManyRedirects]
	if redir.URLs != 5 || len(redir.Examples) != crawl.MaxFailureExamples || redir.Examples[0].URL != "http://loop.test/0" || redir.Hint != crawl.Hint(crawl.OutcomeTooManyRedirects) {
		t.Errorf("too many redirects: %+v", redir)
	}
	dns := classes[crawl.OutcomeDNS]
	if len(dns.Examples) != 1 || strings.ContainsAny(dns.Examples[0].Error, "\r\n") || utf8.RuneCountInString(dns.Examples[0].Error) > maxExampleError ||
		!strings.HasPrefix(dns.Examples[0].Error, "lookup nx.invalid: no such host") {
		t.Errorf("dns example error not cut to one short line: %+v", dns.Examples)
	}
	if bytes.Contains(b, []byte(": null")) && !bytes.Contains(b, []byte(`"config": null`)) {
		t.Errorf("a null other than config:\n%s", b)
	}

	// A failed URL that later succeeds leaves its class; the next failure
	// of the class takes its place among the examples.
	appendFile(t, path, recLine(t, store.Record{URL: "http://loop.test/1", Outcome: "200", Status: 200, FetchedAt: t0})+
		recLine(t, store.Record{URL: "http://loop.test/0", Outcome: "200", Status: 200, FetchedAt: t0})+
		recLine(t, store.Record{URL: "http://loop.test/9", Outcome: crawl.OutcomeTooManyRedirects, FetchedAt: t0}))
	clk.t = clk.t.Add(time.Second)
	_, st = snapshotJSON(t, v)
	redir = st.Failures[0]
	var ex []string
	for _, e := range redir.Examples {
		ex = append(ex, e.URL)
	}
	if redir.URLs != 4 || strings.Join(ex, " ") != "http://loop.test/2 http://loop.test/9" {
		t.Errorf("after two URLs of the class succeeded: %d URLs, examples %q", redir.URLs, ex)
	}
	if h := st.Hosts[0]; h.Host != "loop.test" || h.Pages != 6 || h.Errors != 4 {
		t.Errorf("loop.test after re-records: %+v", h)
	}
}

// BenchmarkDirViewSnapshot100kHosts: a snapshot of a crawl of 100 000
// hosts (the host table is bounded, so the answer stays small).
func BenchmarkDirViewSnapshot100kHosts(b *testing.B) {
	v := NewDirView(b.TempDir(), nil)
	for i := range 100_000 {
		v.apply(fmt.Appendf(nil, `{"url":"http://h%d.test/","outcome":"200","duration_ms":%d}`, i, i%100))
	}
	v.read = time.Now().Add(time.Hour) // no refresh
	var size int
	for b.Loop() {
		st, err := v.Snapshot(context.Background())
		if err != nil || len(st.Hosts) != MaxHostRows {
			b.Fatal(err, len(st.Hosts))
		}
		js, _ := json.Marshal(st)
		size = len(js)
	}
	b.ReportMetric(float64(size), "json-bytes")
}
