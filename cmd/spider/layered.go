package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/denoise"
	"github.com/spider-crawler/spider/internal/layered"
	"github.com/spider-crawler/spider/internal/parse"
)

// layeredOptions are the flags of `spider crawl --mode layered` (design §2).
type layeredOptions struct {
	// mode is --mode: normal, or layered for these options to apply.
	mode                               string
	rounds, groups, workers, cacheSize int
	noiseThreshold                     float64
	noiseRule                          string
	samples                            string
	clusterThreshold, noiseSimilarity  float64
	deviation                          float64
	domPass, clusterPass               bool
	leaseTTL                           time.Duration
}

// bind registers --mode and the layered crawl's flags.
func (lo *layeredOptions) bind(fs *pflag.FlagSet) {
	fs.StringVar(&lo.mode, "mode", "normal", "crawl mode: normal, or layered (rounds with noise-URL removal, docs/design.md §2)")
	fs.IntVar(&lo.rounds, "rounds", layered.DefaultRounds, "layered: rounds to crawl (the depth limit: round r fetches depth r)")
	fs.IntVar(&lo.groups, "groups", layered.DefaultGroups, "layered: domain-hash groups (map tasks per round); fixed once a crawl started")
	fs.IntVar(&lo.workers, "workers", 0, "layered: tasks this process runs at once (default: --concurrency, at most --groups)")
	fs.Float64Var(&lo.noiseThreshold, "noise-threshold", parse.DefaultNoiseThreshold, "layered: link-text ratio above which a block is link-dense (DOM pass)")
	fs.StringVar(&lo.noiseRule, "noise-rule", layered.NoiseTemplate, "layered: the DOM pass's rule: template (link-dense blocks are noise only when repeated across the site's pages or matching the noise samples: tables of contents are kept) or ratio (every link-dense block is noise, docs/design.md §2)")
	fs.StringVar(&lo.samples, "noise-samples", "", "layered: file of noise samples, one a line: URLs, /segment/, ;param= or ?key= (added to the built-in ones)")
	fs.Float64Var(&lo.clusterThreshold, "cluster-threshold", denoise.DefaultClusterThreshold, "layered: URL similarity at which a URL joins a cluster")
	fs.Float64Var(&lo.noiseSimilarity, "noise-similarity", denoise.DefaultNoiseThreshold, "layered: similarity to a noise sample at which a URL or cluster is noise")
	fs.Float64Var(&lo.deviation, "noise-deviation", denoise.DefaultDeviation, "layered: how far below --noise-similarity members of a noise cluster are still removed")
	fs.IntVar(&lo.cacheSize, "cache-size", 0, "layered: entries of the de-dup cache list (default 1048576)")
	fs.BoolVar(&lo.domPass, "dom-pass", true, "layered: remove the links of link-heavy blocks (S301/S302)")
	fs.BoolVar(&lo.clusterPass, "cluster-pass", true, "layered: remove noise URLs by clustering (S311–S314)")
	fs.DurationVar(&lo.leaseTTL, "lease-ttl", 10*time.Second, "layered with --redis: a task of a worker silent this long is handed out again")
}

// check range-checks the noise filter's thresholds before anything starts:
// a value out of range is a usage error (exit 2) naming the flag, as for
// every other flag (the layered and denoise packages refuse them too, but
// only once the crawl is being set up).
func (lo *layeredOptions) check() error {
	for _, c := range []struct {
		flag, what string
		v          float64
		ok         bool
		rng        string
	}{
		{"noise-threshold", "noise threshold (a link-text ratio)", lo.noiseThreshold, lo.noiseThreshold > 0 && lo.noiseThreshold <= 1, "above 0, at most 1"},
		{"cluster-threshold", "cluster threshold (a URL similarity)", lo.clusterThreshold, lo.clusterThreshold > 0 && lo.clusterThreshold <= 1, "above 0, at most 1"},
		{"noise-similarity", "noise similarity threshold", lo.noiseSimilarity, lo.noiseSimilarity > 0 && lo.noiseSimilarity <= 1, "above 0, at most 1"},
		{"noise-deviation", "noise deviation", lo.deviation, lo.deviation >= 0 && lo.deviation < 1, "0 or more, below 1"},
	} {
		if !c.ok {
			return fmt.Errorf("%w: --%s %v is out of range: the %s must be %s", errUsage, c.flag, c.v, c.what, c.rng)
		}
	}
	return nil
}

// runLayered runs a layered crawl: embedded, or with --redis as the
// coordinator (the first process of a crawl, or the one whose --data holds
// it) or as a worker.
func runLayered(ctx context.Context, cfg crawl.Config, lo *layeredOptions, rf redisFlags, quiet bool, logger *slog.Logger, stdout io.Writer) error {
	// A round carries URLs, not requests: a sitemap would be fetched as a
	// page. Layered crawls read no sitemaps.
	cfg.Sitemaps = false
	opt := layered.Options{
		Rounds: lo.rounds, Groups: lo.groups, Workers: lo.workers, NoiseThreshold: lo.noiseThreshold,
		CacheSize: lo.cacheSize, NoDOM: !lo.domPass, NoCluster: !lo.clusterPass, LeaseTTL: lo.leaseTTL,
		Denoise: denoise.Options{ClusterThreshold: lo.clusterThreshold, NoiseThreshold: lo.noiseSimilarity, Deviation: lo.deviation},
	}
	if lo.rounds < 1 {
		return fmt.Errorf("cannot crawl %d rounds: give --rounds 1 or more", lo.rounds)
	}
	if err := lo.check(); err != nil {
		return err
	}
	if lo.noiseRule != layered.NoiseTemplate && lo.noiseRule != layered.NoiseRatio {
		return fmt.Errorf("%w: --noise-rule %q is not a rule: give %s or %s", errUsage, lo.noiseRule, layered.NoiseTemplate, layered.NoiseRatio)
	}
	opt.NoiseRule = lo.noiseRule
	if lo.samples != "" {
		s, err := denoise.LoadSamples(lo.samples)
		if err != nil {
			return fmt.Errorf("--noise-samples: %w", err)
		}
		opt.Denoise.Samples = s
	}
	if rf.url != "" {
		rdb, err := rf.open(ctx)
		if err != nil {
			return err
		}
		defer rdb.Close()
		opt.Redis, opt.Crawl = rdb, rf.crawl // NodeID: layered's default, HOST-PID
	}
	c, err := layered.New(cfg, opt, logger, prometheus.NewRegistry())
	if err != nil {
		return err
	}
	defer c.Close()
	start := time.Now()
	runErr := c.Run(ctx)
	if cerr := c.Close(); runErr == nil {
		runErr = cerr
	}
	// Stopped by spider control: exit 0; the same command resumes it.
	if errors.Is(runErr, layered.ErrStopped) {
		if !quiet {
			fmt.Fprintf(stdout, "layered crawl %q stopped by spider control after %s; run the same command again to resume it\n", rf.crawl, time.Since(start).Round(time.Millisecond))
			layered.Print(stdout, c.Reports())
		}
		return nil
	}
	// Interrupted (Ctrl-C): the rounds finished so far, then runErr (exit
	// 130); a continuous crawl ends so and exits 0, as in the other modes.
	interrupted := errors.Is(runErr, context.Canceled) && ctx.Err() != nil
	if interrupted && cfg.Continuous {
		if !quiet {
			fmt.Fprintf(stdout, "continuous layered crawl stopped after %s; run the same command again to go on\n", time.Since(start).Round(time.Millisecond))
			layered.Print(stdout, c.Reports())
			c.ScheduleStatus().Print(stdout, time.Now(), 1)
		}
		return nil
	}
	if runErr == nil && opt.Redis != nil {
		// The crawl is finished (coordinator or worker): --expire-done.
		out := stdout
		if quiet {
			out = io.Discard
		}
		runErr = expireDone(ctx, opt.Redis, &rf, rf.crawl, rf.expireDone, out)
	}
	if runErr != nil && !interrupted || quiet {
		return runErr
	}
	reps := c.Reports()
	if len(reps) == 0 {
		if interrupted {
			fmt.Fprintf(stdout, "layered crawl interrupted after %s, before its first round ended\n", time.Since(start).Round(time.Millisecond))
			return runErr
		}
		fmt.Fprintf(stdout, "worked on layered crawl %q for %s; the coordinator holds the pages\n", rf.crawl, time.Since(start).Round(time.Millisecond))
		return nil
	}
	fetched := 0
	for _, r := range reps {
		fetched += r.Fetched
	}
	if interrupted {
		fmt.Fprintf(stdout, "layered crawl interrupted after %d rounds, %d URLs fetched into %s\n", len(reps), fetched, cfg.Data)
		layered.Print(stdout, reps)
		return runErr
	}
	fmt.Fprintf(stdout, "layered crawl: %d rounds, %d URLs fetched into %s\n", len(reps), fetched, cfg.Data)
	layered.Print(stdout, reps)
	// The schedule's lines are about this run: a finished crawl run again
	// before anything was due says so, as a plain crawl does.
	c.ScheduleStatus().Print(stdout, time.Now(), c.RunRecords())
	fmt.Fprintf(stdout, "report: %s\n", filepath.Join(cfg.Data, layered.DirName, layered.ReportFile))
	return nil
}
