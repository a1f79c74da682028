// Command serveload measures `spider serve` under concurrent load: the
// search page (GET /?q=…) and the JSON API (GET /api/search?q=…) of a
// crawl's index, at a given number of clients, with a given query mix.
//
//	go run ./bench/serveload --data DIR [--clients 100] [--duration 30s] \
//	    [--mix zipf|uniform|unique] [--queries FILE] [--rate R] [--target page,api]
//
// It builds cmd/spider (or takes --bin), starts `spider serve --data DIR`
// as a separate process on 127.0.0.1 (a random port), waits for /healthz,
// warms up, then runs the load and prints, per target: requests/s,
// latency p50/p90/p99/max, errors, the server's cache hit rate (from its
// /metrics), the server's CPU seconds and resident memory (its
// process_* metrics), and the bench's own CPU (it shares the machine).
// The server is started afresh for every measured run, so caches never
// carry over from one run to the next. --clients and --mix take
// comma-separated lists and measure every combination.
//
// Query mixes, all built from the crawl's titles (records.jsonl) unless
// --queries gives the distinct queries, most popular first:
//
//   - zipf: queries drawn Zipf(s = --zipf-s, default 1) from --distinct
//     (default 5,000) distinct queries: single words, adjacent title
//     words (AND), quoted phrases and OR pairs. Real query logs have this
//     shape: a few queries are asked very often, most rarely.
//   - uniform: the same distinct queries, all equally likely.
//   - unique: every query is new (title pairs, then random word
//     combinations), so no cache can answer: the worst case.
//
// Closed loop (the default): each client sends its next request as soon
// as it has read the previous answer; latency is the request's own time.
// Open loop (--rate R): R requests per second at fixed times through at
// most --clients connections; latency is measured from the scheduled time,
// so queueing behind slow answers is counted (no coordinated omission).
//
// --cpuprofile FILE starts the server with --pprof and saves its CPU
// profile over each measured run (FILE, or FILE.TARGET-MIX-CLIENTS when
// several runs are measured).
//
// --paths FILE writes request paths drawn like a run's (the first --mix
// and --target) and exits: bench/serveload/wrk.sh sends them with wrk, a
// load generator in C that costs the shared cores less than this one.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "serveload:", err)
		}
		os.Exit(1)
	}
}

// config is the parsed command line.
type config struct {
	data       string
	clients    []int
	duration   time.Duration
	warmup     time.Duration
	mixes      []string
	targets    []string
	queries    string
	distinct   int
	zipfS      float64
	rate       float64
	seed       uint64
	bin        string
	serveArgs  []string
	serveEnv   []string
	cpuprofile string
	jsonOut    bool
	fresh      bool
	preload    string
	paths      string // write request paths here instead of measuring (wrk.sh)
	pathsN     int
}

func parseFlags(args []string, stderr io.Writer) (*config, error) {
	fs := flag.NewFlagSet("serveload", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c := &config{}
	fs.StringVar(&c.data, "data", "", "crawl data directory with an index (DIR/index); required")
	clients := fs.String("clients", "100", "concurrent clients (closed loop) or connections (open loop); a comma-separated list measures each")
	fs.DurationVar(&c.duration, "duration", 30*time.Second, "length of each measured run")
	fs.DurationVar(&c.warmup, "warmup", 5*time.Second, "unmeasured load before each run (same mix and clients); 0 for none")
	mixes := fs.String("mix", mixZipf, "query mix: zipf, uniform or unique; a comma-separated list measures each")
	targets := fs.String("target", "page,api", "what to load: page (GET /?q=), api (GET /api/search?q=), or both")
	fs.StringVar(&c.queries, "queries", "", "file of distinct queries, one per line, most popular first (default: built from DIR/records.jsonl titles)")
	fs.IntVar(&c.distinct, "distinct", 5000, "distinct queries of the zipf and uniform mixes, built from the titles")
	fs.Float64Var(&c.zipfS, "zipf-s", 1.0, "exponent of the zipf mix (query logs: about 1)")
	fs.Float64Var(&c.rate, "rate", 0, "open loop: requests per second at fixed times (0: closed loop)")
	seed := fs.Uint64("seed", 1, "seed of the query choice")
	fs.StringVar(&c.bin, "bin", "", "spider binary to run (default: go build ./cmd/spider into a temporary directory)")
	serveArgs := fs.String("serve-args", "", "extra flags for spider serve, space-separated (e.g. \"--cache-size -1\")")
	serveEnv := fs.String("serve-env", "", "extra environment for spider serve, space-separated NAME=VALUE (e.g. \"GOGC=200 GOMAXPROCS=2\")")
	fs.StringVar(&c.cpuprofile, "cpuprofile", "", "save the server's CPU profile over each measured run here (starts serve with --pprof)")
	fs.BoolVar(&c.jsonOut, "json", false, "also print one JSON object per run")
	fs.StringVar(&c.preload, "preload", "wait", "spider serve's --preload (wait: measure a server whose query analyser is loaded); empty: do not pass it (older binaries)")
	fs.BoolVar(&c.fresh, "fresh", true, "start a new server for every measured run (no cache carried over); false: one server for all runs, each warmed up by the runs before it")
	fs.StringVar(&c.paths, "paths", "", "write --paths-count request paths of the first --mix and --target to this file, one per line, and exit (the request list of bench/serveload/wrk.sh)")
	fs.IntVar(&c.pathsN, "paths-count", 1_000_000, "number of paths --paths writes")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	c.seed = *seed
	c.serveArgs, c.serveEnv = strings.Fields(*serveArgs), strings.Fields(*serveEnv)
	switch {
	case fs.NArg() > 0:
		return nil, fmt.Errorf("unexpected argument %q: serveload takes flags only", fs.Arg(0))
	case c.data == "":
		return nil, errors.New("give --data DIR: a crawl's data directory with its index (spider index --data DIR)")
	case c.duration <= 0:
		return nil, fmt.Errorf("--duration %s: give a positive duration such as 30s", c.duration)
	case c.warmup < 0:
		return nil, fmt.Errorf("--warmup %s: give 0 or a positive duration", c.warmup)
	case c.distinct < 1:
		return nil, fmt.Errorf("--distinct %d: give at least 1", c.distinct)
	case !(c.zipfS > 0):
		return nil, fmt.Errorf("--zipf-s %g: give a positive exponent (1 is typical)", c.zipfS)
	case c.rate < 0 || c.rate > 1e6:
		return nil, fmt.Errorf("--rate %g: give 0 (closed loop) or up to 1,000,000 requests per second", c.rate)
	}
	for _, v := range strings.Split(*clients, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 || n > 10000 {
			return nil, fmt.Errorf("--clients %q: give whole numbers from 1 to 10000, comma-separated", *clients)
		}
		c.clients = append(c.clients, n)
	}
	for _, m := range strings.Split(*mixes, ",") {
		m = strings.TrimSpace(m)
		if m != mixZipf && m != mixUniform && m != mixUnique {
			return nil, fmt.Errorf("--mix %q: use zipf, uniform or unique (or a comma-separated list)", m)
		}
		c.mixes = append(c.mixes, m)
	}
	for _, t := range strings.Split(*targets, ",") {
		t = strings.TrimSpace(t)
		if t != targetPage && t != targetAPI {
			return nil, fmt.Errorf("--target %q: use page, api or page,api", t)
		}
		c.targets = append(c.targets, t)
	}
	for _, e := range c.serveEnv {
		if k, _, ok := strings.Cut(e, "="); !ok || k == "" {
			return nil, fmt.Errorf("--serve-env %q: give NAME=VALUE pairs", e)
		}
	}
	if fi, err := os.Stat(c.data); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("--data %s is not a directory: give a crawl's data directory", c.data)
	}
	return c, nil
}

// report is one measured run, as printed.
type report struct {
	Target         string  `json:"target"`
	Mix            string  `json:"mix"`
	Mode           string  `json:"mode"` // closed or open@RATE
	Clients        int     `json:"clients"`
	Requests       int     `json:"requests"`
	ReqPerSec      float64 `json:"req_per_s"`
	P50MS          float64 `json:"p50_ms"`
	P90MS          float64 `json:"p90_ms"`
	P99MS          float64 `json:"p99_ms"`
	MaxMS          float64 `json:"max_ms"`
	Errors         int     `json:"errors"`
	ErrorDetail    string  `json:"error_detail"`
	HitRate        float64 `json:"cache_hit_rate"`        // -1: the server exports no cache counter
	ServerCPUMS    float64 `json:"server_cpu_ms"`         // the server's CPU time (user + system) over the run
	ServerCPUReqMS float64 `json:"server_cpu_per_req_ms"` // ServerCPUMS per request
	ServerRSSMB    float64 `json:"server_rss_mb"`
	ClientCPUMS    float64 `json:"client_cpu_ms"`
	Load1          float64 `json:"load1"`
	UsedUp         bool    `json:"unique_used_up,omitempty"`
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	var list []string
	var vocab *vocabulary
	if c.queries != "" {
		if list, err = readQueryFile(c.queries); err != nil {
			return err
		}
	} else {
		if vocab, err = readVocabulary(c.data); err != nil {
			return err
		}
		list = distinctQueries(vocab, c.distinct, c.seed)
	}
	if c.paths != "" {
		return writePaths(c, vocab, list)
	}
	if c.bin == "" {
		tmp, err := os.MkdirTemp("", "serveload-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		fmt.Fprintln(stderr, "serveload: building cmd/spider …")
		if c.bin, err = buildSpider(ctx, tmp); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "# serveload %s, %d distinct queries (%d words, %d title pairs), %s runs, warm-up %s, load %s\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), len(list), lenWords(vocab), lenPairs(vocab), c.duration, c.warmup, loadAvg())
	fmt.Fprintln(stdout, "| target | mix | mode | clients | requests | req/s | p50 ms | p90 ms | p99 ms | max ms | errors | cache hits | server CPU s | CPU ms/req | RSS MB | bench CPU s | load1 |")
	fmt.Fprintln(stdout, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	runs := len(c.targets) * len(c.mixes) * len(c.clients)
	var srv *server
	defer func() {
		if srv != nil {
			srv.stop()
		}
	}()
	for _, mix := range c.mixes {
		// One unique source for all runs of the mix: a query is never
		// repeated, not even across runs.
		var uniq *uniqueSource
		if mix == mixUnique {
			uniq = newUniqueSource(vocab, list, c.seed)
		}
		for _, clients := range c.clients {
			for _, target := range c.targets {
				src := sourceFor(mix, list, c.zipfS, uniq)
				prof := ""
				if c.cpuprofile != "" {
					prof = c.cpuprofile
					if runs > 1 {
						prof = fmt.Sprintf("%s.%s-%s-%d", c.cpuprofile, target, mix, clients)
					}
				}
				if srv == nil {
					if srv, err = startFor(ctx, c); err != nil {
						return err
					}
				}
				r, err := measure(ctx, stderr, c, srv, target, mix, clients, src, prof)
				if c.fresh || err != nil {
					if serr := srv.stop(); err == nil && serr != nil {
						err = fmt.Errorf("spider serve: %w\n%s", serr, srv.stderr)
					}
					srv = nil
				}
				if err != nil {
					return err
				}
				printRow(stdout, r)
				if c.jsonOut {
					b, _ := json.Marshal(r)
					fmt.Fprintln(stdout, string(b))
				}
			}
		}
	}
	return nil
}

// sourceFor is the query source of a mix over the distinct queries list:
// a new zipf (exponent s) or uniform draw, or uniq for the unique mix
// (shared by all runs of the mix, so no query repeats across them).
func sourceFor(mix string, list []string, s float64, uniq *uniqueSource) source {
	switch mix {
	case mixZipf:
		return newZipfSource(list, s)
	case mixUniform:
		return uniformSource{list}
	default:
		return uniq
	}
}

// writePaths writes c.pathsN request paths drawn like a measured run's
// (the first mix and target, one random stream) to c.paths, so that
// another load generator (wrk, see wrk.sh) can send the same requests.
func writePaths(c *config, vocab *vocabulary, list []string) error {
	var uniq *uniqueSource
	if c.mixes[0] == mixUnique {
		uniq = newUniqueSource(vocab, list, c.seed)
	}
	src := sourceFor(c.mixes[0], list, c.zipfS, uniq)
	f, err := os.Create(c.paths)
	if err != nil {
		return fmt.Errorf("cannot write the paths: %w", err)
	}
	w := bufio.NewWriter(f)
	l := &load{target: c.targets[0]}
	rng := rand.New(rand.NewPCG(c.seed, 0))
	n := 0
	for ; n < c.pathsN; n++ {
		q, ok := src.next(rng)
		if !ok {
			break // the unique queries ran out
		}
		fmt.Fprintln(w, l.url(q))
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("cannot write the paths: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("cannot write the paths: %w", err)
	}
	if n < c.pathsN {
		return fmt.Errorf("only %d distinct unique-mix queries exist; wrote %d paths to %s", n, n, c.paths)
	}
	return nil
}

func lenWords(v *vocabulary) int {
	if v == nil {
		return 0
	}
	return len(v.words)
}

func lenPairs(v *vocabulary) int {
	if v == nil {
		return 0
	}
	return len(v.pairs)
}

// startFor starts spider serve as c asks.
func startFor(ctx context.Context, c *config) (*server, error) {
	args := slices.Clone(c.serveArgs)
	if c.preload != "" && !hasFlag(args, "--preload") {
		args = append(args, "--preload", c.preload)
	}
	if c.cpuprofile != "" && !hasFlag(args, "--pprof") {
		args = append(args, "--pprof", "127.0.0.1:0")
	}
	return startServer(ctx, c.bin, c.data, args, c.serveEnv)
}

// measure warms srv up, runs the load and reads the server's metrics
// around the run.
func measure(ctx context.Context, stderr io.Writer, c *config, srv *server, target, mix string, clients int, src source, prof string) (*report, error) {
	if prof != "" && srv.pprof == "" {
		return nil, errors.New("--cpuprofile: spider serve printed no pprof address (does this binary have --pprof?)")
	}
	client := newClient(clients)
	defer client.CloseIdleConnections()
	l := &load{base: srv.base, target: target, clients: clients, duration: c.warmup, rate: c.rate, src: src, seed: c.seed ^ 0x3a3a, client: client}
	if c.warmup > 0 {
		l.run(ctx)
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	before, err := scrape(ctx, client, srv.base)
	if err != nil {
		return nil, err
	}
	profDone := make(chan error, 1)
	if prof != "" {
		go func() { profDone <- saveProfile(ctx, srv.pprof, c.duration, prof) }()
	} else {
		profDone <- nil
	}
	l.duration, l.seed = c.duration, c.seed
	cpu0 := selfCPU()
	o := l.run(ctx)
	clientCPU := selfCPU() - cpu0
	after, err := scrape(ctx, client, srv.base)
	if err != nil {
		return nil, err
	}
	if err := <-profDone; err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	for _, s := range o.Samples {
		fmt.Fprintf(stderr, "serveload: %s %s: failed request: %s\n", target, mix, s)
	}
	r := &report{Target: target, Mix: mix, Mode: "closed", Clients: clients, Requests: o.Requests,
		ReqPerSec: float64(o.Requests) / o.Elapsed.Seconds(),
		P50MS:     ms(percentile(o.Latencies, .50)), P90MS: ms(percentile(o.Latencies, .90)),
		P99MS: ms(percentile(o.Latencies, .99)), MaxMS: ms(percentile(o.Latencies, 1)),
		Errors: o.errors(), ErrorDetail: o.statusText(), HitRate: -1,
		ServerCPUMS: 1000 * (metricSum(after, "process_cpu_seconds_total", nil) - metricSum(before, "process_cpu_seconds_total", nil)),
		ServerRSSMB: metricSum(after, "process_resident_memory_bytes", nil) / (1 << 20),
		ClientCPUMS: float64(clientCPU.Microseconds()) / 1000, Load1: load1(), UsedUp: o.UsedUp}
	if c.rate > 0 {
		r.Mode = fmt.Sprintf("open@%g/s", c.rate)
	}
	if o.Requests > 0 {
		r.ServerCPUReqMS = r.ServerCPUMS / float64(o.Requests)
	}
	r.HitRate = hitRate(before, after, target)
	return r, nil
}

// hitRate is the share of the run's searches the server answered from a
// cache: its response cache for target when it has one, else its result
// cache; -1 when it exports neither counter.
func hitRate(before, after []sample, target string) float64 {
	delta := func(want map[string]string) float64 {
		return metricSum(after, cacheMetric, want) - metricSum(before, cacheMetric, want)
	}
	for _, cache := range []string{target, "result"} {
		hit := delta(map[string]string{"cache": cache, "result": "hit"})
		all := hit + delta(map[string]string{"cache": cache, "result": "miss"})
		if all > 0 {
			return hit / all
		}
	}
	return -1
}

// cacheMetric is the server's cache counter (internal/server).
const cacheMetric = "spider_search_cache_requests_total"

func saveProfile(ctx context.Context, base string, d time.Duration, path string) error {
	secs := max(1, int(d.Round(time.Second).Seconds()))
	req, err := http.NewRequestWithContext(ctx, "GET", fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", base, secs), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("cannot take the server's CPU profile: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("cannot take the server's CPU profile: status %d: %s", resp.StatusCode, b)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("cannot write the CPU profile: %w", err)
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return fmt.Errorf("cannot write the CPU profile: %w", err)
	}
	return f.Close()
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func printRow(w io.Writer, r *report) {
	hits := "n/a"
	if r.HitRate >= 0 {
		hits = fmt.Sprintf("%.1f%%", 100*r.HitRate)
	}
	errs := strconv.Itoa(r.Errors)
	if r.Errors > 0 {
		errs += " (" + r.ErrorDetail + ")"
	}
	if r.UsedUp {
		errs += " [unique queries used up]"
	}
	fmt.Fprintf(w, "| %s | %s | %s | %d | %d | %.0f | %.2f | %.2f | %.2f | %.1f | %s | %s | %.1f | %.3f | %.0f | %.1f | %.1f |\n",
		r.Target, r.Mix, r.Mode, r.Clients, r.Requests, r.ReqPerSec, r.P50MS, r.P90MS, r.P99MS, r.MaxMS,
		errs, hits, r.ServerCPUMS/1000, r.ServerCPUReqMS, r.ServerRSSMB, r.ClientCPUMS/1000, r.Load1)
}

// selfCPU is the CPU time (user + system) this process used so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loadAvg is /proc/loadavg's three load averages ("" where there is none).
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func load1() float64 {
	v, _ := strconv.ParseFloat(strings.Fields(loadAvg() + " x")[0], 64)
	return v
}
