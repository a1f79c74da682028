package state

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/spider-crawler/spider/internal/dedup"
)

// TestBloomGrows: the Bloom filter of a state sized for 10 million URLs
// starts small (a crawl of a few thousand pages was a 110 MB process, 36 MB
// of it this filter) and is rebuilt one step up when the URLs seen pass
// its size, without losing a key (bloom mode, where a positive is taken as
// seen, must accept no URL twice and refuse none); Close's snapshot and a
// rebuild at Open (after an unclean stop) keep the size reached.
func TestBloomGrows(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	opt := Options{SeenMode: SeenBloom, ExpectedURLs: 10_000_000}
	s, err := Open(dir, opt)
	if err != nil {
		t.Fatal(err)
	}
	if s.bloomCap != bloomSteps[0] {
		t.Fatalf("a new state's filter is sized for %d URLs, want the first step %d", s.bloomCap, bloomSteps[0])
	}
	small := s.bloom.M()
	const n = 1<<16 + 5000 // past the first step
	for from := 0; from < n; from += 5000 {
		got, err := s.Discover(ctx, numbered("http://a.test/", from, min(from+5000, n), 1))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != min(5000, n-from) {
			t.Fatalf("batch at %d: %d new URLs, want %d (a fresh URL refused?)", from, len(got), min(5000, n-from))
		}
	}
	// The growth happens in the transaction after the one that passed
	// the step.
	if _, err := s.Discover(ctx, numbered("http://b.test/", 0, 1, 1)); err != nil {
		t.Fatal(err)
	}
	if s.bloomCap != bloomSteps[1] || s.bloom.M() <= small {
		t.Fatalf("after %d URLs the filter is sized for %d URLs (%d bits, was %d), want %d", n+1, s.bloomCap, s.bloom.M(), small, bloomSteps[1])
	}
	for from := 0; from < n; from += 5000 {
		again, err := s.Discover(ctx, numbered("http://a.test/", from, min(from+5000, n), 1))
		if err != nil || len(again) != 0 {
			t.Fatalf("URLs seen before accepted again after the growth: %d (%v)", len(again), err)
		}
	}
	grown := s.bloom.M()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, how := range []string{"snapshot", "rebuild"} {
		if how == "rebuild" {
			if err := os.Remove(filepath.Join(dir, SnapshotFile)); err != nil {
				t.Fatal(err)
			}
		}
		s, err = Open(dir, opt)
		if err != nil {
			t.Fatal(err)
		}
		if s.bloom.M() != grown || s.bloomCap < uint64(n) {
			t.Errorf("%s: reopened filter %d bits for %d URLs, want %d bits for at least %d", how, s.bloom.M(), s.bloomCap, grown, n)
		}
		again, err := s.Discover(ctx, numbered("http://a.test/", 0, 100, 1))
		if err != nil || len(again) != 0 {
			t.Errorf("%s: URLs seen before accepted again: %d (%v)", how, len(again), err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestBloomSize: the steps, a small ExpectedURLs taken as is, and the rule
// of twice the URLs seen beyond it.
func TestBloomSize(t *testing.T) {
	for _, c := range []struct{ seen, expected, want uint64 }{
		{0, 10_000_000, 1 << 16},
		{1 << 15, 10_000_000, 1 << 16},
		{1<<15 + 1, 10_000_000, 1 << 18},
		{1 << 19, 10_000_000, 1 << 20},
		{1<<19 + 1, 10_000_000, 10_000_000},
		{0, 1000, 1000},
		{0, 1 << 17, 1 << 16},
		{1 << 16, 1 << 17, 1 << 17},
		{20_000_000, 10_000_000, 40_000_000},
	} {
		if got := bloomSize(c.seen, c.expected); got != c.want {
			t.Errorf("bloomSize(%d, %d) = %d, want %d", c.seen, c.expected, got, c.want)
		}
	}
	b := dedup.NewBloom(1<<18, 1e-6)
	if c := bloomCapacity(b, 1e-6); c < 1<<18-1<<10 || c > 1<<18+1<<12 {
		t.Errorf("capacity of a filter made for %d URLs: %d", 1<<18, c)
	}
}
