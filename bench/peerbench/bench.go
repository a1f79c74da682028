package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spider-crawler/spider/internal/websim"
)

// build compiles the named crawlers into dir and returns their paths by name.
// Colly is built in its own module (bench/peers/colly) so that it never
// enters spider's go.mod.
func build(ctx context.Context, root, dir string, names []string) (map[string]string, error) {
	bins := map[string]string{}
	for _, name := range names {
		out := filepath.Join(dir, name)
		var cmd *exec.Cmd
		switch name {
		case "spider":
			cmd = exec.CommandContext(ctx, "go", "build", "-o", out, "./cmd/spider")
			cmd.Dir = root
		case "bare":
			cmd = exec.CommandContext(ctx, "go", "build", "-o", out, "./bench/bare")
			cmd.Dir = root
		case "colly":
			cmd = exec.CommandContext(ctx, "go", "build", "-o", out, ".")
			cmd.Dir = filepath.Join(root, "bench", "peers", "colly")
		default:
			return nil, fmt.Errorf("cannot build unknown crawler %q", name)
		}
		if msg, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("cannot build %s (go build in %s): %w\n%s", name, cmd.Dir, err, msg)
		}
		bins[name] = out
	}
	return bins, nil
}

// bench is one synthetic web with its ground truth and the crawler binaries.
type bench struct {
	cfg       config
	work      string
	bins      map[string]string
	srv       *websim.Server
	truth     *websim.Truth
	truthTime time.Duration
	seeds     []string
	resolve   string // path of the resolve file
	log       io.Writer
}

func newBench(ctx context.Context, cfg config, work string, bins map[string]string, log io.Writer) (*bench, error) {
	wc := websim.Config{
		Seed: cfg.Seed, Hosts: cfg.Hosts, PagesPerHost: cfg.Pages, Latency: cfg.Latency,
		CrawlDelay: cfg.CrawlDelay, LogCap: 10_000_000,
	}
	if cfg.Robots {
		wc.Enable = websim.FeatureRobots
	}
	srv, err := websim.Start(ctx, wc)
	if err != nil {
		return nil, fmt.Errorf("cannot start websim: %w", err)
	}
	b := &bench{cfg: cfg, work: work, bins: bins, srv: srv, seeds: srv.SeedURLs(cfg.Seeds), log: log}
	b.resolve = filepath.Join(work, "resolve.txt")
	if err := os.WriteFile(b.resolve, []byte(strings.Join(srv.Resolve(), "\n")+"\n"), 0o644); err != nil {
		b.close()
		return nil, fmt.Errorf("cannot write resolve file: %w", err)
	}
	fmt.Fprintf(log, "websim on %s: %d hosts × %d pages; computing the ground truth (depth %d, %d seeds)\n",
		srv.Addr(), cfg.Hosts, cfg.Pages, cfg.Depth, len(b.seeds))
	start := time.Now()
	b.truth, err = srv.Truth(websim.TruthRules{
		Seeds: b.seeds, MaxDepth: cfg.Depth, Scope: websim.ScopeAny, Agent: "spider", MaxURLs: 10_000_000,
	})
	b.truthTime = time.Since(start)
	if err != nil {
		b.close()
		return nil, fmt.Errorf("cannot compute the ground truth: %w", err)
	}
	fmt.Fprintf(log, "ground truth: %d URLs to fetch (%s)\n", len(b.truth.MustFetch), b.truthTime.Round(time.Millisecond))
	return b, nil
}

func (b *bench) close() { _ = b.srv.Close() }

// result is one crawler run.
type result struct {
	Crawler   string
	Run       int
	Log       logMetrics
	Wall      time.Duration // crawler process start to exit
	CPU       time.Duration // user + system time of the crawler process
	MaxRSS    int64         // peak resident set of the crawler process (ru_maxrss), bytes
	ServerCPU time.Duration // user + system time of this process (websim, launcher start) during the run
	Self      *selfReport   // the crawler's own JSON line, when it prints one
	Err       error
}

// PagesPerSec is pages requested (robots.txt excluded) per wall second.
func (r result) PagesPerSec() float64 {
	if r.Wall <= 0 {
		return 0
	}
	return float64(r.Log.Pages) / r.Wall.Seconds()
}

// CPUPer1k is crawler CPU seconds per 1,000 pages.
func (r result) CPUPer1k() float64 {
	if r.Log.Pages == 0 {
		return 0
	}
	return r.CPU.Seconds() * 1000 / float64(r.Log.Pages)
}

// selfReport is the JSON line the bare and Colly crawlers print.
type selfReport struct {
	Crawler string  `json:"crawler"`
	Pages   int64   `json:"pages"`
	Errors  int64   `json:"errors"`
	Seconds float64 `json:"seconds"`
}

// runAll runs every crawler cfg.Repeat times, interleaved, and returns the
// results in run order. It stops at the first crawler that fails to run.
func (b *bench) runAll(ctx context.Context) ([]result, error) {
	var out []result
	for r := 1; r <= b.cfg.Repeat; r++ {
		for _, name := range b.cfg.Crawlers {
			fmt.Fprintf(b.log, "run %d: %s …\n", r, name)
			res := b.runOne(ctx, name, r)
			out = append(out, res)
			if res.Err != nil {
				return out, fmt.Errorf("%s run %d: %w", name, r, res.Err)
			}
			fmt.Fprintf(b.log, "run %d: %s: %d pages in %s (%.0f/s), coverage %.4f\n",
				r, name, res.Log.Pages, res.Wall.Round(time.Millisecond), res.PagesPerSec(), res.Log.Coverage())
			if len(res.Log.RobotsExamples) > 0 {
				fmt.Fprintf(b.log, "  robots.txt violations, e.g. %s\n", strings.Join(res.Log.RobotsExamples, " "))
			}
			if len(res.Log.OutsideExamples) > 0 {
				fmt.Fprintf(b.log, "  fetched outside the truth, e.g. %s\n", strings.Join(res.Log.OutsideExamples, " "))
			}
		}
	}
	return out, nil
}

// args returns the command line of one crawler.
func (b *bench) args(name, data string) []string {
	c := b.cfg
	var a []string
	switch name {
	case "spider":
		a = []string{"crawl", "--data", data, "--delay", c.Delay.String(), "--per-host", strconv.Itoa(c.PerHost),
			"--concurrency", strconv.Itoa(c.Concurrency), "--allow-private", "--resolve-file", b.resolve,
			"--scope", "any", "--max-depth", strconv.Itoa(c.Depth), "--quiet"}
	case "colly":
		a = []string{"--resolve-file", b.resolve, "--max-depth", strconv.Itoa(c.Depth),
			"--parallelism", strconv.Itoa(c.Concurrency), "--delay", c.Delay.String(),
			"--suffixes", strings.Join(websim.DefaultSuffixes(), ",")}
	case "bare":
		a = []string{"--resolve-file", b.resolve, "--max-depth", strconv.Itoa(c.Depth),
			"--parallelism", strconv.Itoa(c.Concurrency), "--suffixes", strings.Join(websim.DefaultSuffixes(), ",")}
	}
	return append(a, b.seeds...)
}

// runOne runs one crawler to its end with an empty access log and measures it.
func (b *bench) runOne(ctx context.Context, name string, n int) result {
	res := result{Crawler: name, Run: n}
	data := filepath.Join(b.work, fmt.Sprintf("data-%s-%d", name, n))
	defer os.RemoveAll(data)
	b.srv.Log().Reset()
	ctx, cancel := context.WithTimeout(ctx, b.cfg.Timeout)
	defer cancel()
	self, err := os.Executable()
	if err != nil {
		res.Err = fmt.Errorf("cannot find peerbench's executable for the launcher: %w", err)
		return res
	}
	usageFile := filepath.Join(b.work, fmt.Sprintf("usage-%s-%d.json", name, n))
	args := append([]string{measureArg, usageFile, b.bins[name]}, b.args(name, data)...)
	cmd := exec.CommandContext(ctx, self, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Dir = b.work
	before := selfCPU()
	err = cmd.Run()
	res.ServerCPU = selfCPU() - before
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("stopped after %s: %w", b.cfg.Timeout, ctx.Err())
		}
		res.Err = fmt.Errorf("cannot run %s: %w\n%s", name, err, tail(stderr.String(), 2000))
	}
	if u, uerr := readUsage(usageFile); uerr == nil {
		res.Wall = time.Duration(u.WallNS)
		res.CPU = time.Duration(u.UserNS + u.SysNS)
		res.MaxRSS = u.MaxRSSKB << 10
	} else if res.Err == nil {
		res.Err = uerr
	}
	res.Self = lastJSON(stdout.Bytes())
	waitQuiet(b.srv.Log())
	l := b.srv.Log()
	res.Log = analyze(l.Entries(), l.Duplicates(), l.Retries(), b.truth, b.cfg.PerHost, b.cfg.Delay)
	if d := l.Dropped(); d > 0 && res.Err == nil {
		res.Err = fmt.Errorf("the access log dropped %d entries: its capacity is too small for this web", d)
	}
	return res
}

// waitQuiet waits until the access log stops growing (handlers still
// finishing after the crawler exited), at most two seconds.
func waitQuiet(l *websim.AccessLog) {
	last := l.Len() + l.Dropped()
	for range 20 {
		time.Sleep(100 * time.Millisecond)
		n := l.Len() + l.Dropped()
		if n == last {
			return
		}
		last = n
	}
}

// selfCPU returns this process's user + system time so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// lastJSON parses the last line of out that is a selfReport (nil if none).
func lastJSON(out []byte) *selfReport {
	var last *selfReport
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var r selfReport
		if json.Unmarshal(sc.Bytes(), &r) == nil && r.Crawler != "" {
			last = &r
		}
	}
	return last
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// printReport writes the settings, one Markdown table row per run and the
// ratios of spider's median pages/s to the others'.
func printReport(w io.Writer, cfg config, b *bench, results []result) {
	fmt.Fprintf(w, "\nwebsim: seed %d, %d hosts × %d pages, latency %s, robots %s; crawl: %d seeds, depth %d, scope any, concurrency %d, per-host %d, delay %s\n",
		cfg.Seed, cfg.Hosts, cfg.Pages, cfg.Latency, map[bool]string{false: "allow-all", true: "menu"}[cfg.Robots],
		cfg.Seeds, cfg.Depth, cfg.Concurrency, cfg.PerHost, cfg.Delay)
	fmt.Fprintf(w, "ground truth: %d URLs to fetch, computed in %s\n\n", len(b.truth.MustFetch), b.truthTime.Round(time.Millisecond))
	fmt.Fprintln(w, "| crawler | pages | outside truth | coverage | robots viol. | dup. fetches | hosts > per-host | max open/host | gap viol. | errors | wall s | pages/s | CPU s/1k pages | peak RSS MiB | websim CPU s |")
	fmt.Fprintln(w, "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
	for _, r := range results {
		name := r.Crawler
		if cfg.Repeat > 1 {
			name = fmt.Sprintf("%s #%d", r.Crawler, r.Run)
		}
		if r.Err != nil {
			name += " (failed)"
		}
		gap := "–"
		if cfg.Delay > 0 {
			gap = strconv.Itoa(r.Log.GapHosts)
		}
		fmt.Fprintf(w, "| %s | %d | %d | %.4f | %d | %d | %d | %d | %s | %d | %.2f | %.0f | %.3f | %.0f | %.2f |\n",
			name, r.Log.Pages, r.Log.Outside, r.Log.Coverage(), r.Log.RobotsViolations, r.Log.Duplicates,
			r.Log.PolitenessHosts, r.Log.MaxOpen, gap, r.Log.Errors, r.Wall.Seconds(), r.PagesPerSec(), r.CPUPer1k(),
			float64(r.MaxRSS)/(1<<20), r.ServerCPU.Seconds())
	}
	med := map[string]float64{}
	for _, name := range cfg.Crawlers {
		var v []float64
		for _, r := range results {
			if r.Crawler == name && r.Err == nil {
				v = append(v, r.PagesPerSec())
			}
		}
		if len(v) > 0 {
			slices.Sort(v)
			med[name] = v[len(v)/2]
		}
	}
	fmt.Fprintln(w)
	for _, other := range []string{"colly", "bare"} {
		if med["spider"] > 0 && med[other] > 0 {
			fmt.Fprintf(w, "spider/%s pages/s: %.2f (%.0f / %.0f)\n", other, med["spider"]/med[other], med["spider"], med[other])
		}
	}
	for _, r := range results {
		if r.Self != nil && r.Self.Pages != int64(r.Log.Pages) {
			fmt.Fprintf(w, "note: %s run %d counted %d pages itself, the access log %d\n", r.Crawler, r.Run, r.Self.Pages, r.Log.Pages)
		}
	}
	if errs := failed(results); errs != nil {
		fmt.Fprintf(w, "failures: %v\n", errs)
	}
}

func failed(results []result) error {
	var errs []error
	for _, r := range results {
		if r.Err != nil {
			errs = append(errs, fmt.Errorf("%s run %d: %w", r.Crawler, r.Run, r.Err))
		}
	}
	return errors.Join(errs...)
}
