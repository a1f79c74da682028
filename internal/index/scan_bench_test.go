package index

import (
	"fmt"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/store"
)

// BenchmarkScanRecords: one scan of 50,000 records as a crawl writes them
// (ten out-links each), the index build's first step over records.jsonl.
func BenchmarkScanRecords(b *testing.B) {
	dir := b.TempDir()
	recs, err := store.OpenRecords(dir, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	t0 := time.Date(2026, 3, 30, 8, 0, 0, 0, time.UTC)
	for i := range 50_000 {
		links := make([]string, 10)
		for k := range links {
			links[k] = fmt.Sprintf("http://h%d.test/p/%d", (i+k)%97, i*10+k)
		}
		rec := store.Record{URL: fmt.Sprintf("http://h%d.test/p/%d", i%97, i), Status: 200, Outcome: "200",
			FetchedAt: t0.Add(time.Duration(i) * time.Millisecond), ContentType: "text/html", Title: "page title", OutLinks: links,
			Size: 4000, PageNo: int64(i), Fingerprint: "0123456789abcdef", SimHash: "fedcba9876543210", BodyCRC: "01234567", DurationMS: 12}
		if err := recs.Append(rec); err != nil {
			b.Fatal(err)
		}
	}
	if err := recs.Close(); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		n := 0
		if _, err := ScanRecords(dir, 0, -1, func(Record, int64) bool { n++; return true }); err != nil || n != 50_000 {
			b.Fatal(n, err)
		}
	}
}
