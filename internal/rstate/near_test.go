package rstate_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
	"github.com/spider-crawler/spider/internal/crawlstate"
	"github.com/spider-crawler/spider/internal/frontier"
	"github.com/spider-crawler/spider/internal/rstate"
	"github.com/spider-crawler/spider/internal/state"
	"github.com/spider-crawler/spider/internal/state/statetest"
)

// dupTags are the crawl-wide duplicate tables' tags of these tests.
var dupTags = []string{"dd-0", "dd-1", "dd-2", "dd-3", "dd-4"}

// TestContractCrawlWideDupes runs the crawl-state contract (its exact and
// near-duplicate cases included) with the duplicate tables crawl-wide
// (Options.DupTags): one bucket must behave as with its own tables.
func TestContractCrawlWideDupes(t *testing.T) {
	srv := redistest.Start(t)
	statetest.Run(t, func(t *testing.T, name string, opt state.Options) statetest.Backend {
		s, err := rstate.Open(context.Background(), srv.Client(), rstate.Options{
			Crawl: name, SeenMode: opt.SeenMode, ExpectedURLs: opt.ExpectedURLs, FPRate: opt.FPRate,
			Relink: opt.Relink, MaxDepth: opt.MaxDepth, DupTags: dupTags,
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return withDupes(t, backend{s}, srv.Client(), name, dupTags) // the store's own crawl-wide tables
	})
}

// TestDupesAcrossBuckets: a page completed in one bucket and its exact and
// near copies completed in another (two hosts of two buckets: a p2p crawl,
// a master–worker crawl's state parts) are found with crawl-wide tables,
// on one redis-server and on a Redis Cluster of 3 masters; with each
// bucket's own tables (no DupTags) they are not — where the duplicates
// across buckets were lost before.
func TestDupesAcrossBuckets(t *testing.T) {
	single := redistest.Start(t)
	cluster := redistest.StartCluster(t, 3)
	for _, tc := range []struct {
		name string
		rdb  redis.UniversalClient
	}{{"single", single.Client()}, {"cluster", cluster.Client()}} {
		t.Run(tc.name, func(t *testing.T) {
			for _, shared := range []bool{false, true} {
				ctx := context.Background()
				crawl := fmt.Sprintf("x%v", shared)
				var tags []string
				if shared {
					tags = dupTags
				}
				open := func(bucket string) *rstate.Store {
					s, err := rstate.Open(ctx, tc.rdb, rstate.Options{Crawl: crawl, Bucket: bucket, DupTags: tags})
					if err != nil {
						t.Fatal(err)
					}
					return s
				}
				b0, b1 := open("b0"), open("b1")
				complete := func(s *rstate.Store, url string, fp, sim uint64) crawlstate.Result {
					acc, err := s.Discover(ctx, statetest.Reqs(url))
					if err != nil || len(acc) != 1 {
						t.Fatalf("discover %s: %v %v", url, acc, err)
					}
					res, err := s.Complete(ctx, acc[0], crawlstate.Outcome{Class: "200", Fingerprint: fp, SimHash: sim, NearDistance: 3, URL: url}, nil)
					if err != nil {
						t.Fatal(err)
					}
					return res
				}
				const h = uint64(0x9e3779b97f4a7c15)
				if res := complete(b0, "http://a.test/article", 11, h); res.DuplicateOf != "" {
					t.Fatalf("first page: %+v", res)
				}
				exact := complete(b1, "http://b.test/mirror", 11, h)
				near := complete(b1, "http://b.test/dated", 12, h^(1<<3|1<<40|1<<62))
				far := complete(b1, "http://b.test/other", 13, h^0xffff)
				if far.DuplicateOf != "" {
					t.Errorf("shared %v: a page 16 bits away is a duplicate of %q", shared, far.DuplicateOf)
				}
				if !shared {
					if exact.DuplicateOf == "http://a.test/article" || near.DuplicateOf == "http://a.test/article" {
						t.Errorf("each bucket's own tables found copies across buckets (%+v, %+v): the test no longer shows the bucket limit", exact, near)
					}
					continue
				}
				if exact.DuplicateOf != "http://a.test/article" || exact.Near {
					t.Errorf("exact copy on another bucket: %+v, want a duplicate of http://a.test/article", exact)
				}
				if near.DuplicateOf != "http://a.test/article" || !near.Near {
					t.Errorf("near copy on another bucket: %+v, want a near-duplicate of http://a.test/article", near)
				}
				// A completion that does not complete (not pending any
				// more) files nothing: its hash finds nothing later.
				acc, _ := b0.Discover(ctx, statetest.Reqs("http://a.test/twice"))
				if _, err := b0.Complete(ctx, acc[0], crawlstate.Outcome{Class: "200"}, nil); err != nil {
					t.Fatal(err)
				}
				const g = uint64(0x0123456789abcdef)
				if res, err := b0.Complete(ctx, acc[0], crawlstate.Outcome{Class: "200", Fingerprint: 99, SimHash: g, NearDistance: 3, URL: acc[0].URL}, nil); err != nil || res.DuplicateOf != "" {
					t.Fatalf("repeated Complete: %+v %v", res, err)
				}
				if res := complete(b1, "http://b.test/after", 99, g); res.DuplicateOf != "" {
					t.Errorf("a page not completed was filed: %+v", res)
				}
			}
		})
	}
}

// TestDupesAcrossBucketsConcurrent completes pairs of near copies on two
// buckets at the same moment, each pair's two pages from two goroutines:
// both lookups may miss each other, but their filings meet in a table
// they share, so at least one page of every pair must be found a
// duplicate of the other.
func TestDupesAcrossBucketsConcurrent(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	open := func(bucket string) *rstate.Store {
		s, err := rstate.Open(ctx, srv.Client(), rstate.Options{Crawl: "conc", Bucket: bucket, DupTags: dupTags})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	stores := []*rstate.Store{open("b0"), open("b1")}
	const pairs = 200
	r := rand.New(rand.NewPCG(27, 4))
	hashes := make([]uint64, pairs)
	reqs := make([][]frontier.Request, 2)
	for i := range hashes {
		hashes[i] = r.Uint64()
		for s := range stores {
			acc, err := stores[s].Discover(ctx, statetest.Reqs(fmt.Sprintf("http://h%d.test/%d", s, i)))
			if err != nil {
				t.Fatal(err)
			}
			reqs[s] = append(reqs[s], acc[0])
		}
	}
	results := make([][]crawlstate.Result, 2)
	var wg sync.WaitGroup
	for s := range stores {
		results[s] = make([]crawlstate.Result, pairs)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range pairs {
				sim := hashes[i]
				if s == 1 {
					sim ^= 1<<(i%64) | 1<<((i+29)%64)
				}
				res, err := stores[s].Complete(ctx, reqs[s][i], crawlstate.Outcome{Class: "200", Fingerprint: uint64(1 + 2*i + s), SimHash: sim, NearDistance: 3, URL: reqs[s][i].URL}, nil)
				if err != nil {
					t.Error(err)
					return
				}
				results[s][i] = res
			}
		}()
	}
	wg.Wait()
	both := 0
	for i := range pairs {
		a, b := results[0][i], results[1][i]
		if a.DuplicateOf == "" && b.DuplicateOf == "" {
			t.Errorf("pair %d: neither page was found a copy of the other", i)
		}
		if a.DuplicateOf != "" && b.DuplicateOf != "" {
			both++
		}
		for s, res := range []crawlstate.Result{a, b} {
			if want := reqs[1-s][i].URL; res.DuplicateOf != "" && res.DuplicateOf != want {
				t.Errorf("pair %d: %s a duplicate of %s, want %s", i, reqs[s][i].URL, res.DuplicateOf, want)
			}
		}
	}
	t.Logf("%d pairs completed at once on two buckets: %d with both pages reported the other's copy", pairs, both)
}

// BenchmarkCompleteNear: Complete of a pending URL with 20 links (as
// BenchmarkComplete), a fingerprint and a SimHash at distance 3, from 8
// concurrent callers on one Store: the bucket's own tables (filed in the
// complete script) against the crawl's (DupTags: filed after it, two or
// three more round trips, one filing at a time per Store).
//
//	go test ./internal/rstate -run '^$' -bench CompleteNear -benchtime 5000x
func BenchmarkCompleteNear(b *testing.B) {
	for _, tc := range []struct {
		name string
		tags []string
	}{{"bucket", nil}, {"crawl-wide", dupTags}} {
		b.Run(tc.name, func(b *testing.B) {
			srv := redistest.Start(b)
			s, err := rstate.Open(context.Background(), srv.Client(), rstate.Options{Crawl: "bench", DupTags: tc.tags})
			if err != nil {
				b.Fatal(err)
			}
			known := preload(b, s, "known", 20_000)
			pending := preload(b, s, "todo", b.N)
			r := rand.New(rand.NewPCG(1, 2))
			sims := make([]uint64, b.N)
			for i := range sims {
				sims[i] = r.Uint64()
			}
			var next atomic.Int64
			b.SetParallelism(8)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := int(next.Add(1)) - 1
					if _, err := s.Complete(context.Background(), pending[i], crawlstate.Outcome{Class: "200", Fingerprint: uint64(i + 1),
						SimHash: sims[i], NearDistance: 3, URL: pending[i].URL, Stored: true}, links(known, i)); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
		})
	}
}
