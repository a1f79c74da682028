package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spider-crawler/spider/internal/store"
	"github.com/spider-crawler/spider/internal/websim"
)

// The large-frontier experiment (issue 11): every crawler runs for a fixed
// time on a web far larger than it can finish, with unlimited depth, so its
// set of discovered-but-unfetched URLs grows for the whole run. Every
// Config.Sample the harness records the crawler's resident set (VmRSS from
// /proc), its CPU time, the requests websim answered (robots.txt included)
// and the URLs the crawler says it discovered: spider from its /metrics
// (spider_discovered_urls_total), Colly and Scrapy from the progress lines
// they print with --progress. A crawler whose RSS passes Config.MaxRSS is
// stopped (the machine is shared) and the report says when.

// sample is one observation of a running crawler.
type sample struct {
	At         time.Duration // since the crawler started
	Requests   int           // websim requests so far (robots.txt included)
	Pages      int64         // the crawler's own count of pages done (-1: unknown)
	Discovered int64         // the crawler's discovered URLs (-1: unknown)
	RSS        int64         // bytes
	RSSAnon    int64         // bytes of RSS not backed by files (heap, stacks); RSS − RSSAnon is mapped files (bbolt's mmap, the binary)
	CPU        time.Duration // user + system so far
	DataBytes  int64         // bytes under the crawler's data directory
	StateBytes int64         // bytes of spider's crawl state (DATA/state) within DataBytes (-1: not spider)
}

// frontierRun is one crawler's run in the frontier experiment.
type frontierRun struct {
	Crawler string
	Samples []sample
	Stopped string // why the run ended: "time", "rss", "exit" or an error
}

// progressLine is what the Colly and Scrapy drivers print with --progress.
type progressLine struct {
	Progress   bool    `json:"progress"`
	Pages      int64   `json:"pages"`
	Discovered int64   `json:"discovered"`
	Seconds    float64 `json:"seconds"`
}

// progressWriter keeps the last progress line written to it (the rest of
// the stream is kept, bounded, for error messages).
type progressWriter struct {
	mu   sync.Mutex
	part []byte
	last progressLine
	seen bool
	tail bytes.Buffer
}

func (p *progressWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.part = append(p.part, b...)
	for {
		i := bytes.IndexByte(p.part, '\n')
		if i < 0 {
			break
		}
		line := p.part[:i]
		var pl progressLine
		if json.Unmarshal(line, &pl) == nil && pl.Progress {
			p.last, p.seen = pl, true
		} else {
			if p.tail.Len() > 64<<10 {
				p.tail.Reset()
			}
			p.tail.Write(line)
			p.tail.WriteByte('\n')
		}
		p.part = p.part[i+1:]
	}
	if len(p.part) > 1<<20 { // a line that never ends: keep memory bounded
		p.part = p.part[:0]
	}
	return len(b), nil
}

// get returns the last progress line, if any.
func (p *progressWriter) get() (progressLine, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last, p.seen
}

func runFrontier(ctx context.Context, cfg config, work string, bins map[string]prepared, skipped []string, stdout, stderr io.Writer) error {
	wc := websim.Config{Seed: cfg.Seed, Hosts: cfg.Hosts, PagesPerHost: cfg.Pages, Latency: cfg.Latency, LogCap: 1, ExtraLinks: cfg.ExtraLinks}
	if cfg.Noise {
		wc.Enable = websim.FeatureNoise
	}
	srv, err := websim.Start(ctx, wc)
	if err != nil {
		return fmt.Errorf("cannot start websim: %w", err)
	}
	defer srv.Close()
	resolve := filepath.Join(work, "resolve.txt")
	if err := os.WriteFile(resolve, []byte(strings.Join(srv.Resolve(), "\n")+"\n"), 0o644); err != nil {
		return fmt.Errorf("cannot write resolve file: %w", err)
	}
	// spider gets one wildcard entry instead of one line per host: its
	// resolver scans the --resolve list for every new connection, which
	// with 100,000 lines took 27% of its CPU 30 s into a run and 46% after
	// 5 min (perf; more hosts, fewer reused connections). A user pointing
	// spider at many hosts would write the wildcard; the peers look their
	// lists up in hash maps, so they keep the per-host file.
	spiderResolve := resolve
	if w, ok := wildcardResolve(srv.Hosts(), srv.Addr()); ok {
		spiderResolve = filepath.Join(work, "resolve-spider.txt")
		if err := os.WriteFile(spiderResolve, []byte(w+"\n"), 0o644); err != nil {
			return fmt.Errorf("cannot write resolve file: %w", err)
		}
	}
	seeds := srv.SeedURLs(cfg.Seeds)
	var runs []frontierRun
	for _, name := range cfg.Crawlers {
		fmt.Fprintf(stderr, "frontier: %s for %s …\n", name, cfg.Frontier)
		rf := resolve
		if name == "spider" {
			rf = spiderResolve
		}
		r := frontierOne(ctx, cfg, work, name, bins[name], srv, rf, seeds, stderr)
		runs = append(runs, r)
		if ctx.Err() != nil {
			break
		}
	}
	printFrontier(stdout, cfg, bins, skipped, runs)
	return ctx.Err()
}

// wildcardResolve returns the resolve entry "*.SUFFIX:PORT:ADDR" that
// covers every host when all of them end in the same top-level label
// (websim's hosts all end in ".test"), and false otherwise. addr is
// websim's HOST:PORT listen address.
func wildcardResolve(hosts []string, addr string) (string, bool) {
	ip, port, err := net.SplitHostPort(addr)
	if err != nil || len(hosts) == 0 {
		return "", false
	}
	i := strings.LastIndexByte(hosts[0], '.')
	if i <= 0 {
		return "", false
	}
	suffix := hosts[0][i:]
	for _, h := range hosts {
		if !strings.HasSuffix(h, suffix) || len(h) <= len(suffix) {
			return "", false
		}
	}
	if strings.Contains(ip, ":") {
		ip = "[" + ip + "]"
	}
	return "*" + suffix + ":" + port + ":" + ip, true
}

// freePort returns a loopback port nobody listens on right now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("cannot find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func frontierOne(ctx context.Context, cfg config, work, name string, p prepared, srv *websim.Server, resolve string, seeds []string, logw io.Writer) frontierRun {
	run := frontierRun{Crawler: name}
	data := filepath.Join(work, "frontier-"+name)
	defer os.RemoveAll(data)
	if err := os.MkdirAll(data, 0o755); err != nil {
		run.Stopped = err.Error()
		return run
	}
	args := crawlerArgs(cfg, name, data, resolve, srv.Addr(), nil)
	metricsURL := ""
	switch name {
	case "spider":
		port, err := freePort()
		if err != nil {
			run.Stopped = err.Error()
			return run
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		args = append(args, "--addr", addr)
		metricsURL = "http://" + addr + "/metrics"
	case "colly", "scrapy":
		args = append(args, "--progress", cfg.Sample.String())
		if name == "scrapy" {
			args[len(args)-1] = seconds(cfg.Sample)
		}
	}
	args = append(args, seeds...)
	self, err := os.Executable()
	if err != nil {
		run.Stopped = fmt.Sprintf("cannot find peerbench's executable: %v", err)
		return run
	}
	usageFile := filepath.Join(work, "usage-frontier-"+name+".json")
	_ = os.Remove(usageFile + ".pid")
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := exec.CommandContext(rctx, self, append(append([]string{measureArg, usageFile}, p.Argv...), args...)...)
	prog := &progressWriter{}
	cmd.Stdout, cmd.Stderr = io.Discard, prog
	cmd.Dir, cmd.Env = data, crawlerEnv(name, data)
	srv.Log().Reset()
	base := srv.Log().Len() + srv.Log().Dropped()
	start := time.Now()
	if err := cmd.Start(); err != nil {
		run.Stopped = fmt.Sprintf("cannot start: %v", err)
		return run
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	tick := time.NewTicker(cfg.Sample)
	defer tick.Stop()
	deadline := time.NewTimer(cfg.Frontier)
	defer deadline.Stop()
	client := &http.Client{Timeout: 5 * time.Second}
	pid := 0
	for {
		select {
		case err := <-exited:
			run.Stopped = "exit"
			if err != nil && rctx.Err() == nil {
				run.Stopped = fmt.Sprintf("exit: %v: %s", err, tail(prog.tail.String(), 500))
			}
			return run
		case <-deadline.C:
			if n := len(run.Samples); n == 0 || time.Since(start)-run.Samples[n-1].At > cfg.Sample/2 {
				s := takeSample(time.Since(start), pid, srv, base, metricsURL, prog, client)
				s.DataBytes, s.StateBytes = diskUse(name, data)
				run.Samples = append(run.Samples, s)
			}
			run.Stopped = "time"
			cancel()
			<-exited
			return run
		case <-tick.C:
			if pid == 0 {
				pid = readPid(usageFile + ".pid")
			}
			s := takeSample(time.Since(start), pid, srv, base, metricsURL, prog, client)
			s.DataBytes, s.StateBytes = diskUse(name, data)
			run.Samples = append(run.Samples, s)
			fmt.Fprintf(logw, "  %s t=%.0fs requests=%d discovered=%d rss=%.0fMiB\n", name, s.At.Seconds(), s.Requests, s.Discovered, float64(s.RSS)/(1<<20))
			if why := stopReason(cfg, s); why != "" {
				run.Stopped = why
				cancel()
				<-exited
				return run
			}
		case <-ctx.Done():
			run.Stopped = "interrupted"
			cancel()
			<-exited
			return run
		}
	}
}

// stopReason says why a run must end after sample s ("" to go on): its
// RSS passed cfg.MaxRSS, or it discovered cfg.Until URLs.
func stopReason(cfg config, s sample) string {
	switch {
	case s.RSS > cfg.MaxRSS:
		return fmt.Sprintf("rss above %d MiB", cfg.MaxRSS>>20)
	case cfg.Until > 0 && s.Discovered >= cfg.Until:
		return fmt.Sprintf("discovered %d", cfg.Until)
	}
	return ""
}

func readPid(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

func takeSample(at time.Duration, pid int, srv *websim.Server, base int, metricsURL string, prog *progressWriter, client *http.Client) sample {
	s := sample{At: at, Requests: srv.Log().Len() + srv.Log().Dropped() - base, Pages: -1, Discovered: -1}
	if pid > 0 {
		s.RSS, s.RSSAnon, s.CPU = procUsage(pid)
	}
	if metricsURL != "" {
		if m, err := scrapeMetrics(client, metricsURL); err == nil {
			if v, ok := m["spider_discovered_urls_total"]; ok {
				s.Discovered = int64(v)
			}
			if v, ok := m["spider_pages_total"]; ok {
				s.Pages = int64(v)
			}
		}
	} else if pl, ok := prog.get(); ok {
		s.Pages, s.Discovered = pl.Pages, pl.Discovered
	}
	return s
}

// procUsage returns the resident set, its anonymous part and the CPU
// time of process pid from /proc (zero when it is gone).
func procUsage(pid int) (rss, anon int64, cpu time.Duration) {
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		rss, anon = parseVmRSS(b), parseStatusKB(b, "RssAnon:")
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		cpu = parseStatCPU(b)
	}
	return rss, anon, cpu
}

// diskUse returns the bytes under a crawler's data directory and, for
// spider, the part its crawl state takes (DATA/state: the seen set, the
// pending queue, fingerprints, the revisit schedule), which is what the
// disk goal (bytes per discovered URL for the state) is about: the page
// files and records grow with the pages fetched, not with the frontier.
func diskUse(name, data string) (all, state int64) {
	all, state = dirBytes(data), -1
	if name == "spider" {
		state = dirBytes(store.DataDir(data).State())
	}
	return all, state
}

// dirBytes returns the total size of the regular files under dir (0 when
// it cannot be read; files that vanish during the walk are skipped).
func dirBytes(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// parseVmRSS returns the VmRSS of a /proc/PID/status text in bytes (0 if
// absent or malformed).
func parseVmRSS(status []byte) int64 { return parseStatusKB(status, "VmRSS:") }

// parseStatusKB returns the field (e.g. "RssAnon:") of a /proc/PID/status
// text in bytes (0 if absent or malformed).
func parseStatusKB(status []byte, field string) int64 {
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), field)
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || kb < 0 {
			return 0
		}
		return kb << 10
	}
	return 0
}

// clockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat: 100
// on every Linux architecture Go supports (reading sysconf(_SC_CLK_TCK)
// would need cgo).
const clockTicks = 100

// parseStatCPU returns utime + stime of a /proc/PID/stat line (0 if
// malformed). The command name (field 2) may hold spaces and parentheses, so
// the fields are counted after its last ')'.
func parseStatCPU(stat []byte) time.Duration {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(stat[i+1:]))
	// After the name: state(3) ppid(4) … utime(14) stime(15) → indices 11, 12.
	if len(f) < 13 {
		return 0
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil || u < 0 || s < 0 {
		return 0
	}
	return time.Duration(u+s) * time.Second / clockTicks
}

// scrapeMetrics fetches a Prometheus text exposition and returns the sum of
// each metric's samples by name (labels summed over).
func scrapeMetrics(client *http.Client, url string) (map[string]float64, error) {
	resp, err := client.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("cannot scrape %s: status %d", url, resp.StatusCode)
	}
	return parseMetrics(resp.Body)
}

// parseMetrics sums the samples of a Prometheus text exposition by metric
// name. It is hand-written (a dozen lines) because the only metrics read are
// plain counters; prometheus/common/expfmt is not a dependency of spider.
func parseMetrics(r io.Reader) (map[string]float64, error) {
	out := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		name, rest := line, ""
		if i := strings.IndexAny(line, "{ "); i >= 0 {
			name, rest = line[:i], line[i:]
		}
		if strings.HasPrefix(rest, "{") {
			j := strings.LastIndexByte(rest, '}')
			if j < 0 {
				return nil, fmt.Errorf("cannot parse metrics line %q: unclosed labels", line)
			}
			rest = rest[j+1:]
		}
		f := strings.Fields(rest)
		if name == "" || len(f) == 0 {
			return nil, fmt.Errorf("cannot parse metrics line %q: want NAME[{LABELS}] VALUE", line)
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return nil, fmt.Errorf("cannot parse metrics line %q: %w", line, err)
		}
		out[name] += v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("cannot read metrics: %w", err)
	}
	return out, nil
}

// printFrontier writes one table of samples per crawler and a summary.
func printFrontier(w io.Writer, cfg config, bins map[string]prepared, skipped []string, runs []frontierRun) {
	features := "clean"
	if cfg.Noise {
		features = "clean + noise"
	}
	if cfg.ExtraLinks > 0 {
		features += fmt.Sprintf(", %d extra links per article", cfg.ExtraLinks)
	}
	until := ""
	if cfg.Until > 0 {
		until = fmt.Sprintf(" or until %d URLs discovered", cfg.Until)
	}
	fmt.Fprintf(w, "\nlarge frontier: websim seed %d, %d hosts × %d pages (%s), latency %s; crawl: %d seeds, depth %d, scope any, concurrency %d, per-host %d, delay %s; %s per crawler%s, sampled every %s, stopped above %d MiB RSS\n",
		cfg.Seed, cfg.Hosts, cfg.Pages, features, cfg.Latency, cfg.Seeds, cfg.Depth, cfg.Concurrency, cfg.PerHost, cfg.Delay,
		cfg.Frontier, until, cfg.Sample, cfg.MaxRSS>>20)
	if len(cfg.SpiderArgs) > 0 {
		fmt.Fprintf(w, "spider extra arguments: %s\n", strings.Join(cfg.SpiderArgs, " "))
	}
	fmt.Fprintln(w, "versions:")
	for _, r := range runs {
		fmt.Fprintf(w, "- %s: %s\n", r.Crawler, bins[r.Crawler].Version)
	}
	for _, s := range skipped {
		fmt.Fprintf(w, "- %s\n", s)
	}
	for _, r := range runs {
		fmt.Fprintf(w, "\n%s (ended: %s)\n\n", r.Crawler, r.Stopped)
		fmt.Fprintln(w, "| t s | requests | requests/s (interval) | CPU ms per request (interval) | pages (own count) | discovered URLs | RSS MiB | anonymous RSS MiB | CPU s | data MiB | state MiB |")
		fmt.Fprintln(w, "|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
		var prev sample
		for _, s := range r.Samples {
			rate := 0.0
			if dt := (s.At - prev.At).Seconds(); dt > 0 {
				rate = float64(s.Requests-prev.Requests) / dt
			}
			fmt.Fprintf(w, "| %.0f | %d | %.0f | %.2f | %s | %s | %.0f | %.0f | %.1f | %.0f | %s |\n", s.At.Seconds(), s.Requests, rate,
				cpuPerRequest(prev, s), orDash(s.Pages), orDash(s.Discovered), float64(s.RSS)/(1<<20), float64(s.RSSAnon)/(1<<20),
				s.CPU.Seconds(), float64(s.DataBytes)/(1<<20), mib(s.StateBytes))
			prev = s
		}
	}
	fmt.Fprintln(w, "\n| crawler | ran s | ended | requests | discovered at end | peak sampled RSS MiB | requests/s, first quarter | requests/s, last quarter | last/first | CPU ms per request, first quarter | last quarter | RSS bytes per discovered URL | anonymous RSS MiB at end | state bytes per discovered URL |")
	fmt.Fprintln(w, "|---|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
	for _, r := range runs {
		sm := summarize(r.Samples)
		fmt.Fprintf(w, "| %s | %.0f | %s | %d | %s | %.0f | %.0f | %.0f | %.2f | %.2f | %.2f | %s | %.0f | %s |\n", r.Crawler, sm.Ran.Seconds(), r.Stopped,
			sm.Requests, orDash(sm.Discovered), float64(sm.PeakRSS)/(1<<20), sm.FirstRate, sm.LastRate, sm.Ratio(),
			sm.FirstCPU, sm.LastCPU, sm.BytesPerURL(), float64(sm.AnonRSS)/(1<<20), sm.StateBytesPerURL())
	}
}

// summary condenses one run's samples.
type summary struct {
	Ran                 time.Duration
	Requests            int
	Discovered          int64
	PeakRSS             int64
	AnonRSS             int64   // anonymous RSS at the last sample
	StateBytes          int64   // the crawl state's bytes at the last sample (-1: unknown)
	FirstRate, LastRate float64 // requests/s over the first and last quarter of the run
	FirstCPU, LastCPU   float64 // CPU ms per request over the first and last quarter (0: unknown)
}

// cpuPerRequest is the crawler's CPU milliseconds per websim request
// between samples a and b (0 when no request was made). Unlike requests/s
// it does not depend on how much of the shared machine the crawler got.
func cpuPerRequest(a, b sample) float64 {
	if n := b.Requests - a.Requests; n > 0 {
		return float64(b.CPU-a.CPU) / float64(time.Millisecond) / float64(n)
	}
	return 0
}

// Ratio is LastRate/FirstRate (0 when FirstRate is 0).
func (s summary) Ratio() float64 {
	if s.FirstRate == 0 {
		return 0
	}
	return s.LastRate / s.FirstRate
}

// BytesPerURL is peak RSS per discovered URL, or "–" when unknown.
func (s summary) BytesPerURL() string {
	if s.Discovered <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f", float64(s.PeakRSS)/float64(s.Discovered))
}

// StateBytesPerURL is the crawl state's bytes per discovered URL at the
// end of the run, or "–" when either is unknown.
func (s summary) StateBytesPerURL() string {
	if s.Discovered <= 0 || s.StateBytes < 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f", float64(s.StateBytes)/float64(s.Discovered))
}

// mib prints n bytes in MiB, or "–" for a negative (unknown) n.
func mib(n int64) string {
	if n < 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f", float64(n)/(1<<20))
}

func summarize(ss []sample) summary {
	var sm summary
	if len(ss) == 0 {
		return sm
	}
	last := ss[len(ss)-1]
	sm.Ran, sm.Requests, sm.Discovered = last.At, last.Requests, last.Discovered
	sm.AnonRSS, sm.StateBytes = last.RSSAnon, last.StateBytes
	for _, s := range ss {
		sm.PeakRSS = max(sm.PeakRSS, s.RSS)
	}
	// at returns the sample nearest to time t.
	at := func(t time.Duration) sample {
		best := ss[0]
		for _, s := range ss {
			if (s.At - t).Abs() < (best.At - t).Abs() {
				best = s
			}
		}
		return best
	}
	rate := func(a, b sample) float64 {
		if dt := (b.At - a.At).Seconds(); dt > 0 {
			return float64(b.Requests-a.Requests) / dt
		}
		return 0
	}
	q := last.At / 4
	sm.FirstRate = rate(sample{}, at(q))
	sm.LastRate = rate(at(last.At-q), last)
	sm.FirstCPU = cpuPerRequest(sample{}, at(q))
	sm.LastCPU = cpuPerRequest(at(last.At-q), last)
	return sm
}

func orDash(v int64) string {
	if v < 0 {
		return "–"
	}
	return strconv.FormatInt(v, 10)
}
