package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/dedup"
)

// urlStream is a stream of link occurrences as a crawl sees them: a Zipf
// choice among n URLs (popular pages are linked from everywhere).
func urlStream(n, length int) []string {
	r := rand.New(rand.NewPCG(7, 8))
	z := rand.NewZipf(r, 1.1, 2, uint64(n-1))
	out := make([]string, length)
	for i := range out {
		out[i] = fmt.Sprintf("http://site%d.test/section/%d/article-%d.html", i%97, z.Uint64()%50, z.Uint64())
	}
	return out
}

type mapSet map[string]bool

func (m mapSet) Contains(_ context.Context, u string) (bool, error) { return m[u], nil }

// BenchmarkDedup runs one URL stream through the S400 cache (lists bounded
// at 64k entries, falling back to a stored set), a plain Go map set and the
// Bloom filter. It reports look-ups/s and, for the cache, the share of
// duplicates answered by the lists without the stored set.
func BenchmarkDedup(b *testing.B) {
	stream := urlStream(1_000_000, 1_000_000)
	ctx := context.Background()
	b.Run("cache", func(b *testing.B) {
		var hits, dups int64
		for b.Loop() {
			stored := mapSet{}
			c := dedup.NewCache(1<<16, time.Unix(0, 0), stored)
			t := time.Unix(0, 0)
			for i, u := range stream {
				if i%100_000 == 0 {
					c.Rotate() // a new round every 100k links
				}
				h, _ := c.Check(ctx, u, t.Add(time.Duration(i)))
				switch h {
				case dedup.New:
					stored[u] = true
				case dedup.InStore:
					dups++
				default:
					hits++
					dups++
				}
			}
		}
		b.ReportMetric(float64(len(stream)*b.N)/b.Elapsed().Seconds(), "lookups/s")
		b.ReportMetric(float64(hits)/float64(max(dups, 1)), "list-hit-rate")
	})
	b.Run("map", func(b *testing.B) {
		for b.Loop() {
			m := map[string]struct{}{}
			for _, u := range stream {
				if _, ok := m[u]; !ok {
					m[u] = struct{}{}
				}
			}
		}
		b.ReportMetric(float64(len(stream)*b.N)/b.Elapsed().Seconds(), "lookups/s")
	})
	b.Run("bloom", func(b *testing.B) {
		for b.Loop() {
			bf := dedup.NewBloom(1_000_000, 0.001)
			for _, u := range stream {
				bf.TestAndAdd(u)
			}
		}
		b.ReportMetric(float64(len(stream)*b.N)/b.Elapsed().Seconds(), "lookups/s")
	})
}
