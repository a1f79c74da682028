// Command content measures what package content makes of pages (issue
// #27, "what a page is") on a websim web with Config.PageModel: each page
// has the same navigation, sidebar, footer and held-out noise blocks
// (share widget, language switcher, print/export links, tag cloud,
// "sponsored" box: kinds the built-in noise samples do not describe) on
// every page of its host, and link-dense content unique to its page
// (tables of contents, editorial paragraphs dense with links).
//
// It prints noise-link precision and recall and the share of content links
// kept, against websim's labels (Truth.LinkBlocks), for the design §2 ratio
// rule and the template rule: with every page of the site seen first (the
// index build, two passes), online in crawl order (each page judged with
// the pages before it), and with no model at all (a site's first page).
// Then the pages a layered crawl reaches with each rule, against a plain
// crawl of the same depth; then the CPU per page of the parser alone
// (parse.Parse, what the crawler runs today), of the one-pass
// parse.ParseBlocks, and of content.Model.Analyze.
//
//	go run ./bench/content [-hosts 12] [-pages 60] [-depth 2] [-seed 27] [-reps 5]
//
// With -docs DIR it instead serves DIR (a real documentation site, such as
// /usr/share/doc/postgresql-doc-15/html from the Debian package
// postgresql-doc-15) on loopback and prints the pages a plain crawl of
// -depth from DIR/index.html fetches and those a layered crawl of depth+1
// rounds fetches with each noise rule.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/spider-crawler/spider/internal/content"
	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/denoise"
	"github.com/spider-crawler/spider/internal/layered"
	"github.com/spider-crawler/spider/internal/parse"
	"github.com/spider-crawler/spider/internal/store"
	"github.com/spider-crawler/spider/internal/websim"
)

func main() {
	hosts := flag.Int("hosts", 12, "websim hosts")
	pages := flag.Int("pages", 60, "pages per host")
	depth := flag.Int("depth", 2, "depth of the plain crawl (the layered crawl runs depth+1 rounds)")
	seed := flag.Int64("seed", 27, "websim seed")
	reps := flag.Int("reps", 5, "repetitions of the CPU measurement (medians are printed)")
	docs := flag.String("docs", "", "serve this directory (a documentation site) on loopback and compare the crawls of it instead")
	flag.Parse()
	if *docs != "" {
		if err := runDocs(*docs, *depth); err != nil {
			fmt.Fprintln(os.Stderr, "content bench:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*seed, *hosts, *pages, *depth, *reps); err != nil {
		fmt.Fprintln(os.Stderr, "content bench:", err)
		os.Exit(1)
	}
}

// score counts (page, URL) pairs: a URL of a page is noise when every <a>
// link to it on the page is in a noise block (a URL also linked from
// content is kept, as the layered crawl does).
type score struct {
	tp, fp, fn            int // noise
	content, contentKept  int
	toc, tocKept          int
	edit, editKept        int
	heldOut, heldOutFound int
}

func (s *score) add(pred map[string]bool, truth []websim.LinkBlock) {
	noise, blocks := truthNoise(truth)
	for u, isNoise := range noise {
		p := pred[u]
		switch {
		case p && isNoise:
			s.tp++
		case p:
			s.fp++
		case isNoise:
			s.fn++
		}
		if !isNoise {
			s.content++
			if !p {
				s.contentKept++
			}
			if blocks[u]["toc"] {
				s.toc++
				if !p {
					s.tocKept++
				}
			}
			if blocks[u]["editorial"] {
				s.edit++
				if !p {
					s.editKept++
				}
			}
		} else if allHeldOut(truth, u) {
			s.heldOut++
			if p {
				s.heldOutFound++
			}
		}
	}
}

func (s score) row(name string) string {
	prec := float64(s.tp) / float64(max(s.tp+s.fp, 1))
	rec := float64(s.tp) / float64(max(s.tp+s.fn, 1))
	return fmt.Sprintf("| %s | %.3f | %.3f | %.3f (%d/%d) | %.3f | %.3f | %.3f (%d/%d) |", name, prec, rec,
		float64(s.contentKept)/float64(max(s.content, 1)), s.contentKept, s.content,
		float64(s.tocKept)/float64(max(s.toc, 1)), float64(s.editKept)/float64(max(s.edit, 1)),
		float64(s.heldOutFound)/float64(max(s.heldOut, 1)), s.heldOutFound, s.heldOut)
}

// truthNoise returns, for each URL of a page's <a> links, whether all its
// links are noise, and the blocks it appears in.
func truthNoise(lbs []websim.LinkBlock) (map[string]bool, map[string]map[string]bool) {
	noise, blocks := map[string]bool{}, map[string]map[string]bool{}
	for _, lb := range lbs {
		if _, ok := noise[lb.URL]; !ok {
			noise[lb.URL] = true
			blocks[lb.URL] = map[string]bool{}
		}
		noise[lb.URL] = noise[lb.URL] && lb.Noise
		blocks[lb.URL][lb.Block] = true
	}
	return noise, blocks
}

func allHeldOut(lbs []websim.LinkBlock, u string) bool {
	for _, lb := range lbs {
		if lb.URL == u && !lb.HeldOut {
			return false
		}
	}
	return true
}

// predicted returns the canonical URLs of <a> links that are only in noise.
func predicted(noise, kept []parse.Link) map[string]bool {
	keep := map[string]bool{}
	for _, l := range kept {
		if l.Tag == "a" {
			if c, ok := websim.Canonical(nil, l.URL.String()); ok {
				keep[c.String()] = true
			}
		}
	}
	out := map[string]bool{}
	for _, l := range noise {
		if l.Tag == "a" {
			if c, ok := websim.Canonical(nil, l.URL.String()); ok && !keep[c.String()] {
				out[c.String()] = true
			}
		}
	}
	return out
}

func config(srv *websim.Server, dir string, seeds []string) crawl.Config {
	c := crawl.NewConfig()
	c.Data = dir
	c.Seeds = seeds
	c.Scope = websim.ScopeAny
	c.Resolve = srv.Resolve()
	c.AllowPrivate = true
	c.Delay = 0
	c.Concurrency = 16
	c.RetryDelay = crawl.Duration(50 * time.Millisecond)
	return c
}

type page struct {
	url  string
	base *url.URL
	body []byte
}

func run(seed int64, hosts, pagesPerHost, depth, reps int) error {
	ctx := context.Background()
	wc := websim.Config{Seed: seed, Hosts: hosts, PagesPerHost: pagesPerHost, PageModel: true}
	srv, err := websim.Start(ctx, wc)
	if err != nil {
		return err
	}
	defer srv.Close()
	seeds := srv.SeedURLs(hosts)
	truth, err := srv.Truth(websim.TruthRules{Seeds: seeds, MaxDepth: depth, Scope: websim.ScopeAny})
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "content-bench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	// The plain crawl.
	plainCfg := config(srv, filepath.Join(tmp, "plain"), seeds)
	plainCfg.MaxDepth = depth
	eng, err := crawl.New(plainCfg, nil, nil)
	if err != nil {
		return err
	}
	cpu0 := cpuMillis()
	if err := eng.Run(ctx); err != nil {
		return err
	}
	plainCPU := cpuMillis() - cpu0
	eng.Close()
	recs, order, bodies, err := readStore(plainCfg.Data)
	if err != nil {
		return err
	}
	var pages []page
	for _, u := range order {
		rec := recs[u]
		body, ok := bodies[u]
		if !ok || rec.Status != 200 || rec.ContentType != "text/html" || truth.LinkBlocks[u] == nil {
			continue
		}
		base, err := url.Parse(rec.FinalURL)
		if err != nil {
			continue
		}
		pages = append(pages, page{url: u, base: base, body: body})
	}

	// The rules against the labels.
	filter, err := denoise.NewFilter(denoise.Options{})
	if err != nil {
		return err
	}
	opt := content.Options{Samples: filter}
	var ratio, twoPass, online, young score
	offline := content.NewModel(opt)
	extracted := make([]*content.Page, len(pages))
	for i, p := range pages {
		cp, err := content.Extract(p.base, p.body, opt)
		if err != nil {
			return err
		}
		offline.Site(p.base.Hostname()).Observe(cp)
		extracted[i] = cp
	}
	onlineModel := content.NewModel(opt)
	youngPages := 0
	for i, p := range pages {
		lbs := truth.LinkBlocks[p.url]
		ratio.add(predicted(parse.NoiseLinks(parse.Blocks(p.base, p.body), parse.DefaultNoiseThreshold)), lbs)
		cp := extracted[i]
		cp.Classify(offline.Site(p.base.Hostname()), opt)
		twoPass.add(predicted(cp.NoiseLinks()), lbs)
		cp.Classify(nil, opt)
		young.add(predicted(cp.NoiseLinks()), lbs)
		op, err := onlineModel.Analyze(p.base, p.body)
		if err != nil {
			return err
		}
		if op.Young {
			youngPages++
		}
		online.add(predicted(op.NoiseLinks()), lbs)
	}
	fmt.Printf("websim: seed %d, %d hosts × %d pages, --page-model (clean profile), seeds: every host's index, depth %d: %d HTML pages\n\n",
		seed, hosts, pagesPerHost, depth, len(pages))
	fmt.Println("| rule | noise precision | noise recall | content links kept | TOC links kept | editorial links kept | held-out noise found |")
	fmt.Println("|---|---|---|---|---|---|---|")
	fmt.Println(ratio.row("ratio (design §2, link-text ratio > 1/4)"))
	fmt.Println(twoPass.row("template, every page of the site seen first (index build; layered task)"))
	fmt.Println(online.row(fmt.Sprintf("template, online in crawl order (%d of %d pages judged young)", youngPages, len(pages))))
	fmt.Println(young.row("template, no model (every page a site's first)"))
	fmt.Println()

	// Layered crawls.
	plainPages := 0
	for _, r := range recs {
		if r.Status == 200 && r.ContentType == "text/html" {
			plainPages++
		}
	}
	fmt.Printf("| crawl | requests | HTML pages (200) the plain crawl also fetched | share of the plain crawl's HTML pages | requests to URLs labelled only noise | CPU ms per request (process, websim included) |\n|---|---|---|---|---|---|\n")
	fmt.Printf("| plain, depth %d | %d | %d | 1.000 | %d | %.3f |\n", depth, len(recs), plainPages, noiseOnly(recs, truth), plainCPU/float64(max(len(recs), 1)))
	for _, rule := range []string{layered.NoiseRatio, layered.NoiseTemplate} {
		cfg := config(srv, filepath.Join(tmp, "layered-"+rule), seeds)
		c, err := layered.New(cfg, layered.Options{Rounds: depth + 1, Groups: 16, NoiseRule: rule}, nil, nil)
		if err != nil {
			return err
		}
		cpu0 := cpuMillis()
		if err := c.Run(ctx); err != nil {
			return err
		}
		cpu := cpuMillis() - cpu0
		c.Close()
		lay, _, _, err := readStore(cfg.Data)
		if err != nil {
			return err
		}
		n := 0
		for u, r := range lay {
			if r.Status == 200 && r.ContentType == "text/html" && recs[u].Status == 200 { // reached by the plain crawl too
				n++
			}
		}
		fmt.Printf("| layered, %d rounds, --noise-rule %s | %d | %d | %.3f | %d | %.3f |\n", depth+1, rule, len(lay), n, float64(n)/float64(max(plainPages, 1)), noiseOnly(lay, truth), cpu/float64(max(len(lay), 1)))
	}
	fmt.Println()

	// CPU per page, the three ways, interleaved, medians of reps.
	var tParse, tBlocks, tContent, tUnres []float64
	for range reps {
		tParse = append(tParse, perPage(pages, func(p page) {
			parse.Parse(p.base, p.body, parse.Options{Unresolved: true})
		}))
		tBlocks = append(tBlocks, perPage(pages, func(p page) {
			parse.ParseBlocks(p.base, p.body, parse.Options{Unresolved: true})
		}))
		m := content.NewModel(content.Options{})
		tContent = append(tContent, perPage(pages, func(p page) {
			m.Analyze(p.base, p.body)
		}))
		mu := content.NewModel(content.Options{Parse: parse.Options{Unresolved: true}})
		tUnres = append(tUnres, perPage(pages, func(p page) {
			mu.Analyze(p.base, p.body)
		}))
	}
	mp, mb, mc, mu := median(tParse), median(tBlocks), median(tContent), median(tUnres)
	fmt.Printf("| per page (median of %d runs over %d pages; machine shared with other work) | µs | vs parse.Parse |\n|---|---|---|\n", reps, len(pages))
	fmt.Printf("| parse.Parse (the crawler's parser today, links unresolved) | %.1f | 1.00 |\n", mp)
	fmt.Printf("| parse.ParseBlocks (the same page and its blocks, one pass) | %.1f | %.2f |\n", mb, mb/mp)
	fmt.Printf("| content.Model.Analyze (ParseBlocks, links resolved, hash, classify, observe) | %.1f | %.2f |\n", mc, mc/mp)
	fmt.Printf("| content.Model.Analyze, links unresolved (as the crawler parses) | %.1f | %.2f |\n", mu, mu/mp)
	return nil
}

// runDocs crawls a static documentation site served from dir on loopback:
// a plain crawl of depth, then layered crawls of depth+1 rounds with each
// noise rule, and prints the HTML pages each fetched.
func runDocs(dir string, depth int) error {
	ctx := context.Background()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: http.FileServer(http.Dir(dir))}
	go srv.Serve(ln)
	defer srv.Close()
	seed := "http://" + ln.Addr().String() + "/index.html"
	tmp, err := os.MkdirTemp("", "content-docs")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	cfg := func(name string) crawl.Config {
		c := crawl.NewConfig()
		c.Data = filepath.Join(tmp, name)
		c.Seeds = []string{seed}
		c.Scope = "host"
		c.AllowPrivate = true
		c.Delay = 0
		c.Concurrency = 8
		return c
	}
	html := func(recs map[string]store.Record) (n int) {
		for _, r := range recs {
			if r.Status == 200 && r.ContentType == "text/html" {
				n++
			}
		}
		return n
	}
	pc := cfg("plain")
	pc.MaxDepth = depth
	eng, err := crawl.New(pc, nil, nil)
	if err != nil {
		return err
	}
	if err := eng.Run(ctx); err != nil {
		return err
	}
	eng.Close()
	plain, _, _, err := readStore(pc.Data)
	if err != nil {
		return err
	}
	fmt.Printf("%s served on loopback, seed /index.html\n\n| crawl | HTML pages | share of the plain crawl's | links dropped by the DOM pass |\n|---|---|---|---|\n", dir)
	fmt.Printf("| plain, depth %d | %d | 1.000 | – |\n", depth, html(plain))
	missed := map[string][]string{}
	for _, rule := range []string{layered.NoiseRatio, layered.NoiseTemplate} {
		lc := cfg("layered-" + rule)
		c, err := layered.New(lc, layered.Options{Rounds: depth + 1, Groups: 4, NoiseRule: rule}, nil, nil)
		if err != nil {
			return err
		}
		if err := c.Run(ctx); err != nil {
			return err
		}
		links, dom := 0, 0
		for _, r := range c.Reports() {
			links += r.Links
			dom += r.NoiseDOM
		}
		c.Close()
		lay, _, _, err := readStore(lc.Data)
		if err != nil {
			return err
		}
		fmt.Printf("| layered, %d rounds, --noise-rule %s | %d | %.3f | %d of %d |\n", depth+1, rule, html(lay), float64(html(lay))/float64(max(html(plain), 1)), dom, links)
		var missing []string
		for u, r := range plain {
			if _, ok := lay[u]; !ok && r.Status == 200 && r.ContentType == "text/html" {
				missing = append(missing, u)
			}
		}
		slices.Sort(missing)
		missed[rule] = missing
	}
	if m := missed[layered.NoiseTemplate]; len(m) > 0 {
		fmt.Printf("\nHTML pages of the plain crawl the template rule did not reach (%d): %s\n", len(m), strings.Join(m[:min(len(m), 10)], " "))
	}
	return nil
}

// cpuMillis is the process's user+system CPU time so far, in ms.
func cpuMillis() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e6
}

// noiseOnly counts the fetched URLs that every page of the truth links to
// only from noise blocks (and that are linked at all).
func noiseOnly(recs map[string]store.Record, truth *websim.Truth) int {
	linked, content := map[string]bool{}, map[string]bool{}
	for _, lbs := range truth.LinkBlocks {
		for _, lb := range lbs {
			linked[lb.URL] = true
			if !lb.Noise {
				content[lb.URL] = true
			}
		}
	}
	n := 0
	for u := range recs {
		if linked[u] && !content[u] {
			n++
		}
	}
	return n
}

// perPage runs fn on every page and returns the mean µs per page.
func perPage(pages []page, fn func(page)) float64 {
	start := time.Now()
	for _, p := range pages {
		fn(p)
	}
	return float64(time.Since(start).Microseconds()) / float64(max(len(pages), 1))
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	sort.Float64s(s)
	return s[len(s)/2]
}

// readStore returns the records (the last of each URL), the URLs in the
// order they were stored, and the bodies.
func readStore(dir string) (map[string]store.Record, []string, map[string][]byte, error) {
	rs, err := store.OpenRecords(dir, store.Options{})
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
	pages, err := store.OpenPageFiles(filepath.Join(dir, "pages"), store.Options{})
	if err != nil {
		return nil, nil, nil, err
	}
	defer pages.Close()
	bodies := map[string][]byte{}
	for u, r := range recs {
		if r.PageNo >= 0 {
			pg, err := pages.Read(r.PageNo)
			if err != nil {
				return nil, nil, nil, err
			}
			bodies[u] = pg.Body
		}
	}
	return recs, order, bodies, nil
}
