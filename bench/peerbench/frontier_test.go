package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

func TestParseVmRSS(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"Name:\tx\nVmPeak:\t 100 kB\nVmRSS:\t    2048 kB\nThreads: 3\n", 2048 << 10},
		{"Name:\tx\n", 0},
		{"VmRSS:\t12 MB\n", 0},
		{"VmRSS:\t-5 kB\n", 0},
		{"VmRSS:\tmany kB\n", 0},
	} {
		if got := parseVmRSS([]byte(tc.in)); got != tc.want {
			t.Errorf("parseVmRSS(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc")
	}
	if parseVmRSS(b) <= 0 {
		t.Errorf("own VmRSS not found in %q", b)
	}
}

func TestParseStatCPU(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
	}{
		{"42 (spider) S 1 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 9 0 100 1000 200", 3 * time.Second},
		{"42 (a (b) c) R 1 42 42 0 -1 0 0 0 0 0 7 3 0 0", 100 * time.Millisecond},
		{"42 (short) S 1", 0},
		{"no parenthesis", 0},
		{"1 (x) S 1 1 1 0 -1 0 0 0 0 0 -7 3", 0},
	} {
		if got := parseStatCPU([]byte(tc.in)); got != tc.want {
			t.Errorf("parseStatCPU(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestParseMetrics(t *testing.T) {
	in := `# HELP spider_pages_total URLs completed.
# TYPE spider_pages_total counter
spider_pages_total{result="200"} 120
spider_pages_total{result="404",x="a}b"} 3
spider_discovered_urls_total 1.5e+06
go_goroutines 12 1700000000000
`
	m, err := parseMetrics(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if m["spider_pages_total"] != 123 || m["spider_discovered_urls_total"] != 1.5e6 || m["go_goroutines"] != 12 {
		t.Errorf("metrics %v", m)
	}
	for _, bad := range []string{"x{a=\"1\" 3\n", "x\n", "x notanumber\n"} {
		if _, err := parseMetrics(strings.NewReader(bad)); err == nil || !strings.Contains(err.Error(), "cannot parse metrics line") {
			t.Errorf("parseMetrics(%q) err = %v", bad, err)
		}
	}
}

func FuzzParseMetrics(f *testing.F) {
	for _, s := range []string{"", "a 1\n", "a{b=\"c\"} 2 3\n# x\n", "a{", "{} 1", "a NaN\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := parseMetrics(strings.NewReader(s))
		if err == nil && m == nil {
			t.Error("nil map without an error")
		}
	})
}

func FuzzParseStat(f *testing.F) {
	for _, s := range []string{"", "1 (x) S 1 1 1 0 -1 0 0 0 0 0 7 3", "1 ()) S", "VmRSS: 1 kB"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if d := parseStatCPU([]byte(s)); d < 0 {
			t.Errorf("negative CPU %v", d)
		}
		if r := parseVmRSS([]byte(s)); r < 0 {
			t.Errorf("negative RSS %d", r)
		}
	})
}

func TestProgressWriter(t *testing.T) {
	var p progressWriter
	if _, ok := p.get(); ok {
		t.Fatal("progress before any line")
	}
	chunks := []string{"noise\n{\"progress\":true,\"pages\":3,\"disc", "overed\":40,\"seconds\":1}\n{\"crawler\":\"colly\"}\n",
		"{\"progress\":true,\"pages\":5,\"discovered\":90}\npartial"}
	for _, c := range chunks {
		if n, err := p.Write([]byte(c)); n != len(c) || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	pl, ok := p.get()
	if !ok || pl.Pages != 5 || pl.Discovered != 90 {
		t.Errorf("last progress %+v %v", pl, ok)
	}
	if !strings.Contains(p.tail.String(), "noise") || strings.Contains(p.tail.String(), "progress") {
		t.Errorf("tail %q", p.tail.String())
	}
}

func TestSummarize(t *testing.T) {
	var ss []sample
	for i := 1; i <= 8; i++ {
		// 100 requests/s for 4 s, then 50/s.
		req := 100 * min(i, 4)
		if i > 4 {
			req += 50 * (i - 4)
		}
		ss = append(ss, sample{At: time.Duration(i) * time.Second, Requests: req, Discovered: int64(1000 * i), RSS: int64(i) << 20})
	}
	sm := summarize(ss)
	if sm.FirstRate != 100 || sm.LastRate != 50 || sm.Ratio() != 0.5 || sm.PeakRSS != 8<<20 || sm.Discovered != 8000 {
		t.Errorf("summary %+v", sm)
	}
	if got := sm.BytesPerURL(); got != "1049" { // 8 MiB / 8000
		t.Errorf("bytes per URL %s", got)
	}
	if (summary{}).BytesPerURL() != "–" || summarize(nil).Ratio() != 0 {
		t.Error("empty summary")
	}
}

// TestFrontierBare runs the frontier experiment briefly with the bare loop:
// the launcher's pid file, /proc sampling, the access-log count and the
// report.
func TestFrontierBare(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	var out, errOut bytes.Buffer
	args := []string{"--frontier", "3s", "--sample", "500ms", "--hosts", "2000", "--pages", "50", "--seeds", "3",
		"--depth", "-1", "--crawlers", "bare", "--concurrency", "4", "--work", t.TempDir()}
	if err := run(context.Background(), args, &out, &errOut); err != nil {
		t.Fatalf("run: %v\n%s", err, errOut.String())
	}
	report := out.String()
	if !strings.Contains(report, "bare (ended: time)") && !strings.Contains(report, "bare (ended: exit)") {
		t.Fatalf("report lacks the bare run:\n%s\n%s", report, errOut.String())
	}
	var rows int
	for _, l := range strings.Split(report, "\n") {
		f := strings.Split(l, "|")
		// 11 columns (the state's MiB is the last) make 13 fields.
		if len(f) == 13 && strings.TrimSpace(f[1]) != "t s" && !strings.HasPrefix(strings.TrimSpace(f[1]), "-") {
			rows++
			if rss := strings.TrimSpace(f[7]); rss == "0" {
				t.Errorf("sample without RSS: %s", l)
			}
		}
	}
	if rows < 2 {
		t.Errorf("%d sample rows:\n%s", rows, report)
	}
}
