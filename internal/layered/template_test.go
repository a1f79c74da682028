package layered

import (
	"context"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/websim"
)

// TestLayeredTemplateRule: on a web whose pages have templates (websim
// PageModel: menus, sidebars, footers and held-out noise kinds on every
// page of a host; tables of contents and link-dense paragraphs as content),
// the default rule reaches at least 90% of the HTML pages a plain crawl of
// the same depth fetches, where the ratio rule stops at the seeds' menus;
// and from round 2 on (depth 2) no URL of the held-out noise blocks is
// fetched: by then every task knows its sites' templates. It
// fails when tables of contents are dropped (reach) or templates are not
// learnt across a task's pages and rounds (noise at depth 2).
func TestLayeredTemplateRule(t *testing.T) {
	srv, err := websim.Start(context.Background(), websim.Config{Seed: 3, Hosts: 4, PagesPerHost: 30, PageModel: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	seeds := srv.SeedURLs(4)
	truth, err := srv.Truth(websim.TruthRules{Seeds: seeds, MaxDepth: 2, Scope: websim.ScopeAny})
	if err != nil {
		t.Fatal(err)
	}
	plain := 0
	for u, f := range truth.Final {
		if f == "200" && truth.LinkBlocks[u] != nil {
			plain++
		}
	}
	// The URLs of the held-out noise blocks (share, language, export, tag
	// and ads links) are linked from nowhere else (menus and footers link
	// pages that frames and paragraphs link too).
	linked, content := map[string]bool{}, map[string]bool{}
	for _, lbs := range truth.LinkBlocks {
		for _, lb := range lbs {
			if lb.HeldOut {
				linked[lb.URL] = true
			}
			if !lb.Noise {
				content[lb.URL] = true
			}
		}
	}
	reach := map[string]int{}
	for _, rule := range []string{NoiseTemplate, NoiseRatio} {
		cfg := testConfig(t, srv, seeds)
		c, err := New(cfg, Options{Rounds: 3, Groups: 2, NoiseRule: rule}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		if err := c.Run(ctx); err != nil {
			t.Fatal(err)
		}
		cancel()
		c.Close()
		for u, r := range lastRecords(t, cfg.Data) {
			if r.Status == 200 && truth.LinkBlocks[u] != nil {
				reach[rule]++
			}
			if rule == NoiseTemplate && r.Depth >= 2 && linked[u] && !content[u] {
				t.Errorf("%s (depth %d) is linked only from held-out noise blocks", u, r.Depth)
			}
		}
	}
	t.Logf("HTML pages: plain crawl %d, layered template %d, ratio %d", plain, reach[NoiseTemplate], reach[NoiseRatio])
	if 10*reach[NoiseTemplate] < 9*plain {
		t.Errorf("the template rule reached %d of the plain crawl's %d pages; want 90%%", reach[NoiseTemplate], plain)
	}
	if reach[NoiseRatio] >= reach[NoiseTemplate] {
		t.Errorf("the ratio rule reached %d pages, the template rule %d: the web tests nothing", reach[NoiseRatio], reach[NoiseTemplate])
	}
}
