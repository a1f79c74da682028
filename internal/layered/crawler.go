package layered

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/spider-crawler/spider/internal/cluster"
	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/dedup"
	"github.com/spider-crawler/spider/internal/denoise"
	"github.com/spider-crawler/spider/internal/frontier"
	"github.com/spider-crawler/spider/internal/parse"
	"github.com/spider-crawler/spider/internal/revisit"
	"github.com/spider-crawler/spider/internal/state"
	"github.com/spider-crawler/spider/internal/store"
	"github.com/spider-crawler/spider/internal/urls"
)

// Defaults of Options.
const (
	DefaultRounds = 3
	DefaultGroups = 16
)

// Options configure a layered crawl. The zero value uses the defaults.
type Options struct {
	// Rounds is the depth limit of S500: rounds 0 … Rounds−1 are crawled,
	// round r fetching the pages of depth r. Default 3.
	Rounds int
	// Groups is the number of domain-hash groups of S200 (map tasks per
	// pass). It cannot change once a crawl started. Default 16.
	Groups int
	// Workers is how many tasks this process runs at once. Default: the
	// crawl's Concurrency, at most Groups.
	Workers int
	// NoiseThreshold is the link-text ratio above which a block's links are
	// noise (S302), or above which a block is link-dense (NoiseTemplate).
	// Default parse.DefaultNoiseThreshold (1/4).
	NoiseThreshold float64
	// NoiseRule is the DOM pass's rule: NoiseTemplate (default; package
	// content: link-dense blocks are noise only when they repeat across the
	// site's pages or match the noise samples) or NoiseRatio (SPEC §2 S302:
	// every block above NoiseThreshold).
	NoiseRule string
	// Denoise tunes the clustering pass (S311–S313).
	Denoise denoise.Options
	// NoDOM and NoCluster switch a noise pass off (for measurements).
	NoDOM, NoCluster bool
	// CacheSize is the capacity of the S400 cache list. Default
	// dedup.DefaultCacheSize.
	CacheSize int
	// Redis, when set, runs the map steps as leased tasks on Redis
	// (distributed form); Crawl names the crawl's keys and NodeID this
	// process (default HOST-PID). NodeID need not be unique: each worker's
	// id is NodeID plus a number from a Redis counter, and the coordinator
	// lease carries a random token of this process besides NodeID, so two
	// processes with one NodeID (containers with one host name, each pid 1)
	// never share a task list or the coordinator role.
	Redis  redis.UniversalClient
	Crawl  string
	NodeID string
	// LeaseTTL is how long a worker's heartbeat lives: a task held by a
	// worker silent for longer is handed out again. Default 10s.
	LeaseTTL time.Duration
}

// manifest is the crawl's progress, DATA/layered/manifest.json.
type manifest struct {
	Version int      `json:"version"`
	Seeds   []string `json:"seeds"`
	Groups  int      `json:"groups"`
	Round   int      `json:"round"`
	Pass    int      `json:"pass"`
	// Phase is "fetch" (passes of Round running), "reduce" (S300/S400 of
	// Round) or "done".
	Phase string `json:"phase"`
	// Merged lists the fetch tasks of Round whose pages are in the page
	// store (S600).
	Merged  []string      `json:"merged,omitempty"`
	Reports []RoundReport `json:"reports,omitempty"`
	Started time.Time     `json:"started"`
	// Revisit is the revisit round in progress (or next) once the rounds
	// are done (revisit.go); its tasks' pages merged are in Merged.
	Revisit int `json:"revisit,omitempty"`
}

// Crawler runs a layered crawl (SPEC §2) into one data directory.
type Crawler struct {
	cfg    crawl.Config
	opt    Options
	log    *slog.Logger
	m      *metrics
	root   string
	norm   *urls.Normalizer
	filter *denoise.Filter
	set    *urlSet
	lock   *store.DirLock // DATA's lock, taken before anything is opened for writing
	cache  *dedup.Cache
	man    manifest
	// cur is the report of the round in progress.
	cur     RoundReport
	curFrom time.Time
	// fetchedN counts the URLs this process fetched (tests watch it).
	fetchedN atomic.Int64
	// instance tells this process from another with the same NodeID in
	// the coordinator lease (coordValue).
	instance string
	// gate holds the fetches while spider control paused the crawl
	// (control.go); ctl is the crawl's control with Redis, else nil.
	gate gate
	ctl  *cluster.Control
	// tasksDone counts the tasks this process finished (its report).
	tasksDone atomic.Int64
	// The coordinator's report (coordReport): the records of the page
	// store before this run (repCounts) and those main merged since.
	repMu     sync.Mutex
	repCounts cluster.Counts
	main      *mainStore
	// The manifest's round and pass at its last save, for the report.
	repRound, repPass atomic.Int64
	// repRevisit is the manifest's revisit round at its last save.
	repRevisit atomic.Int64
	// policy is the revisit policy every fetch is judged by (revisit.go);
	// sched the revisit schedule, open while coordinating; rv this run's
	// revisit counts and schedule once the coordinator ended.
	policy revisit.Policy
	sched  *state.Store
	// runStart is when coordinate started: a one-shot run's revisit
	// rounds take what was due then.
	runStart time.Time
	rvMu     sync.Mutex
	rv       crawl.ScheduleStatus
	// runRecords is how many records this run's coordinator merged into
	// the page store (RunRecords), set when coordinate ends (under repMu).
	runRecords int64
}

// New validates the settings, locks the data directory (store.LockDir: a
// second process on it is refused before anything is opened for writing)
// and opens DATA/layered. cfg is the crawl's configuration (defaults are
// applied); its Seeds start round 0. Its depth levels are always strict
// (crawl.Config.StrictLevels): round r fetches depth r, by design.
// Close releases the data directory.
func New(cfg crawl.Config, opt Options, logger *slog.Logger, reg prometheus.Registerer) (*Crawler, error) {
	cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid configuration: %w", err)
	}
	// Rounds are levels: no fetcher keeps the links beyond the limit
	// (crawl.Visit.Beyond) for a relinking no round does.
	cfg.StrictLevels, cfg.LooseDepth = true, false
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	if opt.Rounds == 0 {
		opt.Rounds = DefaultRounds
	}
	if opt.Rounds < 1 {
		return nil, fmt.Errorf("cannot crawl %d rounds: give --rounds 1 or more", opt.Rounds)
	}
	if opt.Groups == 0 {
		opt.Groups = DefaultGroups
	}
	if opt.Groups < 1 || opt.Groups > 1<<16 {
		return nil, fmt.Errorf("cannot use %d groups: give --groups between 1 and 65536", opt.Groups)
	}
	if opt.Workers <= 0 {
		opt.Workers = min(cfg.Concurrency, opt.Groups)
	}
	if opt.NoiseThreshold == 0 {
		opt.NoiseThreshold = parse.DefaultNoiseThreshold
	}
	if !(opt.NoiseThreshold > 0 && opt.NoiseThreshold <= 1) {
		return nil, fmt.Errorf("cannot use noise threshold %v: give a link-text ratio in (0, 1]", opt.NoiseThreshold)
	}
	switch opt.NoiseRule {
	case "":
		opt.NoiseRule = NoiseTemplate
	case NoiseTemplate, NoiseRatio:
	default:
		return nil, fmt.Errorf("cannot use noise rule %q: give %q or %q", opt.NoiseRule, NoiseTemplate, NoiseRatio)
	}
	if opt.LeaseTTL <= 0 {
		opt.LeaseTTL = 10 * time.Second
	}
	filter, err := denoise.NewFilter(opt.Denoise)
	if err != nil {
		return nil, err
	}
	policy, err := cfg.RevisitPolicy()
	if err != nil {
		return nil, err
	}
	c := &Crawler{policy: policy,
		cfg: cfg, opt: opt, log: logger, m: newMetrics(reg),
		root:   store.DataDir(cfg.Data).Layered(),
		norm:   &urls.Normalizer{SortQuery: cfg.SortQuery, DropParams: cfg.DropParams},
		filter: filter, instance: rand.Text(),
	}
	c.lock, err = store.LockDir(cfg.Data, "spider layered", 0)
	if err != nil {
		return nil, fmt.Errorf("cannot start the layered crawl (is another layered crawl or spider crawl running on this data directory?): %w", err)
	}
	if err := os.MkdirAll(c.root, store.DirMode); err != nil {
		c.lock.Unlock()
		return nil, fmt.Errorf("cannot create %s: %w", c.root, err)
	}
	c.set, err = openURLSet(c.root)
	if err != nil {
		c.lock.Unlock()
		return nil, err
	}
	c.cache = dedup.NewCache(opt.CacheSize, time.Now(), c.set)
	return c, nil
}

// Close releases the URL set and the data directory.
func (c *Crawler) Close() error {
	if c.set == nil {
		return nil
	}
	err := c.set.Close()
	c.set = nil
	return errors.Join(err, c.lock.Unlock())
}

// Reports returns the reports of the rounds completed so far.
func (c *Crawler) Reports() []RoundReport { return slices.Clone(c.man.Reports) }

// RunRecords returns how many records (one per URL fetched, revisits and
// retries included) this process merged into the page store while it
// coordinated in its last Run: 0 for a run that found nothing to do, and
// for a process that only worked on another coordinator's tasks. Call it
// after Run.
func (c *Crawler) RunRecords() int64 {
	c.repMu.Lock()
	defer c.repMu.Unlock()
	return c.runRecords
}

// Options returns the options with defaults applied.
func (c *Crawler) Options() Options { return c.opt }

// mapper runs the map tasks of a phase: locally on a pool of goroutines,
// or as leased tasks on Redis.
type mapper interface {
	fetch(ctx context.Context, tasks []Task) ([]*FetchResult, error)
	cluster(ctx context.Context, tasks []Task) ([]denoise.BlockResult, error)
}

// localMapper runs tasks on opt.Workers goroutines of this process.
type localMapper struct{ c *Crawler }

func (l localMapper) fetch(ctx context.Context, tasks []Task) ([]*FetchResult, error) {
	out := make([]*FetchResult, len(tasks))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(l.c.opt.Workers)
	for i, t := range tasks {
		g.Go(func() error {
			r, err := l.c.runFetch(gctx, taskDir(l.c.root, t), t)
			out[i] = r
			return err
		})
	}
	return out, g.Wait()
}

func (l localMapper) cluster(ctx context.Context, tasks []Task) ([]denoise.BlockResult, error) {
	outs := make([][]denoise.BlockResult, len(tasks))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(l.c.opt.Workers)
	for i, t := range tasks {
		g.Go(func() error {
			r, err := l.c.runCluster(gctx, t)
			outs[i] = r
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	var all []denoise.BlockResult
	for _, o := range outs {
		all = append(all, o...)
	}
	return all, nil
}

// Run crawls until the last round is done (or ctx ends: the crawl then
// continues from where it stopped when Run is called again on the same data
// directory). With Options.Redis, Run coordinates when this process holds
// (or takes) the crawl's coordinator role, and otherwise works on the
// tasks of the coordinator until the crawl is finished.
func (c *Crawler) Run(ctx context.Context) error {
	if c.opt.Redis != nil {
		return c.runDistributed(ctx)
	}
	return c.coordinate(ctx, localMapper{c})
}

// load reads the manifest, or starts a crawl (S100).
func (c *Crawler) load(ctx context.Context) error {
	path := filepath.Join(c.root, ManifestFile)
	err := readJSON(path, &c.man)
	if err == nil {
		if c.man.Groups != c.opt.Groups {
			return fmt.Errorf("cannot resume the layered crawl in %s with --groups %d: it was started with %d; use the same value or a new --data", c.cfg.Data, c.opt.Groups, c.man.Groups)
		}
		if !slices.Equal(c.man.Seeds, c.cfg.Seeds) {
			return fmt.Errorf("cannot resume the layered crawl in %s: it was started with other seed URLs (%v); use the same seeds or a new --data", c.cfg.Data, c.man.Seeds)
		}
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	// S100: the seeds are round 0's input, depth 0.
	var in []frontier.Request
	seen := map[string]bool{}
	for _, s := range c.cfg.Seeds {
		u, err := c.norm.Parse(s)
		if err != nil {
			return fmt.Errorf("cannot use seed %q: %w", s, err)
		}
		if !seen[u.String()] {
			seen[u.String()] = true
			in = append(in, frontier.Request{URL: u.String()})
		}
	}
	if err := writeInput(passFile(c.root, 0, 0), in); err != nil {
		return err
	}
	inURLs := make([]string, len(in))
	for i, r := range in {
		inURLs[i] = r.URL
	}
	if err := c.set.AddAll(ctx, inURLs, "in:0"); err != nil {
		return err
	}
	c.man = manifest{Version: 1, Seeds: c.cfg.Seeds, Groups: c.opt.Groups, Phase: "fetch", Started: time.Now().UTC()}
	return c.save()
}

func (c *Crawler) save() error {
	c.repRound.Store(int64(c.man.Round)) // for the report's goroutine
	c.repPass.Store(int64(c.man.Pass))
	c.repRevisit.Store(int64(c.man.Revisit))
	return writeJSON(filepath.Join(c.root, ManifestFile), c.man)
}

// errLimitReached stops the rounds at a pass: --max-pages URLs are fetched.
var errLimitReached = errors.New("the page limit (--max-pages) is reached")

// coordinate runs the rounds (S200–S600) with mp running the map tasks.
func (c *Crawler) coordinate(ctx context.Context, mp mapper) error {
	c.runStart = time.Now()
	if err := c.load(ctx); err != nil {
		return err
	}
	main, err := openMainStore(c.cfg.Data, c.log)
	if err != nil {
		return err
	}
	defer main.close()
	c.repMu.Lock()
	c.main = main
	c.repMu.Unlock()
	before := main.recordsAdded()
	defer func() {
		c.repMu.Lock()
		c.repCounts.Add(cluster.Counts(main.tally.Counts()))
		c.main = nil
		c.runRecords = main.recordsAdded() - before
		c.repMu.Unlock()
	}()
	if err := c.openSchedule(); err != nil {
		return err
	}
	defer c.closeSchedule(ctx)
	for c.man.Phase != "done" {
		if c.man.Round >= c.opt.Rounds {
			c.man.Phase = "done"
			break
		}
		switch c.man.Phase {
		case "fetch":
			err := c.fetchPass(ctx, mp, main)
			if errors.Is(err, errLimitReached) {
				c.log.Info("page limit reached, stopping", "max_pages", c.cfg.MaxPages, "round", c.man.Round, "pass", c.man.Pass)
				return c.save()
			}
			if err != nil {
				return err
			}
		case "reduce":
			if err := c.reduce(ctx, mp); err != nil {
				return err
			}
		default:
			return fmt.Errorf("cannot resume: %s has unknown phase %q; remove DATA/layered to start over", ManifestFile, c.man.Phase)
		}
	}
	if err := c.save(); err != nil {
		return err
	}
	if err := writeJSON(filepath.Join(c.root, ReportFile), c.man.Reports); err != nil {
		return err
	}
	return c.revisitRounds(ctx, mp, main)
}

// fetchPass runs one pass of the current round: S200 map (crawl by
// domain-hash group), reduce (gather results), S600 merge of its pages,
// and the next pass's input (redirect targets of other groups).
func (c *Crawler) fetchPass(ctx context.Context, mp mapper, main *mainStore) error {
	r, p := c.man.Round, c.man.Pass
	if c.curFrom.IsZero() || c.cur.Round != r {
		c.cur, c.curFrom = RoundReport{Round: r}, time.Now()
	}
	if ok, err := c.set.Marked(fmt.Sprintf("pass:%d:%d", r, p+1)); err != nil {
		return err
	} else if ok { // the next pass's input was stored before a crash
		c.man.Pass, c.man.Merged = p+1, nil
		return c.save()
	}
	in, err := readInput(passFile(c.root, r, p), r)
	if err != nil {
		return err
	}
	// --max-pages: a pass fetches every URL of its input, so one that
	// would go beyond the limit is cut first. Its rest is queued ahead of
	// the next pass's input (written before the cut, so no crash loses
	// it), and the crawl stops at that pass: run again with a larger
	// limit (or none), it goes on from there.
	var rest []frontier.Request
	if c.cfg.MaxPages > 0 {
		left := c.cfg.MaxPages - main.recordsAdded()
		if left <= 0 {
			return errLimitReached
		}
		if left < int64(len(in)) {
			in, rest = in[:left], in[left:]
			if err := writeInput(passFile(c.root, r, p+1), rest); err != nil {
				return err
			}
			if err := writeInput(passFile(c.root, r, p), in); err != nil {
				return err
			}
		}
	}
	if len(rest) == 0 {
		// A cut made before a crash: its rest waits in the next pass's file.
		if prev, err := readInput(passFile(c.root, r, p+1), r); err == nil {
			rest = prev
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	tasks := c.split(r, p, in)
	c.log.Info("layered pass", "round", r, "pass", p, "urls", len(in), "tasks", len(tasks))
	results, err := mp.fetch(ctx, tasks)
	if err != nil {
		return err
	}
	next := slices.Clip(rest)
	queued := map[string]bool{}
	for _, q := range rest {
		queued[q.URL] = true
	}
	var done []string // fetched in this pass, redirect targets included
	for _, res := range results {
		for _, pl := range res.Pages {
			queued[pl.URL] = true
			done = append(done, pl.URL)
		}
	}
	// The pass's pages enter the revisit schedule before the manifest
	// moves on: a crash in between writes them again (those written are
	// seen by then and skipped).
	if err := c.scheduleFirst(ctx, r, results); err != nil {
		return err
	}
	for i, t := range tasks {
		if !slices.Contains(c.man.Merged, t.ID()) {
			if err := main.merge(taskDir(c.root, t)); err != nil {
				return err
			}
			c.man.Merged = append(c.man.Merged, t.ID())
			if err := c.save(); err != nil {
				return err
			}
		}
		for _, d := range results[i].Redirects {
			if queued[d.URL] {
				continue
			}
			ok, err := c.set.Contains(ctx, d.URL)
			if err != nil {
				return err
			}
			if !ok && d.Redirects <= c.cfg.MaxRedirects {
				queued[d.URL] = true
				next = append(next, d)
			}
		}
	}
	// Seeds given by spider control: the next pass of this round.
	seeds, err := c.controlSeeds(ctx, r, queued)
	if err != nil {
		return err
	}
	next = append(next, seeds...)
	if len(next) == 0 {
		c.man.Phase, c.man.Merged = "reduce", nil
		return c.save()
	}
	if err := writeInput(passFile(c.root, r, p+1), next); err != nil {
		return err
	}
	nextURLs := make([]string, len(next), len(next)+len(done))
	for i, d := range next {
		nextURLs[i] = d.URL
	}
	if err := c.set.AddAll(ctx, append(nextURLs, done...), fmt.Sprintf("pass:%d:%d", r, p+1)); err != nil {
		return err
	}
	c.man.Pass, c.man.Merged = p+1, nil
	return c.save()
}

// split is the S200 partition of a pass's URLs into fetch tasks, one per
// non-empty group, in group order.
func (c *Crawler) split(r, p int, in []frontier.Request) []Task {
	byGroup := map[int][]frontier.Request{}
	for _, q := range in {
		g := GroupOf(q.URL, c.opt.Groups)
		byGroup[g] = append(byGroup[g], q)
	}
	var tasks []Task
	for g := range c.opt.Groups {
		if len(byGroup[g]) > 0 {
			tasks = append(tasks, Task{Kind: KindFetch, Round: r, Pass: p, Group: g, Reqs: byGroup[g]})
		}
	}
	return tasks
}

// reduce is S300–S500 for the current round: gather the links of all its
// passes, remove noise (the DOM pass already ran in the map; here the
// clustering map and reduce), remove duplicates with the cache, store the
// next round's input.
func (c *Crawler) reduce(ctx context.Context, mp mapper) error {
	r := c.man.Round
	repPath := filepath.Join(roundDir(c.root, r), ReportFile)
	if ok, err := c.set.Marked(fmt.Sprintf("reduce:%d", r)); err != nil {
		return err
	} else if ok { // finished before a crash: take its report
		var rep RoundReport
		if err := readJSON(repPath, &rep); err != nil {
			return err
		}
		return c.advance(rep)
	}
	if c.curFrom.IsZero() || c.cur.Round != r {
		c.cur, c.curFrom = RoundReport{Round: r}, time.Now()
	}
	rep := RoundReport{Round: r, Outcomes: map[string]int{}}
	var occ []string // link occurrences, in page order
	var fetched []string
	for p := 0; ; p++ {
		in, err := readInput(passFile(c.root, r, p), r)
		if errors.Is(err, fs.ErrNotExist) || err != nil && p > 0 {
			break
		} else if err != nil {
			return err
		}
		rep.Passes++
		if p == 0 {
			rep.URLsIn = len(in)
		} else {
			rep.Redirects += len(in)
		}
		for _, t := range c.split(r, p, in) {
			var res FetchResult
			if err := readJSON(filepath.Join(taskDir(c.root, t), ResultFile), &res); err != nil {
				return fmt.Errorf("cannot reduce round %d: result of task %s missing: %w", r, t.ID(), err)
			}
			rep.Fetched += res.Fetched
			rep.Pages += res.Stored
			for k, v := range res.Outcomes {
				rep.Outcomes[k] += v
			}
			for _, pl := range res.Pages {
				fetched = append(fetched, pl.URL)
				rep.Links += len(pl.Links) + len(pl.Noise)
				rep.NoiseDOM += len(pl.Noise)
				occ = append(occ, pl.Links...)
			}
		}
	}
	// S311–S314: cluster the distinct candidates, by domain-hash group.
	var uniq []string
	seen := map[string]bool{}
	for _, u := range occ {
		if !seen[u] {
			seen[u] = true
			uniq = append(uniq, u)
		}
	}
	rep.Candidates = len(uniq)
	removed := map[string]string{}
	if !c.opt.NoCluster && len(uniq) > 0 {
		byGroup := map[int][]string{}
		for _, u := range uniq {
			g := GroupOf(u, c.opt.Groups)
			byGroup[g] = append(byGroup[g], u)
		}
		var tasks []Task
		for g := range c.opt.Groups {
			if len(byGroup[g]) > 0 {
				tasks = append(tasks, Task{Kind: KindCluster, Round: r, Group: g, URLs: byGroup[g]})
			}
		}
		blocks, err := mp.cluster(ctx, tasks)
		if err != nil {
			return err
		}
		merged := denoise.Merge(blocks)
		rep.Blocks, rep.Clusters, rep.NoiseClusters = merged.Blocks, merged.Clusters, merged.NoiseClusters
		for _, rm := range merged.Removed {
			removed[rm.URL] = rm.Reason
		}
		if err := writeJSON(filepath.Join(roundDir(c.root, r), "clean.json"), merged); err != nil { // S314
			return err
		}
	}
	// S400: the cache de-dup over every clean occurrence.
	now := time.Now()
	for _, u := range fetched { // S401: the round's URLs, redirect targets included
		c.cache.Admit(u, now)
	}
	var next []frontier.Request
	for _, u := range occ {
		switch removed[u] {
		case denoise.ReasonNoiseCluster:
			rep.NoiseCluster++
			continue
		case denoise.ReasonOutlier:
			rep.NoiseOutlier++
			continue
		}
		hit, err := c.cache.Check(ctx, u, time.Now())
		if err != nil {
			return err
		}
		switch hit {
		case dedup.InVisit:
			rep.DupVisit++
		case dedup.InCache:
			rep.DupCache++
		case dedup.InStore:
			rep.DupStore++
		case dedup.New:
			next = append(next, frontier.Request{URL: u, Depth: r + 1, Priority: r + 1})
		}
	}
	rep.New = len(next)
	rep.Evicted = c.cache.Stats().Evicted
	rep.Elapsed = time.Since(c.curFrom)
	c.m.noise.WithLabelValues("dom").Add(float64(rep.NoiseDOM))
	c.m.noise.WithLabelValues("cluster").Add(float64(rep.NoiseCluster))
	c.m.noise.WithLabelValues("outlier").Add(float64(rep.NoiseOutlier))
	c.m.dups.WithLabelValues("visit").Add(float64(rep.DupVisit))
	c.m.dups.WithLabelValues("cache").Add(float64(rep.DupCache))
	c.m.dups.WithLabelValues("store").Add(float64(rep.DupStore))
	// S500: a next round only below the depth limit.
	nextURLs := make([]string, 0, len(next))
	if r+1 < c.opt.Rounds && len(next) > 0 {
		if err := writeInput(passFile(c.root, r+1, 0), next); err != nil {
			return err
		}
		for _, q := range next {
			nextURLs = append(nextURLs, q.URL)
		}
	}
	if err := writeJSON(repPath, rep); err != nil {
		return err
	}
	// Redirect targets fetched inside their task were not stored yet.
	if err := c.set.AddAll(ctx, append(nextURLs, fetched...), fmt.Sprintf("reduce:%d", r)); err != nil {
		return err
	}
	return c.advance(rep)
}

// advance records a finished round and moves to the next one (S500).
func (c *Crawler) advance(rep RoundReport) error {
	c.man.Reports = append(c.man.Reports, rep)
	c.cache.Rotate()
	c.m.rounds.Inc()
	c.log.Info("layered round done", "round", rep.Round, "fetched", rep.Fetched, "new", rep.New)
	if rep.New == 0 || rep.Round+1 >= c.opt.Rounds {
		c.man.Round, c.man.Phase, c.man.Merged = rep.Round+1, "done", nil
	} else {
		c.man.Round, c.man.Pass, c.man.Phase, c.man.Merged = rep.Round+1, 0, "fetch", nil
	}
	if err := c.save(); err != nil {
		return err
	}
	return writeJSON(filepath.Join(c.root, ReportFile), c.man.Reports)
}

// mainStore is the one page store of the data directory (S600 target).
type mainStore struct {
	pages *store.PageFiles
	recs  *store.Records
	log   *slog.Logger
	added int         // record lines in records.jsonl: one per URL fetched (more after a crash)
	tally crawl.Tally // the records merged by this run
}

func openMainStore(dir string, log *slog.Logger) (*mainStore, error) {
	pages, err := store.OpenPageFiles(store.DataDir(dir).Pages(), store.Options{Logger: log})
	if err != nil {
		return nil, err
	}
	recs, err := store.OpenRecords(dir, store.Options{Logger: log})
	if err != nil {
		pages.Close()
		return nil, err
	}
	added := 0
	err = store.EachRecordLine(dir, func(_ int, l store.RecordLine) error {
		if l.Err == nil {
			added++
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		recs.Close()
		pages.Close()
		return nil, err
	}
	return &mainStore{pages: pages, recs: recs, log: log, added: added}, nil
}

func (m *mainStore) close() error {
	return errors.Join(m.recs.Sync(), m.pages.Sync(), m.recs.Close(), m.pages.Close())
}

// recordsAdded is the number of URLs fetched by all runs, as records
// merged into records.jsonl (for --max-pages).
func (m *mainStore) recordsAdded() int64 { return int64(m.added) }

// merge is S600 for one task: its records (the last one of each URL) and
// page bodies are appended to the main store with new page numbers, then
// the task's copies are removed, records first (its result.json stays); a
// task whose records are gone was merged, and only its pages' removal is
// finished. A crash between
// the appends and the manifest update merges the task again on restart:
// its records then appear twice in records.jsonl, and readers keep the
// last one, as after a crash of the plain crawl.
func (m *mainStore) merge(dir string) error {
	// A merge killed while it removed the task's copies: its records are
	// gone (removed first), so it was merged; the pages' removal is
	// finished.
	if _, err := os.Stat(store.DataDir(dir).Records()); errors.Is(err, fs.ErrNotExist) {
		return removePages(dir)
	}
	recs, err := store.OpenRecords(dir, store.Options{Logger: m.log})
	if err != nil {
		return err
	}
	var list []store.Record
	idx := map[string]int{}
	_, err = recs.Iterate(func(r store.Record) error {
		if i, ok := idx[r.URL]; ok {
			list[i] = r
			return nil
		}
		idx[r.URL] = len(list)
		list = append(list, r)
		return nil
	})
	recs.Close()
	if err != nil {
		return fmt.Errorf("cannot read records of %s: %w", dir, err)
	}
	pages, err := store.OpenPageFiles(store.DataDir(dir).Pages(), store.Options{Logger: m.log})
	if err != nil {
		return err
	}
	defer pages.Close()
	for _, r := range list {
		if r.PageNo >= 0 {
			pg, err := pages.ReadRecord(r)
			if err != nil {
				return fmt.Errorf("cannot merge page of %s: %w", r.URL, err)
			}
			no, err := m.pages.Append(pg.URL, r.FetchedAt, pg.Body)
			if err != nil {
				return fmt.Errorf("cannot merge page of %s: %w", r.URL, err)
			}
			r.PageNo = no
		}
		if err := m.recs.Append(r); err != nil {
			return fmt.Errorf("cannot merge record of %s: %w", r.URL, err)
		}
		m.added++
		m.tally.Add(r)
	}
	if err := errors.Join(m.pages.Sync(), m.recs.Sync(), pages.Close()); err != nil {
		return err
	}
	// The records go first: a kill after that leaves pages no record
	// points at (the next merge only removes them), never records whose
	// pages are gone (a merge that could not be redone).
	if err := removeIfExists(store.DataDir(dir).Records()); err != nil {
		return err
	}
	return removePages(dir)
}

// removePages removes a merged task's page files: renamed first (one
// step), then removed, so no kill leaves a half-removed page store under
// the name a reader opens.
func removePages(dir string) error {
	gone := filepath.Join(dir, "pages.merged")
	if err := os.Rename(store.DataDir(dir).Pages(), gone); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("cannot remove the merged pages of %s: %w", dir, err)
	}
	return os.RemoveAll(gone)
}
