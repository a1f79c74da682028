package state

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sync"
	"sync/atomic"
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

// BenchmarkCompleteGrowth replays issue 11's large-frontier crawl against
// the state alone: 64 workers each take a random pending request (the
// frontier hands out URLs from all over the pending range), Complete it
// with 31 new links (websim's 40 extra links, of which most are new) and a
// fresh content fingerprint, until completeGrowthURLs URLs were accepted.
// It reports the process CPU per Complete in the first and last tenth of
// the accepted URLs, and bbolt's pages written per Complete. Run with
// -benchtime=1x; skipped with -short. SPIDER_GROWTH_URLS sets the number
// of URLs (default 3,000,000); SPIDER_GROWTH_PROFILES names a directory
// that gets a CPU profile of each measured tenth (complete-growth-0.prof,
// complete-growth-1.prof).
func BenchmarkCompleteGrowth(b *testing.B) {
	if testing.Short() {
		b.Skip("inserts millions of URLs: skipped in -short")
	}
	target := 3_000_000
	if v := os.Getenv("SPIDER_GROWTH_URLS"); v != "" {
		fmt.Sscan(v, &target)
	}
	const workers, links = 64, 31
	for range b.N {
		var delay time.Duration
		if v := os.Getenv("SPIDER_GROWTH_DELAY"); v != "" {
			delay, _ = time.ParseDuration(v)
		}
		s, err := Open(b.TempDir(), Options{ExpectedURLs: uint64(target), BatchDelay: delay})
		if err != nil {
			b.Fatal(err)
		}
		// The pool of pending URLs is kept without pointers (the URL is
		// rebuilt from its number), so that it costs the garbage collector
		// nothing, like the real crawl's frontier, which spills to disk.
		type pendingURL struct {
			seq   uint64
			id    int64
			depth int32
		}
		urlOf := func(id int64) string { return fmt.Sprintf("http://h%d.example/p/%d", id%100_003, id) }
		// keyOf is the politeness key the crawler gives urlOf(id): its host.
		keyOf := func(id int64) string { return fmt.Sprintf("h%d.example", id%100_003) }
		var (
			mu    sync.Mutex
			pool  = make([]pendingURL, 0, target)
			next  atomic.Int64
			rng   = rand.New(rand.NewPCG(1, 2))
			phase [2]struct {
				cpu    time.Duration
				n      int
				writes int64
			}
		)
		seed := make([]frontier.Request, 100)
		for i := range seed {
			id := next.Add(1)
			seed[i] = frontier.Request{URL: urlOf(id), Key: keyOf(id)}
		}
		acc, err := s.Discover(ctx, seed)
		if err != nil {
			b.Fatal(err)
		}
		for i, r := range acc {
			pool = append(pool, pendingURL{seq: r.Seq, id: int64(i + 1)})
		}
		take := func() (frontier.Request, bool) {
			mu.Lock()
			defer mu.Unlock()
			if len(pool) == 0 {
				return frontier.Request{}, false
			}
			i := rng.IntN(len(pool))
			p := pool[i]
			pool[i] = pool[len(pool)-1]
			pool = pool[:len(pool)-1]
			return frontier.Request{URL: urlOf(p.id), Key: keyOf(p.id), Seq: p.seq, Depth: int(p.depth)}, true
		}
		measure := func(p int, f func()) {
			if dir := os.Getenv("SPIDER_GROWTH_PROFILES"); dir != "" {
				out, err := os.Create(filepath.Join(dir, fmt.Sprintf("complete-growth-%d.prof", p)))
				if err != nil {
					b.Fatal(err)
				}
				defer out.Close()
				if err := pprof.StartCPUProfile(out); err != nil {
					b.Fatal(err)
				}
				defer pprof.StopCPUProfile()
			}
			cpu0, w0 := cpuTime(b), boltWrites(s)
			f()
			phase[p].cpu += cpuTime(b) - cpu0
			phase[p].writes += boltWrites(s) - w0
		}
		// Phases are measured with all workers in them: a phase is a window
		// of accepted URLs, timed from its first to its last Complete.
		run := func(until int64) int {
			var wg sync.WaitGroup
			var n atomic.Int64
			for range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for s.SeenCount() < until {
						r, ok := take()
						if !ok {
							return
						}
						kids := make([]frontier.Request, links)
						ids := make([]int64, links)
						for j := range kids {
							ids[j] = next.Add(1)
							kids[j] = frontier.Request{URL: urlOf(ids[j]), Key: keyOf(ids[j]), Depth: r.Depth + 1}
						}
						res, err := s.Complete(ctx, r, Outcome{Class: "200", Fingerprint: fingerprint(r.Seq), Stored: true}, kids)
						if err != nil {
							b.Error(err)
							return
						}
						n.Add(1)
						if len(res.New) != links {
							b.Errorf("accepted %d of %d new URLs", len(res.New), links)
							return
						}
						mu.Lock()
						for j, k := range res.New {
							pool = append(pool, pendingURL{seq: k.Seq, id: ids[j], depth: int32(k.Depth)})
						}
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			return int(n.Load())
		}
		tenth := int64(target / 10)
		measure(0, func() { phase[0].n = run(tenth) })
		run(int64(target) - tenth)
		measure(1, func() { phase[1].n = run(int64(target)) })
		for p, name := range []string{"first", "last"} {
			b.ReportMetric(float64(phase[p].cpu.Nanoseconds())/float64(phase[p].n), "cpu-ns/complete-"+name)
			b.ReportMetric(float64(phase[p].writes)/float64(phase[p].n), "pages/complete-"+name)
		}
		b.ReportMetric(float64(phase[1].cpu)/float64(phase[1].n)/(float64(phase[0].cpu)/float64(phase[0].n)), "cpu-last/first")
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// id64 scrambles a Seq into a fingerprint-like value.
func id64(seq uint64) uint64 { return seq*0x9E3779B97F4A7C15 + 1 }

// boltWrites is the number of pages bbolt has written so far.
func boltWrites(s *Store) int64 {
	st := s.db.Stats()
	return st.TxStats.GetWrite()
}

// fingerprint is BenchmarkCompleteGrowth's content fingerprint of the page
// at seq: unique, or none with SPIDER_GROWTH_NOFP=1 (to see its cost).
func fingerprint(seq uint64) uint64 {
	if os.Getenv("SPIDER_GROWTH_NOFP") == "1" {
		return 0
	}
	return id64(seq)
}
