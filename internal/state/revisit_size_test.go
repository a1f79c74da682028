package state

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/spider-crawler/spider/internal/frontier"
	"github.com/spider-crawler/spider/internal/revisit"
)

// TestRevisitBytes measures what the revisit schedule costs on disk: the
// in-use bytes of the revisit and due buckets per URL (bbolt leaf and
// branch pages, fill included) for a crawl of 20,000 URLs of about 50
// bytes, each with a realistic schedule entry (revisit.Entry of a page
// fetched once, a 12-byte ETag) and a Due. Run with SPIDER_MEASURE=1
// (go test ./internal/state -run TestRevisitBytes -v).
func TestRevisitBytes(t *testing.T) {
	if os.Getenv("SPIDER_MEASURE") == "" {
		t.Skip("a measurement: SPIDER_MEASURE=1")
	}
	ctx := context.Background()
	s := openTest(t, t.TempDir(), Options{ExpectedURLs: 100_000})
	now := time.Now()
	e := revisit.Entry{Next: now.Add(time.Hour), Interval: time.Hour, LastFetch: now, LastChange: now, ETag: `"v1-3f2a9c1b"`, Fingerprint: 0x1234567890abcdef}
	sched, _ := e.MarshalBinary()
	const n = 20_000
	var reqs []frontier.Request
	for i := range n {
		reqs = append(reqs, frontier.Request{URL: fmt.Sprintf("http://www.host%03d.example/section/%d/article-%05d.html", i%300, i%17, i), Key: fmt.Sprintf("www.host%03d.example:80", i%300), Depth: 2})
	}
	acc, err := s.Discover(ctx, reqs)
	must(t, err)
	for i, r := range acc {
		_, err := s.Complete(ctx, r, Outcome{Class: "200", Schedule: string(sched), Due: now.Add(time.Duration(i) * time.Second)}, nil)
		must(t, err)
	}
	must(t, s.db.View(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bRevisit, bDue, bPending, bSeen, bRecent} {
			st := tx.Bucket(name).Stats()
			inuse := st.LeafInuse + st.BranchInuse + st.InlineBucketInuse
			t.Logf("%-8s %6d keys, %8d bytes in use: %6.1f bytes per URL", name, st.KeyN, inuse, float64(inuse)/n)
		}
		return nil
	}))
	t.Logf("schedule entry %d bytes, request record about %d bytes (URL %d)", len(sched), len(reqs[0].URL)+len(reqs[0].Key)+len(sched)+12, len(reqs[0].URL))
}
