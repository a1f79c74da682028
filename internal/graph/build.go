package graph

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"strings"

	"github.com/spider-crawler/spider/internal/store"
)

// maxRedirectHops bounds how many redirect aliases resolve follows, so a
// redirect loop cannot hang the build.
const maxRedirectHops = 16

// Set is the page graph and the host graph of one crawl.
type Set struct {
	Pages *Graph
	Hosts *Graph
	// Source is the size of records.jsonl the graphs were built from.
	Source int64
}

// page is what the build keeps of the last record of one URL.
type page struct {
	node   string // node name (final URL) when the record is a node
	alias  string // redirect target or final URL, when the URL is not a node itself
	status int
	links  []string // out-links of a node
}

// Build reads dataDir/records.jsonl and returns its page and host graphs.
//
// Page graph rule: records.jsonl may hold several records of one URL (retries
// after a crash); the last one counts. A node is the final URL of a record
// with a 2xx status and a stored body (PageNo ≥ 0). An edge u→v exists when
// page u lists a link that resolves to node v ≠ u, following redirects: a
// record whose URL differs from its FinalURL, or a 3xx record with its single
// out-link (the Location target), makes its URL an alias of that target, so
// a link to a redirect source counts for its final target (up to 16 hops).
// Links to URLs that were never fetched successfully are dropped (their
// pages are not in the graph); repeated links count once; self-links are
// dropped.
//
// Host graph rule: one node per host name (lower case, without port) of a
// page node; an edge h1→h2 when at least one page of h1 links to a page of
// h2 ≠ h1. Edges are de-duplicated, not weighted, so a host cannot raise
// another's rank by repeating links on many pages; intra-host links are
// ignored.
func Build(ctx context.Context, dataDir string, logger *slog.Logger) (*Set, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	path := store.DataDir(dataDir).Records()
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("cannot build link graph: %s holds no crawl (no %s; run spider crawl --data %s first): %w",
			dataDir, store.RecordsFileName, dataDir, err)
	}
	recs, err := store.OpenRecords(dataDir, store.Options{Logger: logger, ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("cannot build link graph: %w", err)
	}
	defer recs.Close()
	last := make(map[string]*page)
	n := 0
	skipped, err := recs.Iterate(func(r store.Record) error {
		n++
		if n%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		p := &page{status: r.Status}
		final := r.FinalURL
		if final == "" {
			final = r.URL
		}
		switch {
		case r.Status >= 200 && r.Status < 300 && r.PageNo >= 0:
			p.node = final
			p.links = r.OutLinks
			if final != r.URL {
				p.alias = final
			}
		case r.Status >= 300 && r.Status < 400 && len(r.OutLinks) == 1:
			p.alias = r.OutLinks[0]
		case final != r.URL:
			p.alias = final
		}
		last[r.URL] = p
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cannot build link graph from %s: %w", path, err)
	}
	if skipped > 0 {
		logger.Warn("graph: skipped corrupt records", "file", path, "lines", skipped)
	}
	return fromPages(last, info.Size())
}

// fromPages turns the last record of every URL into the two graphs.
func fromPages(last map[string]*page, source int64) (*Set, error) {
	ids := make(map[string]int)
	var names []string
	var links [][]string
	for _, p := range last {
		if p.node == "" {
			continue
		}
		if i, ok := ids[p.node]; ok { // two URLs redirected inline to one page
			links[i] = append(links[i], p.links...)
			continue
		}
		ids[p.node] = len(names)
		names = append(names, p.node)
		links = append(links, p.links)
	}
	resolve := func(u string) (int, bool) {
		for hop := 0; hop <= maxRedirectHops; hop++ {
			if i, ok := ids[u]; ok {
				return i, true
			}
			p, ok := last[u]
			if !ok || p.alias == "" || p.alias == u {
				return 0, false
			}
			u = p.alias
		}
		return 0, false
	}
	adj := make([][]int, len(names))
	for i, ls := range links {
		for _, l := range ls {
			if t, ok := resolve(l); ok {
				adj[i] = append(adj[i], t)
			}
		}
	}
	pages, err := FromAdjacency(names, adj)
	if err != nil {
		return nil, err
	}

	pageHost, hostNames := pageHosts(pages.Names)
	hostAdj := make([][]int, len(hostNames))
	for u := 0; u < pages.N(); u++ {
		hu := pageHost[u]
		for _, v := range pages.Out(u) {
			if hv := pageHost[v]; hv != hu {
				hostAdj[hu] = append(hostAdj[hu], hv)
			}
		}
	}
	hosts, err := FromAdjacency(hostNames, hostAdj)
	if err != nil {
		return nil, err
	}
	return &Set{Pages: pages, Hosts: hosts, Source: source}, nil
}

// pageHosts numbers the hosts of names (HostOf each) in order of first
// appearance: host[i] is the id of names[i]'s host, hostNames[id] its name.
func pageHosts(names []string) (host []int, hostNames []string) {
	hostID := make(map[string]int)
	host = make([]int, len(names))
	for i, name := range names {
		h := HostOf(name)
		id, ok := hostID[h]
		if !ok {
			id = len(hostNames)
			hostID[h] = id
			hostNames = append(hostNames, h)
		}
		host[i] = id
	}
	return host, hostNames
}

// HostOf returns the host name of a URL in lower case without its port, or
// the URL itself when it has no host (so every page has a host node).
func HostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return raw
	}
	return strings.ToLower(u.Hostname())
}

// Load returns the graphs of the crawl in dataDir, reading DATA/graph/*.csr
// when they were built from the current records.jsonl and rebuilding (and
// rewriting) them otherwise: when a file is missing, damaged, of another
// version, or records.jsonl changed size since (a crawl added records).
// rebuild forces a rebuild. built reports whether the graphs were rebuilt.
func Load(ctx context.Context, dataDir string, rebuild bool, logger *slog.Logger) (set *Set, built bool, err error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	info, err := os.Stat(store.DataDir(dataDir).Records())
	if err != nil {
		return nil, false, fmt.Errorf("cannot load link graph: %s holds no crawl (no %s; run spider crawl --data %s first): %w",
			dataDir, store.RecordsFileName, dataDir, err)
	}
	if !rebuild {
		set, why := readSet(dataDir, info.Size())
		if set != nil {
			return set, false, nil
		}
		logger.Info("graph: rebuilding", "reason", why)
	}
	set, err = Build(ctx, dataDir, logger)
	if err != nil {
		return nil, false, err
	}
	if err := WriteFile(store.DataDir(dataDir).Join(PagesFile), set.Pages, Header{Kind: KindPages, SourceSize: set.Source}); err != nil {
		return nil, false, err
	}
	if err := WriteFile(store.DataDir(dataDir).Join(HostsFile), set.Hosts, Header{Kind: KindHosts, SourceSize: set.Source}); err != nil {
		return nil, false, err
	}
	return set, true, nil
}

// readSet returns the stored graphs when they match a records.jsonl of size
// source, or nil and the reason to rebuild.
func readSet(dataDir string, source int64) (*Set, string) {
	set := &Set{Source: source}
	for _, f := range []struct {
		path string
		kind Kind
		dst  **Graph
	}{{PagesFile, KindPages, &set.Pages}, {HostsFile, KindHosts, &set.Hosts}} {
		g, h, err := ReadFile(store.DataDir(dataDir).Join(f.path))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil, f.path + " does not exist"
		case err != nil:
			return nil, err.Error()
		case h.Kind != f.kind:
			return nil, fmt.Sprintf("%s holds graph kind %d, want %d", f.path, h.Kind, f.kind)
		case h.SourceSize != source:
			return nil, fmt.Sprintf("records.jsonl is %d bytes, %s was built from %d", source, f.path, h.SourceSize)
		}
		*f.dst = g
	}
	return set, ""
}
