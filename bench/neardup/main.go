// Command neardup measures near-duplicate detection (issue #27, "what a
// page is: near-duplicates") on a websim web with copies of its articles
// and canonical links (websim --near-dups: /mirror/ exact copies, /dated/
// copies with a date line, /print/ views; with --noise, session-id and
// query variants), against the web's truth (Truth.Duplicates). It prints
//
//   - precision and recall of the duplicates found at crawl time (the
//     crawl state's Result.DuplicateOf: exact by fingerprint, near by
//     SimHash within --k bits, permuted tables), over pairs: a page found a
//     duplicate of another is right when the truth puts both in one
//     cluster; a pair of the truth is found when the crawl put both in one
//     cluster; by kind of copy;
//
//   - the same for the clusters search shows (index.ComputeClusters: records
//     order, canonical URLs folded in);
//
//   - the same offline with the SimHash of the page's main text
//     (internal/content, online in crawl order) instead of its visible text;
//
//   - the CPU per request of the crawl with near-duplicates and canonical
//     URLs on and off, alternated in the same run (process CPU, websim
//     included; medians), and the CPU per page of the parser, SimHash of
//     the visible text, content's main text, and the crawl's two hashes of
//     the text (fingerprint and SimHash) in two walks and in one
//     (dedup.PageHashes).
//
//     go run ./bench/neardup [-hosts 12] [-pages 40] [-depth 3] [-seed 27] [-k 3] [-reps 3] [-hist]
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/spider-crawler/spider/internal/content"
	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/dedup"
	"github.com/spider-crawler/spider/internal/index"
	"github.com/spider-crawler/spider/internal/parse"
	"github.com/spider-crawler/spider/internal/store"
	"github.com/spider-crawler/spider/internal/websim"
)

func main() {
	hosts := flag.Int("hosts", 12, "websim hosts")
	pages := flag.Int("pages", 40, "pages per host")
	depth := flag.Int("depth", 3, "crawl depth")
	seed := flag.Int64("seed", 27, "websim seed")
	k := flag.Int("k", 3, "near-duplicate distance (--near-dup-distance)")
	reps := flag.Int("reps", 3, "crawls with the feature on and off, alternated (medians are printed)")
	pageModel := flag.Bool("page-model", true, "websim --page-model: real-site templates (navigation, sidebar, footer on every page)")
	noise := flag.Bool("noise", true, "websim noise feature: session-id and query variants (exact duplicates), calendars")
	hist := flag.Bool("hist", false, "also print the SimHash distances of the truth's pairs and of the closest pairs that are no duplicates")
	flag.Parse()
	if err := run(*seed, *hosts, *pages, *depth, *k, *reps, *pageModel, *noise, *hist); err != nil {
		fmt.Fprintln(os.Stderr, "neardup bench:", err)
		os.Exit(1)
	}
}

// dupLog collects the crawl's "duplicate content" debug records.
type dupLog struct {
	mu   sync.Mutex
	dups map[string]found
}

type found struct {
	of   string
	near bool
}

func (l *dupLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *dupLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *dupLog) WithGroup(string) slog.Handler            { return l }
func (l *dupLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "duplicate content" {
		return nil
	}
	var u string
	var f found
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "url":
			u = a.Value.String()
		case "duplicate_of":
			f.of = a.Value.String()
		case "near":
			f.near = a.Value.Bool()
		}
		return true
	})
	l.mu.Lock()
	l.dups[u] = f
	l.mu.Unlock()
	return nil
}

func config(srv *websim.Server, dir string, seeds []string, depth int) crawl.Config {
	c := crawl.NewConfig()
	c.Data = dir
	c.Seeds = seeds
	c.MaxDepth = depth
	c.Scope = websim.ScopeAny
	c.Resolve = srv.Resolve()
	c.AllowPrivate = true
	c.Delay = 0
	c.Concurrency = 16
	c.RetryDelay = crawl.Duration(50 * time.Millisecond)
	return c
}

// uf is a union-find over URLs.
type uf map[string]string

func (u uf) find(x string) string {
	for {
		p, ok := u[x]
		if !ok || p == x {
			return x
		}
		if gp, ok := u[p]; ok {
			u[x] = gp // path halving
		}
		x = p
	}
}

func (u uf) union(a, b string) { u[u.find(a)] = u.find(b) }

// score evaluates predicted pairs (member → the page it duplicates) against
// the truth's pairs, over the pages in scope.
type score struct {
	predicted, right int
	byWhy            map[string][2]int // truth pairs: found, all
}

func evaluate(pred map[string]string, truth map[string]websim.Duplicate, inScope map[string]bool) score {
	tu, pu := uf{}, uf{}
	for u, d := range truth {
		if inScope[u] && inScope[d.Of] {
			tu.union(u, d.Of)
		}
	}
	s := score{byWhy: map[string][2]int{}}
	for m, r := range pred {
		if !inScope[m] || !inScope[r] {
			continue
		}
		s.predicted++
		if tu.find(m) == tu.find(r) {
			s.right++
		}
		pu.union(m, r)
	}
	for u, d := range truth {
		if !inScope[u] || !inScope[d.Of] {
			continue
		}
		c := s.byWhy[d.Why]
		c[1]++
		if pu.find(u) == pu.find(d.Of) {
			c[0]++
		}
		s.byWhy[d.Why] = c
	}
	return s
}

var whys = []string{"mirror", "session", "dated", "print"}

func (s score) row(name string) string {
	found, all := 0, 0
	cells := ""
	for _, w := range whys {
		c := s.byWhy[w]
		found += c[0]
		all += c[1]
		cells += fmt.Sprintf(" %d/%d |", c[0], c[1])
	}
	prec := float64(s.right) / float64(max(s.predicted, 1))
	return fmt.Sprintf("| %s | %d | %.3f | %.3f |%s", name, s.predicted, prec, float64(found)/float64(max(all, 1)), cells)
}

func run(seed int64, hosts, pagesPerHost, depth, k, reps int, pageModel, noise, hist bool) error {
	ctx := context.Background()
	wc := websim.Config{Seed: seed, Hosts: hosts, PagesPerHost: pagesPerHost, NearDups: true, PageModel: pageModel}
	if noise {
		wc.Enable = websim.FeatureNoise
	}
	srv, err := websim.Start(ctx, wc)
	if err != nil {
		return err
	}
	defer srv.Close()
	seeds := srv.SeedURLs(hosts)
	truth, err := srv.Truth(websim.TruthRules{Seeds: seeds, MaxDepth: depth, Scope: websim.ScopeAny, Canonical: true})
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "neardup-bench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	// Crawls, the feature off and on, alternated.
	var cpuOff, cpuOn []float64
	var onDir string
	var logged *dupLog
	for i := range reps {
		for _, on := range []bool{false, true} {
			dir := filepath.Join(tmp, fmt.Sprintf("crawl-%d-%v", i, on))
			cfg := config(srv, dir, seeds, depth)
			if !on {
				cfg.NearDupDistance, cfg.Canonical = 0, false
			} else {
				cfg.NearDupDistance = k
			}
			dl := &dupLog{dups: map[string]found{}}
			eng, err := crawl.New(cfg, slog.New(dl), nil)
			if err != nil {
				return err
			}
			cpu0 := cpuMillis()
			if err := eng.Run(ctx); err != nil {
				return err
			}
			cpu := cpuMillis() - cpu0
			if err := eng.Close(); err != nil {
				return err
			}
			recs, _, _, err := readStore(dir, false)
			if err != nil {
				return err
			}
			perReq := cpu / float64(max(len(recs), 1))
			if on {
				cpuOn = append(cpuOn, perReq)
				if onDir == "" {
					onDir, logged = dir, dl
				}
			} else {
				cpuOff = append(cpuOff, perReq)
			}
		}
	}

	recs, order, bodies, err := readStore(onDir, true)
	if err != nil {
		return err
	}
	inScope := map[string]bool{}
	for u, r := range recs {
		if r.Status == 200 && r.ContentType == "text/html" && r.PageNo >= 0 {
			inScope[u] = true
		}
	}
	nTruth := 0
	for u, d := range truth.Duplicates {
		if inScope[u] && inScope[d.Of] {
			nTruth++
		}
	}
	fmt.Printf("websim: seed %d, %d hosts × %d pages, --near-dups", seed, hosts, pagesPerHost)
	if pageModel {
		fmt.Print(" --page-model")
	}
	if noise {
		fmt.Print(" --enable noise")
	}
	fmt.Printf("; crawl depth %d, every host's index a seed: %d HTML pages, %d of them labelled copies of another fetched page; k = %d\n\n", depth, len(inScope), nTruth, k)

	fmt.Println("| duplicates | pairs predicted | precision | recall | mirror | session | dated | print |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	crawlPred := map[string]string{}
	exactOnly := map[string]string{}
	for u, f := range logged.dups {
		crawlPred[u] = f.of
		if !f.near {
			exactOnly[u] = f.of
		}
	}
	fmt.Println(evaluate(exactOnly, truth.Duplicates, inScope).row("crawl time, exact (fingerprint) only"))
	fmt.Println(evaluate(crawlPred, truth.Duplicates, inScope).row(fmt.Sprintf("crawl time, exact + near (SimHash of the visible text, k=%d)", k)))
	members, err := index.ComputeClusters(ctx, onDir, k)
	if err != nil {
		return err
	}
	clusterPred := map[string]string{}
	for _, m := range members {
		clusterPred[m.URL] = m.Root
	}
	fmt.Println(evaluate(clusterPred, truth.Duplicates, inScope).row("search clusters (index: exact, near, canonical)"))

	// Offline: SimHash of the main text (content, online in crawl order).
	model := content.NewModel(content.Options{Parse: parse.Options{Unresolved: true}})
	var urlsIn []string
	var fps, simVis, simMain []uint64
	for _, u := range order {
		if !inScope[u] {
			continue
		}
		base, err := url.Parse(recs[u].FinalURL)
		if err != nil || !base.IsAbs() {
			base, _ = url.Parse(u)
		}
		cp, err := model.Analyze(base, bodies[u])
		if err != nil {
			return err
		}
		fp, _ := strconv.ParseUint(recs[u].Fingerprint, 16, 64)
		sv, _ := strconv.ParseUint(recs[u].SimHash, 16, 64)
		urlsIn = append(urlsIn, u)
		fps = append(fps, fp)
		simVis = append(simVis, sv)
		simMain = append(simMain, dedup.PageSimHash(cp.MainText))
	}
	// Two passes, as the index builds its site models: every page seen
	// once, then each classified with its site's complete model (a page
	// already observed is not counted again).
	var simMain2 []uint64
	for _, u := range urlsIn {
		base, err := url.Parse(recs[u].FinalURL)
		if err != nil || !base.IsAbs() {
			base, _ = url.Parse(u)
		}
		cp, err := model.Analyze(base, bodies[u])
		if err != nil {
			return err
		}
		simMain2 = append(simMain2, dedup.PageSimHash(cp.MainText))
	}
	for _, v := range []struct {
		name string
		sims []uint64
	}{{"offline, records order: SimHash of the visible text", simVis}, {"offline, records order: SimHash of the main text (content)", simMain},
		{"offline: SimHash of the main text, site models complete (second pass)", simMain2}} {
		for _, kk := range []int{k} {
			root, _, err := dedup.Clusters(fps, v.sims, kk)
			if err != nil {
				return err
			}
			pred := map[string]string{}
			for i, r := range root {
				if r != i {
					pred[urlsIn[i]] = urlsIn[r]
				}
			}
			fmt.Println(evaluate(pred, truth.Duplicates, inScope).row(fmt.Sprintf("%s, k=%d", v.name, kk)))
		}
	}
	if hist {
		idx := map[string]int{}
		for i, u := range urlsIn {
			idx[u] = i
		}
		tu := uf{}
		for u, d := range truth.Duplicates {
			tu.union(u, d.Of)
		}
		for _, v := range []struct {
			name string
			sims []uint64
		}{{"visible", simVis}, {"main", simMain}} {
			byKind := map[string]map[int]int{}
			for u, d := range truth.Duplicates {
				i, ok1 := idx[u]
				j, ok2 := idx[d.Of]
				if !ok1 || !ok2 || v.sims[i] == 0 || v.sims[j] == 0 {
					continue
				}
				if byKind[d.Why] == nil {
					byKind[d.Why] = map[int]int{}
				}
				byKind[d.Why][dedup.HammingDistance(v.sims[i], v.sims[j])]++
			}
			non := map[int]int{}
			for i := range urlsIn {
				for j := i + 1; j < len(urlsIn); j++ {
					if v.sims[i] == 0 || v.sims[j] == 0 || tu.find(urlsIn[i]) == tu.find(urlsIn[j]) {
						continue
					}
					if d := dedup.HammingDistance(v.sims[i], v.sims[j]); d <= 12 {
						non[d]++
					}
				}
			}
			fmt.Printf("SimHash of the %s text: distances of the truth's pairs by kind %v; pairs of different clusters within 12 bits, by distance: %v\n", v.name, byKind, non)
		}
	}
	fmt.Println()
	fmt.Println("Cells by kind: truth pairs found / truth pairs (both pages fetched with 200).")
	fmt.Println()

	// CPU.
	mOff, mOn := median(cpuOff), median(cpuOn)
	fmt.Printf("| crawl (median of %d, alternated; machine shared with other work) | CPU ms per request (process, websim included) | vs off |\n|---|---|---|\n", reps)
	fmt.Printf("| --near-dup-distance 0 --canonical=false | %.3f | 1.000 |\n", mOff)
	fmt.Printf("| --near-dup-distance %d --canonical (default) | %.3f | %.3f |\n", k, mOn, mOn/mOff)
	fmt.Println()
	var htmlPages []pg
	for _, u := range urlsIn {
		base, _ := url.Parse(u)
		htmlPages = append(htmlPages, pg{base: base, body: bodies[u]})
	}
	var tParse, tSim, tContent, tTwo, tOne []float64
	for range max(reps, 3) {
		var texts []string
		tParse = append(tParse, perPage(htmlPages, func(p pg) {
			pp, _ := parse.Parse(p.base, p.body, parse.Options{Unresolved: true})
			texts = append(texts, pp.Text)
		}))
		i := 0
		tSim = append(tSim, perPage(htmlPages, func(pg) {
			dedup.PageSimHash(texts[i])
			i++
		}))
		// The crawl's two hashes of the text: two walks (before) and one
		// (dedup.PageHashes, what the fetcher calls now).
		i = 0
		tTwo = append(tTwo, perPage(htmlPages, func(pg) {
			dedup.Fingerprint([]byte(texts[i]))
			dedup.PageSimHash(texts[i])
			i++
		}))
		i = 0
		tOne = append(tOne, perPage(htmlPages, func(pg) {
			dedup.PageHashes(texts[i], true)
			i++
		}))
		m := content.NewModel(content.Options{Parse: parse.Options{Unresolved: true}})
		tContent = append(tContent, perPage(htmlPages, func(p pg) {
			cp, _ := m.Analyze(p.base, p.body)
			dedup.PageSimHash(cp.MainText)
		}))
	}
	mp, ms, mc := median(tParse), median(tSim), median(tContent)
	fmt.Printf("| per page (median of %d runs over %d pages; machine shared) | µs | vs parse.Parse |\n|---|---|---|\n", max(reps, 3), len(htmlPages))
	fmt.Printf("| parse.Parse (the crawler's parser) | %.1f | 1.00 |\n", mp)
	fmt.Printf("| dedup.PageSimHash of the visible text (what the crawl adds) | %.1f | %.2f |\n", ms, ms/mp)
	fmt.Printf("| content.Model.Analyze + PageSimHash of the main text | %.1f | %.2f |\n", mc, mc/mp)
	m2, m1 := median(tTwo), median(tOne)
	fmt.Printf("| dedup.Fingerprint + dedup.PageSimHash, two walks of the text (before) | %.1f | %.2f |\n", m2, m2/mp)
	fmt.Printf("| dedup.PageHashes, one walk (the fetcher now) | %.1f | %.2f |\n", m1, m1/mp)
	return nil
}

type pg struct {
	base *url.URL
	body []byte
}

// perPage is fn's wall time per page, after a collection so that the
// garbage of the measurement before is not collected during this one.
func perPage(pages []pg, fn func(pg)) float64 {
	runtime.GC()
	start := time.Now()
	for _, p := range pages {
		fn(p)
	}
	return float64(time.Since(start).Microseconds()) / float64(max(len(pages), 1))
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

// cpuMillis is the process's user+system CPU time so far, in ms.
func cpuMillis() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e6
}

// readStore reads the last record of each URL (in first-record order) and,
// with bodies, the stored page bodies.
func readStore(dir string, withBodies bool) (map[string]store.Record, []string, map[string][]byte, error) {
	rs, err := store.OpenRecords(dir, store.Options{ReadOnly: true})
	if err != nil {
		return nil, nil, nil, err
	}
	defer rs.Close()
	recs := map[string]store.Record{}
	var order []string
	if _, err := rs.Iterate(func(r store.Record) error {
		if _, ok := recs[r.URL]; !ok {
			order = append(order, r.URL)
		}
		recs[r.URL] = r
		return nil
	}); err != nil {
		return nil, nil, nil, err
	}
	if !withBodies {
		return recs, order, nil, nil
	}
	pf, err := store.OpenPageFiles(filepath.Join(dir, "pages"), store.Options{ReadOnly: true})
	if err != nil {
		return nil, nil, nil, err
	}
	defer pf.Close()
	bodies := map[string][]byte{}
	for u, r := range recs {
		if r.PageNo < 0 {
			continue
		}
		p, err := pf.ReadRecord(r)
		if err != nil {
			continue
		}
		bodies[u] = p.Body
	}
	return recs, order, bodies, nil
}
