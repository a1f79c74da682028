package state

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
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
// new URL is a Bloom filter test, two appends (its entry in the recent
// bucket, its request in pending) and, once the recent set was first
// frozen, the merge of about one older entry into seen (see recent.go:
// each merge rewrites each leaf of seen about once per 1/8 of seen's size
// in new URLs, so this part does not grow with the crawl). Run with
// -benchtime=1x; skipped with -short.
func BenchmarkDiscoverGrowth(b *testing.B) { discoverGrowth(b, 2_000_000) }

// BenchmarkSeenGrowth10M is BenchmarkDiscoverGrowth at issue 11's size:
// 10 M new URLs (about 2 GB of database in the temporary directory).
func BenchmarkSeenGrowth10M(b *testing.B) { discoverGrowth(b, 10_000_000) }

func discoverGrowth(b *testing.B, growthURLs int) {
	if testing.Short() {
		b.Skip("inserts millions of URLs: skipped in -short")
	}
	const batchSize = 1000
	tenth := growthURLs / 10
	for range b.N {
		s, err := Open(b.TempDir(), Options{ExpectedURLs: uint64(growthURLs)})
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
		b.ReportMetric(float64(first.Nanoseconds())/float64(tenth), "ns/URL-first-tenth")
		b.ReportMetric(float64(last.Nanoseconds())/float64(tenth), "ns/URL-last-tenth")
		b.ReportMetric(float64(firstCPU.Nanoseconds())/float64(tenth), "cpu-ns/URL-first-tenth")
		b.ReportMetric(float64(lastCPU.Nanoseconds())/float64(tenth), "cpu-ns/URL-last-tenth")
		b.ReportMetric(float64(lastCPU)/float64(firstCPU), "cpu-last/first")
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		b.ReportMetric(float64(ms.HeapAlloc)/1e6, "heap-MB")
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		// Reopen: after a clean stop (Bloom snapshot; the recent set is
		// read from its bucket), then as after a crash (no snapshot: the
		// filter is rebuilt from seen and recent).
		for _, metric := range []string{"s/reopen-snapshot", "s/reopen-rebuild"} {
			if metric == "s/reopen-rebuild" {
				if err := os.Remove(filepath.Join(s.Dir(), SnapshotFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
					b.Fatal(err)
				}
			}
			start := time.Now()
			s2, err := Open(s.Dir(), Options{ExpectedURLs: uint64(growthURLs)})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(time.Since(start).Seconds(), metric)
			if s2.SeenCount() != int64(growthURLs) {
				b.Fatalf("reopened with %d seen, want %d", s2.SeenCount(), growthURLs)
			}
			if err := s2.Close(); err != nil {
				b.Fatal(err)
			}
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
