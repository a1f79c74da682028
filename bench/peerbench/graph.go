package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"time"

	"github.com/spider-crawler/spider/internal/parse"
	"github.com/spider-crawler/spider/internal/websim"
)

// truthGraph builds the simGraph of a crawl's ground truth: every URL of
// truth.MustFetch is requested from wc's web in-process (a second copy of
// the web, without latency or access log, so the benchmark's server and
// its log are untouched), and its answer's links, redirect target and meta
// refresh that are themselves in MustFetch become its edges. An edge is
// kept whether or not a crawler would follow it from that page (a nofollow
// link, or a link from a page at the depth limit, to a URL the truth
// reaches by another path): that can only make the ideal crawler discover
// URLs sooner, so the bound stays a bound.
func truthGraph(wc websim.Config, truth *websim.Truth) (simGraph, error) {
	wc.Latency, wc.LogCap, wc.LogWriter, wc.HangTime = 0, -1, nil, time.Millisecond
	web, err := websim.New(wc)
	if err != nil {
		return simGraph{}, fmt.Errorf("cannot build the link graph: %w", err)
	}
	h := web.Handler()
	g := simGraph{URLs: truth.MustFetch, Host: make([]int, len(truth.MustFetch)), Links: make([][]int, len(truth.MustFetch))}
	idx := make(map[string]int, len(g.URLs))
	hosts := map[string]int{}
	for i, raw := range g.URLs {
		idx[raw] = i
		u, err := url.Parse(raw)
		if err != nil {
			return simGraph{}, fmt.Errorf("cannot build the link graph: truth URL %q: %w", raw, err)
		}
		hp := strings.ToLower(u.Host)
		if _, ok := hosts[hp]; !ok {
			hosts[hp] = len(hosts)
		}
		g.Host[i] = hosts[hp]
	}
	g.Hosts = len(hosts)
	for _, s := range truth.Rules.Seeds {
		c, ok := websim.Canonical(nil, s)
		if !ok {
			return simGraph{}, fmt.Errorf("cannot build the link graph: seed %q is not an http(s) URL", s)
		}
		if i, ok := idx[c.String()]; ok {
			g.Seeds = append(g.Seeds, i)
		}
	}
	for i, raw := range g.URLs {
		targets, err := answerLinks(h, raw)
		if err != nil {
			return simGraph{}, err
		}
		seen := map[int]bool{}
		for _, t := range targets {
			if j, ok := idx[t]; ok && j != i && !seen[j] {
				seen[j] = true
				g.Links[i] = append(g.Links[i], j)
			}
		}
	}
	return g, nil
}

// answerLinks requests raw from h and returns, canonical, the URLs its
// answer names: the Location of a redirect, the links and meta refresh of
// an HTML page.
func answerLinks(h http.Handler, raw string) ([]string, error) {
	req := httptest.NewRequest(http.MethodGet, raw, nil)
	req.Header.Set("User-Agent", peerUA)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	base, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("cannot build the link graph: truth URL %q: %w", raw, err)
	}
	var out []string
	add := func(ref string) {
		if c, ok := websim.Canonical(base, ref); ok {
			out = append(out, c.String())
		}
	}
	if loc := rec.Header().Get("Location"); loc != "" && rec.Code/100 == 3 {
		add(loc)
	}
	if !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") {
		return out, nil
	}
	page, err := parse.Parse(base, rec.Body.Bytes(), parse.Options{})
	if err != nil {
		return nil, fmt.Errorf("cannot build the link graph: parsing %q: %w", raw, err)
	}
	for _, l := range page.Links {
		if l.URL != nil {
			add(l.URL.String())
		}
	}
	if page.Refresh != nil {
		add(page.Refresh.String())
	}
	return out, nil
}
