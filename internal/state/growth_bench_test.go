package state

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/frontier"
)

// BenchmarkDiscoverGrowth measures what accepting a new URL costs as the
// crawl state grows (issue 11's large frontier): one store takes
// growthURLs new URLs in Discover calls of 1,000 (about one group commit of
// a busy crawl: 20 pages × 50 links), and the cost per URL is reported for
// the first and the last tenth, in wall time and in the process's CPU time
// (user + system, all goroutines: the robust figure on a shared machine). Every
// new URL is a Bloom filter test and two B+tree inserts: its 16-byte hash
// key in seen (random, so once the tree has more leaves than a transaction
// has keys, each insert copies and rewrites its own 4 KiB leaf on commit)
// and its Seq in pending (sequential: appends to one leaf). Run with
// -benchtime=1x; skipped with -short.
func BenchmarkDiscoverGrowth(b *testing.B) {
	if testing.Short() {
		b.Skip("inserts millions of URLs: skipped in -short")
	}
	const (
		growthURLs = 2_000_000
		batchSize  = 1000
		tenth      = growthURLs / 10
	)
	for range b.N {
		s, err := Open(b.TempDir(), Options{ExpectedURLs: growthURLs})
		if err != nil {
			b.Fatal(err)
		}
		var first, last, firstCPU, lastCPU time.Duration
		batch := make([]frontier.Request, batchSize)
		for done := 0; done < growthURLs; done += batchSize {
			for i := range batch {
				batch[i] = frontier.Request{URL: fmt.Sprintf("http://h%d.example/p/%d", (done+i)%100_003, done+i), Key: "h:80", Depth: 1}
			}
			start, cpu0 := time.Now(), cpuTime(b)
			acc, err := s.Discover(ctx, batch)
			if err != nil {
				b.Fatal(err)
			}
			if len(acc) != batchSize {
				b.Fatalf("accepted %d of %d new URLs", len(acc), batchSize)
			}
			switch took, cpu := time.Since(start), cpuTime(b)-cpu0; {
			case done < tenth:
				first, firstCPU = first+took, firstCPU+cpu
			case done >= growthURLs-tenth:
				last, lastCPU = last+took, lastCPU+cpu
			}
		}
		b.ReportMetric(float64(first.Nanoseconds())/tenth, "ns/URL-first-tenth")
		b.ReportMetric(float64(last.Nanoseconds())/tenth, "ns/URL-last-tenth")
		b.ReportMetric(float64(firstCPU.Nanoseconds())/tenth, "cpu-ns/URL-first-tenth")
		b.ReportMetric(float64(lastCPU.Nanoseconds())/tenth, "cpu-ns/URL-last-tenth")
		b.ReportMetric(float64(lastCPU)/float64(firstCPU), "cpu-last/first")
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// cpuTime is the process's user + system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
