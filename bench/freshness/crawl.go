package main

// The -crawl mode: the real crawler (internal/crawl's engine, in this process) runs a
// continuous crawl of a changing websim over loopback HTTP for each revisit policy, with
// the same request budget (--max-rate); freshness and age are then computed exactly as
// in the simulation, from the instants the web's access log saw each page fetched (a
// 200, or a 304 that confirmed the copy) against the page's change truth.

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
	"sort"
	"time"

	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/websim"
)

// crawlRun is one policy's crawl: the engine's revisit settings.
type crawlRun struct {
	name    string
	revisit string        // crawl.Config.Revisit
	initial time.Duration // crawl.Config.RevisitInitial (real time)
	min     time.Duration
	max     time.Duration
}

// crawlParams are the -crawl mode's settings.
type crawlParams struct {
	seed                  int64
	hosts, pages          int
	days, warmup, uniform float64 // model days
	day                   time.Duration
	concurrency           int
	verbose               bool // print each crawl's requests by status and per 3 model days
}

// crawlPolicies runs the crawler once per policy and prints the table.
func crawlPolicies(out io.Writer, p crawlParams) error {
	if p.warmup >= p.days || p.uniform <= 0 || p.day <= 0 {
		return fmt.Errorf("cannot measure: want 0 ≤ warmup < days, uniform > 0 and day > 0")
	}
	wd, web, err := newWorld(p.seed, p.hosts, p.pages, p.days, p.warmup, p.uniform)
	if err != nil {
		return err
	}
	printWorld(out, wd, web, p.seed, p.hosts, p.pages)
	real := func(days float64) time.Duration { return time.Duration(days * float64(p.day)) }
	// The budget: every URL the crawl fetches (the changing pages, and the web's
	// other URLs: redirects, error pages) once every -uniform days.
	truth, err := web.Truth(websim.TruthRules{Seeds: web.SeedURLs(p.hosts), MaxDepth: -1, Scope: websim.ScopeAny})
	if err != nil {
		return err
	}
	urls := len(truth.MustFetch) + p.hosts // + robots.txt
	rate := float64(urls) / (p.uniform * p.day.Seconds())
	fmt.Fprintf(out, "real crawls: one model day = %s of real time; %g days (measured from day %g; the first crawl takes about %g days); every crawl capped at --max-rate %.1f requests/s: the %d URLs the crawl fetches (%d changing pages) once every %g days, --concurrency %d, --delay 0\n",
		p.day, p.days, p.warmup, p.uniform, rate, urls, len(wd.pages), p.uniform, p.concurrency)
	// The adaptive policy's target (the interval of a page that changes at every
	// visit, also its first interval: crawl.Config.RevisitInitial) is the one the
	// simulation calibrates on this web so that its revisits spend the budget; a
	// shorter one would leave every page overdue under the rate cap, and the due
	// queue, earliest first, would then visit pages in turn like the uniform policy.
	pol := adaptivePolicy(p.uniform)
	pol.Initial = 0
	_, target := wd.calibrated("adaptive", pol, false)
	tdays := target.Hours() / 24
	minReal := max(real(pol.Min.Hours()/24), time.Duration(crawl.MinRevisit))
	fmt.Fprintf(out, "adaptive: --revisit-initial %s (%.2f model days, calibrated in the simulation to spend the budget), --revisit-min %s, --revisit-max %s (%g days)\n\n",
		real(tdays).Round(time.Millisecond), tdays, minReal, real(pol.Max.Hours()/24), pol.Max.Hours()/24)
	runs := []crawlRun{
		{name: "uniform (--revisit fixed)", revisit: crawl.RevisitFixed, initial: real(p.uniform), min: real(p.uniform), max: real(p.uniform)},
		{name: "adaptive (--revisit adaptive)", revisit: crawl.RevisitAdaptive, initial: real(tdays), min: minReal, max: real(pol.Max.Hours() / 24)},
	}
	var rows []result
	var notMod []float64
	for _, r := range runs {
		res, nm, err := crawlOnce(p, wd, r, rate)
		if err != nil {
			return fmt.Errorf("%s: %w", r.name, err)
		}
		rows = append(rows, res)
		notMod = append(notMod, nm)
	}
	base := rows[0]
	fmt.Fprintf(out, "| policy (real crawl) | revisits | freshness | × uniform | age (days) | × uniform | revisits to unchanged pages | of those answered 304 |\n|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for i, r := range rows {
		fmt.Fprintf(out, "| %s | %d | %.3f | %.3f | %.4f | %.3f | %.1f%% | %.1f%% |\n", r.name, r.fetches, r.freshness, r.freshness/base.freshness, r.age, r.age/base.age, 100*r.unchanged, 100*notMod[i])
	}
	ad := rows[1]
	fmt.Fprintf(out, "goal (issue 26): adaptive freshness ≥ 1.3× uniform: %v (%.2f×); adaptive age ≤ ½ uniform: %v (%.3f×); ≥ 80%% of revisits to unchanged pages answered 304: %v (%.1f%%)\n",
		ad.freshness >= 1.3*base.freshness, ad.freshness/base.freshness, ad.age <= base.age/2, ad.age/base.age, notMod[1] >= 0.8, 100*notMod[1])
	return nil
}

// printWorld prints the web and its change distribution (shared with the simulation).
func printWorld(out io.Writer, wd *world, web *websim.Web, seed int64, hosts, pages int) {
	fmt.Fprintf(out, "websim seed %d, %d hosts × %d pages = %d pages; change distribution (websim.ChangeClasses: Cho & Garcia-Molina, VLDB 2000, Fig. 2a):\n", seed, hosts, pages, len(wd.pages))
	sum := web.SummarizeChanges(hosts)
	for i, c := range websim.ChangeClasses {
		fmt.Fprintf(out, "  mean change interval %-15s %4.0f%% of pages (drawn %4.1f%%), log-uniform in [%g, %g] days\n", c.Name, 100*c.Share, 100*sum.ClassShares[i], c.MinDays, c.MaxDays)
	}
	fmt.Fprintf(out, "  expected share changing within a day %.1f%%; unchanged over 120 days %.1f%%; changes per page-day %.3f\n",
		100*sum.ChangedWithinDay, 100*sum.UnchangedFourMonths, sum.MeanChangesPerPageDay)
}

// crawlOnce serves a fresh changing web, crawls it continuously under policy r for
// p.days model days and measures the copies' freshness from the access log. It also
// returns the share of revisits to unchanged pages that the server answered 304.
func crawlOnce(p crawlParams, wd *world, r crawlRun, rate float64) (result, float64, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := websim.Start(ctx, websim.Config{Seed: p.seed, Hosts: p.hosts, PagesPerHost: p.pages,
		ChangeDay: p.day, DisappearShare: -1, LogCap: 4 * int(rate*p.days*p.day.Seconds()+float64(len(wd.pages)))})
	if err != nil {
		return result{}, 0, err
	}
	defer srv.Close()
	dir, err := os.MkdirTemp("", "freshness-crawl-")
	if err != nil {
		return result{}, 0, err
	}
	defer os.RemoveAll(dir)

	cfg := crawl.NewConfig()
	cfg.Data = dir
	cfg.Seeds = srv.SeedURLs(p.hosts)
	cfg.Scope = websim.ScopeAny
	cfg.Resolve = srv.Resolve()
	cfg.AllowPrivate = true
	cfg.Delay = 0
	cfg.MaxDepth = -1
	cfg.Concurrency = p.concurrency
	cfg.MaxRate = rate
	cfg.Continuous = true
	cfg.Revisit = r.revisit
	cfg.RevisitInitial = crawl.Duration(r.initial)
	cfg.RevisitMin = crawl.Duration(r.min)
	cfg.RevisitMax = crawl.Duration(r.max)
	e, err := crawl.New(cfg, nil, nil)
	if err != nil {
		return result{}, 0, err
	}
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	select {
	case err = <-done:
		e.Close()
		return result{}, 0, fmt.Errorf("the continuous crawl ended early: %v", err)
	case <-time.After(time.Duration(p.days * float64(p.day))):
	}
	e.Stop()
	if err := <-done; err != nil && ctx.Err() == nil {
		e.Close()
		return result{}, 0, err
	}
	if err := e.Close(); err != nil {
		return result{}, 0, err
	}
	srv.Close()

	// Each page's fetch instants in model days, from the access log.
	index := map[string]int{} // host + path → page index in wd.pages
	i := 0
	for hi := range p.hosts {
		for _, raw := range srv.PageURLs(hi) {
			u, err := url.Parse(raw)
			if err != nil {
				return result{}, 0, err
			}
			index[u.Hostname()+u.RequestURI()] = i
			i++
		}
	}
	if i != len(wd.pages) {
		return result{}, 0, fmt.Errorf("the served web has %d pages, the truth %d", i, len(wd.pages))
	}
	start := srv.Start()
	fetches := make([][]float64, len(wd.pages))
	revisitsUnchanged, answered304 := 0, 0
	for _, en := range srv.Log().Entries() {
		k, ok := index[en.Host+en.Path]
		if !ok || en.Method != "GET" || (en.Status != 200 && en.Status != 304) {
			continue
		}
		at := float64(en.Time.Sub(start)) / float64(p.day)
		f := fetches[k]
		if len(f) > 0 && wd.pages[k].versionAt(at) == wd.pages[k].versionAt(f[len(f)-1]) {
			revisitsUnchanged++
			if en.Status == 304 {
				answered304++
			}
		}
		fetches[k] = append(f, at)
	}
	if p.verbose {
		all, st, per := 0, map[int]int{}, map[int]int{}
		for _, en := range srv.Log().Entries() {
			all++
			st[en.Status]++
			per[int(float64(en.Time.Sub(start))/float64(p.day))/3]++
		}
		fmt.Fprintf(os.Stderr, "requests per 3 days: %v\n", per)
		n := 0
		for _, f := range fetches {
			n += len(f)
		}
		fmt.Fprintf(os.Stderr, "%s: %d requests %v, %d page fetches\n", r.name, all, st, n)
	}
	if d := srv.Log().Dropped(); d > 0 {
		return result{}, 0, fmt.Errorf("the access log dropped %d entries: raise LogCap", d)
	}
	for k := range fetches {
		sort.Float64s(fetches[k])
	}
	res := wd.measure(r.name, fetches)
	nm := math.NaN()
	if revisitsUnchanged > 0 {
		nm = float64(answered304) / float64(revisitsUnchanged)
	}
	return res, nm, nil
}
