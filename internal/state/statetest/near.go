package statetest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/spider-crawler/spider/internal/frontier"
	"github.com/spider-crawler/spider/internal/state"
)

// testNearDuplicates: Complete finds a page whose SimHash is within
// Outcome.NearDistance of an earlier page's (Result.Near), files only pages
// that are neither exact nor near duplicates, keeps the tables across a
// reopen, and a failed or repeated Complete files nothing.
func (r *runner) testNearDuplicates(t *testing.T) {
	ctx := context.Background()
	name := r.name(t)
	s := r.open(t, name, small(state.SeenExact))
	var urls []string
	for i := 0; i < 12; i++ {
		urls = append(urls, fmt.Sprintf("http://n/%d", i))
	}
	acc, err := s.Discover(ctx, Reqs(urls...))
	if err != nil {
		t.Fatal(err)
	}
	const h = uint64(0x9e3779b97f4a7c15)
	flip := func(bits ...int) uint64 {
		g := h
		for _, b := range bits {
			g ^= 1 << b
		}
		return g
	}
	tests := []struct {
		name     string
		r        frontier.Request
		o        state.Outcome
		want     string
		wantNear bool
	}{
		{"first page", acc[0], state.Outcome{Class: "200", Fingerprint: 1, SimHash: h, NearDistance: 3}, "", false},
		{"three bits away", acc[1], state.Outcome{Class: "200", Fingerprint: 2, SimHash: flip(0, 17, 63), NearDistance: 3}, "http://n/0", true},
		{"four bits away: filed", acc[2], state.Outcome{Class: "200", Fingerprint: 3, SimHash: flip(1, 20, 40, 60), NearDistance: 3}, "", false},
		{"no SimHash", acc[3], state.Outcome{Class: "200", Fingerprint: 4, SimHash: 0, NearDistance: 3}, "", false},
		{"exact duplicate first", acc[4], state.Outcome{Class: "200", Fingerprint: 1, SimHash: ^h, NearDistance: 3}, "http://n/0", false},
		{"near-duplicates off", acc[5], state.Outcome{Class: "200", Fingerprint: 6, SimHash: flip(5), NearDistance: 0}, "", false},
		{"nearest of two", acc[6], state.Outcome{Class: "200", Fingerprint: 7, SimHash: flip(1, 20, 40), NearDistance: 3}, "http://n/2", true},
		{"other distance, other tables", acc[7], state.Outcome{Class: "200", Fingerprint: 8, SimHash: flip(9), NearDistance: 1}, "", false},
		{"same owner is not a duplicate", acc[8], state.Outcome{Class: "200", Fingerprint: 9, SimHash: flip(30), NearDistance: 3, URL: "http://n/0"}, "", false},
	}
	for _, tt := range tests {
		res, err := s.Complete(ctx, tt.r, tt.o, nil)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if res.DuplicateOf != tt.want || res.Near != tt.wantNear {
			t.Errorf("%s: DuplicateOf %q Near %v, want %q %v", tt.name, res.DuplicateOf, res.Near, tt.want, tt.wantNear)
		}
	}
	// A second completion of a near-duplicate does nothing.
	if res, err := s.Complete(ctx, acc[1], tests[1].o, nil); err != nil || res.DuplicateOf != "" {
		t.Errorf("repeated Complete: %+v, %v; want an empty Result", res, err)
	}
	// A distance beyond the tables is refused and records nothing.
	if _, err := s.Complete(ctx, acc[9], state.Outcome{Class: "200", SimHash: 12345, NearDistance: 99}, nil); err == nil {
		t.Error("NearDistance 99 accepted")
	}
	// A failed Complete (mismatched URL) files nothing.
	far := uint64(0x0f0f0f0f0f0f0f0f)
	if _, err := s.Complete(ctx, frontier.Request{URL: "http://other/", Seq: acc[9].Seq}, state.Outcome{Class: "200", SimHash: far, NearDistance: 3}, nil); err == nil {
		t.Fatal("mismatched Complete accepted")
	}
	must(t, s.Close())
	s = r.open(t, name, small(state.SeenExact))
	if len(LoadAll(t, s)) != 3 {
		t.Fatal("the refused completions did not leave their URLs pending")
	}
	res, err := s.Complete(ctx, acc[9], state.Outcome{Class: "200", SimHash: far, NearDistance: 3}, nil)
	if err != nil || res.DuplicateOf != "" {
		t.Errorf("after a failed Complete: %+v, %v; want a new page", res, err)
	}
	// The tables survive a reopen.
	res, err = s.Complete(ctx, acc[10], state.Outcome{Class: "200", SimHash: flip(2, 3), NearDistance: 3}, nil)
	if err != nil || res.DuplicateOf != "http://n/0" || !res.Near {
		t.Errorf("after reopen: %+v, %v; want a near-duplicate of http://n/0", res, err)
	}
}

// testNearConcurrent: pages near one another completed at once; exactly
// one is filed, every other is its near-duplicate.
func (r *runner) testNearConcurrent(t *testing.T) {
	ctx := context.Background()
	s := r.open(t, r.name(t), small(state.SeenExact))
	var urls []string
	for i := 0; i < 16; i++ {
		urls = append(urls, fmt.Sprintf("http://c/%d", i))
	}
	acc, err := s.Discover(ctx, Reqs(urls...))
	if err != nil {
		t.Fatal(err)
	}
	const h = uint64(0x123456789abcdef0)
	results := make([]state.Result, len(acc))
	var wg sync.WaitGroup
	for i := range acc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := s.Complete(ctx, acc[i], state.Outcome{Class: "200", Fingerprint: uint64(100 + i), SimHash: h ^ uint64(i%3), NearDistance: 3}, nil)
			if err != nil {
				t.Error(err)
			}
			results[i] = res
		}()
	}
	wg.Wait()
	first := ""
	for i, res := range results {
		if res.DuplicateOf == "" {
			if first != "" {
				t.Fatalf("%s and %s were both filed as new pages", first, acc[i].URL)
			}
			first = acc[i].URL
		}
	}
	for i, res := range results {
		if acc[i].URL != first && (res.DuplicateOf != first || !res.Near) {
			t.Errorf("%s: DuplicateOf %q Near %v, want %q true", acc[i].URL, res.DuplicateOf, res.Near, first)
		}
	}
}
