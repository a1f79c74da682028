package main

import (
	"context"
	"runtime/debug"
	"testing"
	"time"
)

// TestCrawlGCPercent: spider crawl collects at GOGC=200 unless the
// environment sets GOGC, which then stands as Go reads it.
func TestCrawlGCPercent(t *testing.T) {
	for _, tc := range []struct {
		env     string
		percent int
		ok      bool
	}{
		{"", 200, true},
		{"100", 0, false},
		{"off", 0, false},
		{"400", 0, false},
	} {
		p, ok := crawlGCPercent(tc.env)
		if p != tc.percent || ok != tc.ok {
			t.Errorf("crawlGCPercent(%q) = %d, %v; want %d, %v", tc.env, p, ok, tc.percent, tc.ok)
		}
	}
}

// TestGCPercentFor: GOGC 200 while the live heap is small, Go's default 100
// from gcLargeHeap on, and between the two lines the GOGC in force stays.
func TestGCPercentFor(t *testing.T) {
	for _, tc := range []struct {
		live uint64
		cur  int
		want int
	}{
		{10 << 20, 200, 200},
		{10 << 20, 100, 200},
		{gcSmallHeap - 1, 100, 200},
		{gcSmallHeap, 100, 100},
		{gcSmallHeap, 200, 200},
		{gcLargeHeap - 1, 200, 200},
		{gcLargeHeap, 200, 100},
		{2 << 30, 100, 100},
	} {
		if got := gcPercentFor(tc.live, tc.cur); got != tc.want {
			t.Errorf("gcPercentFor(%d MiB, %d) = %d, want %d", tc.live>>20, tc.cur, got, tc.want)
		}
	}
}

// TestTuneGC: tuneGC sets GOGC 200 and its stop gives back the GOGC in
// force before.
func TestTuneGC(t *testing.T) {
	prev := debug.SetGCPercent(150)
	defer debug.SetGCPercent(prev)
	stop := tuneGC(context.Background(), time.Millisecond)
	time.Sleep(5 * time.Millisecond) // a few checks: this test's heap is small
	if got := debug.SetGCPercent(200); got != 200 {
		t.Errorf("GOGC while tuning = %d, want 200", got)
	}
	stop()
	if got := debug.SetGCPercent(150); got != 150 {
		t.Errorf("GOGC after stop = %d, want 150 (the one before)", got)
	}
}
