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
