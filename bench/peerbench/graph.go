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
// URLs sooner, so the bound stays a bound. Step says which edges a crawler
// follows and what they add to the depth, for the depth-aware simulation.
func truthGraph(wc websim.Config, truth *websim.Truth) (simGraph, error) {
	wc.Latency, wc.LogCap, wc.LogWriter, wc.HangTime = 0, -1, nil, time.Millisecond
	web, err := websim.New(wc)
	if err != nil {
		return simGraph{}, fmt.Errorf("cannot build the link graph: %w", err)
	}
	h := web.Handler()
	n := len(truth.MustFetch)
	g := simGraph{URLs: truth.MustFetch, Host: make([]int, n), Links: make([][]int, n), Step: make([][]int8, n),
		MaxDepth: truth.Rules.MaxDepth}
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
		at := map[int]int{} // target → its index in g.Links[i]
		for _, t := range targets {
			j, ok := idx[t.url]
			if !ok || j == i {
				continue
			}
			if k, dup := at[j]; dup {
				// Two edges to one URL: the one a crawler follows with the
				// smaller depth step counts.
				if old := g.Step[i][k]; old < 0 || (t.step >= 0 && t.step < old) {
					g.Step[i][k] = t.step
				}
				continue
			}
			at[j] = len(g.Links[i])
			g.Links[i] = append(g.Links[i], j)
			g.Step[i] = append(g.Step[i], t.step)
		}
	}
	return g, nil
}

// edge is a URL an answer names, canonical, with what following it adds to
// the depth (simGraph.Step).
type edge struct {
	url  string
	step int8
}

// answerLinks requests raw from h and returns the URLs its answer names:
// the Location of a redirect (step 0), the links (1, or -1 when nofollow by
// rel or meta robots) and meta refresh (1) of an HTML page.
func answerLinks(h http.Handler, raw string) ([]edge, error) {
	req := httptest.NewRequest(http.MethodGet, raw, nil)
	req.Header.Set("User-Agent", peerUA)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	base, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("cannot build the link graph: truth URL %q: %w", raw, err)
	}
	var out []edge
	add := func(ref string, step int8) {
		if c, ok := websim.Canonical(base, ref); ok {
			out = append(out, edge{c.String(), step})
		}
	}
	if loc := rec.Header().Get("Location"); loc != "" && rec.Code/100 == 3 {
		add(loc, 0)
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
			step := int8(1)
			if l.NoFollow {
				step = -1
			}
			add(l.URL.String(), step)
		}
	}
	if page.Refresh != nil {
		add(page.Refresh.String(), 1)
	}
	return out, nil
}
