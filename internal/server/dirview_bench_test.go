package server

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/store"
)

// BenchmarkDirViewRefresh: a dashboard opening a crawl of 50,000 records
// (ten out-links each): the first snapshot reads all of records.jsonl.
func BenchmarkDirViewRefresh(b *testing.B) {
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
			Size: 4000, PageNo: int64(i), DurationMS: 12}
		if err := recs.Append(rec); err != nil {
			b.Fatal(err)
		}
	}
	if err := recs.Close(); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		v := NewDirView(dir, nil)
		st, err := v.Snapshot(context.Background())
		if err != nil || st.Pages != 50_000 {
			b.Fatal(st.Pages, err)
		}
	}
}
