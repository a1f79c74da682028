package frontier

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

func benchURL(i, keys int) (url, key string) {
	host := fmt.Sprintf("host%05d.example.com", i%keys)
	return fmt.Sprintf("http://%s/section/page-%07d.html", host, i), host + ":80"
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// procStatus returns a field of /proc/self/status in bytes (0 if absent).
func procStatus(field string) uint64 {
	fh, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// BenchmarkMemoryPerURL pushes 1M URLs over 10k keys (no spill) and reports
// the heap bytes held per queued URL, and the part of it that is not the URL
// text itself.
func BenchmarkMemoryPerURL(b *testing.B) {
	const n, keys = 1_000_000, 10_000
	u, _ := benchURL(0, keys)
	for i := 0; i < b.N; i++ {
		before := heapInUse()
		f, err := New(Config{MemoryBudget: n, Delay: NoDelay, SpillDir: b.TempDir()})
		must(b, err)
		for j := 0; j < n; j++ {
			url, key := benchURL(j, keys)
			must(b, f.Push(Request{URL: url, Key: key, Depth: 3, Seq: uint64(j)}))
		}
		pushed := float64(heapInUse()-before) / n
		// Route into the back queues (1024 keys' worth) and lease one.
		l, err := f.Next(context.Background())
		must(b, err)
		routed := float64(heapInUse()-before) / n
		f.Done(l, DoneInfo{})
		b.ReportMetric(pushed, "heapB/URL")
		b.ReportMetric(routed, "heapB/URL-routed")
		b.ReportMetric(pushed-float64(len(u)), "overheadB/URL")
		runtime.KeepAlive(f)
		must(b, f.Close())
	}
}

// BenchmarkTenMillionURLs is the 10-million-URL frontier: 10M pushes over
// 100k keys with MemoryBudget 1M (9M spilled), then 1M leases to exercise
// the refill. It reports heap, RSS and spill size. Run it alone
// (-run=^$ -bench=TenMillion -benchtime=1x) so the peak RSS is its own.
func BenchmarkTenMillionURLs(b *testing.B) {
	if testing.Short() {
		b.Skip("10M URLs: skipped in -short")
	}
	const n, keys, budget, drain = 10_000_000, 100_000, 1_000_000, 1_000_000
	for i := 0; i < b.N; i++ {
		dir := b.TempDir()
		f, err := New(Config{MemoryBudget: budget, Delay: NoDelay, SpillDir: dir})
		must(b, err)
		batch := make([]Request, 0, 1000)
		for j := 0; j < n; j++ {
			url, key := benchURL(j, keys)
			batch = append(batch, Request{URL: url, Key: key, Depth: 2, Seq: uint64(j)})
			if len(batch) == cap(batch) {
				must(b, f.PushAll(batch))
				batch = batch[:0]
			}
		}
		st := f.Stats()
		heap := heapInUse()
		rss := procStatus("VmRSS")
		var spillBytes int64
		files, _ := filepath.Glob(filepath.Join(dir, "spill-*"))
		for _, p := range files {
			if fi, err := os.Stat(p); err == nil {
				spillBytes += fi.Size()
			}
		}
		for j := 0; j < drain; j++ {
			l, err := f.Next(context.Background())
			must(b, err)
			f.Done(l, DoneInfo{})
		}
		after := f.Stats()
		b.ReportMetric(float64(st.Queued), "inMemory")
		b.ReportMetric(float64(st.Spilled), "spilled")
		b.ReportMetric(float64(heap)/(1<<20), "heapMiB")
		b.ReportMetric(float64(rss)/(1<<20), "rssMiB")
		b.ReportMetric(float64(spillBytes)/(1<<20), "spillMiB")
		b.ReportMetric(float64(heapInUse())/(1<<20), "heapMiB-after-drain")
		b.ReportMetric(float64(procStatus("VmHWM"))/(1<<20), "peakRssMiB")
		b.ReportMetric(float64(after.Queued+int(after.Spilled)), "left")
		must(b, f.Close())
	}
}

// BenchmarkPushNextDone measures the frontier's own cost per URL (push,
// lease, done) over 10k keys without politeness delay.
func BenchmarkPushNextDone(b *testing.B) {
	f, err := New(Config{Delay: NoDelay, SpillDir: b.TempDir()})
	must(b, err)
	defer f.Close()
	urls := make([]Request, 1<<14)
	for i := range urls {
		url, key := benchURL(i, 10_000)
		urls[i] = Request{URL: url, Key: key}
	}
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := f.Push(urls[i&(len(urls)-1)]); err != nil {
			b.Fatal(err)
		}
		l, err := f.Next(ctx)
		if err != nil {
			b.Fatal(err)
		}
		f.Done(l, DoneInfo{})
	}
}

// BenchmarkSpillThroughput measures push and read-back through the spill.
func BenchmarkSpillThroughput(b *testing.B) {
	f, err := New(Config{Delay: NoDelay, MemoryBudget: 1000, SpillDir: b.TempDir()})
	must(b, err)
	defer f.Close()
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		url, key := benchURL(i, 10_000)
		if err := f.Push(Request{URL: url, Key: key}); err != nil {
			b.Fatal(err)
		}
	}
	for i := 0; i < b.N; i++ {
		l, err := f.Next(ctx)
		if err != nil {
			b.Fatal(err)
		}
		f.Done(l, DoneInfo{})
	}
}
