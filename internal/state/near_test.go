package state

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/spider-crawler/spider/internal/frontier"
)

// A rebuilt state (fsck --repair) with RebuildSpec.NearDistance has the
// near-duplicate tables Complete would have built: the pages' SimHashes are
// found after Open, exact copies and near pages not filed twice.
func TestRebuildRefilesNearDuplicates(t *testing.T) {
	const h = uint64(0x0123456789abcdef)
	spec := RebuildSpec{NearDistance: 3, Pending: []frontier.Request{{URL: "http://a.test/new", Key: "a.test", Depth: 1}},
		Completed: []CompletedURL{
			{URL: "http://a.test/1", Class: "200", Fingerprint: 1, SimHash: h},
			{URL: "http://a.test/2", Class: "200", Fingerprint: 2, SimHash: h ^ 3},      // near /1: not filed
			{URL: "http://a.test/3", Class: "200", Fingerprint: 1, SimHash: ^h},         // exact copy of /1: not filed
			{URL: "http://a.test/4", Class: "200", Fingerprint: 4, SimHash: 0xf0f0f0f0}, // filed
		}}
	out := filepath.Join(t.TempDir(), "state")
	if err := os.MkdirAll(out, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := Rebuild(filepath.Join(out, DBFile), spec); err != nil {
		t.Fatal(err)
	}
	s, err := Open(out, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n := s.sim.idx[3].Len(); n != 2 {
		t.Errorf("%d pages filed, want 2 (/1 and /4)", n)
	}
	acc := LoadAllPending(t, s)
	res, err := s.Complete(context.Background(), acc[0], Outcome{Class: "200", Fingerprint: 9, SimHash: h ^ 1<<40, NearDistance: 3}, nil)
	if err != nil || res.DuplicateOf != "http://a.test/1" || !res.Near {
		t.Fatalf("after the rebuild: %+v, %v; want a near-duplicate of http://a.test/1", res, err)
	}
}

func LoadAllPending(t *testing.T, s *Store) []frontier.Request {
	t.Helper()
	var out []frontier.Request
	if err := s.LoadPending(context.Background(), func(r frontier.Request) error { out = append(out, r); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestFileWindowAcrossAKill: what File filed lives in memory until the
// page's Complete commits. A kill in between (the store reopened without
// Close's help is the same for the overlay: it is never written) forgets
// it; the URL is still pending, and its refetch is judged anew: an
// original again, never a copy of itself. Unfile forgets a filing whose
// Complete will not come.
func TestFileWindowAcrossAKill(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "state")
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	acc, err := s.Discover(ctx, []frontier.Request{{URL: "http://a/1", Key: "a"}, {URL: "http://a/2", Key: "a"}, {URL: "http://a/3", Key: "a"}})
	if err != nil {
		t.Fatal(err)
	}
	const h = uint64(0x0123456789abcdef)
	if dup, _, err := s.File(ctx, "http://a/1", 1, h, 3); err != nil || dup != "" {
		t.Fatalf("File of the original: %q, %v", dup, err)
	}
	if dup, near, _ := s.File(ctx, "http://a/2", 2, h^1, 3); dup != "http://a/1" || !near {
		t.Fatalf("a near copy of a page in flight: %q near %v; want http://a/1", dup, near)
	}
	if err := s.Close(); err != nil { // the "kill": no Complete came
		t.Fatal(err)
	}
	if s, err = Open(dir, Options{}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n := s.PendingCount(); n != 3 {
		t.Fatalf("%d URLs pending after the kill, want 3", n)
	}
	// The refetch of the original: filed again, not a copy of itself.
	dup, near, err := s.File(ctx, "http://a/1", 1, h, 3)
	if err != nil || dup != "" {
		t.Fatalf("refetch of the original: %q near %v, %v; want an original", dup, near, err)
	}
	if _, err := s.Complete(ctx, acc[0], Outcome{Class: "200", URL: "http://a/1", Filed: true}, nil); err != nil {
		t.Fatal(err)
	}
	if dup, _, _ := s.File(ctx, "http://a/3", 1, 0, 3); dup != "http://a/1" {
		t.Errorf("an exact copy after the original's Complete: %q, want http://a/1", dup)
	}
	s.Unfile("http://a/3") // nothing was filed for a copy: a no-op
	if dup, _, _ := s.File(ctx, "http://a/x", 9, ^h, 3); dup != "" {
		t.Fatalf("a new page: %q", dup)
	}
	s.Unfile("http://a/x")
	if dup, near, _ := s.File(ctx, "http://a/y", 10, ^h^1, 3); dup != "" {
		t.Errorf("a copy of an unfiled page: %q near %v; want an original (Unfile forgot it)", dup, near)
	}
}
