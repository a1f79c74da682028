package rstate_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
	"github.com/spider-crawler/spider/internal/crawlstate"
	"github.com/spider-crawler/spider/internal/rstate"
	"github.com/spider-crawler/spider/internal/state/statetest"
)

// TestDueShares: a TakeDue spread over several buckets takes the earliest
// due URLs of all of them (DueShares), not bucket by bucket, never one
// not due yet; NextDueOf is the earliest of the buckets'; on a cluster
// too (the buckets' due sets on different masters, one pipeline).
func TestDueShares(t *testing.T) {
	t0 := time.UnixMilli(1_700_000_000_000)
	for _, tt := range []struct {
		name    string
		cluster bool
	}{{"one server", false}, {"cluster", true}} {
		t.Run(tt.name, func(t *testing.T) {
			var stores []*rstate.Store
			crawl := "dueshares"
			if tt.cluster {
				cl := redistest.StartCluster(t, 3)
				for b := range 3 {
					stores = append(stores, open(t, cl.Client(), rstate.Options{Crawl: crawl, Bucket: rstate.BucketName(b * 1000)}))
				}
			} else {
				srv := redistest.Start(t)
				for b := range 3 {
					stores = append(stores, open(t, srv.Client(), rstate.Options{Crawl: crawl, Bucket: rstate.BucketName(b)}))
				}
			}
			if _, ok, err := rstate.NextDueOf(ctx, stores); err != nil || ok {
				t.Fatalf("NextDueOf with nothing scheduled = %v, %v", ok, err)
			}
			// Bucket i's URLs are due at i, i+3, i+6 … seconds: the
			// earliest five are 0 1 2 (one per bucket), 3 4 (buckets 0, 1).
			for i, st := range stores {
				var urls []string
				for j := range 4 {
					urls = append(urls, fmt.Sprintf("http://b%d/%d", i, i+3*j))
				}
				acc, err := st.Discover(ctx, statetest.Reqs(urls...))
				must(t, err)
				for j, r := range acc {
					_, err := st.Complete(ctx, r, crawlstate.Outcome{Class: "200", Schedule: "s", Due: t0.Add(time.Duration(i+3*j) * time.Second)}, nil)
					must(t, err)
				}
			}
			if next, ok, err := rstate.NextDueOf(ctx, stores); err != nil || !ok || !next.Equal(t0) {
				t.Fatalf("NextDueOf = %v, %v, %v; want %v", next, ok, err, t0)
			}
			share, err := rstate.DueShares(ctx, stores, t0.Add(100*time.Second), 5)
			must(t, err)
			if want := []int{2, 2, 1}; !slices.Equal(share, want) {
				t.Fatalf("DueShares(5) = %v, want %v", share, want)
			}
			// Not before their Due: at 1.5 s only the URLs due at 0 and 1.
			share, err = rstate.DueShares(ctx, stores, t0.Add(1500*time.Millisecond), 5)
			must(t, err)
			if want := []int{1, 1, 0}; !slices.Equal(share, want) {
				t.Fatalf("DueShares at 1.5 s = %v, want %v", share, want)
			}
			var got []string
			for i, n := range share {
				reqs, err := stores[i].TakeDue(ctx, t0.Add(1500*time.Millisecond), n)
				must(t, err)
				got = append(got, statetest.URLs(reqs)...)
			}
			if want := []string{"http://b0/0", "http://b1/1"}; !slices.Equal(got, want) {
				t.Fatalf("taken %v, want %v", got, want)
			}
			if next, ok, err := rstate.NextDueOf(ctx, stores); err != nil || !ok || !next.Equal(t0.Add(2*time.Second)) {
				t.Fatalf("NextDueOf after the take = %v, %v, %v; want %v", next, ok, err, t0.Add(2*time.Second))
			}
		})
	}
}
