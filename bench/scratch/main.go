package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spider-crawler/spider/internal/websim"
)

func main() {
	ctx := context.Background()
	srv, err := websim.Start(ctx, websim.Config{Seed: 1, Hosts: 1000, PagesPerHost: 100})
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	for _, seeds := range []int{1, 10} {
		for d := 1; d <= 8; d++ {
			t0 := time.Now()
			tr, err := srv.Truth(websim.TruthRules{Seeds: srv.SeedURLs(seeds), MaxDepth: d, Scope: websim.ScopeAny})
			if err != nil {
				panic(err)
			}
			hosts := map[string]bool{}
			for _, u := range tr.MustFetch {
				hosts[u[:len("http://")+12]] = true
			}
			fmt.Println(seeds, d, len(tr.MustFetch), len(tr.MustNotFetch), time.Since(t0))
		}
	}
}
