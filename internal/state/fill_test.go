package state

import (
	"fmt"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/spider-crawler/spider/internal/frontier"
)

// TestPendingLeavesFull: pending's keys are Seqs written in increasing
// order, so its leaves are split when full (appendOnly), not at bbolt's
// default half: a state holding mostly pending URLs (a large frontier)
// takes about half the disk it did. Before appendOnly the leaves were 48 %
// full.
func TestPendingLeavesFull(t *testing.T) {
	s := openTest(t, t.TempDir(), Options{})
	defer s.Close()
	const batches, per = 200, 100
	for b := range batches {
		reqs := make([]frontier.Request, per)
		for i := range reqs {
			reqs[i] = frontier.Request{URL: fmt.Sprintf("http://h%d.example/page/%d", (b*per+i)%97, b*per+i), Key: "h:80", Depth: 1}
		}
		if _, err := s.Discover(ctx, reqs); err != nil {
			t.Fatal(err)
		}
	}
	err := s.db.View(func(tx *bolt.Tx) error {
		st := tx.Bucket(bPending).Stats()
		if st.KeyN != batches*per {
			t.Errorf("pending holds %d keys, want %d", st.KeyN, batches*per)
		}
		if fill := float64(st.LeafInuse) / float64(st.LeafAlloc); fill < 0.9 {
			t.Errorf("pending's leaves are %.0f %% full (%d pages), want at least 90 %%", 100*fill, st.LeafPageN)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
