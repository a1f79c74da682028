package layered

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/spider-crawler/spider/internal/content"
	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/denoise"
	"github.com/spider-crawler/spider/internal/frontier"
	"github.com/spider-crawler/spider/internal/parse"
	"github.com/spider-crawler/spider/internal/store"
	"github.com/spider-crawler/spider/internal/urls"
)

// The DOM pass's noise rules (Options.NoiseRule).
const (
	// NoiseTemplate: link-dense blocks are noise only when they are the
	// site's template or match the noise samples (package content).
	NoiseTemplate = "template"
	// NoiseRatio: blocks whose link-text ratio is above the threshold are
	// noise (SPEC §2 S302).
	NoiseRatio = "ratio"
)

// Task kinds.
const (
	// KindFetch crawls one domain-hash group of a pass (S200 map) and runs
	// the DOM pass on its pages (S301/S302).
	KindFetch = "fetch"
	// KindCluster clusters the candidate URLs of one domain-hash group
	// (S312/S313 map).
	KindCluster = "cluster"
	// KindRevisit fetches again the URLs of one domain-hash group that the
	// revisit schedule made due (a revisit round, revisit.go): conditional
	// GETs with the stored validators, no DOM pass, no links followed.
	KindRevisit = "revisit"
)

// Task is one map task: one domain-hash group of one pass of one round.
type Task struct {
	Kind  string `json:"kind"`
	Round int    `json:"round"`
	Pass  int    `json:"pass"`
	Group int    `json:"group"`
	// Reqs are the URLs to fetch (KindFetch, KindRevisit), all of the
	// group. Their Schedule travels in Schedules (a JSON string would
	// mangle its binary bytes).
	Reqs []frontier.Request `json:"reqs,omitempty"`
	// Schedules are the revisit schedule entries of Reqs (KindRevisit),
	// index for index; nil for a URL without one.
	Schedules [][]byte `json:"schedules,omitempty"`
	// URLs are the candidates to cluster (KindCluster).
	URLs []string `json:"urls,omitempty"`
}

// ID names the task uniquely within a crawl.
func (t Task) ID() string {
	return fmt.Sprintf("%s-r%03d-p%02d-g%04d", t.Kind, t.Round, t.Pass, t.Group)
}

// GroupOf is the S200 split: a hash of the URL's registrable domain modulo
// groups, so that every URL of a domain lands in the same group (and so
// with the same crawl node). URLs that do not parse go to group 0.
func GroupOf(raw string, groups int) int {
	if groups <= 1 {
		return 0
	}
	return int(xxhash.Sum64String(denoise.BlockKey(raw)) % uint64(groups))
}

// PageLinks is what the map made of one fetched URL.
type PageLinks struct {
	URL     string `json:"url"`
	Outcome string `json:"outcome"`
	// Links are the followable links of depth round+1 that survived the
	// DOM pass, normalised and in page order.
	Links []string `json:"links,omitempty"`
	// Noise are the followable links the DOM pass removed.
	Noise []string `json:"noise,omitempty"`
	// Obs is what the answer said for the revisit schedule, which the
	// coordinator judges with its policy (revisit.go).
	Obs *observation `json:"obs,omitempty"`
}

// observation is the part of a crawl.Visit the revisit policy reads
// (crawl.ScheduleVisit), as a task carries it to the coordinator: At is
// when the answer was read.
type observation struct {
	At           time.Time     `json:"at"`
	Conditional  bool          `json:"conditional,omitempty"`
	NotModified  bool          `json:"not_modified,omitempty"`
	ETag         string        `json:"etag,omitempty"`
	LastModified time.Time     `json:"last_modified,omitzero"`
	Fingerprint  uint64        `json:"fingerprint,omitempty"`
	ContentHash  uint64        `json:"content_hash,omitempty"`
	RetryAfter   time.Duration `json:"retry_after,omitempty"`
}

// observe keeps what v said for the schedule, at now.
func observe(v crawl.Visit, now time.Time) *observation {
	return &observation{At: now, Conditional: v.Conditional, NotModified: v.NotModified, ETag: v.ETag,
		LastModified: v.LastModified, Fingerprint: v.Fingerprint, ContentHash: v.ContentHash, RetryAfter: v.RetryAfter}
}

// FetchResult is the output of a fetch task, saved as result.json in the
// task's directory next to its pages and records.
type FetchResult struct {
	Task  string      `json:"task"`
	Pages []PageLinks `json:"pages"`
	// Redirects are redirect targets, fetched in the next pass of the same
	// round unless already stored.
	Redirects []frontier.Request `json:"redirects,omitempty"`
	Fetched   int                `json:"fetched"`
	Stored    int                `json:"stored"`
	Outcomes  map[string]int     `json:"outcomes"`
}

// linkLine is one line of a task's links.jsonl: a URL done and what the
// fetcher discovered on it. It is written after the fetcher stored the
// record, so a URL with a line is never fetched again by the task.
type linkLine struct {
	URL        string             `json:"url"`
	Outcome    string             `json:"outcome"`
	Discovered []frontier.Request `json:"discovered,omitempty"`
	Obs        *observation       `json:"obs,omitempty"`
}

// runFetch executes a fetch task in dir (created if needed): S200's crawl
// of one group, then S301/S302 on its pages. A task whose result.json
// exists is not run again; a task interrupted half-way continues without
// refetching the URLs it finished.
func (c *Crawler) runFetch(ctx context.Context, dir string, t Task) (*FetchResult, error) {
	resPath := filepath.Join(dir, ResultFile)
	var done FetchResult
	if err := readJSON(resPath, &done); err == nil {
		return &done, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	lines, err := readLinks(filepath.Join(dir, "links.jsonl"))
	if err != nil {
		return nil, err
	}
	if err := c.crawlGroup(ctx, dir, t, lines); err != nil {
		return nil, err
	}
	var res *FetchResult
	if t.Kind == KindRevisit {
		res, err = c.revisitResult(dir, t, lines)
	} else {
		res, err = c.domPass(dir, t, lines)
	}
	if err != nil {
		return nil, err
	}
	if err := writeJSON(resPath, res); err != nil {
		return nil, err
	}
	return res, nil
}

func readLinks(path string) (*linkLog, error) {
	l := &linkLog{path: path, done: map[string]int{}}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return l, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %w", path, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var ll linkLine
		if json.Unmarshal(sc.Bytes(), &ll) != nil {
			continue // a torn last line: that URL is fetched again
		}
		l.add(ll)
	}
	return l, sc.Err()
}

// linkLog is the in-memory view of links.jsonl.
type linkLog struct {
	path  string
	lines []linkLine
	done  map[string]int // URL → index in lines
}

func (l *linkLog) add(ll linkLine) {
	if i, ok := l.done[ll.URL]; ok {
		l.lines[i] = ll
		return
	}
	l.done[ll.URL] = len(l.lines)
	l.lines = append(l.lines, ll)
}

// hostQueue is one host's URLs inside a group and when it may be asked next.
type hostQueue struct {
	reqs []frontier.Request
	next time.Time
}

// crawlGroup fetches the task's URLs with one crawl.Fetcher, one request at
// a time: the group's hosts are served in turn, each no sooner than the
// configured delay (or its robots.txt Crawl-delay, or a back-off) after its
// previous request ended. Since a domain's URLs all belong to one group and
// a group is crawled by one task at a time, this is all the politeness a
// host needs. Redirect targets are returned for the next pass.
func (c *Crawler) crawlGroup(ctx context.Context, dir string, t Task, log *linkLog) error {
	cfg := c.cfg
	cfg.Data = dir
	cfg.WARC = false
	cfg.MaxDepth = c.opt.Rounds - 1
	if cfg.MaxRate > 0 {
		cfg.MaxRate = cfg.MaxRate / float64(max(c.opt.Workers, 1))
	}
	f, err := crawl.NewFetcher(cfg, c.log, prometheus.NewRegistry())
	if err != nil {
		return err
	}
	defer f.Close()
	lf, err := os.OpenFile(log.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("cannot open %s: %w", log.path, err)
	}
	defer lf.Close()

	queued := map[string]bool{}
	hosts := map[string]*hostQueue{}
	var order []string
	push := func(r frontier.Request, front bool) {
		u, err := url.Parse(r.URL)
		key := r.URL
		if err == nil {
			key = urls.HostPort(u)
		}
		r.Key = key
		q := hosts[key]
		if q == nil {
			q = &hostQueue{}
			hosts[key] = q
			order = append(order, key)
		}
		if front {
			q.reqs = append([]frontier.Request{r}, q.reqs...)
		} else {
			q.reqs = append(q.reqs, r)
		}
	}
	for i, r := range t.Reqs {
		if _, ok := log.done[r.URL]; ok || queued[r.URL] {
			continue
		}
		if i < len(t.Schedules) {
			r.Schedule = string(t.Schedules[i])
		}
		queued[r.URL] = true
		push(r, false)
	}
	delay := time.Duration(cfg.Delay)
	for {
		var q *hostQueue
		for _, k := range order { // earliest ready host; ties in arrival order
			h := hosts[k]
			if len(h.reqs) > 0 && (q == nil || h.next.Before(q.next)) {
				q = h
			}
		}
		if q == nil {
			return nil
		}
		if wait := time.Until(q.next); wait > 0 {
			timer := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				timer.Stop()
				return ctx.Err()
			case <-timer.C:
			}
		}
		// spider control: no new request while the crawl is paused.
		if err := c.gate.enter(ctx); err != nil {
			return err
		}
		req := q.reqs[0]
		q.reqs = q.reqs[1:]
		v, err := f.Visit(ctx, req, time.Now())
		c.gate.leave()
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		q.next = time.Now().Add(max(delay, v.CrawlDelay, v.Delay))
		if v.Retry {
			req.Attempt++
			push(req, true)
			continue
		}
		// Links (depth+1) and redirect targets (same depth) alike go to the
		// reduce: only it knows every URL stored so far, so a target is
		// fetched in the next pass only if no round had it.
		ll := linkLine{URL: req.URL, Outcome: v.Outcome, Discovered: v.Discovered, Obs: observe(v, time.Now())}
		b, _ := json.Marshal(ll)
		if _, err := lf.Write(append(b, '\n')); err != nil {
			return fmt.Errorf("cannot append to %s: %w", log.path, err)
		}
		log.add(ll)
		c.m.fetched.Inc()
		c.fetchedN.Add(1)
	}
}

// domPass is S301/S302 over the task's stored pages: each HTML page is
// split into blocks (parse.Blocks drops style, script and the head), and
// the followable links found only in noise blocks are noise. Links outside
// every block (a refresh) and links the blocks do not see are kept.
//
// With NoiseRatio a block is noise when its link-text ratio is above the
// threshold (SPEC §2 S302). With NoiseTemplate (package content) it is
// noise when it is link-dense and repeats across the pages of its site or
// matches the noise samples: the pass reads the task's pages twice, first
// counting each site's blocks into the group's site models (carried from
// the group's earlier tasks, sitesFile), then classifying each page with
// them, so that a site's first page is judged with the others of its round.
func (c *Crawler) domPass(dir string, t Task, log *linkLog) (*FetchResult, error) {
	res := &FetchResult{Task: t.ID(), Outcomes: map[string]int{}}
	recs := map[string]store.Record{}
	r, err := store.OpenRecords(dir, store.Options{Logger: c.log})
	if err != nil {
		return nil, err
	}
	if _, err := r.Iterate(func(rec store.Record) error { recs[rec.URL] = rec; return nil }); err != nil {
		r.Close()
		return nil, fmt.Errorf("cannot read the records of task %s: %w", t.ID(), err)
	}
	r.Close()
	pages, err := store.OpenPageFiles(store.DataDir(dir).Pages(), store.Options{Logger: c.log})
	if err != nil {
		return nil, err
	}
	defer pages.Close()
	// followable returns a line's links of the next depth, adding its
	// redirect targets to res.
	followable := func(ll linkLine, redirects bool) []string {
		var links []string
		for _, d := range ll.Discovered {
			if d.Depth == t.Round {
				if redirects {
					res.Redirects = append(res.Redirects, d)
				}
				continue
			}
			links = append(links, d.URL)
		}
		return links
	}
	// page returns the stored HTML page of a line worth the DOM pass.
	page := func(ll linkLine, links []string) (store.Record, []byte, bool, error) {
		rec, ok := recs[ll.URL]
		if !ok || rec.PageNo < 0 || rec.Status != 200 || !isHTML(rec.ContentType) || len(links) == 0 || c.opt.NoDOM {
			return rec, nil, false, nil
		}
		pg, err := pages.ReadRecord(rec)
		if err != nil {
			return rec, nil, false, fmt.Errorf("cannot read page of %s: %w", ll.URL, err)
		}
		return rec, pg.Body, true, nil
	}
	// The template rule, one site at a time: its pages of the task are
	// extracted and counted into its model, then judged with it; only one
	// site's pages are held at once.
	var templateNoise map[string]map[string]bool // page URL → its noise links
	if c.opt.NoiseRule == NoiseTemplate && !c.opt.NoDOM {
		model := c.loadSites(t)
		templateNoise = map[string]map[string]bool{}
		var hosts []string
		byHost := map[string][]int{}
		for i, ll := range log.lines {
			rec, ok := recs[ll.URL]
			if !ok {
				continue
			}
			h := pageBase(rec).Hostname()
			if _, seen := byHost[h]; !seen {
				hosts = append(hosts, h)
			}
			byHost[h] = append(byHost[h], i)
		}
		for _, h := range hosts {
			site := model.Site(h)
			var pages []*content.Page
			var urls []string
			for _, i := range byHost[h] {
				ll := log.lines[i]
				rec, body, ok, err := page(ll, followable(ll, false))
				if err != nil {
					return nil, err
				}
				if !ok {
					continue
				}
				p, err := content.Extract(pageBase(rec), body, model.Options())
				if err != nil {
					continue
				}
				site.Observe(p)
				pages = append(pages, p)
				urls = append(urls, ll.URL)
			}
			for i, p := range pages {
				p.Classify(site, model.Options())
				templateNoise[urls[i]] = c.noiseSet(p.NoiseLinks())
			}
		}
		c.saveSites(t, model)
	}
	for _, ll := range log.lines {
		res.Fetched++
		res.Outcomes[ll.Outcome]++
		pl := PageLinks{URL: ll.URL, Outcome: ll.Outcome, Obs: ll.Obs}
		links := followable(ll, true)
		if rec, ok := recs[ll.URL]; ok && rec.PageNo >= 0 {
			res.Stored++
		}
		var noise map[string]bool
		if templateNoise != nil {
			noise = templateNoise[ll.URL]
		} else if rec, body, ok, err := page(ll, links); err != nil {
			return nil, err
		} else if ok {
			noise = c.noiseLinks(rec, body)
		}
		for _, l := range links {
			if noise[l] {
				pl.Noise = append(pl.Noise, l)
			} else {
				pl.Links = append(pl.Links, l)
			}
		}
		res.Pages = append(res.Pages, pl)
	}
	return res, nil
}

func isHTML(ct string) bool { return ct == "text/html" || ct == "application/xhtml+xml" }

// pageBase is the URL a stored page's links resolve against.
func pageBase(rec store.Record) *url.URL {
	base, err := url.Parse(rec.FinalURL)
	if err != nil || !base.IsAbs() {
		base, _ = url.Parse(rec.URL)
	}
	if base == nil {
		base = &url.URL{}
	}
	return base
}

// noiseLinks returns the normalised URLs that appear only in noise blocks
// of the page (NoiseRatio).
func (c *Crawler) noiseLinks(rec store.Record, body []byte) map[string]bool {
	blocks := parse.Blocks(pageBase(rec), body)
	return c.noiseSet(parse.NoiseLinks(blocks, c.opt.NoiseThreshold))
}

// noiseSet returns the normalised URLs of noise that are not also in kept.
func (c *Crawler) noiseSet(noise, kept []parse.Link) map[string]bool {
	keep := map[string]bool{}
	for _, l := range kept {
		if n, err := c.norm.Normalize(l.URL); err == nil {
			keep[n.String()] = true
		}
	}
	out := map[string]bool{}
	for _, l := range noise {
		if n, err := c.norm.Normalize(l.URL); err == nil && !keep[n.String()] {
			out[n.String()] = true
		}
	}
	return out
}

// sitesFile is where the site models of a group are kept after a fetch
// task of round r, pass p: DATA/layered/sites/group-G.rRRRpPP.bin. A task
// reads the newest file of its group from an earlier task (never its own,
// so a task run again after a crash counts its pages once) and, once its
// own is written, removes the earlier ones but that newest.
func sitesFile(root string, t Task) string {
	return filepath.Join(root, "sites", fmt.Sprintf("group-%04d.r%03dp%02d.bin", t.Group, t.Round, t.Pass))
}

// contentOptions are the content model's options for this crawl.
func (c *Crawler) contentOptions() content.Options {
	return content.Options{LinkDensity: c.opt.NoiseThreshold, Samples: c.filter}
}

// loadSites returns the group's site models as its newest earlier task
// left them, or empty ones (first task, a file that does not read: the
// model is only a hint, so it starts again with a warning).
func (c *Crawler) loadSites(t Task) *content.Model {
	own := sitesFile(c.root, t)
	files, _ := filepath.Glob(filepath.Join(c.root, "sites", fmt.Sprintf("group-%04d.r*.bin", t.Group)))
	slices.Sort(files)
	for i := len(files) - 1; i >= 0; i-- {
		if files[i] >= own {
			continue
		}
		b, err := os.ReadFile(files[i])
		if err == nil {
			var m *content.Model
			if m, err = content.ReadModel(b, c.contentOptions()); err == nil {
				return m
			}
		}
		c.log.Warn("cannot read the site models of an earlier round; starting them again", "file", files[i], "err", err)
		break
	}
	return content.NewModel(c.contentOptions())
}

// saveSites writes the group's site models for its later tasks and removes
// the files of earlier tasks. A failure is logged: later tasks then learn
// the sites again.
func (c *Crawler) saveSites(t Task, m *content.Model) {
	own := sitesFile(c.root, t)
	var buf bytes.Buffer
	m.WriteTo(&buf)
	if err := writeFileAtomic(own, buf.Bytes()); err != nil {
		c.log.Warn("cannot save the site models", "file", own, "err", err)
		return
	}
	files, _ := filepath.Glob(filepath.Join(c.root, "sites", fmt.Sprintf("group-%04d.r*.bin", t.Group)))
	slices.Sort(files)
	// Keep the newest earlier file too: this task, run again after a
	// crash, reads it rather than its own.
	var earlier []string
	for _, f := range files {
		if f < own {
			earlier = append(earlier, f)
		}
	}
	for i := 0; i < len(earlier)-1; i++ {
		os.Remove(earlier[i])
	}
}

// runCluster executes a cluster task: S312/S313 on each domain block of
// the group.
func (c *Crawler) runCluster(ctx context.Context, t Task) ([]denoise.BlockResult, error) {
	blocks := denoise.SplitBlocks(t.URLs)
	out := make([]denoise.BlockResult, 0, len(blocks))
	for name, list := range blocks {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		out = append(out, c.filter.Block(name, list))
	}
	return out, nil
}
