package main

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/spider-crawler/spider/internal/websim"
)

func main() {
	hosts, _ := strconv.Atoi(os.Args[1])
	pages, _ := strconv.Atoi(os.Args[2])
	seeds, _ := strconv.Atoi(os.Args[3])
	depth, _ := strconv.Atoi(os.Args[4])
	w, err := websim.New(websim.Config{Seed: 1, Hosts: hosts, PagesPerHost: pages, Port: 8080})
	if err != nil {
		panic(err)
	}
	t0 := time.Now()
	tr, err := w.Truth(websim.TruthRules{Seeds: w.SeedURLs(seeds), MaxDepth: depth, Scope: websim.ScopeAny, MaxURLs: 5000000})
	if err != nil {
		panic(err)
	}
	hs := map[string]int{}
	maxd := 0
	for _, u := range tr.MustFetch {
		h := u[7:]
		for i := range h { if h[i] == ':' || h[i] == '/' { h = h[:i]; break } }
		hs[h]++
		if tr.Depth[u] > maxd { maxd = tr.Depth[u] }
	}
	fmt.Println("mustfetch", len(tr.MustFetch), "hosts", len(hs), "maxdepth", maxd, "in", time.Since(t0))
	if len(os.Args) > 5 { for _, u := range tr.MustFetch[:20] { fmt.Println(u) } }
}
