// Command peerbench runs the single-node crawler benchmarks of issues 3 and
// 11 side by side: it starts websim in-process (so it has the access log),
// computes the ground truth for the crawl's rules, builds or finds `spider
// crawl`, the Colly peer (bench/peers/colly), the bare loop (bench/bare),
// Crawlee (bench/peers/crawlee, Node), Scrapy (bench/peers/scrapy, Debian's
// python3-scrapy), wget and wget2, runs them one after the other against the
// same web, and prints for each: pages fetched, coverage of the ground truth,
// robots.txt violations, duplicate fetches, politeness violations, pages/s,
// CPU seconds per 1,000 pages and peak RSS, then spider's pages/s against
// each peer's. A crawler that is not installed is skipped with a note.
//
// Distributed spider runs on the same web when named in --crawlers (not by
// default): spider-p2p, --dist-nodes peer-to-peer nodes, and spider-mw, a
// master and --dist-nodes workers (dist.go). Each run has a fresh
// redis-server of its own; the fetching processes share --concurrency; wall
// time spans the first start to the last exit, CPU and peak RSS add up every
// process and redis-server. The access log holds every node's requests, so
// per-host politeness is judged across nodes.
//
// With --latency (the latency-bound regime) it also prints the bounds the
// politeness rules set on pages/s and each crawler's fraction of them: the
// discovery-blind ones of bound.go (every host known from the start), and
// the discovery-aware one of simulate.go: an ideal polite crawler
// simulated on the truth's link graph (graph.go builds it from an
// in-process copy of the web), which learns a URL only when a fetched page
// naming it has answered. The latency-bound goal is judged against that
// one. With
// --frontier DURATION it runs the large-frontier experiment instead: each
// crawler runs that long on a large web while RSS, pages/s and discovered
// URLs are sampled (see frontier.go).
//
// Run it from the repository (it finds the root by its go.mod):
//
//	go run ./bench/peerbench                          # CPU-bound: 1,000 hosts × 100 pages
//	go run ./bench/peerbench --hosts 200 --pages 50 --depth 4 --seeds 5   # quick
//	go run ./bench/peerbench --latency 50ms --delay 100ms                  # latency-bound
//	go run ./bench/peerbench --hosts 200 --pages 50 --depth 4 --seeds 5 --crawlers spider,spider-p2p,spider-mw
//	go run ./bench/peerbench --frontier 4m --hosts 200000 --depth -1 --crawlers spider,colly
//
// Every crawler gets the same seeds, depth, concurrency, suffixes, delay and
// robots.txt agent, and every one that can be configured so is asked for one
// connection per host; peerNotes (peers.go) says, in the report, what each
// peer cannot be configured to do.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"time"

	"github.com/spider-crawler/spider/bench/internal/benchdir"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == measureArg {
		os.Exit(measureMain(os.Args[2:]))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "peerbench:", err)
		}
		os.Exit(1)
	}
}

// config is everything one benchmark run needs; parseFlags fills it.
type config struct {
	Root        string // repository root (holds go.mod of module spider)
	Work        string // directory for binaries, resolve file and spider's data; "" = a temporary one
	Keep        bool   // keep Work after the run
	Seed        int64
	Hosts       int
	Pages       int
	Seeds       int
	Depth       int
	Concurrency int
	PerHost     int
	Delay       time.Duration
	Latency     time.Duration
	Robots      bool          // websim's robots.txt menu (FeatureRobots) instead of allow-all
	CrawlDelay  time.Duration // Crawl-delay written by the menu's crawl-delay kinds
	Crawlers    []string
	Repeat      int
	Timeout     time.Duration // per crawler run
	SpiderArgs  []string      // extra arguments of spider crawl
	Frontier    time.Duration // > 0: large-frontier mode, each crawler runs this long (no ground truth)
	Sample      time.Duration // frontier mode: sampling period
	MaxRSS      int64         // frontier mode: a crawler above this RSS (bytes) is stopped
	Noise       bool          // websim's noise feature (session ids, tracking parameters, calendars)
	ExtraLinks  int           // websim's ExtraLinks: uniformly chosen links added to every article
	Until       int64         // frontier mode: a run ends once the crawler has discovered this many URLs (0: time only)
	Timeline    string        // latency-bound mode: host whose requests printTimeline shows ("last": the last request's)
	DistNodes   int           // spider-p2p nodes, spider-mw workers
}

// knownCrawlers are the default of --crawlers, in run order.
var knownCrawlers = []string{"spider", "colly", "bare", "crawlee", "scrapy", "wget", "wget2"}

// distCrawlers are distributed spider (dist.go), accepted by --crawlers but
// not run by default: bench/run.sh runs the default list and is the
// single-node comparison; these need redis-server and add two crawls per
// repeat.
var distCrawlers = []string{"spider-p2p", "spider-mw"}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("peerbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.Root, "root", "", "repository root (default: found from the working directory)")
	fs.StringVar(&c.Work, "work", "", "work directory for binaries and crawl data (default: a temporary one, removed)")
	fs.BoolVar(&c.Keep, "keep", false, "keep the work directory")
	fs.Int64Var(&c.Seed, "seed", 1, "websim seed")
	fs.IntVar(&c.Hosts, "hosts", 1000, "websim hosts")
	fs.IntVar(&c.Pages, "pages", 100, "websim pages per host")
	fs.IntVar(&c.Seeds, "seeds", 10, "seed URLs (the index pages of the first hosts)")
	fs.IntVar(&c.Depth, "depth", 6, "largest link depth fetched (seeds are 0)")
	fs.IntVar(&c.Concurrency, "concurrency", 32, "spider --concurrency, Colly parallelism, bare goroutines")
	fs.IntVar(&c.PerHost, "per-host", 1, "spider --per-host; the politeness check counts hosts above it")
	fs.DurationVar(&c.Delay, "delay", 0, "spider --delay and Colly LimitRule delay; gaps below it are counted when > 0")
	fs.DurationVar(&c.Latency, "latency", 0, "websim first-byte latency of every answer (latency-bound mode)")
	fs.BoolVar(&c.Robots, "robots", false, "serve websim's robots.txt menu (disallow rules, agent groups, 5xx…) instead of allow-all")
	fs.DurationVar(&c.CrawlDelay, "crawl-delay", time.Millisecond, "Crawl-delay of the robots.txt menu's crawl-delay kinds (with --robots)")
	crawlers := fs.String("crawlers", strings.Join(knownCrawlers, ","), "crawlers to run, in order; also distributed spider: spider-p2p, spider-mw (need redis-server)")
	fs.IntVar(&c.Repeat, "repeat", 1, "runs of each crawler (interleaved); ratios use the median pages/s")
	fs.DurationVar(&c.Timeout, "timeout", 15*time.Minute, "longest run of one crawler")
	spiderArgs := fs.String("spider-args", "", "extra space-separated arguments of spider crawl, e.g. \"--loose-depth\"")
	fs.DurationVar(&c.Frontier, "frontier", 0, "large-frontier mode: run each crawler this long on the web (no ground truth, unlimited depth with --depth -1) sampling RSS, pages/s and discovered URLs")
	fs.DurationVar(&c.Sample, "sample", 5*time.Second, "frontier mode: sampling period")
	maxRSS := fs.Int("max-rss-mib", 4096, "frontier mode: stop a crawler whose RSS exceeds this many MiB (protects the shared machine)")
	fs.BoolVar(&c.Noise, "noise", false, "enable websim's noise behaviour (session ids, tracking parameters, calendars: many more distinct URLs)")
	fs.IntVar(&c.ExtraLinks, "extra-links", 0, "websim: links to uniformly chosen pages of uniformly chosen hosts added to every article (large-frontier runs; 0-1000)")
	fs.StringVar(&c.Timeline, "timeline", "", "latency-bound mode: print to stderr every request to this host (\"last\": the host of the crawl's last request) beside the ideal crawler's schedule")
	fs.IntVar(&c.DistNodes, "dist-nodes", 2, "spider-p2p: peer-to-peer nodes; spider-mw: worker processes (besides the master); --concurrency is split among them")
	fs.Int64Var(&c.Until, "until-discovered", 0, "frontier mode: end a crawler's run once it has discovered this many URLs (0: run for --frontier)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	c.SpiderArgs = strings.Fields(*spiderArgs)
	c.MaxRSS = int64(*maxRSS) << 20
	if fs.NArg() > 0 {
		return c, fmt.Errorf("cannot use arguments %q: peerbench takes flags only", fs.Args())
	}
	for name := range strings.SplitSeq(*crawlers, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		if !slices.Contains(knownCrawlers, name) && !slices.Contains(distCrawlers, name) {
			return c, fmt.Errorf("cannot run crawler %q: want some of %s", name, strings.Join(append(slices.Clone(knownCrawlers), distCrawlers...), ","))
		}
		if c.Frontier > 0 && slices.Contains(distCrawlers, name) {
			return c, fmt.Errorf("cannot run %s in the large-frontier mode (--frontier): it samples one process; it supports %s", name, strings.Join(knownCrawlers, ","))
		}
		c.Crawlers = append(c.Crawlers, name)
	}
	switch {
	case len(c.Crawlers) == 0:
		return c, errors.New("cannot run without crawlers: give --crawlers spider,colly,bare")
	case c.Hosts < 1 || c.Pages < 1 || c.Seeds < 1:
		return c, errors.New("cannot use --hosts, --pages or --seeds below 1")
	case c.Concurrency < 1 || c.PerHost < 1 || c.Repeat < 1:
		return c, errors.New("cannot use --concurrency, --per-host or --repeat below 1")
	case c.Depth < 0 && c.Frontier == 0:
		return c, errors.New("cannot use a negative --depth: the ground truth needs a bound (only --frontier runs without one)")
	case c.DistNodes < 1:
		return c, errors.New("cannot use --dist-nodes below 1")
	case c.DistNodes > c.Concurrency && slices.ContainsFunc(c.Crawlers, isDist):
		return c, fmt.Errorf("cannot split --concurrency %d over --dist-nodes %d fetching processes: give at least one each", c.Concurrency, c.DistNodes)
	case c.ExtraLinks < 0 || c.Until < 0:
		return c, errors.New("cannot use a negative --extra-links or --until-discovered")
	case c.Frontier < 0 || (c.Frontier > 0 && (c.Sample <= 0 || c.MaxRSS <= 0)):
		return c, errors.New("cannot use a negative --frontier, or --frontier with --sample or --max-rss-mib not above 0")
	}
	if c.Root == "" {
		root, err := benchdir.Root()
		if err != nil {
			return c, err
		}
		c.Root = root
	}
	return c, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	work, cleanup, err := benchdir.Work(cfg.Work, "peerbench", cfg.Keep)
	if err != nil {
		return err
	}
	defer cleanup()
	fmt.Fprintf(stderr, "preparing %s in %s\n", strings.Join(cfg.Crawlers, ", "), work)
	bins, skipped, err := prepare(ctx, cfg.Root, work, cfg.Crawlers)
	if err != nil {
		return err
	}
	for _, s := range skipped {
		fmt.Fprintln(stderr, s)
	}
	var run []string
	for _, name := range cfg.Crawlers {
		if _, ok := bins[name]; ok {
			run = append(run, name)
		}
	}
	cfg.Crawlers = run
	if len(run) == 0 {
		return fmt.Errorf("cannot run any crawler: %s", strings.Join(skipped, "; "))
	}
	if cfg.Frontier > 0 {
		return runFrontier(ctx, cfg, work, bins, skipped, stdout, stderr)
	}
	b, err := newBench(ctx, cfg, work, bins, stderr)
	if err != nil {
		return err
	}
	b.skipped = skipped
	defer b.close()
	results, err := b.runAll(ctx)
	printReport(stdout, cfg, b, results)
	return err
}
