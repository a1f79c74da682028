// Command layered measures the layered crawl of SPEC §2 on websim: the
// precision and recall of each noise pass (and of both) against websim's
// labels, and the fetch budget against a plain crawl of the same web.
//
//	go run ./bench/layered [-hosts 30] [-pages 40] [-depth 3] [-noise-rule ratio]
//
// The layered crawl uses design §2's ratio rule by default here (the DOM
// pass measured above it is that rule); -noise-rule template runs it with
// the crawl's default rule (bench/content measures that one).
//
// The Go benchmarks of this directory (go test -bench . ./bench/layered)
// compare the cache de-dup with a map set and the Bloom filter.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/denoise"
	"github.com/spider-crawler/spider/internal/layered"
	"github.com/spider-crawler/spider/internal/parse"
	"github.com/spider-crawler/spider/internal/store"
	"github.com/spider-crawler/spider/internal/urls"
	"github.com/spider-crawler/spider/internal/websim"
)

func main() {
	hosts := flag.Int("hosts", 30, "websim hosts")
	pages := flag.Int("pages", 40, "pages per host")
	depth := flag.Int("depth", 3, "depth limit (rounds = depth+1)")
	flag.StringVar(&noiseRule, "noise-rule", layered.NoiseRatio, "the layered crawl's DOM rule: ratio or template")
	flag.Parse()
	if err := run(*hosts, *pages, *depth); err != nil {
		fmt.Fprintln(os.Stderr, "layered bench:", err)
		os.Exit(1)
	}
}

// noiseRule is the layered crawl's DOM rule (-noise-rule).
var noiseRule string

type pr struct{ tp, fp, fn int }

func (p pr) String() string {
	prec := float64(p.tp) / float64(max(p.tp+p.fp, 1))
	rec := float64(p.tp) / float64(max(p.tp+p.fn, 1))
	return fmt.Sprintf("precision %.3f recall %.3f (tp %d fp %d fn %d)", prec, rec, p.tp, p.fp, p.fn)
}

func (p *pr) add(pred, label bool) {
	switch {
	case pred && label:
		p.tp++
	case pred:
		p.fp++
	case label:
		p.fn++
	}
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

func run(hosts, pagesPerHost, depth int) error {
	ctx := context.Background()
	wc := websim.Config{Seed: 21, Hosts: hosts, PagesPerHost: pagesPerHost, Enable: websim.FeatureNoise | websim.FeatureRedirects, TroubleShare: 0.5}
	srv, err := websim.Start(ctx, wc)
	if err != nil {
		return err
	}
	defer srv.Close()
	seeds := srv.SeedURLs(3)
	truth, err := srv.Truth(websim.TruthRules{Seeds: seeds, MaxDepth: depth, Scope: websim.ScopeAny})
	if err != nil {
		return err
	}
	noiseURL := map[string]bool{}
	for _, u := range truth.NoiseURLs {
		noiseURL[u] = true
	}
	tmp, err := os.MkdirTemp("", "layered-bench")
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
	t0 := time.Now()
	if err := eng.Run(ctx); err != nil {
		return err
	}
	plainTime := time.Since(t0)
	eng.Close()
	plain, bodies, err := readStore(plainCfg.Data)
	if err != nil {
		return err
	}

	// Each pass on the plain crawl's pages and links, against the labels.
	norm := &urls.Normalizer{}
	filter, err := denoise.NewFilter(denoise.Options{})
	if err != nil {
		return err
	}
	var dom, clu, both, bothCrawl pr
	var cand []string
	seenCand := map[string]bool{}
	type occ struct {
		page, link        string
		domNoise, inNoise bool
	}
	var occs []occ
	for u, rec := range plain {
		body, ok := bodies[u]
		if !ok || rec.Status != 200 || rec.ContentType != "text/html" {
			continue
		}
		base, _ := url.Parse(rec.FinalURL)
		noise, kept := parse.NoiseLinks(parse.Blocks(base, body), parse.DefaultNoiseThreshold)
		inNoise, inKept := map[string]bool{}, map[string]bool{}
		for _, l := range noise {
			if l.Tag == "a" {
				if n, err := norm.Normalize(l.URL); err == nil {
					inNoise[n.String()] = true
				}
			}
		}
		for _, l := range kept {
			if l.Tag == "a" {
				if n, err := norm.Normalize(l.URL); err == nil {
					inKept[n.String()] = true
				}
			}
		}
		labelled := map[string]bool{}
		for _, n := range truth.NoiseLinks[u] {
			labelled[n] = true
		}
		all := map[string]bool{}
		for l := range inNoise {
			all[l] = true
		}
		for l := range inKept {
			all[l] = true
		}
		for l := range all { // one (page, URL) pair per <a> URL of the page
			dom.add(inNoise[l], labelled[l])
			occs = append(occs, occ{u, l, inNoise[l] && !inKept[l], inNoise[l]})
			if !seenCand[l] {
				seenCand[l] = true
				cand = append(cand, l)
			}
		}
		for _, l := range rec.OutLinks {
			if !seenCand[l] {
				seenCand[l] = true
				cand = append(cand, l)
			}
		}
	}
	t1 := time.Now()
	res, err := filter.Run(ctx, cand, 2)
	if err != nil {
		return err
	}
	cluTime := time.Since(t1)
	removed := map[string]bool{}
	for _, r := range res.Removed {
		removed[r.URL] = true
	}
	for _, u := range cand {
		clu.add(removed[u], noiseURL[u])
	}
	for _, o := range occs {
		labelled := noiseURL[o.link]
		for _, n := range truth.NoiseLinks[o.page] {
			if n == o.link {
				labelled = true
			}
		}
		both.add(o.inNoise || removed[o.link], labelled)
		bothCrawl.add(o.domNoise || removed[o.link], labelled)
	}

	// The layered crawl of the same web.
	srv.Log().Reset()
	layCfg := config(srv, filepath.Join(tmp, "layered"), seeds)
	c, err := layered.New(layCfg, layered.Options{Rounds: depth + 1, Groups: 16, NoiseRule: noiseRule}, nil, nil)
	if err != nil {
		return err
	}
	t2 := time.Now()
	if err := c.Run(ctx); err != nil {
		return err
	}
	layTime := time.Since(t2)
	c.Close()
	lay, _, err := readStore(layCfg.Data)
	if err != nil {
		return err
	}
	useful := func(m map[string]store.Record) (n int) {
		for u, r := range m {
			if r.Status == 200 && !noiseURL[u] {
				n++
			}
		}
		return n
	}
	layNoise := 0
	for u := range lay {
		if noiseURL[u] {
			layNoise++
		}
	}
	fmt.Printf("websim: seed 21, %d hosts × %d pages, features noise+redirects, trouble share 0.5, 3 seeds, depth %d\n", hosts, pagesPerHost, depth)
	fmt.Printf("DOM pass (S301/S302), (page, <a> URL) pairs vs Truth.NoiseLinks: %v\n", dom)
	fmt.Printf("clustering pass (S311–S313), distinct URLs vs Truth.NoiseURLs: %v; %d URLs, %d blocks, %d clusters in %s\n", clu, len(cand), res.Blocks, res.Clusters, cluTime.Round(time.Millisecond))
	fmt.Printf("both passes, (page, URL) pairs vs NoiseLinks ∪ NoiseURLs: %v\n", both)
	fmt.Printf("both passes as the crawl applies them (a URL also linked outside noise blocks on the page is kept): %v\n", bothCrawl)
	pu, lu := useful(plain), useful(lay)
	fmt.Printf("plain crawl: %d fetched, %d useful (200, not a noise URL): %.3f fetches per useful page, %s\n", len(plain), pu, float64(len(plain))/float64(max(pu, 1)), plainTime.Round(time.Millisecond))
	fmt.Printf("layered crawl: %d fetched, %d useful, %d noise URLs: %.3f fetches per useful page, %s; budget saved %.1f%%\n", len(lay), lu, layNoise, float64(len(lay))/float64(max(lu, 1)), layTime.Round(time.Millisecond), 100*(1-float64(len(lay))/float64(len(plain))))
	layered.Print(os.Stdout, c.Reports())
	return nil
}

func readStore(dir string) (map[string]store.Record, map[string][]byte, error) {
	rs, err := store.OpenRecords(dir, store.Options{})
	if err != nil {
		return nil, nil, err
	}
	defer rs.Close()
	recs := map[string]store.Record{}
	if _, err := rs.Iterate(func(r store.Record) error { recs[r.URL] = r; return nil }); err != nil {
		return nil, nil, err
	}
	pages, err := store.OpenPageFiles(filepath.Join(dir, "pages"), store.Options{})
	if err != nil {
		return nil, nil, err
	}
	defer pages.Close()
	bodies := map[string][]byte{}
	for u, r := range recs {
		if r.PageNo >= 0 {
			pg, err := pages.Read(r.PageNo)
			if err != nil {
				return nil, nil, err
			}
			bodies[u] = pg.Body
		}
	}
	return recs, bodies, nil
}
