// Command distbench measures spider's distributed crawls (issue 4) against
// an in-process websim, with its own redis-server, and prints Markdown:
//
//	weights  the SPEC §3 experiment: peer-to-peer nodes A=150, B=80, C=200,
//	         D=40 crawl a web of many hosts; the table of URLs each node sent
//	         to each other node; each node's share of fetched pages and of
//	         buckets against its weight share; then C removed (A, B, D) and E
//	         added with weight 300 (A, B, C, D, E): shares again and the
//	         fraction of buckets (and of URLs) that changed hands against the
//	         ideal fraction; per-node HTTP outcome table and pages per host.
//	scaling  the SPEC §1 table made latency-bound: pages/s of master–worker
//	         crawls with 1, 2, 3, 4 … worker processes and of peer-to-peer
//	         crawls with 1, 2, 3, 4 nodes, scaling efficiency and Redis
//	         commands per fetched page.
//	memory   Redis memory per seen URL and per pending URL (peer-to-peer:
//	         a complete crawl and one stopped by --max-pages) and the
//	         master–worker crawl's peak, from INFO memory.
//	all      the three, in that order (the default).
//
// Every run is checked against websim's ground truth and access log:
// coverage, URLs outside the truth, repeated requests (Duplicates minus
// retries), URLs recorded by two nodes, hangs (a run that does not end by
// itself within --run-timeout is stopped and reported).
//
//	go run ./bench/distbench                 # everything, about 8 minutes on 2 cores
//	go run ./bench/distbench weights --hosts 10000 --pages 1
//	go run ./bench/distbench scaling --workers 1,2,3,4,8 --peers 1,2,3,4
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spider-crawler/spider/internal/partition"
	"github.com/spider-crawler/spider/internal/websim"

	"github.com/spider-crawler/spider/bench/internal/benchdir"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "distbench:", err)
		}
		os.Exit(1)
	}
}

// options are the command line's settings.
type options struct {
	Experiments []string
	Root, Work  string
	Keep        bool
	RunTimeout  time.Duration
	Buckets     int
	LogLevel    string
	Stagger     time.Duration
	Stall       time.Duration

	// weights
	Hosts, Pages, Seeds int
	Features            string
	Trouble             float64
	HangTime            time.Duration
	FetchTimeout        time.Duration
	WDelay              time.Duration
	WConcurrency        int
	Scenarios           []string // member lists, the first is "before"
	NodeFlags           []string // more flags for every node

	// scaling
	SHosts, SPages, SSeeds int
	Latency                time.Duration
	SDelay                 time.Duration
	SConcurrency           int
	WorkerCounts           []int
	PeerCounts             []int

	// memory
	MemMaxPages int
}

var experiments = []string{"weights", "scaling", "memory"}

func parseOptions(args []string, stderr io.Writer) (options, error) {
	var o options
	var exps []string
	for len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		exps = append(exps, args[0])
		args = args[1:]
	}
	if len(exps) == 0 || (len(exps) == 1 && exps[0] == "all") {
		exps = experiments
	}
	for _, e := range exps {
		known := false
		for _, k := range experiments {
			known = known || e == k
		}
		if !known {
			return o, fmt.Errorf("cannot run experiment %q: want some of %s, or all", e, strings.Join(experiments, ", "))
		}
	}
	o.Experiments = exps
	fs := flag.NewFlagSet("distbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.Root, "root", "", "repository root (default: found from the working directory)")
	fs.StringVar(&o.Work, "work", "", "work directory for the binary, Redis and the nodes' data (default: a temporary one, removed)")
	fs.BoolVar(&o.Keep, "keep", false, "keep the work directory")
	fs.DurationVar(&o.RunTimeout, "run-timeout", 150*time.Second, "longest run; a crawl still going then is stopped and reported as a hang")
	fs.StringVar(&o.LogLevel, "log-level", "warn", "--log-level of every spider process (logs in the work directory, RUN/NODE.log)")
	fs.DurationVar(&o.Stall, "stall", 15*time.Second, "a run whose processes go on although websim got no request for this long is stopped and reported as a hang (0: only --run-timeout)")
	fs.DurationVar(&o.Stagger, "stagger", 0, "pause between the starts of a run's processes (0: all at once)")
	fs.IntVar(&o.Buckets, "buckets", partition.DefaultBuckets, "spider --buckets (logical buckets of hosts)")

	fs.IntVar(&o.Hosts, "hosts", 10000, "weights: websim hosts")
	fs.IntVar(&o.Pages, "pages", 1, "weights: websim pages per host (index, sections, articles)")
	fs.IntVar(&o.Seeds, "seeds", 0, "weights: seed URLs, the index pages of the first hosts (0: every host)")
	fs.StringVar(&o.Features, "features", "redirects,long-redirects,not-found,hang", "weights: websim behaviours on the troubled hosts (for the outcome table)")
	fs.Float64Var(&o.Trouble, "trouble", 0.02, "weights: share of troubled hosts")
	fs.DurationVar(&o.HangTime, "hang-time", 3*time.Second, "weights: how long websim's hang pages stay silent")
	fs.DurationVar(&o.FetchTimeout, "fetch-timeout", time.Second, "weights: spider --timeout and --first-byte-timeout (below --hang-time)")
	fs.DurationVar(&o.WDelay, "delay", 0, "weights: spider --delay")
	fs.IntVar(&o.WConcurrency, "concurrency", 16, "weights: spider --concurrency of each node")
	nodeFlags := fs.String("node-flags", "", "weights: more spider crawl flags for every node, space-separated (e.g. \"--max-depth 0\")")
	scen := fs.String("scenarios", "A=150,B=80,C=200,D=40;A=150,B=80,D=40;A=150,B=80,C=200,D=40,E=300",
		"weights: member lists separated by ';' — the first, then each change from it")

	fs.IntVar(&o.SHosts, "scale-hosts", 1000, "scaling: websim hosts")
	fs.IntVar(&o.SPages, "scale-pages", 1, "scaling: websim pages per host")
	fs.IntVar(&o.SSeeds, "scale-seeds", 0, "scaling: seed URLs (0: every host)")
	fs.DurationVar(&o.Latency, "latency", 100*time.Millisecond, "scaling: websim first-byte latency of every answer")
	fs.DurationVar(&o.SDelay, "scale-delay", 0, "scaling: spider --delay")
	fs.IntVar(&o.SConcurrency, "scale-concurrency", 8, "scaling: --concurrency of every worker and node")
	workers := fs.String("workers", "1,2,3,4,8", "scaling: master–worker runs, by number of worker processes")
	peers := fs.String("peers", "1,2,3,4", "scaling: peer-to-peer runs, by number of nodes")

	fs.IntVar(&o.MemMaxPages, "mem-max-pages", 2000, "memory: --max-pages of the stopped crawl (pending URLs left in Redis)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("cannot use arguments %q: put the experiment names first, then flags", fs.Args())
	}
	o.NodeFlags = strings.Fields(*nodeFlags)
	o.Scenarios = nil
	for s := range strings.SplitSeq(*scen, ";") {
		if s = strings.TrimSpace(s); s != "" {
			if _, err := parseMembers(s); err != nil {
				return o, err
			}
			o.Scenarios = append(o.Scenarios, s)
		}
	}
	var err error
	if o.WorkerCounts, err = parseCounts(*workers); err != nil {
		return o, fmt.Errorf("cannot read --workers: %w", err)
	}
	if o.PeerCounts, err = parseCounts(*peers); err != nil {
		return o, fmt.Errorf("cannot read --peers: %w", err)
	}
	switch {
	case len(o.Scenarios) == 0:
		return o, errors.New("cannot run without --scenarios")
	case o.Hosts < 1 || o.Pages < 1 || o.SHosts < 1 || o.SPages < 1 || o.Seeds < 0 || o.SSeeds < 0:
		return o, errors.New("cannot use --hosts, --pages, --scale-hosts or --scale-pages below 1, or negative seeds")
	case o.WConcurrency < 1 || o.SConcurrency < 1 || o.Buckets < 1:
		return o, errors.New("cannot use a concurrency or --buckets below 1")
	}
	if o.Root == "" {
		if o.Root, err = benchdir.Root(); err != nil {
			return o, err
		}
	}
	return o, nil
}

// parseCounts reads "1,2,3" (each ≥ 1).
func parseCounts(s string) ([]int, error) {
	var out []int
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		n, err := strconv.Atoi(part)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a count ≥ 1", part)
		}
		out = append(out, n)
	}
	return out, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseOptions(args, stderr)
	if err != nil {
		return err
	}
	work, cleanup, err := benchdir.Work(o.Work, "distbench", o.Keep)
	if err != nil {
		return err
	}
	defer cleanup()
	fmt.Fprintf(stderr, "distbench: building spider into %s\n", work)
	bin, err := buildSpider(ctx, o.Root, work)
	if err != nil {
		return err
	}
	rs, err := startRedis(ctx, filepath.Join(work, "redis"))
	if err != nil {
		return err
	}
	defer rs.close()
	b := &bench{bin: bin, rs: rs, work: work, log: stderr, timeout: o.RunTimeout, buckets: o.Buckets, level: o.LogLevel, stagger: o.Stagger, stall: o.Stall}
	fmt.Fprintf(stdout, "# distbench %s\n\n", strings.Join(o.Experiments, ", "))
	fmt.Fprintf(stdout, "%s; %s; redis-server %s\n\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"), loadavg(), redisVersion())
	var errs []error
	for _, e := range o.Experiments {
		start := time.Now()
		fmt.Fprintf(stderr, "distbench: %s\n", e)
		var err error
		switch e {
		case "weights":
			err = weightsExperiment(ctx, b, o, stdout)
		case "scaling":
			err = scalingExperiment(ctx, b, o, stdout)
		case "memory":
			err = memoryExperiment(ctx, b, o, stdout)
		}
		fmt.Fprintf(stdout, "\n_%s: %s, %s at the end._\n\n", e, time.Since(start).Round(time.Second), loadavg())
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", e, err))
			if ctx.Err() != nil {
				break
			}
		}
	}
	return errors.Join(errs...)
}

// loadavg is the 1-minute load average as uptime prints it.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "load unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "load unknown"
	}
	return "load " + f[0] + " " + f[1] + " " + f[2]
}

// redisVersion is redis-server's version line, shortened.
func redisVersion() string {
	out, err := exec.Command("redis-server", "--version").Output()
	if err != nil {
		return "(unknown)"
	}
	for f := range strings.FieldsSeq(string(out)) {
		if v, ok := strings.CutPrefix(f, "v="); ok {
			return v
		}
	}
	return strings.TrimSpace(string(out))
}

// webFeatures parses --features.
func webFeatures(s string) (websim.Feature, error) {
	f, err := websim.ParseFeatures(s)
	if err != nil {
		return 0, fmt.Errorf("cannot read --features: %w", err)
	}
	return f, nil
}
