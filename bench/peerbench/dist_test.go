package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
	"github.com/spider-crawler/spider/internal/websim"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

func TestSplitConcurrency(t *testing.T) {
	for _, tc := range []struct {
		total, n int
		want     []int
	}{
		{32, 2, []int{16, 16}},
		{32, 3, []int{11, 11, 10}},
		{5, 5, []int{1, 1, 1, 1, 1}},
		{7, 1, []int{7}},
		{10, 4, []int{3, 3, 2, 2}},
	} {
		got := splitConcurrency(tc.total, tc.n)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("splitConcurrency(%d, %d) = %v, want %v", tc.total, tc.n, got, tc.want)
		}
		sum := 0
		for _, c := range got {
			sum += c
		}
		if sum != tc.total {
			t.Errorf("splitConcurrency(%d, %d) sums to %d", tc.total, tc.n, sum)
		}
	}
}

// TestDistSpecs compares the command lines of both distributed crawlers
// with testdata/distspecs.golden (go test -run DistSpecs -update rewrites it).
func TestDistSpecs(t *testing.T) {
	c := config{Depth: 4, Concurrency: 5, PerHost: 1, Delay: 200 * time.Millisecond, DistNodes: 2,
		SpiderArgs: []string{"--loose-depth", "--delay-from", "start"}}
	var out strings.Builder
	for _, name := range distCrawlers {
		out.WriteString("# " + name + "\n")
		for _, s := range distSpecs(c, name, "/D", "/R/resolve.txt", "redis://127.0.0.1:7/0", []string{"http://www.d0.test:8/", "http://www.d1.test:8/"}) {
			out.WriteString(s.Name + " (" + s.Data + "): " + strings.Join(s.Args, " ") + "\n")
		}
	}
	path := filepath.Join("testdata", "distspecs.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run DistSpecs -update to create it)", err)
	}
	if out.String() != string(want) {
		t.Errorf("command lines differ from %s:\n%s\nwant\n%s", path, out.String(), want)
	}
	// Workers take only local settings: the crawl rules are the master's.
	for _, s := range distSpecs(c, "spider-mw", "/D", "/R", "redis://x/0", nil)[1:] {
		if strings.Contains(strings.Join(s.Args, " "), "--loose-depth") {
			t.Errorf("worker %s got a crawl rule: %q", s.Name, s.Args)
		}
	}
}

func TestParseRedisCPU(t *testing.T) {
	for _, tc := range []struct {
		name    string
		info    string
		want    time.Duration
		wantErr string
	}{
		{"redis 7", "# CPU\r\nused_cpu_sys:0.123456\r\nused_cpu_user:1.500000\r\nused_cpu_sys_children:9.000000\r\nused_cpu_user_children:9.000000\r\n",
			1623456 * time.Microsecond, ""},
		{"no newline at the end", "used_cpu_user:2\nused_cpu_sys:0.5", 2500 * time.Millisecond, ""},
		{"missing sys", "used_cpu_user:1.0\n", 0, "cannot find used_cpu_user"},
		{"empty", "", 0, "cannot find"},
		{"negative", "used_cpu_user:-1\nused_cpu_sys:0\n", 0, "want seconds ≥ 0"},
		{"not a number", "used_cpu_user:x\nused_cpu_sys:0\n", 0, `"x"`},
		{"NaN", "used_cpu_sys:NAN\nused_cpu_user:0\n", 0, `"NAN"`},
		{"too large", "used_cpu_sys:1e400\nused_cpu_user:0\n", 0, `"1e400"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseRedisCPU(tc.info)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("parseRedisCPU = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func FuzzParseRedisCPU(f *testing.F) {
	for _, s := range []string{"", "used_cpu_user:1\nused_cpu_sys:2\n", "used_cpu_sys:NaN\nused_cpu_user:1e400", "used_cpu_user:\r\n:\n", "used_cpu_user:0.000001\nused_cpu_user:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := parseRedisCPU(s)
		if err == nil && d < 0 {
			t.Errorf("negative CPU time %v from %q", d, s)
		}
		if err != nil && d != 0 {
			t.Errorf("CPU time %v with error %v", d, err)
		}
	})
}

func TestGroupUseString(t *testing.T) {
	t0 := time.Unix(100, 0)
	g := &groupUse{Procs: []procUse{{"n1", 1500 * time.Millisecond, 30 << 20}, {"n2", 250 * time.Millisecond, 31 << 20}},
		RedisCPU: 100 * time.Millisecond, RedisHWM: 12 << 20, First: t0, Last: t0.Add(5 * time.Second)}
	g.window(nil)
	if g.Startup != 0 || g.Tail != 0 {
		t.Errorf("window without requests: startup %v, tail %v", g.Startup, g.Tail)
	}
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	g.window([]websim.Entry{{Time: at(1500), End: at(1510)}, {Time: at(1200), End: at(3000)}, {Time: at(2000), End: at(2500)}})
	if g.Startup != 1200*time.Millisecond || g.Tail != 2*time.Second {
		t.Errorf("window: startup %v, tail %v; want 1.2s, 2s", g.Startup, g.Tail)
	}
	want := "first request 1.20 s after the first start, last exit 2.00 s after the last answer; CPU and peak RSS: n1 1.50 s, 30 MiB; n2 0.25 s, 31 MiB; redis-server 0.10 s, VmHWM 12 MiB"
	if got := g.String(); got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

// TestRunProcs runs process groups through the launcher (this test binary,
// see TestMain): all succeed; one fails and the others are killed at once;
// the time-out stops a group that does not end.
func TestRunProcs(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	spec := func(name, script string) procSpec {
		return procSpec{Name: name, Args: []string{script}, Data: filepath.Join(dir, name)}
	}
	for _, tc := range []struct {
		name    string
		specs   []procSpec
		timeout time.Duration
		wantErr string
	}{
		{"all succeed", []procSpec{spec("a", "echo a"), spec("b", "exit 0")}, time.Minute, ""},
		{"one fails", []procSpec{spec("c", "sleep 60"), spec("d", "echo bad news >&2; exit 3")}, time.Minute, "d failed: exit status 3\nbad news"},
		{"time-out", []procSpec{spec("e", "exit 0"), spec("f", "sleep 60")}, 5 * time.Second, "stopped after 5s with f still running"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), tc.timeout)
			defer cancel()
			prefix := filepath.Join(dir, tc.name+"-")
			start := time.Now()
			err := runProcs(ctx, self, []string{"/bin/sh", "-c"}, tc.specs, prefix+"usage-", prefix+"log-", tc.timeout)
			if el := time.Since(start); el > 30*time.Second {
				t.Errorf("took %s: the other processes were not stopped", el)
			}
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				for _, s := range tc.specs {
					if u, err := readUsage(prefix + "usage-" + s.Name + ".json"); err != nil || u.StartNS <= 0 || u.WallNS <= 0 {
						t.Errorf("%s: usage %+v, %v", s.Name, u, err)
					}
				}
				if b, err := os.ReadFile(prefix + "log-a.log"); err != nil || string(b) != "a\n" {
					t.Errorf("log of a: %q, %v", b, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

// TestPrepareDistWithoutRedis: without redis-server on PATH both crawlers
// are not installed (skipped with a note), and spider is not built for them.
func TestPrepareDistWithoutRedis(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	for _, name := range distCrawlers {
		built := false
		_, err := prepareDist(context.Background(), name, func() (prepared, error) { built = true; return prepared{}, nil })
		if !errors.Is(err, errNotInstalled) || !strings.Contains(err.Error(), "apt-get install redis-server") {
			t.Errorf("%s: err = %v, want errNotInstalled naming the package", name, err)
		}
		if built {
			t.Errorf("%s: spider was built although the crawler cannot run", name)
		}
	}
}

// TestBenchDist runs spider-mw and spider-p2p with two fetching processes
// each on a tiny web (5 hosts × 10 pages): complete coverage, no duplicate
// fetch, no politeness or gap violation across the processes, and CPU and
// RSS measured for the group. spider-mw runs at depth 2 (its one master
// crawls depth levels in order, so the depth limit is exact); spider-p2p
// with a depth limit no chain of fetches on this web can reach, because
// across nodes a page's depth is that of the first path found (README
// "Distributed crawling: peer-to-peer"): at depth 2 its coverage varies
// from run to run (0.55–1.0 seen), reported as a finding, not asserted.
func TestBenchDist(t *testing.T) {
	if testing.Short() {
		t.Skip("builds spider and runs distributed crawls")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv(redistest.RequireEnv) != "" {
			t.Fatalf("cannot find redis-server on PATH (%v) and %s is set: install redis-server (Debian package redis-server)", err, redistest.RequireEnv)
		}
		t.Skipf("redis-server not on PATH: skipping distributed runs (set %s=1 to make this a failure)", redistest.RequireEnv)
	}
	ctx := context.Background()
	work := t.TempDir()
	var bins map[string]prepared
	for _, tc := range []struct {
		crawler string
		depth   int
		procs   int
	}{
		{"spider-mw", 2, 3},
		{"spider-p2p", 100, 2},
	} {
		t.Run(tc.crawler, func(t *testing.T) {
			var errOut bytes.Buffer
			cfg, err := parseFlags([]string{"--hosts", "5", "--pages", "10", "--seeds", "2", "--depth", strconv.Itoa(tc.depth), "--crawlers", tc.crawler,
				"--concurrency", "4", "--delay", "5ms", "--dist-nodes", "2", "--timeout", "90s"}, &errOut)
			if err != nil {
				t.Fatal(err)
			}
			if bins == nil { // built once: both crawlers run the same spider binary
				var skipped []string
				bins, skipped, err = prepare(ctx, cfg.Root, work, distCrawlers)
				if err != nil || len(skipped) > 0 {
					t.Fatalf("prepare: %v; skipped %v", err, skipped)
				}
			}
			b, err := newBench(ctx, cfg, work, bins, &errOut)
			if err != nil {
				t.Fatal(err)
			}
			defer b.close()
			if n := len(b.truth.MustFetch); n < 50 || (tc.depth > 2 && n >= tc.depth) {
				// A recorded depth is the length of a chain of distinct
				// fetched pages, so a limit above the page count cuts none.
				t.Fatalf("ground truth of %d URLs: want 50 or more, and fewer than the depth limit %d", n, tc.depth)
			}
			results, err := b.runAll(ctx)
			if err != nil {
				t.Fatalf("runAll: %v\n%s", err, errOut.String())
			}
			if len(results) != 1 {
				t.Fatalf("%d results, want 1", len(results))
			}
			r := results[0]
			l := r.Log
			if l.Coverage() != 1 || l.Outside != 0 || l.Duplicates != 0 || l.PolitenessHosts != 0 || l.GapHosts != 0 || l.RobotsViolations != 0 {
				t.Errorf("coverage %.4f, outside %d, duplicates %d, hosts above per-host %d, gap violations %d (%v), robots %d",
					l.Coverage(), l.Outside, l.Duplicates, l.PolitenessHosts, l.GapHosts, l.GapExamples, l.RobotsViolations)
			}
			g := r.Group
			if g == nil {
				t.Fatal("no group usage")
			}
			if len(g.Procs) != tc.procs {
				t.Errorf("%d processes measured, want %d", len(g.Procs), tc.procs)
			}
			var cpu time.Duration
			var rss int64
			for _, p := range g.Procs {
				if p.CPU <= 0 || p.MaxRSS <= 0 {
					t.Errorf("process %+v has no CPU or RSS", p)
				}
				cpu += p.CPU
				rss += p.MaxRSS
			}
			if g.RedisCPU <= 0 || g.RedisHWM <= 0 {
				t.Errorf("redis-server CPU %v, VmHWM %d", g.RedisCPU, g.RedisHWM)
			}
			if r.CPU != cpu+g.RedisCPU || r.MaxRSS != rss+g.RedisHWM {
				t.Errorf("totals CPU %v, RSS %d are not the sums %v, %d", r.CPU, r.MaxRSS, cpu+g.RedisCPU, rss+g.RedisHWM)
			}
			if r.Wall <= 0 || r.Wall > 90*time.Second {
				t.Errorf("wall %v", r.Wall)
			}
			var report bytes.Buffer
			printReport(&report, cfg, b, results)
			for _, want := range []string{fmt.Sprintf("| %s | %d | 0 | 1.0000 |", tc.crawler, len(b.truth.MustFetch)),
				"note: " + tc.crawler + " run 1: first request ", "sharing concurrency 4 as [2 2]"} {
				if !strings.Contains(report.String(), want) {
					t.Errorf("report lacks %q:\n%s", want, report.String())
				}
			}
		})
	}
}
