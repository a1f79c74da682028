package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/websim"
)

const ms = time.Millisecond

// TestSimulate checks the ideal crawler's schedule on tiny graphs whose
// makespans are worked out by hand in the comments (R = robots.txt).
func TestSimulate(t *testing.T) {
	// a0 → a1, a2 on host 0.
	oneHost := simGraph{URLs: []string{"a0", "a1", "a2"}, Host: []int{0, 0, 0}, Hosts: 1,
		Links: [][]int{{1, 2}, nil, nil}, Seeds: []int{0}}
	// a0 (host 0) → b0 (host 1) → b1 (host 1).
	chain := simGraph{URLs: []string{"a0", "b0", "b1"}, Host: []int{0, 1, 1}, Hosts: 2,
		Links: [][]int{{1}, {2}, nil}, Seeds: []int{0}}
	// Two seeds on two hosts, no links.
	twoSeeds := simGraph{URLs: []string{"a0", "b0"}, Host: []int{0, 1}, Hosts: 2,
		Links: [][]int{nil, nil}, Seeds: []int{0, 1}}
	// a0 links a1 and b0; b0 links a2: a2 is known only at 450 ms.
	late := simGraph{URLs: []string{"a0", "a1", "b0", "a2"}, Host: []int{0, 0, 1, 0}, Hosts: 2,
		Links: [][]int{{1, 2}, nil, {3}, nil}, Seeds: []int{0}}
	// Depth limit 2. a0 names a1 nofollow and links b0; b0 links a1: a
	// depth-aware crawler knows a1 only from b0's answer.
	nofollow := simGraph{URLs: []string{"a0", "a1", "b0"}, Host: []int{0, 0, 1}, Hosts: 2,
		Links: [][]int{{1, 2}, nil, {1}}, Step: [][]int8{{-1, 1}, nil, {1}}, Seeds: []int{0}, MaxDepth: 2}
	// Depth limit 2. Seeds a0, s1, s2, s3, a1 on host a (fetched 200 ms
	// apart). a0 → b0 → b1 → b2 (depths 1, 2, 3: b2 beyond); a1 → b1 makes
	// b1 depth 1 when a1's answer arrives (1050 ms), after b1's own answer:
	// b2 comes within the limit only then (its link is relinked).
	relink := simGraph{URLs: []string{"a0", "s1", "s2", "s3", "a1", "b0", "b1", "b2"}, Host: []int{0, 0, 0, 0, 0, 1, 1, 1}, Hosts: 2,
		Links: [][]int{{5}, nil, nil, nil, {6}, {6}, {7}, nil}, Step: [][]int8{{1}, nil, nil, nil, {1}, {1}, {1}, nil},
		Seeds: []int{0, 1, 2, 3, 4}, MaxDepth: 2}
	depthAware := simRules{Delay: 200 * ms, Latency: 50 * ms, Concurrency: 32, DepthAware: true}
	for _, tc := range []struct {
		name     string
		g        simGraph
		r        simRules
		makespan time.Duration
		requests int
	}{
		// R(a) 0–50, a0 200–250 names a1, b0; a1 400–450; R(b) 250–300, b0 450–500.
		{"nofollow, depth-blind", nofollow, simRules{Delay: 200 * ms, Latency: 50 * ms, Concurrency: 32}, 500 * ms, 5},
		// a1 known at 500 (b0's answer): a1 500–550.
		{"nofollow, depth-aware", nofollow, depthAware, 550 * ms, 5},
		// Host a: R 0–50, a0 200, s1 400, s2 600, s3 800, a1 1000–1050. Host b:
		// R 250–300, b0 450–500, b1 650–700 (depth 2); blind: b2 850–900.
		{"relink, depth-blind", relink, simRules{Delay: 200 * ms, Latency: 50 * ms, Concurrency: 32}, 1050 * ms, 10},
		// Depth-aware: b2 (depth 3 from b1's answer) waits for a1's answer at
		// 1050, which lowers b1 to 1 and b2 to 2: b2 1050–1100.
		{"relink, depth-aware", relink, depthAware, 1100 * ms, 10},
		// R 0–50, a0 200–250, a1 400–450, a2 600–650.
		{"one host, start to start", oneHost, simRules{Delay: 200 * ms, Latency: 50 * ms, Concurrency: 32}, 650 * ms, 4},
		// R 0–50, a0 250–300, a1 500–550, a2 750–800.
		{"one host, from done", oneHost, simRules{Delay: 200 * ms, Latency: 50 * ms, Concurrency: 32, FromDone: true}, 800 * ms, 4},
		// Latency above the delay: one connection, back to back: 4 × 50 ms.
		{"latency binds", oneHost, simRules{Delay: 10 * ms, Latency: 50 * ms, Concurrency: 32}, 200 * ms, 4},
		// R(a) 0–50, a0 200–250; b0 known at 250: R(b) 250–300, b0 450–500, b1 650–700.
		{"discovery", chain, simRules{Delay: 200 * ms, Latency: 50 * ms, Concurrency: 32}, 700 * ms, 5},
		// One slot: R(a) 0–50, R(b) 50–100, a0 200–250 (a ready at 200), b0 250–300.
		{"concurrency 1", twoSeeds, simRules{Delay: 200 * ms, Latency: 50 * ms, Concurrency: 1}, 300 * ms, 4},
		// Two slots: R(a), R(b) 0–50, a0, b0 200–250.
		{"concurrency 2", twoSeeds, simRules{Delay: 200 * ms, Latency: 50 * ms, Concurrency: 2}, 250 * ms, 4},
		// R(a) 0–50, a0 200–250 → a1, b0 known; a1 400–450; R(b) 250–300, b0 450–500 →
		// a2 known at 500; host a free since 600: a2 600–650.
		{"late discovery", late, simRules{Delay: 200 * ms, Latency: 50 * ms, Concurrency: 32}, 650 * ms, 6},
		// No delay, no latency: everything at time 0.
		{"instant", chain, simRules{Concurrency: 1}, 0, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := simulate(tc.g, tc.r)
			if err != nil {
				t.Fatal(err)
			}
			if res.Makespan != tc.makespan || res.Requests != tc.requests || res.Pages != len(tc.g.URLs) {
				t.Errorf("got makespan %s, %d requests, %d pages; want %s, %d, %d",
					res.Makespan, res.Requests, res.Pages, tc.makespan, tc.requests, len(tc.g.URLs))
			}
			if res.Peak > tc.r.Concurrency {
				t.Errorf("peak %d requests in flight above concurrency %d", res.Peak, tc.r.Concurrency)
			}
		})
	}
}

func TestSimulateErrors(t *testing.T) {
	g := simGraph{URLs: []string{"a"}, Host: []int{0}, Hosts: 1, Links: [][]int{{3}}, Seeds: []int{0}}
	for _, tc := range []struct {
		name string
		g    simGraph
		r    simRules
		want string
	}{
		{"no concurrency", g, simRules{}, "concurrency 0"},
		{"negative delay", g, simRules{Concurrency: 1, Delay: -1}, "negative delay"},
		{"bad link", g, simRules{Concurrency: 1}, "link to URL 3"},
		{"short lists", simGraph{URLs: []string{"a"}, Hosts: 1}, simRules{Concurrency: 1}, "0 hosts"},
		// b is linked only nofollow: a depth-aware crawl never reaches it.
		{"unreachable", simGraph{URLs: []string{"a", "b"}, Host: []int{0, 0}, Hosts: 1, Links: [][]int{{1}, nil},
			Step: [][]int8{{-1}, nil}, Seeds: []int{0}, MaxDepth: 5}, simRules{Concurrency: 1, DepthAware: true}, "only 1 of 2 URLs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := simulate(tc.g, tc.r)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestTruthGraph builds the graph of a small websim crawl: every truth URL
// must be reachable from the seeds through it (else the simulation would
// not fetch it), and the bound must lie below the discovery-blind one.
func TestTruthGraph(t *testing.T) {
	srv, err := websim.Start(context.Background(), websim.Config{Seed: 1, Hosts: 8, PagesPerHost: 12})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	truth, err := srv.Truth(websim.TruthRules{Seeds: srv.SeedURLs(2), MaxDepth: 3, Scope: websim.ScopeAny})
	if err != nil {
		t.Fatal(err)
	}
	g, err := truthGraph(srv.Config(), truth)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Seeds) != 2 {
		t.Fatalf("%d seeds in the graph, want 2", len(g.Seeds))
	}
	r := simRules{Delay: 200 * ms, Latency: 50 * ms, Concurrency: 32}
	res, err := simulate(g, r)
	if err != nil {
		t.Fatal(err)
	}
	if res.Pages != len(truth.MustFetch) {
		t.Errorf("simulation fetched %d of %d truth URLs: the graph misses edges", res.Pages, len(truth.MustFetch))
	}
	if srv.Log().Len() != 0 {
		t.Errorf("building the graph wrote %d entries to the server's access log", srv.Log().Len())
	}
	blind := politenessBound(truth.MustFetch, truth.Depth, r.Concurrency, r.Delay, r.Latency)
	if res.Rate() > blind.Makespan+1e-9 {
		t.Errorf("discovery-aware bound %.1f pages/s above the discovery-blind %.1f", res.Rate(), blind.Makespan)
	}
	done, err := simulate(g, simRules{Delay: r.Delay, Latency: r.Latency, Concurrency: r.Concurrency, FromDone: true})
	if err != nil {
		t.Fatal(err)
	}
	if done.Makespan <= res.Makespan {
		t.Errorf("delay from the answer: makespan %s, not above start-to-start %s", done.Makespan, res.Makespan)
	}
	// Depth-aware: the graph's followable edges within the limit reach every
	// truth URL (simulate fails otherwise), no sooner than depth-blind.
	r.DepthAware = true
	deep, err := simulate(g, r)
	if err != nil {
		t.Fatal(err)
	}
	if deep.Makespan < res.Makespan {
		t.Errorf("depth-aware makespan %s below the depth-blind %s", deep.Makespan, res.Makespan)
	}
}
