package rstate_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/spider-crawler/spider/internal/cluster/redistest"
	"github.com/spider-crawler/spider/internal/crawlstate"
	"github.com/spider-crawler/spider/internal/frontier"
	"github.com/spider-crawler/spider/internal/rstate"
)

// benchURL is a URL of realistic length (about 55 bytes).
func benchURL(prefix string, i int) frontier.Request {
	host := fmt.Sprintf("www.site-%d.example.com", i%97)
	return frontier.Request{URL: fmt.Sprintf("https://%s/%s/page-%08d.html", host, prefix, i), Key: host + ":443", Depth: 2}
}

// preload discovers n URLs "known/i" in batches and returns them.
func preload(b *testing.B, s *rstate.Store, prefix string, n int) []frontier.Request {
	b.Helper()
	var out []frontier.Request
	for i := 0; i < n; i += 500 {
		var batch []frontier.Request
		for j := i; j < min(i+500, n); j++ {
			batch = append(batch, benchURL(prefix, j))
		}
		got, err := s.Discover(context.Background(), batch)
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, got...)
	}
	return out
}

// links returns a page's 20 links: 19 already known, 1 new (5%).
func links(known []frontier.Request, i int) []frontier.Request {
	out := make([]frontier.Request, 0, 20)
	for j := 0; j < 19; j++ {
		out = append(out, known[(i*19+j*7919)%len(known)])
	}
	return append(out, benchURL("new", i))
}

// BenchmarkDiscover: one Discover call of 20 links, 5% new, from 16
// concurrent callers against a local redis-server (persistence off).
func BenchmarkDiscover(b *testing.B) {
	for _, mode := range []string{rstate.SeenExact, rstate.SeenBloom} {
		b.Run(mode, func(b *testing.B) {
			srv := redistest.Start(b)
			s, err := rstate.Open(context.Background(), srv.Client(), rstate.Options{Crawl: "bench", SeenMode: mode, ExpectedURLs: 10_000_000})
			if err != nil {
				b.Fatal(err)
			}
			known := preload(b, s, "known", 20_000)
			var next atomic.Int64
			b.SetParallelism(8)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := s.Discover(context.Background(), links(known, int(next.Add(1)))); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
		})
	}
}

// BenchmarkComplete: one Complete of a pending URL with 20 links, 5% new,
// from 16 concurrent callers.
func BenchmarkComplete(b *testing.B) {
	for _, mode := range []string{rstate.SeenExact, rstate.SeenBloom} {
		b.Run(mode, func(b *testing.B) {
			srv := redistest.Start(b)
			s, err := rstate.Open(context.Background(), srv.Client(), rstate.Options{Crawl: "bench", SeenMode: mode, ExpectedURLs: 10_000_000})
			if err != nil {
				b.Fatal(err)
			}
			known := preload(b, s, "known", 20_000)
			pending := preload(b, s, "todo", b.N)
			var next atomic.Int64
			b.SetParallelism(8)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := int(next.Add(1)) - 1
					if _, err := s.Complete(context.Background(), pending[i], crawlstate.Outcome{Class: "200", Fingerprint: uint64(i + 1), Stored: true}, links(known, i)); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
		})
	}
}

func usedMemory(b *testing.B, c *redis.Client) int64 {
	b.Helper()
	info, err := c.Info(context.Background(), "memory").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return n
		}
	}
	b.Fatal("no used_memory in INFO memory")
	return 0
}

// BenchmarkMemory measures Redis memory (INFO memory used_memory) per
// pending and per seen URL: 100,000 URLs of about 55 bytes are discovered
// (seen + pending), then all completed (seen only). The short-lived reply
// keys (ReplyTTL) are deleted before each reading. It does the same work
// whatever b.N is; run it with -benchtime=1x.
func BenchmarkMemory(b *testing.B) {
	const n = 100_000
	for _, mode := range []string{rstate.SeenExact, rstate.SeenBloom} {
		b.Run(mode, func(b *testing.B) {
			ctx := context.Background()
			srv := redistest.Start(b)
			c := srv.Client()
			s, err := rstate.Open(ctx, c, rstate.Options{Crawl: "mem", SeenMode: mode, ExpectedURLs: n, FPRate: 1e-6})
			if err != nil {
				b.Fatal(err)
			}
			dropReplies := func() {
				keys, err := c.Keys(ctx, s.Prefix()+"call:*").Result()
				if err != nil {
					b.Fatal(err)
				}
				if len(keys) > 0 {
					if err := c.Del(ctx, keys...).Err(); err != nil {
						b.Fatal(err)
					}
				}
			}
			m0 := usedMemory(b, c)
			acc := preload(b, s, "mem", n)
			dropReplies()
			m1 := usedMemory(b, c)
			var wg sync.WaitGroup
			var next atomic.Int64
			for w := 0; w < 16; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
						if _, err := s.Complete(ctx, acc[i], crawlstate.Outcome{Class: "200"}, nil); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			dropReplies()
			m2 := usedMemory(b, c)
			b.ReportMetric(float64(m2-m0)/n, "B/seen-URL")
			b.ReportMetric(float64(m1-m2)/n, "B/pending-URL")
		})
	}
}
