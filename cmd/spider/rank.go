package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"time"

	"github.com/spf13/pflag"

	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/graph"
	"github.com/spider-crawler/spider/internal/rank"
	"github.com/spider-crawler/spider/internal/store"
)

const rankSynopsis = `rank --data DIR [--damping 0.85] [--tolerance 1e-10] [--max-iter 100] [--workers N]
              [--personalize-prefix URL | --personalize-file FILE] [--top 10] [--rebuild]
              [--site-wide-share 0.5] [--site-wide-min-pages 10]
       spider rank --data DIR --redis URL [--crawl NAME] [--parts P] [--lease 10s]   (map/reduce master)
       spider rank --redis URL [--crawl NAME] --worker                               (map/reduce worker)`

// rankOptions are the parsed flags of spider rank.
type rankOptions struct {
	data       string
	opt        rank.Options
	prefix     string
	urlFile    string
	siteWide   graph.SiteWide
	top        int
	rebuild    bool
	worker     bool
	parts      int
	lease      time.Duration
	rf         redisFlags
	logger     *slog.Logger
	masterOnly []string // flags set that a worker does not take
}

func runRank(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseRankFlags(args, stderr)
	if err != nil {
		return err
	}
	if o.worker {
		return runRankWorker(ctx, o, stderr)
	}
	return runRankCompute(ctx, o, stdout, stderr)
}

func parseRankFlags(args []string, stderr io.Writer) (*rankOptions, error) {
	o := &rankOptions{}
	fs := newFlagSet("rank", rankSynopsis, stderr)
	fs.StringVar(&o.data, "data", "spider-data", "data directory of a crawl (reads records.jsonl, writes graph/ and rank/)")
	fs.Float64Var(&o.opt.Damping, "damping", rank.DefaultDamping, "damping factor: probability of following a link, in (0, 1)")
	fs.Float64Var(&o.opt.Tolerance, "tolerance", rank.DefaultTolerance, "stop when the L1 change of the ranks falls below this")
	fs.IntVar(&o.opt.MaxIter, "max-iter", rank.DefaultMaxIter, "iteration cap")
	fs.IntVar(&o.opt.Workers, "workers", runtime.GOMAXPROCS(0), "threads of the in-memory computation")
	fs.StringVar(&o.prefix, "personalize-prefix", "", "topic-sensitive PageRank: teleport only to pages whose URL starts with this")
	fs.StringVar(&o.urlFile, "personalize-file", "", "topic-sensitive PageRank: teleport only to the pages listed in this file (one URL a line)")
	fs.Float64Var(&o.siteWide.Share, "site-wide-share", graph.DefaultSiteWide.Share, "page PageRank without site-wide (template) links: leave out a link of a host's page to a target that at least this share of the host's linking pages link to, e.g. 0.5 (0: keep every link)")
	fs.IntVar(&o.siteWide.MinPages, "site-wide-min-pages", graph.DefaultSiteWide.MinPages, "--site-wide-share applies only to hosts with at least this many pages that have links")
	fs.IntVar(&o.top, "top", 10, "print the N best pages and hosts (0: none)")
	fs.BoolVar(&o.rebuild, "rebuild", false, "rebuild DATA/graph from records.jsonl even if it looks current")
	fs.BoolVar(&o.worker, "worker", false, "run as a map/reduce worker for the master of --crawl on --redis (exits when the master is done)")
	fs.IntVar(&o.parts, "parts", 0, "map/reduce master: tasks per round (0: automatic, one per 8192 pages up to 64)")
	fs.DurationVar(&o.lease, "lease", rank.DefaultLease, "map/reduce master: a task not answered within this is given to another worker")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn, error")
	o.rf.register(fs)
	if err := parseArgs(fs, args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("%w: rank takes no arguments, got %q", errUsage, fs.Args())
	}
	var err error
	if o.logger, err = newLogger(stderr, *logLevel); err != nil {
		return nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	fs.Visit(func(f *pflag.Flag) {
		switch f.Name {
		case "redis", "crawl", "redis-ca", "redis-cluster", "worker", "log-level":
		default:
			o.masterOnly = append(o.masterOnly, "--"+f.Name)
		}
	})
	switch {
	case o.worker && o.rf.url == "":
		return nil, fmt.Errorf("%w: --worker needs --redis URL (or SPIDER_REDIS) of the master's Redis", errUsage)
	case o.worker && len(o.masterOnly) > 0:
		return nil, fmt.Errorf("%w: a worker takes only --redis, --crawl and --log-level; %v belong to the master (spider rank --data DIR --redis URL)", errUsage, o.masterOnly)
	case !(o.opt.Damping > 0 && o.opt.Damping < 1):
		return nil, fmt.Errorf("%w: --damping %v must be between 0 and 1 (exclusive), e.g. 0.85", errUsage, o.opt.Damping)
	case !(o.opt.Tolerance > 0):
		return nil, fmt.Errorf("%w: --tolerance %v must be positive, e.g. 1e-10", errUsage, o.opt.Tolerance)
	case o.opt.MaxIter < 1:
		return nil, fmt.Errorf("%w: --max-iter %d must be at least 1", errUsage, o.opt.MaxIter)
	case o.opt.Workers < 1:
		return nil, fmt.Errorf("%w: --workers %d must be at least 1", errUsage, o.opt.Workers)
	case o.top < 0:
		return nil, fmt.Errorf("%w: --top %d must not be negative", errUsage, o.top)
	case o.parts < 0:
		return nil, fmt.Errorf("%w: --parts %d must not be negative (0: automatic)", errUsage, o.parts)
	case o.lease < 10*time.Millisecond:
		return nil, fmt.Errorf("%w: --lease %v is too short: use at least 10ms (default %v)", errUsage, o.lease, rank.DefaultLease)
	case o.siteWide.Validate() != nil:
		return nil, fmt.Errorf("%w: --site-wide-share/--site-wide-min-pages: %v", errUsage, o.siteWide.Validate())
	case o.prefix != "" && o.urlFile != "":
		return nil, fmt.Errorf("%w: use either --personalize-prefix or --personalize-file, not both", errUsage)
	}
	return o, nil
}

// computer runs one PageRank, in memory or as the map/reduce master.
type computer func(ctx context.Context, g *graph.Graph, opt rank.Options) (rank.Result, error)

func runRankCompute(ctx context.Context, o *rankOptions, stdout, stderr io.Writer) error {
	if err := crawl.CheckCrawlDir(o.data); err != nil {
		return fmt.Errorf("cannot rank: %w", err)
	}
	set, built, err := graph.Load(ctx, o.data, o.rebuild, o.logger)
	if err != nil {
		return err
	}
	source := "read from " + store.DataDir(o.data).Graph()
	if built {
		source = "built from records.jsonl"
	}
	fmt.Fprintf(stdout, "graph: %d pages, %d links; %d hosts, %d host links (%s)\n",
		set.Pages.N(), set.Pages.M(), set.Hosts.N(), set.Hosts.M(), source)
	if set.Pages.N() == 0 {
		return fmt.Errorf("cannot rank %s: the crawl has no page fetched with a 2xx status and a stored body yet", o.data)
	}
	pageGraph := set.Pages
	if o.siteWide.Enabled() {
		var dropped int
		pageGraph, dropped = graph.WithoutSiteWide(set.Pages, o.siteWide)
		fmt.Fprintf(stdout, "site-wide links: %d of %d left out of the page ranks (--site-wide-share %g, hosts of ≥ %d linking pages)\n",
			dropped, set.Pages.M(), o.siteWide.Share, o.siteWide.MinPages)
	}
	pageOpt := o.opt
	if pageOpt.Teleport, err = teleport(o, set.Pages, stderr); err != nil {
		return err
	}
	hostOpt := o.opt
	hostOpt.Teleport = rank.HostTeleport(set.Pages, set.Hosts, pageOpt.Teleport)

	compute := computer(func(ctx context.Context, g *graph.Graph, opt rank.Options) (rank.Result, error) {
		return rank.Compute(ctx, g, opt)
	})
	mode := fmt.Sprintf("in memory, %d threads", o.opt.Workers)
	if o.rf.url != "" {
		rdb, err := o.rf.open(ctx)
		if err != nil {
			return err
		}
		defer rdb.Close()
		m, err := rank.NewMaster(ctx, rdb, rank.MasterConfig{Crawl: o.rf.crawl, Parts: o.parts, Lease: o.lease, Logger: o.logger})
		if err != nil {
			return err
		}
		defer m.Close(context.WithoutCancel(ctx))
		fmt.Fprintf(stderr, "rank master: waiting for workers (start them with: spider rank --worker --redis %s --crawl %s)\n",
			redact(o.rf.url), o.rf.crawl)
		compute = m.Compute
		mode = "map/reduce over Redis, crawl " + o.rf.crawl
	}

	pages, err := runOne(ctx, "pages", compute, pageGraph, pageOpt, mode, stdout, stderr)
	if err != nil {
		return err
	}
	hosts, err := runOne(ctx, "hosts", compute, set.Hosts, hostOpt, mode, stdout, stderr)
	if err != nil {
		return err
	}
	pagesPath, hostsPath := store.DataDir(o.data).Join(rank.PagesFile), store.DataDir(o.data).Join(rank.HostsFile)
	if err := rank.WriteScores(pagesPath, rank.Named(set.Pages, pages.Ranks)); err != nil {
		return err
	}
	if err := rank.WriteScores(hostsPath, rank.Named(set.Hosts, hosts.Ranks)); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s and %s\n", pagesPath, hostsPath)
	printTop(stdout, "pages", set.Pages, pages.Ranks, o.top)
	printTop(stdout, "hosts", set.Hosts, hosts.Ranks, o.top)
	return nil
}

// teleport builds the page personalisation vector from the flags (nil for
// plain PageRank).
func teleport(o *rankOptions, g *graph.Graph, stderr io.Writer) ([]float64, error) {
	switch {
	case o.prefix != "":
		t, n := rank.TeleportPrefix(g, o.prefix)
		if n == 0 {
			return nil, fmt.Errorf("%w: no page of the crawl starts with --personalize-prefix %q (pages look like %s)", errUsage, o.prefix, g.Names[0])
		}
		fmt.Fprintf(stderr, "personalised: teleport to %d pages starting with %s\n", n, o.prefix)
		return t, nil
	case o.urlFile != "":
		f, err := os.Open(o.urlFile)
		if err != nil {
			return nil, fmt.Errorf("cannot open --personalize-file: %w", err)
		}
		defer f.Close()
		t, n, missing, err := rank.TeleportURLs(g, f)
		if err != nil {
			return nil, fmt.Errorf("cannot read --personalize-file %s: %w", o.urlFile, err)
		}
		if n == 0 {
			return nil, fmt.Errorf("%w: none of the URLs in --personalize-file %s is a page of the crawl (%d listed; write them as the crawl stored them, e.g. %s)",
				errUsage, o.urlFile, len(missing), g.Names[0])
		}
		if len(missing) > 0 {
			fmt.Fprintf(stderr, "personalised: %d URLs of %s are not pages of the crawl and were ignored (first: %s)\n", len(missing), o.urlFile, missing[0])
		}
		fmt.Fprintf(stderr, "personalised: teleport to %d pages listed in %s\n", n, o.urlFile)
		return t, nil
	}
	return nil, nil
}

func runOne(ctx context.Context, what string, compute computer, g *graph.Graph, opt rank.Options, mode string, stdout, stderr io.Writer) (rank.Result, error) {
	start := time.Now()
	res, err := compute(ctx, g, opt)
	if err != nil {
		return res, fmt.Errorf("cannot rank %s: %w", what, err)
	}
	state := fmt.Sprintf("converged (L1 change %.3g < %g)", res.Delta, opt.Tolerance)
	if !res.Converged {
		state = fmt.Sprintf("NOT converged (L1 change %.3g)", res.Delta)
		fmt.Fprintf(stderr, "warning: %s ranks did not converge within --max-iter %d (L1 change %.3g ≥ --tolerance %g); raise --max-iter for exact ranks\n",
			what, opt.MaxIter, res.Delta, opt.Tolerance)
	}
	fmt.Fprintf(stdout, "%s: %d iterations, %s, %.3fs (%s)\n", what, res.Iterations, state, time.Since(start).Seconds(), mode)
	return res, nil
}

func printTop(w io.Writer, what string, g *graph.Graph, ranks []float64, top int) {
	if top == 0 || len(ranks) == 0 {
		return
	}
	best := rank.SortedScores(rank.Named(g, ranks))
	fmt.Fprintf(w, "\ntop %s:\n", what)
	for i, s := range best[:min(top, len(best))] {
		fmt.Fprintf(w, "%4d  %.6f  %s\n", i+1, s.Score, s.Key)
	}
}

func runRankWorker(ctx context.Context, o *rankOptions, stderr io.Writer) error {
	rdb, err := o.rf.open(ctx)
	if err != nil {
		return err
	}
	defer rdb.Close()
	fmt.Fprintf(stderr, "rank worker: serving crawl %s on %s until its master is done\n", o.rf.crawl, redact(o.rf.url))
	err = rank.RunWorker(ctx, rdb, rank.WorkerConfig{Crawl: o.rf.crawl, Logger: o.logger})
	if err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("rank worker: %w", err)
	}
	if err == nil {
		fmt.Fprintln(stderr, "rank worker: the master is done")
	}
	return err
}
