package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/crawlstate"
	"github.com/spider-crawler/spider/internal/masterworker"
	"github.com/spider-crawler/spider/internal/store"
	"github.com/spider-crawler/spider/internal/topics"
)

const masterSynopsis = `master --redis URL [--crawl NAME] [crawl flags] SEED_URL...
       master --redis URL --crawl NAME --topics FILE [--data DIR] [crawl flags] [SEED_URL...]

The scheduling node of a master–worker crawl (docs/design.md §1): de-duplicates,
keeps the frontier and politeness for all workers, hands URLs out on the
Redis list srq and takes results from nrq. Start workers with
"spider worker --redis URL --crawl NAME". Returns when the crawl is done;
run it again to resume.

With --topics FILE it is the coordinator of a multi-topic crawl
(docs/design.md §4, docs/distributed.md "Topics on a cluster"): the PQ-MCSA
scheduler (or the file's mode: fifo) over the whole frontier, the topics'
seeds as seeds, the task records in DIR/topics/tcb (a coordinator started
again on the same --data resumes them), each crawl node fed on its own queue
by host (logical nodes on a ring of the workers). Workers then need
--topics with the same file.`

// masterOptions are the flags of the master of a master–worker crawl
// beyond the crawl settings and the Redis connection.
type masterOptions struct {
	maxInFlight int
	workerTTL   time.Duration
	waitNodes   int
}

// bind registers --max-inflight, --worker-ttl and --wait-nodes.
func (mo *masterOptions) bind(fs *pflag.FlagSet) {
	fs.IntVar(&mo.maxInFlight, "max-inflight", 0, "tasks handed out and not yet answered (default 0: 4 × concurrency; range 0 to 1000000)")
	fs.DurationVar(&mo.workerTTL, "worker-ttl", 5*time.Second, "a worker silent this long is declared dead and its tasks re-queued (range 100ms to 1h)")
	fs.IntVar(&mo.waitNodes, "wait-nodes", 1, "with --topics: crawl nodes (workers) that must have joined before the first task goes out (range 1 to 1024)")
}

// check range-checks the master's flags: a usage error naming the flag.
func (mo *masterOptions) check() error {
	if mo.maxInFlight < 0 || mo.maxInFlight > 1_000_000 {
		return fmt.Errorf("%w: --max-inflight %d is out of range: use 0 (4 × concurrency) to 1000000", errUsage, mo.maxInFlight)
	}
	if mo.workerTTL < 100*time.Millisecond || mo.workerTTL > time.Hour {
		return fmt.Errorf("%w: --worker-ttl %s is out of range: use 100ms to 1h", errUsage, mo.workerTTL)
	}
	if mo.waitNodes < 1 || mo.waitNodes > 1024 {
		return fmt.Errorf("%w: --wait-nodes %d is out of range: use 1 to 1024", errUsage, mo.waitNodes)
	}
	return nil
}

func runMaster(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfgp, fs, err := crawlConfigFlags("master", masterSynopsis, args, stderr)
	if err != nil {
		return err
	}
	var rf redisFlags
	bindMode(fs, modeRedis, "distributed", rf.bindEnding)
	var mo masterOptions
	bindMode(fs, modeMaster, "distributed", mo.bind)
	logLevel := fs.String("log-level", "warn", "log level: debug, info, warn, error")
	quiet := fs.Bool("quiet", false, "no summary")
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if err := checkExpireDone(rf.expireDone); err != nil {
		return err
	}
	cfg := *cfgp
	if err := checkConfig(&cfg); err != nil {
		return err
	}
	if err := mo.check(); err != nil {
		return err
	}
	cfg.Seeds = append(cfg.Seeds, fs.Args()...)
	var tc *topics.Config
	if cfg.Topics != "" {
		// The topics' seeds are seeds of the crawl.
		if tc, err = crawl.LoadTopics(&cfg); err != nil {
			return fmt.Errorf("%w: %w", errUsage, err)
		}
	}
	if len(cfg.Seeds) == 0 {
		fs.Usage()
		return fmt.Errorf("%w: give at least one seed URL (or --topics FILE with seeds)", errUsage)
	}
	logger, err := newLogger(stderr, *logLevel)
	if err != nil {
		return err
	}
	rf.held = masterworker.Options{}.MasterConns() // its appliers, blocking pop and loops
	rdb, err := rf.open(ctx)
	if err != nil {
		return err
	}
	defer rdb.Close()
	reg := prometheus.NewRegistry()
	// The master fetches nothing; its fetcher only normalises the seeds.
	fetcher, err := crawl.NewFetcher(cfg, logger, reg)
	if err != nil {
		return err
	}
	seeds, err := fetcher.SeedRequests()
	if tc != nil {
		// The coordinator keeps its fetcher (and with it the lock on
		// --data) open: its task records live in DATA/topics/tcb.
		defer fetcher.Close()
	} else {
		fetcher.Close()
	}
	if err != nil {
		return err
	}
	// SPEC §1: the master de-duplicates with a Bloom filter on Redis (unless
	// --seen exact is given); its whole state lives there, so a master can be
	// restarted anywhere and resume.
	if !flagGiven(fs, "seen") {
		cfg.Seen = "bloom"
	}
	// Under a depth limit levels overlap unless --strict-levels (always
	// with topics): the state keeps each page's links and relinks, so the
	// limit stays exact (workers get StrictLevels false with the
	// configuration and fill Visit.Beyond).
	// The state is split by host over masterworker.Shards hash tags, so a
	// Redis Cluster holds it on all its masters; a Redis restart or a brief
	// outage is waited out, not fatal.
	st, err := masterworker.OpenState(ctx, rdb, rf.crawl, masterworker.StateOptions{
		SeenMode: cfg.Seen, ExpectedURLs: cfg.ExpectedURLs, FPRate: cfg.FPRate, Logger: logger,
		Relink: cfg.DepthOverlaps(), MaxDepth: cfg.MaxDepth,
	})
	if err != nil {
		return err
	}
	var sched *crawl.Scheduler
	if tc != nil {
		sched, err = crawl.NewTopicScheduler(cfg, tc, st, fetcher, logger, reg)
	} else {
		sched, err = crawl.NewScheduler(cfg, st, logger, reg)
	}
	if err != nil {
		st.Close()
		return err
	}
	m, err := masterworker.NewMaster(cfg, sched, seeds, rdb, masterworker.Options{Crawl: rf.crawl, WorkerTTL: mo.workerTTL}, mo.maxInFlight, logger)
	if err != nil {
		sched.Close()
		return err
	}
	defer m.Close()
	m.AcceptSeeds(fetcher)
	if tc != nil {
		if err := m.UseTopics(masterworker.TopicsOptions{Config: tc, Fetcher: fetcher, WaitNodes: mo.waitNodes}); err != nil {
			return err
		}
	}
	if rv, ok := st.(crawlstate.Revisits); ok {
		m.UseSchedule(rv) // --revisit, --continuous, --retry-failed as spider crawl has them
	}
	start := time.Now()
	runErr := m.Run(ctx)
	// Stopped by spider control: the summary, exit 0; a new run resumes.
	stopped := errors.Is(runErr, masterworker.ErrStopped)
	if stopped {
		runErr = nil
	}
	// Interrupted (Ctrl-C): the summary so far, then runErr (exit 130).
	interrupted := errors.Is(runErr, context.Canceled) && ctx.Err() != nil
	stoppedContinuous := interrupted && cfg.Continuous // Ctrl-C is how a continuous crawl ends: exit 0
	if stoppedContinuous {
		interrupted, runErr = false, nil
	}
	if runErr != nil && !interrupted {
		return runErr
	}
	// The counters are read after ctx is cancelled too: a context of their own.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	counters, cerr := m.Counters(cctx)
	schedule, hasSched, schedErr := m.ScheduleStatus(cctx)
	if schedErr != nil && !interrupted {
		return schedErr
	}
	rows := map[string]int64{}
	for o, n := range counters {
		rows[crawl.Row(o)] += n
	}
	if !*quiet {
		s := m.Stats()
		p := m.Progress()
		el := time.Since(start)
		verb := "done:"
		if stopped {
			verb = "stopped by spider control after"
		}
		if interrupted {
			verb = "interrupted after"
		}
		if stoppedContinuous {
			verb = "continuous crawl stopped after"
		}
		fmt.Fprintf(stdout, "crawl %q %s %d URLs in %s (%.1f/s); tasks handed %d, results %d, stale %d, re-queued %d",
			rf.crawl, verb, p.Fetched, el.Round(time.Millisecond), float64(p.Fetched)/max(el.Seconds(), 1e-9), s.Handed, s.Results, s.Stale, s.Requeued)
		if tc != nil {
			fmt.Fprintf(stdout, ", taken back from leaving nodes %d", s.Returned)
		}
		fmt.Fprintln(stdout)
		names := make([]string, 0, len(rows))
		for r := range rows {
			names = append(names, r)
		}
		sort.Strings(names)
		for _, r := range names {
			fmt.Fprintf(stdout, "  %-20s %d\n", r, rows[r])
		}
		if hasSched && schedErr == nil {
			schedule.Print(stdout, time.Now(), p.Fetched)
		}
		if ts := m.TopicStatus(); ts != nil {
			ts.Print(stdout)
		}
	}
	if interrupted {
		return runErr
	}
	if cerr == nil && rows[crawl.Row200] == 0 && !stopped {
		if failed := failedOutcomes(counters); failed != "" {
			return fmt.Errorf("no page was fetched: every seed failed\n%s\nthe workers' records say why for each URL: spider stats --data DIR on a worker's data directory", failed)
		}
	}
	if !stopped && !stoppedContinuous && rf.expireDone > 0 {
		// The workers leave the done crawl within a heartbeat or two;
		// their last writes then get the expiry too.
		if _, err := m.WaitWorkersGone(context.WithoutCancel(ctx), 2*mo.workerTTL); err != nil {
			return rf.lost(fmt.Errorf("cannot see the workers leave before --expire-done: %w", err))
		}
		out := stdout
		if *quiet {
			out = io.Discard
		}
		return expireDone(ctx, rdb, &rf, rf.crawl, rf.expireDone, out)
	}
	return nil
}

// failedOutcomes lists the failed outcomes of a crawl's counters, the
// largest first, each with its count and hint; "" when none failed.
func failedOutcomes(counters map[string]int64) string {
	type oc struct {
		outcome string
		n       int64
	}
	var failed []oc
	var total int64
	for o, n := range counters {
		if n > 0 && crawl.Failed(o) {
			failed = append(failed, oc{o, n})
			total += n
		}
	}
	if total == 0 {
		return ""
	}
	sort.Slice(failed, func(i, j int) bool {
		if failed[i].n != failed[j].n {
			return failed[i].n > failed[j].n
		}
		return failed[i].outcome < failed[j].outcome
	})
	var b strings.Builder
	urlsWord := "URLs"
	if total == 1 {
		urlsWord = "URL"
	}
	fmt.Fprintf(&b, "failed: %d %s, by class:", total, urlsWord)
	for _, f := range failed {
		fmt.Fprintf(&b, "\n  %s: %d: %s", f.outcome, f.n, crawl.Hint(f.outcome))
	}
	return b.String()
}

const workerSynopsis = `worker --redis URL [--crawl NAME] [--data DIR] [--concurrency N] [--topics FILE] [local flags]

A fetching node of a master–worker crawl: takes a work number from trq,
URLs from srq, fetches them, stores pages in its own --data directory and
answers on nrq. The crawl's rules (scope, depth, delays, user agent,
robots) come from the master through Redis; everything that concerns this
machine is given here and only here: data directory, the SSRF guard
(--allow-private), name resolution (--resolve, --resolve-file), and
resource limits (concurrency, memory, body size, time-outs). Such settings
found in Redis are ignored with a warning. Exits when the master marks the
crawl done. Ctrl-C leaves the crawl cleanly: no more tasks, the fetches in
flight finish (at most --timeout) and are answered, exit 0; a second Ctrl-C
abandons them (their tasks are handed back) and exits 130.

In a topics crawl (spider master --topics FILE) the worker is a crawl node:
give it --topics with the master's file; a file that differs (or its
absence) is refused, naming each difference. It takes its tasks from its
own queue and scores each page against its topic's terms.`

// flagGiven reports whether the flag was set on the command line.
func flagGiven(fs *pflag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *pflag.Flag) { given = given || f.Name == name })
	return given
}

func runWorker(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("worker", workerSynopsis, stderr)
	var rf redisFlags
	bindMode(fs, modeRedis, "distributed", rf.register)
	local := crawl.NewConfig()
	local.Data = "spider-data"
	localFlags(fs, &local)
	bindMode(fs, modeTopics, "modes", func(fs *pflag.FlagSet) {
		fs.StringVar(&local.Topics, "topics", "", "the topics file of a topics crawl: the same as the master's (spider master --topics); local only")
	})
	logLevel := fs.String("log-level", "warn", "log level: debug, info, warn, error")
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q: a worker takes flags only (seeds go to spider master)", errUsage, fs.Arg(0))
	}
	if err := checkConfig(&local); err != nil {
		return err
	}
	var tc *topics.Config
	if local.Topics != "" {
		var err error
		if tc, err = topics.Load(local.Topics); err != nil {
			return fmt.Errorf("%w: %w", errUsage, err)
		}
	}
	logger, err := newLogger(stderr, *logLevel)
	if err != nil {
		return err
	}
	rf.held = local.Concurrency // each fetch loop blocks on srq with a connection
	rdb, err := rf.open(ctx)
	if err != nil {
		return err
	}
	defer rdb.Close()
	cfg, err := masterworker.LoadConfig(ctx, rdb, rf.crawl, logger)
	if err != nil {
		return err
	}
	if err := masterworker.CheckTopics(ctx, rdb, rf.crawl, tc, local.Topics); err != nil {
		if errors.Is(err, masterworker.ErrTopicsMismatch) {
			return fmt.Errorf("%w: %w", errUsage, err)
		}
		return err
	}
	cfg.SetLocal(local)
	fetcher, err := crawl.NewFetcher(cfg, logger, prometheus.NewRegistry())
	if err != nil {
		return err
	}
	// The worker's id in the crawl-wide report: its data directory's, so a
	// restart adds to its earlier figures.
	nodeID, err := store.NodeID(cfg.Data)
	if err != nil {
		fetcher.Close()
		return err
	}
	w, err := masterworker.NewWorker(fetcher, rdb, masterworker.Options{Crawl: rf.crawl, NodeID: nodeID}, cfg.Concurrency, logger)
	if err != nil {
		fetcher.Close()
		return err
	}
	defer w.Close()
	if tc != nil {
		scorer, err := crawl.TopicScorer(tc, fetcher)
		if err != nil {
			return err
		}
		w.UseTopics(scorer)
	}
	// The first Ctrl-C makes the worker leave cleanly (no more tasks, the
	// fetches in flight finish and are answered; exit 0); a second one
	// abandons them (handed back, exit 130); a third exits at once.
	runCtx, abandon := context.WithCancel(context.WithoutCancel(ctx))
	defer abandon()
	second := secondInterrupt(ctx)
	go func() {
		select {
		case <-ctx.Done():
		case <-runCtx.Done():
			return
		}
		fmt.Fprintln(stderr, "spider worker: leaving the crawl: taking no more tasks, finishing the fetches in flight (Ctrl-C again to abandon them)")
		w.Leave()
		select {
		case <-second:
			abandon()
		case <-runCtx.Done():
		}
	}()
	if err := w.Run(runCtx); err != nil {
		return err
	}
	if ctx.Err() != nil {
		fmt.Fprintf(stdout, "worker %d: left the crawl: %d URLs fetched into %s\n", w.ID(), w.Fetched(), cfg.Data)
		return nil
	}
	fmt.Fprintf(stdout, "worker %d: %d URLs fetched into %s\n", w.ID(), w.Fetched(), cfg.Data)
	return nil
}
