package rstate_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
	"github.com/spider-crawler/spider/internal/crawlstate"
	"github.com/spider-crawler/spider/internal/frontier"
	"github.com/spider-crawler/spider/internal/revisit"
	"github.com/spider-crawler/spider/internal/rstate"
)

// TestRevisitBytes measures what the revisit schedule costs in Redis: the
// memory of a bucket's rv hash and due set per URL (MEMORY USAGE … SAMPLES
// 0) for 20,000 URLs of about 50 bytes, each with a realistic schedule
// entry (revisit.Entry of a page fetched once, a 12-byte ETag) and a Due.
// Run with SPIDER_MEASURE=1 (go test ./internal/rstate -run
// TestRevisitBytes -v).
func TestRevisitBytes(t *testing.T) {
	if os.Getenv("SPIDER_MEASURE") == "" {
		t.Skip("a measurement: SPIDER_MEASURE=1")
	}
	c := redistest.Start(t).Client()
	s := open(t, c, rstate.Options{Crawl: "bytes", SeenMode: rstate.SeenBloom, ExpectedURLs: 100_000})
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
		_, err := s.Complete(ctx, r, crawlstate.Outcome{Class: "200", Schedule: string(sched), Due: now.Add(time.Duration(i) * time.Second)}, nil)
		must(t, err)
	}
	for _, k := range []string{"rv", "due", "live", "bloom"} {
		b, err := c.MemoryUsage(ctx, s.Prefix()+k, 0).Result()
		if err != nil {
			t.Logf("%-6s none (%v)", k, err)
			continue
		}
		t.Logf("%-6s %9d bytes: %6.1f bytes per URL", k, b, float64(b)/n)
	}
}
