package crawl_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/frontier"
	"github.com/spider-crawler/spider/internal/state"
	"github.com/spider-crawler/spider/internal/store"
	"github.com/spider-crawler/spider/internal/websim"
)

// recordsInOrder returns the records of dir in the order they were written.
func recordsInOrder(t *testing.T, dir string) []store.Record {
	t.Helper()
	rs, err := store.OpenRecords(dir, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	var out []store.Record
	if _, err := rs.Iterate(func(r store.Record) error { out = append(out, r); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

// levelsWeb is a web whose slow hosts make pages first found along long
// paths through fast hosts, the short paths through the slow hosts
// arriving later (TestLooseDepthMatchesTruth's web).
func levelsWeb(t *testing.T) (*websim.Server, websim.TruthRules, *websim.Truth) {
	t.Helper()
	srv := startWeb(t, websim.Config{Seed: 4, Hosts: 16, PagesPerHost: 20, Enable: websim.FeatureSlow,
		SlowShare: 0.4, SlowLatency: 100 * time.Millisecond})
	rules := websim.TruthRules{Seeds: srv.SeedURLs(4), MaxDepth: 3, Scope: websim.ScopeAny}
	truth, err := srv.Truth(rules)
	if err != nil {
		t.Fatal(err)
	}
	return srv, rules, truth
}

// TestDefaultRelinks: with no depth setting at all (the zero StrictLevels,
// what spider crawl runs by default), depth levels overlap and the crawl
// still fetches exactly the truth: a page fetched before its shortest path
// was known passes the smaller depth on to its links. It fails if the
// default crawled level by level (no record ever deeper than its shortest
// path, records in depth order) in 3 crawls.
func TestDefaultRelinks(t *testing.T) {
	srv, rules, truth := levelsWeb(t)
	for attempt := 1; ; attempt++ {
		srv.Log().Reset()
		cfg := crawlConfig(t, srv, rules)
		if cfg.StrictLevels || cfg.LooseDepth {
			t.Fatalf("the test's configuration sets StrictLevels %v, LooseDepth %v: want the default", cfg.StrictLevels, cfg.LooseDepth)
		}
		cfg.FirstByteTimeout, cfg.Timeout = crawl.Duration(30*time.Second), crawl.Duration(60*time.Second)
		runCrawl(t, cfg)
		checkTruth(t, srv, cfg.Data, truth)
		deeper, outOfOrder := 0, 0
		prev := 0
		for _, r := range recordsInOrder(t, cfg.Data) {
			if d, ok := truth.Depth[r.URL]; ok && r.Depth > d {
				deeper++
			}
			if r.Depth < prev {
				outOfOrder++
			}
			prev = max(prev, r.Depth)
		}
		t.Logf("attempt %d: %d URLs as the truth says; %d fetched deeper than their shortest path, %d records after a deeper one", attempt, len(truth.MustFetch), deeper, outOfOrder)
		if deeper > 0 && outOfOrder > 0 {
			return
		}
		if attempt == 3 {
			t.Fatal("in 3 default crawls no page was fetched before its shortest path was known, or levels never overlapped: the default is not the relinking loose-depth crawl")
		}
	}
}

// TestStrictLevels: with StrictLevels (--strict-levels) the crawl goes
// level by level on the same web: every page is fetched at its shortest
// depth and records.jsonl is in depth order (no page of depth d+1
// completes before every page of depth d has), with the truth fetched.
func TestStrictLevels(t *testing.T) {
	srv, rules, truth := levelsWeb(t)
	cfg := crawlConfig(t, srv, rules)
	cfg.StrictLevels = true
	cfg.FirstByteTimeout, cfg.Timeout = crawl.Duration(30*time.Second), crawl.Duration(60*time.Second)
	runCrawl(t, cfg)
	checkTruth(t, srv, cfg.Data, truth)
	prev := 0
	for i, r := range recordsInOrder(t, cfg.Data) {
		if d, ok := truth.Depth[r.URL]; ok && r.Depth != d {
			t.Errorf("%s fetched at depth %d, its shortest depth is %d", r.URL, r.Depth, d)
		}
		if r.Depth < prev {
			t.Errorf("record %d (%s) has depth %d after a record of depth %d: levels overlapped", i, r.URL, r.Depth, prev)
		}
		prev = max(prev, r.Depth)
	}
}

// TestDepthSettingsValidate: --loose-depth beside --strict-levels, and
// --strict-levels with --topics, are refused with a message naming the
// flags; --loose-depth alone (the default, kept for old command lines and
// files) is accepted.
func TestDepthSettingsValidate(t *testing.T) {
	topics := filepath.Join(t.TempDir(), "topics.yaml") // Validate checks it exists
	if err := os.WriteFile(topics, []byte("topics: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name         string
		strict, oldL bool
		topics       string
		want         string // "" accepted
	}{
		{"default", false, false, "", ""},
		{"loose-depth alone", false, true, "", ""},
		{"strict-levels alone", true, false, "", ""},
		{"both", true, true, "", "--loose-depth and --strict-levels contradict each other"},
		{"strict with topics", true, false, topics, "--strict-levels cannot apply with --topics"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := crawl.NewConfig()
			c.Seeds = []string{"http://example.test/"}
			c.StrictLevels, c.LooseDepth, c.Topics = tc.strict, tc.oldL, tc.topics
			err := c.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate: %v, want accepted", err)
			case tc.want != "" && (err == nil || !contains(err.Error(), tc.want)):
				t.Fatalf("Validate: %v, want %q", err, tc.want)
			}
		})
	}
}

// TestRulesCarryStrictLevels: a master's depth rule reaches its workers
// (RulesJSON → RulesFromJSON) whichever it is, the published LooseDepth
// tells workers of older versions whether levels overlap, and the form an
// older master published (no StrictLevels key) keeps its meaning: level by
// level unless it said LooseDepth.
func TestRulesCarryStrictLevels(t *testing.T) {
	for _, strict := range []bool{false, true} {
		c := crawl.NewConfig()
		c.StrictLevels = strict
		b, err := c.RulesJSON()
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		if m["LooseDepth"] != !strict {
			t.Errorf("StrictLevels %v: published LooseDepth %v, want %v for older workers", strict, m["LooseDepth"], !strict)
		}
		rules, _, err := crawl.RulesFromJSON(b)
		if err != nil {
			t.Fatal(err)
		}
		if rules.StrictLevels != strict || rules.DepthOverlaps() == strict {
			t.Errorf("StrictLevels %v arrived as %v (levels overlap %v)", strict, rules.StrictLevels, rules.DepthOverlaps())
		}
	}
	for _, tc := range []struct {
		old        string
		wantStrict bool
	}{
		{`{"MaxDepth":3,"LooseDepth":false}`, true},
		{`{"MaxDepth":3,"LooseDepth":true}`, false},
		{`{"MaxDepth":3}`, true},
	} {
		rules, _, err := crawl.RulesFromJSON([]byte(tc.old))
		if err != nil {
			t.Fatal(err)
		}
		if rules.StrictLevels != tc.wantStrict || rules.LooseDepth {
			t.Errorf("older master's %s: StrictLevels %v, LooseDepth %v; want %v, false", tc.old, rules.StrictLevels, rules.LooseDepth, tc.wantStrict)
		}
	}
}

// TestSchedulerLevelsNeedRelinking: a Scheduler lets depth levels overlap
// by default only on a State that relinks; on one that does not
// (state.Options without Relink) it goes level by level, so that the
// default stays exact for every State. Two depth-0 URLs are handed out
// and not finished: a depth-1 URL of another host must then wait (levels)
// or come at once (overlap).
func TestSchedulerLevelsNeedRelinking(t *testing.T) {
	for _, tc := range []struct {
		name      string
		opt       state.Options
		wantLevel bool
	}{
		{"relinking state: levels overlap", state.Options{Relink: true, MaxDepth: 5}, false},
		{"state without relinking: level by level", state.Options{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			st, err := state.Open(filepath.Join(dir, "state"), tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			cfg := crawl.NewConfig()
			cfg.Data = dir
			cfg.Delay = 0
			s, err := crawl.NewScheduler(cfg, st, nil, prometheus.NewRegistry())
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			reqs := []frontier.Request{
				{URL: "http://a.test/", Key: "a.test"},
				{URL: "http://b.test/", Key: "b.test"},
				{URL: "http://c.test/deep", Key: "c.test", Depth: 1, Priority: 1},
			}
			if err := s.Start(ctx, reqs); err != nil {
				t.Fatal(err)
			}
			for range 2 {
				l, err := s.Next(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if l.Request.Depth != 0 {
					t.Fatalf("handed out %s (depth %d) before the depth-0 URLs", l.Request.URL, l.Request.Depth)
				}
			}
			wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			defer cancel()
			l, err := s.Next(wctx)
			switch {
			case tc.wantLevel && err == nil:
				t.Errorf("handed out %s while depth 0 was still being fetched: levels overlap on a state that cannot relink", l.Request.URL)
			case !tc.wantLevel && err != nil:
				t.Errorf("Next: %v; want the depth-1 URL at once (levels overlap by default)", err)
			}
		})
	}
}
