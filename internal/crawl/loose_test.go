package crawl_test

import (
	"strings"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/websim"
)

// TestLooseDepthMatchesTruth: with overlapping depth levels, slow hosts
// make pages first found along long paths through fast hosts; the short
// paths through the slow hosts arrive later. The crawl must still fetch
// exactly the truth (every URL within the depth by its shortest path,
// none beyond, none twice): pages already fetched pass the smaller depth
// on to their links (state.Options.Relink).
func TestLooseDepthMatchesTruth(t *testing.T) {
	srv := startWeb(t, websim.Config{Seed: 4, Hosts: 16, PagesPerHost: 20, Enable: websim.FeatureSlow,
		SlowShare: 0.4, SlowLatency: 100 * time.Millisecond})
	rules := websim.TruthRules{Seeds: srv.SeedURLs(4), MaxDepth: 3, Scope: websim.ScopeAny}
	truth, err := srv.Truth(rules)
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"exact", "bloom"} {
		t.Run(mode, func(t *testing.T) {
			// A crawl whose timing happened to fetch every page along its
			// shortest path first exercises no relinking (a loaded machine
			// can make one); it is checked all the same and the crawl made
			// again, up to 3 times: the test fails if none relinked.
			for attempt := 1; ; attempt++ {
				srv.Log().Reset()
				cfg := crawlConfig(t, srv, rules)
				cfg.LooseDepth = true
				cfg.Seen = mode
				// Generous time-outs: a loaded machine under -race must not turn
				// slow answers into time-outs.
				cfg.FirstByteTimeout, cfg.Timeout = crawl.Duration(30*time.Second), crawl.Duration(60*time.Second)
				runCrawl(t, cfg)
				checkTruth(t, srv, cfg.Data, truth)
				deeper := 0
				for u, r := range records(t, cfg.Data) {
					if d, ok := truth.Depth[u]; ok && r.Depth > d {
						deeper++
					}
				}
				// Pages fetched before their short path was known keep the
				// depth they were fetched at in their record; the test web is
				// meant to make some.
				t.Logf("attempt %d: %d URLs fetched as the truth says; %d first fetched at a larger depth than the shortest", attempt, len(truth.MustFetch), deeper)
				if deeper > 0 {
					break
				}
				if attempt == 3 {
					t.Fatal("in 3 crawls no page was fetched before its shortest path was known: the relinking this test is about was not exercised")
				}
			}
		})
	}
}

// TestDelayFromStart: with --delay-from start a host's requests start at
// least the delay apart (as the server sees them), one at a time, and the
// answer time does not add to the gap.
func TestDelayFromStart(t *testing.T) {
	const delay, latency = 80 * time.Millisecond, 50 * time.Millisecond
	srv := startWeb(t, websim.Config{Seed: 5, Hosts: 3, PagesPerHost: 10, Latency: latency})
	rules := websim.TruthRules{Seeds: srv.SeedURLs(3), MaxDepth: 2, Scope: websim.ScopeSeeds}
	truth, err := srv.Truth(rules)
	if err != nil {
		t.Fatal(err)
	}
	cfg := crawlConfig(t, srv, rules)
	cfg.Delay = crawl.Duration(delay)
	cfg.DelayFrom = crawl.DelayFromStart
	cfg.FirstByteTimeout, cfg.Timeout = crawl.Duration(30*time.Second), crawl.Duration(60*time.Second)
	runCrawl(t, cfg)
	checkTruth(t, srv, cfg.Data, truth)
	log := srv.Log()
	below := 0
	gaps := 0 // hosts with two requests or more: the gaps measured
	for _, h := range log.Hosts() {
		if n := log.MaxOpen(h); n > 1 {
			t.Errorf("%s: %d requests open at once, want at most 1", h, n)
		}
		if gap, ok := log.MinGap(h); ok {
			gaps++
			if gap < delay {
				t.Errorf("%s: two requests %v apart, want at least %v", h, gap, delay)
			}
		}
		es := log.HostEntries(h)
		for i := 1; i < len(es); i++ {
			if es[i].Time.Sub(es[i-1].Time) < delay+latency {
				below++
			}
		}
	}
	if gaps == 0 {
		t.Error("no host received two requests: the politeness check measured nothing")
	}
	// Counted from the previous answer, every gap would be at least
	// delay + latency; from the start, an unloaded machine makes most
	// gaps close to the delay. One such gap proves the rule is in force.
	if below == 0 {
		t.Errorf("no gap below delay + latency (%v): the delay is still counted from the answer", delay+latency)
	}
}

// TestDelayFromValidation: an unknown --delay-from is refused with the
// accepted values.
func TestDelayFromValidation(t *testing.T) {
	c := crawl.NewConfig()
	c.Seeds = []string{"http://example.test/"}
	c.DelayFrom = "middle"
	err := c.Validate()
	if err == nil || !contains(err.Error(), `unknown delay-from "middle": use done`) {
		t.Fatalf("Validate: %v", err)
	}
	c.DelayFrom = crawl.DelayFromStart
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate with delay-from start: %v", err)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
