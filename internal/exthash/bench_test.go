package exthash

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// Benchmarks compare the table with bbolt (the crawl state's store) and a
// Go map on 64-byte values under 16-byte keys. Each reports disk bytes per
// key. "sync" commits (and fsyncs) every record; "batch" commits 1000
// records per fsync; "nosync" skips fsync in both stores.

const benchVal = 64

func benchKey(i int) []byte { return []byte(fmt.Sprintf("task-%011d", i)) }

func dirBytes(b *testing.B, dir string) int64 {
	var n int64
	filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			n += fi.Size()
		}
		return nil
	})
	return n
}

func BenchmarkPut(b *testing.B) {
	val := make([]byte, benchVal)
	for _, mode := range []string{"sync", "batch", "nosync"} {
		b.Run("exthash/"+mode, func(b *testing.B) {
			dir := b.TempDir()
			tb, err := Open(dir, Options{NoSync: mode == "nosync"})
			if err != nil {
				b.Fatal(err)
			}
			defer tb.Close()
			b.ResetTimer()
			batch := make([]Op, 0, 1000)
			for i := 0; i < b.N; i++ {
				if mode != "batch" {
					if err := tb.Put(benchKey(i), val); err != nil {
						b.Fatal(err)
					}
					continue
				}
				batch = append(batch, Op{Key: benchKey(i), Value: val})
				if len(batch) == cap(batch) || i == b.N-1 {
					if err := tb.Apply(batch); err != nil {
						b.Fatal(err)
					}
					batch = batch[:0]
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(dirBytes(b, dir))/float64(b.N), "disk-B/key")
		})
		b.Run("bbolt/"+mode, func(b *testing.B) {
			dir := b.TempDir()
			db, err := bolt.Open(filepath.Join(dir, "db"), 0o644, &bolt.Options{NoSync: mode == "nosync"})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			name := []byte("t")
			db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket(name); return err })
			b.ResetTimer()
			per := 1
			if mode == "batch" {
				per = 1000
			}
			for i := 0; i < b.N; i += per {
				err := db.Update(func(tx *bolt.Tx) error {
					bk := tx.Bucket(name)
					for j := i; j < i+per && j < b.N; j++ {
						if err := bk.Put(benchKey(j), val); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(dirBytes(b, dir))/float64(b.N), "disk-B/key")
		})
	}
	b.Run("map", func(b *testing.B) {
		m := map[string][]byte{}
		for i := 0; i < b.N; i++ {
			m[string(benchKey(i))] = append([]byte(nil), val...)
		}
	})
}

const lookupKeys = 100_000

func BenchmarkGet(b *testing.B) {
	val := make([]byte, benchVal)
	b.Run("exthash", func(b *testing.B) {
		tb, err := Open(b.TempDir(), Options{NoSync: true})
		if err != nil {
			b.Fatal(err)
		}
		defer tb.Close()
		for i := 0; i < lookupKeys; i += 1000 {
			ops := make([]Op, 0, 1000)
			for j := i; j < i+1000; j++ {
				ops = append(ops, Op{Key: benchKey(j), Value: val})
			}
			if err := tb.Apply(ops); err != nil {
				b.Fatal(err)
			}
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, ok, err := tb.Get(benchKey(i * 7919 % lookupKeys)); !ok || err != nil {
				b.Fatal("missing key", err)
			}
		}
	})
	b.Run("bbolt", func(b *testing.B) {
		db, err := bolt.Open(filepath.Join(b.TempDir(), "db"), 0o644, &bolt.Options{NoSync: true})
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		name := []byte("t")
		db.Update(func(tx *bolt.Tx) error {
			bk, _ := tx.CreateBucket(name)
			for j := 0; j < lookupKeys; j++ {
				bk.Put(benchKey(j), val)
			}
			return nil
		})
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			db.View(func(tx *bolt.Tx) error {
				if tx.Bucket(name).Get(benchKey(i*7919%lookupKeys)) == nil {
					b.Fatal("missing key")
				}
				return nil
			})
		}
	})
	b.Run("map", func(b *testing.B) {
		m := map[string][]byte{}
		for j := 0; j < lookupKeys; j++ {
			m[string(benchKey(j))] = val
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if m[string(benchKey(i*7919%lookupKeys))] == nil {
				b.Fatal("missing key")
			}
		}
	})
}
