package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestPolicies runs the simulation on 2,000 pages for a year and checks what the
// comparison claims: every policy spends the same budget; proportional is the worst for
// freshness (Cho and Garcia-Molina's finding); the adaptive policy, learning rates from
// its own revisits, beats uniform on age by at least 30% and does not lose
// freshness; the freshness-optimal schedule bounds everyone's freshness.
func TestPolicies(t *testing.T) {
	if testing.Short() {
		t.Skip("a year of 2,000 pages, about 10 s")
	}
	wd, _, err := newWorld(26, 8, 250, 365, 90, 7)
	if err != nil {
		t.Fatal(err)
	}
	uni := wd.uniformPolicy()
	prop := wd.proportionalPolicy()
	ad, _ := wd.calibrated("adaptive", adaptivePolicy(7), false)
	or, _ := wd.calibrated("oracle", adaptivePolicy(7), true)
	fo := wd.freshnessOptimal(120)
	for _, r := range []result{uni, prop, ad, or, fo} {
		t.Logf("%-32s revisits %6d freshness %.3f age %.3f unchanged %.2f", r.name, r.fetches, r.freshness, r.age, r.unchanged)
		if ratio := float64(r.fetches) / wd.budget(); ratio < 0.98 || ratio > 1.02 {
			t.Errorf("%s spent %.3f of the budget", r.name, ratio)
		}
	}
	if prop.freshness >= uni.freshness {
		t.Errorf("proportional freshness %.3f ≥ uniform %.3f", prop.freshness, uni.freshness)
	}
	if ad.age > 0.70*uni.age || ad.freshness < uni.freshness {
		t.Errorf("adaptive: age %.3f (uniform %.3f), freshness %.3f (uniform %.3f)", ad.age, uni.age, ad.freshness, uni.freshness)
	}
	if or.age > ad.age*1.02 {
		t.Errorf("true rates gave an older collection (%.3f) than estimated ones (%.3f)", or.age, ad.age)
	}
	for _, r := range []result{uni, prop, ad, or} {
		if r.freshness > fo.freshness+0.005 {
			t.Errorf("%s freshness %.3f above the freshness optimum %.3f", r.name, r.freshness, fo.freshness)
		}
	}
}

// TestMeasure checks freshness and age on a page with known changes.
func TestMeasure(t *testing.T) {
	wd := &world{days: 10, warmup: 0, uniform: 10, pages: []page{{rate: 1, changes: []float64{2, 3}}}}
	// Fetched at -10 (initial) and 5: fresh over [0,2) and [5,10); stale over [2,5)
	// with age growing from 0 to 3: ∫ = 4.5.
	r := wd.measure("x", [][]float64{{-10, 5}})
	if r.freshness != 0.7 || r.age != 0.45 || r.fetches != 1 || r.unchanged != 0 {
		t.Errorf("%+v", r)
	}
}

func TestRunPrints(t *testing.T) {
	var b bytes.Buffer
	if err := run(&b, 1, 2, 30, 60, 10, 7); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Cho & Garcia-Molina", "| uniform |", "| adaptive (estimated rates) |", "goal (issue 26)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, b.String())
		}
	}
}

// TestCrawlModeRuns runs the -crawl mode on a tiny web: both policies crawl for real,
// revisit pages, and the server answers revisits of unchanged pages 304.
func TestCrawlModeRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("crawls for a few seconds")
	}
	var out strings.Builder
	p := crawlParams{seed: 26, hosts: 2, pages: 20, days: 24, warmup: 8, uniform: 4, day: 150 * time.Millisecond, concurrency: 8}
	if err := crawlPolicies(&out, p); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| uniform (--revisit fixed) |", "| adaptive (--revisit adaptive) |", "goal (issue 26)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	for _, line := range strings.Split(out.String(), "\n") {
		if !strings.HasPrefix(line, "| uniform") && !strings.HasPrefix(line, "| adaptive") {
			continue
		}
		cells := strings.Split(line, "|")
		if revisits := strings.TrimSpace(cells[2]); revisits == "0" {
			t.Errorf("no revisit: %s", line)
		}
		if nm := strings.TrimSpace(cells[8]); nm == "NaN%" || nm == "0.0%" {
			t.Errorf("no 304 for the revisits of unchanged pages: %s", line)
		}
	}
}
