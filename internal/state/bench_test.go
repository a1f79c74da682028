package state

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/dedup"
	"github.com/spider-crawler/spider/internal/frontier"
	bolt "go.etcd.io/bbolt"
)

// preload discovers n URLs http://pre/<i> in large batches.
func preload(b *testing.B, s *Store, n int) {
	const chunk = 5000
	for i := 0; i < n; i += chunk {
		batch := make([]frontier.Request, 0, chunk)
		for j := i; j < min(i+chunk, n); j++ {
			batch = append(batch, frontier.Request{URL: fmt.Sprintf("http://pre/%d", j), Key: "pre:80"})
		}
		if _, err := s.Discover(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDiscover: each op is one Discover call of 20 URLs of which one is
// new (5%), from 8 concurrent callers (group commit), over 100k seen URLs.
func BenchmarkDiscover(b *testing.B) {
	for _, mode := range []string{SeenExact, SeenBloom} {
		b.Run(mode, func(b *testing.B) {
			s, err := Open(b.TempDir(), Options{SeenMode: mode, ExpectedURLs: 1 << 20})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			const known = 100_000
			preload(b, s, known)
			var next atomic.Int64
			b.SetParallelism(4)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				batch := make([]frontier.Request, 20)
				for pb.Next() {
					n := next.Add(1)
					for i := range batch {
						u := fmt.Sprintf("http://pre/%d", (int(n)*19+i*7919)%known)
						if i == 0 {
							u = fmt.Sprintf("http://new/%d", n)
						}
						batch[i] = frontier.Request{URL: u, Key: "k:80"}
					}
					if _, err := s.Discover(ctx, batch); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(20*b.N)/b.Elapsed().Seconds(), "URLs/s")
		})
	}
}

// BenchmarkComplete: each op completes one pending URL with 20 discovered
// links of which one is new, from 8 concurrent callers.
func BenchmarkComplete(b *testing.B) {
	s, err := Open(b.TempDir(), Options{ExpectedURLs: 1 << 20})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	const known = 50_000
	preload(b, s, known)
	var pending []frontier.Request
	for i := 0; i < b.N; i += 5000 {
		batch := make([]frontier.Request, 0, 5000)
		for j := i; j < min(i+5000, b.N); j++ {
			batch = append(batch, frontier.Request{URL: fmt.Sprintf("http://todo/%d", j), Key: "todo:80"})
		}
		acc, err := s.Discover(ctx, batch)
		if err != nil {
			b.Fatal(err)
		}
		pending = append(pending, acc...)
	}
	var next atomic.Int64
	b.SetParallelism(4)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		links := make([]frontier.Request, 20)
		for pb.Next() {
			n := int(next.Add(1)) - 1
			for i := range links {
				u := fmt.Sprintf("http://pre/%d", (n*19+i*7919)%known)
				if i == 0 {
					u = fmt.Sprintf("http://found/%d", n)
				}
				links[i] = frontier.Request{URL: u, Key: "k:80"}
			}
			if _, err := s.Complete(ctx, pending[n], Outcome{Class: "200", Fingerprint: uint64(n) + 1}, links); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "completes/s")
}

// BenchmarkOpenRebuild10M measures Open on a state with 10M seen URLs: the
// time to rebuild the Bloom filter from the seen bucket.
func BenchmarkOpenRebuild10M(b *testing.B) {
	if testing.Short() {
		b.Skip("builds a 10M-key database: skipped in -short")
	}
	const n = 10_000_000
	dir := b.TempDir()
	// Build the seen bucket directly, with sorted keys, in large transactions.
	keys := make([]dedup.Key, n)
	for i := range keys {
		keys[i] = dedup.KeyOf(fmt.Sprintf("http://host%d.example/page/%d", i%100_000, i))
	}
	slices.SortFunc(keys, func(a, b dedup.Key) int {
		if a.H1 != b.H1 {
			if a.H1 < b.H1 {
				return -1
			}
			return 1
		}
		if a.H2 < b.H2 {
			return -1
		}
		if a.H2 > b.H2 {
			return 1
		}
		return 0
	})
	s, err := Open(dir, Options{})
	if err != nil {
		b.Fatal(err)
	}
	must(b, s.Close())
	db, err := bolt.Open(filepath.Join(dir, DBFile), 0o600, &bolt.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < n; i += 500_000 {
		err := db.Update(func(tx *bolt.Tx) error {
			seen := tx.Bucket(bSeen)
			seen.FillPercent = 1
			for _, k := range keys[i:min(i+500_000, n)] {
				if err := seen.Put(k.AppendBinary(nil), []byte{}); err != nil {
					return err
				}
			}
			return putInt(tx.Bucket(bMeta), mSeen, int64(min(i+500_000, n)))
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	must(b, db.Close())
	keys = nil
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// The structure check every Open makes before bbolt reads the file.
		start := time.Now()
		must(b, CheckFile(dir))
		b.ReportMetric(time.Since(start).Seconds(), "s/check")
		// No snapshot: walk the seen bucket (as after a crash).
		start = time.Now()
		s, err := Open(dir, Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(time.Since(start).Seconds(), "s/rebuild")
		if s.SeenCount() != n {
			b.Fatalf("seen %d", s.SeenCount())
		}
		start = time.Now()
		must(b, s.Close())
		b.ReportMetric(time.Since(start).Seconds(), "s/close")
		// Snapshot written by Close: the clean-restart path.
		start = time.Now()
		s, err = Open(dir, Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(time.Since(start).Seconds(), "s/open-snapshot")
		if s.SeenCount() != n {
			b.Fatalf("seen %d", s.SeenCount())
		}
		must(b, s.Close())
		must(b, os.Remove(filepath.Join(dir, SnapshotFile)))
	}
}
