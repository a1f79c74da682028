// Command freshness simulates revisit policies against websim's change truth (issue
// #26): no HTTP and no crawl, only the policies' fetch instants against every page's
// exact change history, so it measures the policy, not yet a crawler running it.
//
// The web: websim's pages (hosts × pages, seed), each changing as a Poisson process at a
// rate drawn from websim.ChangeClasses (Cho and Garcia-Molina's measured distribution,
// printed first). Every page's copy is first fetched once, spread over the uniform
// interval before day 0; over the next -days days each policy spends the same budget of
// revisits, pages × days / uniform interval:
//
//   - uniform: every page every -uniform days;
//   - proportional: each page at an interval proportional to its true mean change
//     interval (given the truth, as in Cho and Garcia-Molina's comparison);
//   - adaptive: internal/revisit's ModeAdaptive, learning each page's rate from what its
//     own revisits saw (Policy.Target chosen so that the revisits spend the budget);
//   - adaptive (true rates): revisit.OptimalInterval of the true rate — the ceiling of
//     the adaptive policy with a perfect estimator;
//   - freshness-optimal (true rates): Cho and Garcia-Molina's freshness-optimal schedule
//     for this budget, the most freshness any per-page interval schedule reaches (it
//     gives up the pages that change too often, so its age is poor).
//
// Freshness is the time-average share of pages whose copy equals the live page, age the
// time-average time since the first change the copy missed (0 while fresh), both over
// [-warmup, -days] and computed exactly from the change instants; "unchanged" is the
// share of revisits that found the page unchanged (a 304 with validators); "peak" the
// busiest day's revisits over the budget per day.
//
//	go run ./bench/freshness [-hosts 40] [-pages 250] [-seed 26] [-days 365] [-warmup 90] [-uniform 7]
//
// With -crawl it runs the real crawler instead (crawl.go): a continuous crawl of a
// changing websim served on loopback, one model day lasting -day of real time, once with
// --revisit fixed (every -uniform days: the uniform policy) and once with --revisit
// adaptive, both capped at the uniform policy's request rate; freshness and age come
// from the access log against the change truth, and the share of revisits to unchanged
// pages answered 304 is counted.
//
//	go run ./bench/freshness -crawl [-day 2s] [-days 60] [-warmup 20] [-uniform 7]
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spider-crawler/spider/internal/revisit"
)

func main() {
	hosts := flag.Int("hosts", 40, "websim hosts")
	pages := flag.Int("pages", 250, "pages per host")
	seed := flag.Int64("seed", 26, "websim seed")
	days := flag.Float64("days", 365, "simulated days")
	warmup := flag.Float64("warmup", 90, "days before freshness and age are measured (the adaptive policy learns)")
	uniform := flag.Float64("uniform", 7, "the uniform policy's revisit interval in days: sets the budget")
	crawlMode := flag.Bool("crawl", false, "run the real crawler (continuous, loopback websim) instead of the simulation")
	day := flag.Duration("day", 2*time.Second, "-crawl: the real duration of a model day")
	concurrency := flag.Int("concurrency", 32, "-crawl: the crawl's --concurrency")
	verbose := flag.Bool("v", false, "-crawl: print each crawl's requests by status and per 3 model days")
	flag.Parse()
	if *crawlMode {
		p := crawlParams{seed: *seed, hosts: *hosts, pages: *pages, days: *days, warmup: *warmup, uniform: *uniform, day: *day, concurrency: *concurrency, verbose: *verbose}
		if !flagSet("days") {
			p.days = 60
		}
		if !flagSet("warmup") {
			p.warmup = 20
		}
		if err := crawlPolicies(os.Stdout, p); err != nil {
			fmt.Fprintln(os.Stderr, "freshness:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(os.Stdout, *seed, *hosts, *pages, *days, *warmup, *uniform); err != nil {
		fmt.Fprintln(os.Stderr, "freshness:", err)
		os.Exit(1)
	}
}

// flagSet reports whether the flag was given on the command line.
func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// adaptivePolicy is the policy the simulation runs for a uniform interval of uniform
// days (its Target is calibrated): it starts every page at the uniform interval.
func adaptivePolicy(uniform float64) revisit.Policy {
	return revisit.Policy{Mode: revisit.ModeAdaptive, Initial: time.Duration(uniform * float64(dayDur)), Min: time.Hour, Max: 120 * dayDur}
}

func run(out io.Writer, seed int64, hosts, pages int, days, warmup, uniform float64) error {
	if warmup >= days || uniform <= 0 {
		return fmt.Errorf("cannot measure: want 0 ≤ warmup < days and uniform > 0")
	}
	wd, web, err := newWorld(seed, hosts, pages, days, warmup, uniform)
	if err != nil {
		return err
	}
	printWorld(out, wd, web, seed, hosts, pages)
	fmt.Fprintf(out, "simulated %g days (measured from day %g); budget %.0f revisits (every page every %g days on average)\n\n", days, warmup, wd.budget(), uniform)

	rows := []result{wd.uniformPolicy(), wd.proportionalPolicy()}
	ad, target := wd.calibrated("adaptive (estimated rates)", adaptivePolicy(uniform), false)
	or, otarget := wd.calibrated("adaptive (true rates)", adaptivePolicy(uniform), true)
	rows = append(rows, ad, or, wd.freshnessOptimal(adaptivePolicy(uniform).Max.Hours()/24))
	base := rows[0]
	fmt.Fprintf(out, "| policy | revisits | peak day | freshness | × uniform | age (days) | × uniform | unchanged revisits |\n|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		fmt.Fprintf(out, "| %s | %d | %.2f | %.3f | %.2f | %.3f | %.2f | %.1f%% |\n", r.name, r.fetches, r.peak, r.freshness, r.freshness/base.freshness, r.age, r.age/base.age, 100*r.unchanged)
	}
	p := adaptivePolicy(uniform)
	fmt.Fprintf(out, "\nadaptive: revisit.Policy{Mode: adaptive, Initial: %s, Min: %s, Max: %s, Grow: 1.5, Shrink: 0.5, MinSamples: 3}, Target %s (true rates: %s), chosen so the revisits spend the budget\n",
		p.Initial, p.Min, p.Max, target.Round(time.Minute), otarget.Round(time.Minute))
	fmt.Fprintf(out, "goal (issue 26): adaptive freshness ≥ 1.3× uniform: %v (%.2f×); adaptive age ≤ ½ uniform: %v (%.2f×)\n",
		ad.freshness >= 1.3*base.freshness, ad.freshness/base.freshness, ad.age <= base.age/2, ad.age/base.age)
	return nil
}
