package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"github.com/spider-crawler/spider/internal/cluster"
	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/p2p"
	"github.com/spider-crawler/spider/internal/urls"
)

const crawlSynopsis = `crawl [flags] SEED_URL...

Crawls politely from the seed URLs, storing pages, records and crawl state
in --data. Killed or interrupted, the same command resumes where it stopped.
Flags override the --config file (YAML, keys are the flag names with _).

With --redis URL the process is one peer of a distributed crawl (docs/design.md §3):
start the same command on every machine (or several on one machine, each
with its own --data: a node's id is kept in its data directory); hosts are
shared out by a consistent-hash ring weighted by --weight, and every node
exits when the whole crawl is done.`

// crawlFlags binds every crawl.Config field to a flag (the local-only ones
// through localFlags).
func crawlFlags(fs *pflag.FlagSet, c *crawl.Config) {
	localFlags(fs, c)
	fs.IntVar(&c.MaxDepth, "max-depth", c.MaxDepth, fmt.Sprintf("largest link depth fetched; seeds are 0; -1 = unlimited (range -1 to %d)", crawl.MaxMaxDepth))
	fs.BoolVar(&c.StrictLevels, "strict-levels", c.StrictLevels, "crawl depth levels one after another, each page at its shortest depth (slower with slow hosts); by default levels overlap and fetch the same pages, none twice: a page found later by a shorter path passes the smaller depth on to its links. Always so with --mode layered; not with --topics")
	fs.BoolVar(&c.LooseDepth, "loose-depth", c.LooseDepth, "overlapping depth levels: the default, kept for old command lines (changes nothing; refused with --strict-levels)")
	fs.Int64Var(&c.MaxPages, "max-pages", c.MaxPages, "stop at exactly this many URLs recorded in records.jsonl (any outcome; retries do not count), over all nodes and resumed runs; the rest stays pending; 0 = no limit (range: 0 or more)")
	fs.StringVar(&c.Scope, "scope", c.Scope, "stay inside: host, domain, seeds, regexp or any")
	fs.StringVar(&c.ScopeRegexp, "scope-regexp", c.ScopeRegexp, "URL pattern for --scope regexp")
	fs.IntVar(&c.PerHost, "per-host", c.PerHost, fmt.Sprintf("most connections to one host at once (range 1 to %d)", crawl.MaxPerHost))
	fs.Var(durationFlag{&c.Delay}, "delay", "smallest gap between requests to one host (robots.txt Crawl-delay can raise it; range 0 to 1h)")
	fs.StringVar(&c.DelayFrom, "delay-from", c.DelayFrom, "count --delay from the previous answer (done) or from the previous request's start (start: one request per max(delay, answer time))")
	fs.Var(durationFlag{&c.MaxCrawlDelay}, "max-crawl-delay", "cap on a robots.txt Crawl-delay (range 0 to 1h)")
	fs.BoolVar(&c.PerIP, "per-ip", c.PerIP, "apply politeness per server IP instead of per host name")
	fs.StringVar(&c.UserAgent, "user-agent", c.UserAgent, "User-Agent header; include a contact URL (printable text: no CR, LF or other control characters)")
	fs.StringVar(&c.RobotsAgent, "robots-agent", c.RobotsAgent, "product token matched in robots.txt (default: from --user-agent)")
	fs.IntVar(&c.MaxRedirects, "max-redirects", c.MaxRedirects, fmt.Sprintf("longest redirect chain followed (range 0 to %d)", crawl.MaxRedirectsLimit))
	fs.IntVar(&c.MaxRetries, "max-retries", c.MaxRetries, fmt.Sprintf("retries after 5xx, 429, reset or refused (range 0 to %d)", crawl.MaxRetriesLimit))
	fs.Var(durationFlag{&c.RetryDelay}, "retry-delay", "first retry back-off, doubles each time (range 1ns to 1h)")
	fs.BoolVar(&c.FollowNofollow, "follow-nofollow", c.FollowNofollow, "also follow rel=nofollow links")
	fs.IntVar(&c.NearDupDistance, "near-dup-distance", c.NearDupDistance, fmt.Sprintf("a page whose text's 64-bit SimHash is within this many bits of an earlier page's is its near-duplicate: recorded, links followed, shown once in search (range 0 = off to %d)", crawl.MaxNearDupDistance))
	fs.BoolVar(&c.Canonical, "canonical", c.Canonical, "respect rel=canonical (<link> or HTTP Link header) naming another URL of the same host in scope: record it, queue it, fold the page into it in search")
	fs.BoolVar(&c.Sitemaps, "sitemaps", c.Sitemaps, "read each host's sitemaps (robots.txt Sitemap: lines and /sitemap.xml; index files, gzip, at most 50,000 URLs or 50 MiB each) and crawl the pages they list at depth 1, through the same filters as links; not with --mode layered or --dedup protocol")
	fs.StringVar(&c.Seen, "seen", c.Seen, "URL-seen test: exact or bloom")
	fs.Uint64Var(&c.ExpectedURLs, "expected-urls", c.ExpectedURLs, "URLs the Bloom filter is sized for (at least 1; the filter, about 3.6 bytes per URL at --fp-rate 1e-6, must fit in 4 GiB; on the embedded back-end it starts small and grows to this size as URLs are seen)")
	fs.Float64Var(&c.FPRate, "fp-rate", c.FPRate, fmt.Sprintf("Bloom filter false-positive rate (range %g to %g)", crawl.MinFPRate, crawl.MaxFPRate))
	fs.BoolVar(&c.WARC, "warc", c.WARC, "also write WARC 1.1 files under DATA/warc")
	fs.BoolVar(&c.SortQuery, "sort-query", c.SortQuery, "sort query parameters when normalising URLs")
	fs.Var(listFlag{&c.DropParams}, "drop-param", "query parameter to remove, e.g. utm_* (repeatable)")
	fs.Var(listFlag{&c.DenySuffixes}, "deny-suffix", "path suffix not to fetch, replaces the default list (repeatable)")
	fs.Var(listFlag{&c.AllowHosts}, "allow-host", "only crawl these hosts, *.suffix allowed (repeatable)")
	fs.Var(listFlag{&c.DenyHosts}, "deny-host", "never crawl these hosts (repeatable)")
	bindMode(fs, modeTopics, "modes", func(fs *pflag.FlagSet) {
		fs.StringVar(&c.Topics, "topics", c.Topics, "YAML file of crawl topics: multi-topic priority scheduling (PQ-MCSA, docs/design.md §4)")
	})
	fs.Float64Var(&c.MaxRate, "max-rate", c.MaxRate, fmt.Sprintf("requests/s over the whole crawl; 0 = per-host limits only; at most %d", crawl.HardMaxRate))
	revisitFlags(fs, c)
}

// revisitFlags binds the revisit schedule's settings (docs/crawling.md,
// "Keeping a crawl fresh"); per-host and per-topic bounds are config-file
// keys (revisit_hosts, revisit_topics).
func revisitFlags(fs *pflag.FlagSet, c *crawl.Config) {
	span := fmt.Sprintf("range %s to %s", time.Duration(crawl.MinRevisit), time.Duration(crawl.MaxRevisit))
	fs.StringVar(&c.Revisit, "revisit", c.Revisit, "fetch pages again: off (once), fixed (every --revisit-initial) or adaptive (each page's interval follows the changes seen); failed URLs are retried on their own back-off in every mode")
	fs.Var(durationFlag{&c.RevisitMin}, "revisit-min", "shortest revisit interval ("+span+"; per host or topic: revisit_hosts, revisit_topics in the --config file)")
	fs.Var(durationFlag{&c.RevisitMax}, "revisit-max", "longest revisit interval ("+span+")")
	fs.Var(durationFlag{&c.RevisitInitial}, "revisit-initial", "a page's first revisit interval; adaptive: the interval of a page that changes at every visit, slower pages get longer ones ("+span+")")
	fs.Float64Var(&c.RevisitShare, "revisit-share", c.RevisitShare, "with --continuous: the largest share of the fetch slots revisits and retries take while new URLs wait (range above 0 to 1); no bound with --mode layered, whose revisit rounds follow the depth rounds")
	fs.BoolVar(&c.Continuous, "continuous", c.Continuous, "run until stopped (Ctrl-C, spider control stop): new URLs and due revisits share the frontier under the same politeness; sleeps until the next URL is due; with --mode layered: revisit rounds once the depth rounds are done")
	fs.BoolVar(&c.RetryFailed, "retry-failed", c.RetryFailed, "make every URL whose last fetch failed due now, then crawl")
}

// crawlConfigFlags starts a command that takes the crawl settings: the
// defaults, then the --config file (found in args before parsing), then a
// flag set whose flags override both. The caller adds its own flags and
// parses.
func crawlConfigFlags(name, synopsis string, args []string, stderr io.Writer) (*crawl.Config, *pflag.FlagSet, error) {
	cfg := crawl.NewConfig()
	cfg.Sitemaps = true // the command's default; the library's is off (crawl.Config.Sitemaps)
	if path := findConfigFlag(args); path != "" {
		if err := crawl.LoadFile(path, &cfg); err != nil {
			return nil, nil, err
		}
		robotsAgent := cfg.RobotsAgent // the file's, if any: derived later from the final --user-agent otherwise
		cfg.Defaults()
		cfg.RobotsAgent = robotsAgent
	}
	fs := newFlagSet(name, synopsis, stderr)
	fs.String("config", "", "YAML configuration file (flags override it)")
	crawlFlags(fs, &cfg)
	return &cfg, fs, nil
}

func runCrawl(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, fs, err := newCrawlOptions(args, stderr)
	if err != nil {
		return err
	}
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	rf, lo, mo := o.redis, &o.layered, &o.mixed
	cfg := *o.cfg
	cfg.Seeds = append(cfg.Seeds, fs.Args()...)
	if len(cfg.Seeds) == 0 && cfg.Topics == "" {
		fs.Usage()
		return fmt.Errorf("%w: give at least one seed URL (or --topics FILE with seeds)", errUsage)
	}
	if cfg.Topics != "" && (rf.url != "" || lo.mode != "normal" || mo.dedup != "bucket") {
		return fmt.Errorf("%w: spider crawl --topics schedules the embedded single-node crawl only: drop --redis, --mode or --dedup; for topics on a cluster run spider master --redis URL --crawl NAME --topics FILE and spider worker --redis URL --crawl NAME --topics FILE (docs/distributed.md)", errUsage)
	}
	if err := checkConfig(&cfg); err != nil {
		return err
	}
	if err := checkSeeds(cfg); err != nil {
		return err
	}
	if err := o.peer.check(); err != nil {
		return err
	}
	if err := checkExpireDone(rf.expireDone); err != nil {
		return err
	}
	if err := o.serve.check(); err != nil {
		return err
	}
	// Checked before the modes branch off: a layered or §0 crawl that took
	// --addr and served nothing would leave the user waiting on a dead port.
	if o.serve.addr != "" && (lo.mode != "normal" || mo.dedup != "bucket" || rf.url != "") {
		return usageError(stderr, "--addr serves an embedded crawl only (not with --redis, --mode layered or --dedup protocol); to watch such a crawl run spider serve --data DIR (or --redis URL for a distributed one) beside it")
	}
	logger, err := newLogger(stderr, o.logLevel)
	if err != nil {
		return err
	}
	if o.pprof != "" {
		stopProf, err := startPprof(ctx, o.pprof, stderr, logger)
		if err != nil {
			return err
		}
		defer stopProf()
	}
	if _, ok := crawlGCPercent(os.Getenv("GOGC")); ok {
		stopGC := tuneGC(ctx, gcTuneEvery)
		defer stopGC()
	}
	switch lo.mode {
	case "normal":
	case "layered":
		return runLayered(ctx, cfg, lo, rf, o.quiet, logger, stdout)
	default:
		return fmt.Errorf("%w: unknown --mode %q: use normal or layered", errUsage, lo.mode)
	}
	switch mo.dedup {
	case "bucket":
	case "protocol":
		return runMixed(ctx, cfg, mo, o.quiet, logger, stdout)
	default:
		return fmt.Errorf("%w: unknown --dedup %q: use bucket or protocol", errUsage, mo.dedup)
	}
	if rf.url != "" {
		return runPeer(ctx, cfg, rf, o.peer.options(rf.crawl), o.quiet, logger, stdout)
	}
	reg := prometheus.NewRegistry()
	eng, err := crawl.New(cfg, logger, reg)
	if err != nil {
		return err
	}
	defer eng.Close()
	if old, err := crawl.OtherSeeds(cfg); err != nil {
		return err
	} else if len(old) > 0 {
		warnOtherSeeds(stderr, cfg.Data, old)
	}
	stopServe := func() {}
	if o.serve.addr != "" {
		if stopServe, err = serveCrawl(ctx, o.serve.addr, o.serve.allowedHosts, eng, cfg.Data, reg, logger, stderr); err != nil {
			return err
		}
		defer stopServe()
	}

	showProgress := !o.quiet && isTerminal(stderr)
	done := make(chan struct{})
	if showProgress {
		go progressLoop(eng, stderr, done)
	}
	runErr := eng.Run(ctx)
	close(done)
	stopServe() // before eng.Close: the server reads the engine
	if showProgress {
		fmt.Fprint(stderr, "\r\033[K")
	}
	p := eng.Progress()
	sched, hasSched, schedErr := eng.ScheduleStatus(context.WithoutCancel(ctx))
	if cerr := eng.Close(); cerr != nil && runErr == nil {
		runErr = cerr
	}
	interrupted := errors.Is(runErr, context.Canceled) && ctx.Err() != nil
	stoppedContinuous := interrupted && cfg.Continuous // Ctrl-C is how a continuous crawl ends: exit 0
	if stoppedContinuous {
		interrupted, runErr = false, nil
	}
	if runErr == nil && schedErr != nil {
		runErr = schedErr
	}
	if runErr != nil && !interrupted {
		return runErr
	}
	// Interrupted (Ctrl-C): the summary so far, then runErr (exit 130).
	s, err := crawl.Stats(cfg.Data)
	if err != nil {
		if interrupted {
			return runErr // stopped before the first record
		}
		return err
	}
	if !o.quiet {
		verb := "crawled"
		if interrupted {
			verb = "interrupted after"
		}
		if stoppedContinuous {
			verb = "continuous crawl stopped after"
		}
		rate := float64(p.Fetched) / max(p.Elapsed.Seconds(), 1e-9)
		urlsWord := "URLs"
		if p.Fetched == 1 {
			urlsWord = "URL"
		}
		fmt.Fprintf(stdout, "%s %d %s in %s (%.1f/s) into %s\n", verb, p.Fetched, urlsWord, p.Elapsed.Round(time.Millisecond), rate, cfg.Data)
		s.Print(stdout)
		if hasSched {
			sched.Print(stdout, time.Now(), p.Fetched)
		}
	}
	if interrupted {
		return runErr
	}
	if s.NothingFetched() {
		var b strings.Builder
		s.PrintFailures(&b)
		return fmt.Errorf("no page was fetched: every seed failed\n%s", strings.TrimRight(b.String(), "\n"))
	}
	return nil
}

// checkSeeds refuses, as a usage error (exit 2) and before any file is
// created, a seed that is not an absolute http(s) URL.
func checkSeeds(cfg crawl.Config) error {
	norm := &urls.Normalizer{SortQuery: cfg.SortQuery, DropParams: cfg.DropParams}
	for _, s := range cfg.Seeds {
		if _, err := norm.Parse(s); err != nil {
			return fmt.Errorf("%w: seed %q is not a usable http(s) URL: %v", errUsage, s, err)
		}
	}
	return nil
}

// warnOtherSeeds says on stderr that the data directory holds a crawl
// from other seeds (crawl.OtherSeeds), naming them and the choices.
func warnOtherSeeds(stderr io.Writer, data string, old []string) {
	names := old
	if len(names) > 3 {
		names = names[:3]
	}
	more := ""
	if len(old) > len(names) {
		more = fmt.Sprintf(" and %d more", len(old)-len(names))
	}
	fmt.Fprintf(stderr, "spider crawl: warning: %s holds a crawl from other seeds (%s%s); these seeds join that crawl and share its records and state. For a separate crawl, give a new --data directory; to extend that crawl on purpose, carry on.\n",
		data, strings.Join(names, ", "), more)
}

// runPeer runs this process as one node of a peer-to-peer crawl.
func runPeer(ctx context.Context, cfg crawl.Config, rf redisFlags, opt p2p.Options, quiet bool, logger *slog.Logger, stdout io.Writer) error {
	rdb, err := rf.open(ctx)
	if err != nil {
		return err
	}
	defer rdb.Close()
	fetcher, err := crawl.NewFetcher(cfg, logger, prometheus.NewRegistry())
	if err != nil {
		return err
	}
	node, err := p2p.NewNode(cfg, fetcher, rdb, opt, logger)
	if err != nil {
		fetcher.Close()
		return err
	}
	start := time.Now()
	runErr := node.Run(ctx)
	// Stopped by spider control: the summary, exit 0; a new run resumes.
	stopped := errors.Is(runErr, p2p.ErrStopped)
	if stopped {
		runErr = nil
	}
	sched, hasSched, schedErr := node.ScheduleStatus(context.WithoutCancel(ctx))
	if cerr := node.Close(); runErr == nil {
		runErr = cerr
	}
	// Interrupted (Ctrl-C): this node's summary so far, then runErr (exit 130).
	interrupted := errors.Is(runErr, context.Canceled) && ctx.Err() != nil
	stoppedContinuous := interrupted && cfg.Continuous // Ctrl-C is how a continuous crawl ends: exit 0
	if stoppedContinuous {
		interrupted, runErr = false, nil
	}
	if runErr == nil && !stopped && !stoppedContinuous {
		// The crawl is done (every node saw it): --expire-done.
		out := stdout
		if quiet {
			out = io.Discard
		}
		runErr = expireDone(ctx, rdb, &rf, rf.crawl, rf.expireDone, out)
	}
	if runErr != nil && !interrupted || quiet {
		return runErr
	}
	el := time.Since(start)
	verb := "crawled"
	if stopped {
		verb = "stopped by spider control after"
	}
	if interrupted {
		verb = "interrupted after"
	}
	if stoppedContinuous {
		verb = "continuous crawl stopped after"
	}
	fmt.Fprintf(stdout, "node %s: %s %d URLs in %s (%.1f/s) into %s\n", node.ID(), verb, node.Fetched(),
		el.Round(time.Millisecond), float64(node.Fetched())/max(el.Seconds(), 1e-9), cfg.Data)
	s, err := crawl.Stats(cfg.Data)
	if err != nil {
		return runErr // this node fetched nothing
	}
	s.Print(stdout)
	if hasSched && schedErr == nil {
		sched.Print(stdout, time.Now(), node.Fetched())
	}
	return runErr
}

// progressLoop redraws one status line until done is closed.
func progressLoop(eng *crawl.Engine, w io.Writer, done <-chan struct{}) {
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	var last int64
	lastT := time.Now()
	for {
		select {
		case <-done:
			return
		case now := <-t.C:
			p := eng.Progress()
			rate := float64(p.Fetched-last) / now.Sub(lastT).Seconds()
			last, lastT = p.Fetched, now
			revisits := ""
			if rc := eng.RevisitCounts(); rc.Revisits > 0 || rc.Retried > 0 {
				revisits = fmt.Sprintf("  revisits %d (304: %d, changed %d)", rc.Revisits, rc.NotModified, rc.Changed)
			}
			fmt.Fprintf(w, "\r\033[Kpages %d  %.0f/s  queued %d  in flight %d  hosts %d  errors %d%s  %s",
				p.Fetched, rate, p.Queued, p.InFlight, p.Hosts, p.Errors, revisits, p.Elapsed.Round(time.Second))
		}
	}
}

// isTerminal reports whether w is a character device (a terminal), so that
// progress lines stay out of pipes and files.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// crawlGCPercent is the garbage collector's GOGC for spider crawl while
// its live heap is small: 200 when the environment's GOGC (gogc) is not
// set, else none (ok false: Go's own reading of GOGC stands). A crawl
// allocates about 230 KB per page of 32 KB, nearly all of it garbage
// within the page; collecting at three times the live heap instead of two
// cut the CPU per page by about 15 % on bench/static.sh's web for 8 MB
// more peak RSS (bench/RESULTS.md, "CPU per page, third pass").
func crawlGCPercent(gogc string) (percent int, ok bool) {
	if gogc != "" {
		return 0, false
	}
	return 200, true
}

// The live heap at which tuneGC goes back to Go's default GOGC (100), and
// the one below which it returns to 200 (apart, so that a heap near the
// line does not switch at every check). A large frontier's crawl holds
// hundreds of MB live (the seen set's recent map, the frontier's queues):
// at GOGC=200 it would peak at three times that.
const (
	gcLargeHeap  = 256 << 20
	gcSmallHeap  = 192 << 20
	gcTuneEvery  = time.Second
	gcPercentBig = 100
)

// gcPercentFor is the GOGC tuneGC sets for a live heap of live bytes, given
// the GOGC in force (cur).
func gcPercentFor(live uint64, cur int) int {
	small, _ := crawlGCPercent("")
	switch {
	case live >= gcLargeHeap:
		return gcPercentBig
	case live < gcSmallHeap:
		return small
	}
	return cur
}

// tuneGC sets GOGC=200 and, every period until ctx ends or the returned
// stop is called, sets it by the live heap (gcPercentFor); stop restores
// the GOGC that was in force before.
func tuneGC(ctx context.Context, period time.Duration) (stop func()) {
	small, _ := crawlGCPercent("")
	prev := debug.SetGCPercent(small)
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	cur := small
	stopEvery := cluster.Every(ctx, period, func(context.Context) error {
		metrics.Read(sample)
		if sample[0].Value.Kind() != metrics.KindUint64 {
			return nil // not reported by this Go: keep 200
		}
		if p := gcPercentFor(sample[0].Value.Uint64(), cur); p != cur {
			debug.SetGCPercent(p)
			cur = p
		}
		return nil
	}, nil)
	return func() {
		stopEvery()
		debug.SetGCPercent(prev)
	}
}
