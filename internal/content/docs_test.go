package content

import (
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestDocsNavRows measures the navigation-row rule on a documentation
// directory (an installed Debian package's HTML manual, say): every page
// observed first (the index build's view), then classified, with the rule
// and without it. It prints the navigation rows found, the pages whose
// main text still holds "Prev Up" or "Home Next", the site model's counts
// (uncapped) and the time per page of Extract+Observe+Classify, medians of
// 5 interleaved runs. It runs only when asked:
//
//	SPIDER_CONTENT_DOCS=/usr/share/doc/postgresql-doc-15/html go test ./internal/content -run TestDocsNavRows -v
func TestDocsNavRows(t *testing.T) {
	dir := os.Getenv("SPIDER_CONTENT_DOCS")
	if dir == "" {
		t.Skip("set SPIDER_CONTENT_DOCS to an HTML documentation directory")
	}
	dir, _ = filepath.EvalSymlinks(dir)
	var names []string
	var bodies [][]byte
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".html") {
			if b, err := os.ReadFile(p); err == nil {
				rel, _ := filepath.Rel(dir, p)
				names, bodies = append(names, "http://docs.test/"+filepath.ToSlash(rel)), append(bodies, b)
			}
		}
		return nil
	})
	if len(names) == 0 {
		t.Fatalf("no HTML files under %s", dir)
	}
	run := func(nav int) (rows, rowLinks, leaks, counts int, took time.Duration) {
		opt := Options{MaxNavLinks: nav, MaxHashes: 1 << 24}
		start := time.Now()
		site := NewSite(opt)
		pages := make([]*Page, len(names))
		for i, n := range names {
			u, _ := url.Parse(n)
			p, err := Extract(u, bodies[i], opt)
			if err != nil {
				t.Fatal(err)
			}
			site.Observe(p)
			pages[i] = p
		}
		for _, p := range pages {
			p.Classify(site, opt)
			for _, b := range p.Blocks {
				if b.Nav {
					rows++
					rowLinks += b.Links
				}
			}
			if strings.Contains(p.MainText, "Prev Up") || strings.Contains(p.MainText, "Home Next") {
				leaks++
			}
		}
		return rows, rowLinks, leaks, site.Len(), time.Since(start)
	}
	var on, off []time.Duration
	for range 5 {
		rows, links, leaks, counts, took := run(0)
		on = append(on, took)
		_, _, leaksOff, countsOff, tookOff := run(-1)
		off = append(off, tookOff)
		if len(on) == 1 {
			t.Logf("%s: %d pages; with the rule: %d navigation rows (%d links), %d pages with \"Prev Up\"/\"Home Next\" in the main text, %d counts; without: %d pages, %d counts",
				dir, len(names), rows, links, leaks, counts, leaksOff, countsOff)
		}
	}
	slices.Sort(on)
	slices.Sort(off)
	per := func(d time.Duration) string {
		return fmt.Sprintf("%.1f µs", float64(d.Microseconds())/float64(len(names)))
	}
	t.Logf("per page (Extract+Observe+Classify, median of 5): with the rule %s, without %s", per(on[2]), per(off[2]))
}
