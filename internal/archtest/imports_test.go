package archtest

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/spider-crawler/spider/"

// deps returns the packages pkg (a path below the module) links, tests
// excluded: "spider/" and the module-relative path for the module's own
// packages (the standard library has internal/ packages too), full paths
// for the others.
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", module+pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
	}
	var ds []string
	for _, d := range strings.Fields(string(out)) {
		if d == module+pkg {
			continue
		}
		ds = append(ds, strings.Replace(d, module, "spider/", 1))
	}
	return ds
}

// ours reports whether a dependency is one of the module's packages.
func ours(d string) bool { return strings.HasPrefix(d, "spider/") }

// TestImportRules: the rules ARCHITECTURE.md states. Each rule names the
// packages it constrains and what they may (or may not) link.
func TestImportRules(t *testing.T) {
	// Leaves: concepts that stand alone link none of the module's packages.
	for _, p := range []string{
		"internal/urls", "internal/robots", "internal/parse", "internal/fetch", "internal/dedup",
		"internal/frontier", "internal/store", "internal/partition", "internal/exthash",
		"internal/sitemap", "internal/revisit", "internal/cluster/slots",
		"internal/websim", "cmd/websim",
	} {
		t.Run("leaf "+p, func(t *testing.T) {
			for _, d := range deps(t, p) {
				if ours(d) && !(strings.HasPrefix(p, "cmd/websim") && d == "spider/internal/websim") {
					t.Errorf("%s links %s: it is a leaf (the test web in particular must not share code with the crawler it judges)", p, d)
				}
			}
		})
	}
	// The crawl-state contract links only the request type it speaks of.
	t.Run("crawlstate", func(t *testing.T) {
		for _, d := range deps(t, "internal/crawlstate") {
			if ours(d) && d != "spider/internal/frontier" {
				t.Errorf("internal/crawlstate links %s: the contract may name only frontier.Request", d)
			}
		}
	})
	// The two back-ends implement the contract and never know each other.
	for _, c := range []struct{ pkg, other string }{
		{"internal/state", "internal/rstate"},
		{"internal/rstate", "internal/state"},
	} {
		t.Run("backend "+c.pkg, func(t *testing.T) {
			ds := deps(t, c.pkg)
			if slices.Contains(ds, "spider/"+c.other) {
				t.Errorf("%s links %s: the back-ends share only internal/crawlstate", c.pkg, c.other)
			}
			if !slices.Contains(ds, "spider/internal/crawlstate") {
				t.Errorf("%s does not link internal/crawlstate: it should implement crawlstate.State", c.pkg)
			}
		})
	}
	// The single-node engine and the embedded back-end link no Redis
	// client: a crawl on one machine needs no server.
	for _, p := range []string{"internal/crawl", "internal/state"} {
		t.Run("no redis "+p, func(t *testing.T) {
			for _, d := range deps(t, p) {
				if strings.HasPrefix(d, "github.com/redis/") || d == "spider/internal/rstate" || d == "spider/internal/cluster" {
					t.Errorf("%s links %s: the single-node engine must not need Redis", p, d)
				}
			}
		})
	}
	// The search engine reads crawls through store, never the crawler.
	for _, p := range []string{"internal/index", "internal/graph", "internal/rank"} {
		t.Run("search side "+p, func(t *testing.T) {
			for _, d := range deps(t, p) {
				if d == "spider/internal/crawl" || d == "spider/internal/state" || d == "spider/internal/rstate" || d == "spider/internal/fetch" {
					t.Errorf("%s links %s: the search side reads a crawl's files through store only", p, d)
				}
			}
		})
	}
	// The HTTP front reads every crawl through its interfaces (CrawlView,
	// Controller, Searcher): it links no Redis client, no Redis back-end
	// and no distributed topology; their view lives in server/redisview.
	t.Run("http front", func(t *testing.T) {
		for _, d := range deps(t, "internal/server") {
			if strings.HasPrefix(d, "github.com/redis/") || slices.Contains([]string{"spider/internal/rstate", "spider/internal/cluster",
				"spider/internal/masterworker", "spider/internal/p2p", "spider/internal/layered", "spider/internal/protocol",
				"spider/internal/mixed", "spider/internal/server/redisview"}, d) {
				t.Errorf("internal/server links %s: the HTTP front reads crawls through interfaces (Redis views: internal/server/redisview)", d)
			}
		}
	})
	// Test support (redistest, statetest, limittest, revisittest, …) is
	// for tests only: the binaries link none of it.
	for _, p := range []string{"cmd/spider", "cmd/websim"} {
		t.Run("no test support in "+p, func(t *testing.T) {
			for _, d := range deps(t, p) {
				if ours(d) && strings.HasSuffix(d, "test") {
					t.Errorf("%s links %s: test-support packages are for tests only", p, d)
				}
			}
		})
	}
}
