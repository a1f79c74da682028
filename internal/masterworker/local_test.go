package masterworker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/masterworker"
	"github.com/spider-crawler/spider/internal/websim"
)

// TestWorkerKeepsItsOwnGuard: the master allows private addresses and
// resolves the synthetic web's names to loopback; a worker that has the
// resolve entries but not allow-private must refuse every fetch (records
// say forbidden-address) and the web must see no request at all.
func TestWorkerKeepsItsOwnGuard(t *testing.T) {
	f := newFixture(t, websim.Config{Seed: 7, Hosts: 3, PagesPerHost: 5},
		websim.TruthRules{MaxDepth: 2, Scope: websim.ScopeAny})
	f.cfg.MaxRetries = 0
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m := f.master(t, "guard")
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return m.Run(gctx) })

	cfg, err := masterworker.LoadConfig(ctx, f.rdb, "guard", nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.AllowPrivate || len(cfg.Resolve) > 0 || cfg.ResolveFile != "" {
		t.Fatalf("the worker got the master's local settings: allow-private %v, resolve %v, resolve-file %q", cfg.AllowPrivate, cfg.Resolve, cfg.ResolveFile)
	}
	local := crawl.NewConfig()
	local.Resolve = f.cfg.Resolve // its own entries; AllowPrivate stays off
	local.Data = t.TempDir()
	cfg.SetLocal(local)
	fetcher, err := crawl.NewFetcher(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	w, err := masterworker.NewWorker(fetcher, f.rdb, opts("guard"), 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })

	g.Go(func() error { return w.Run(gctx) })
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	if n := len(f.srv.Log().Entries()); n != 0 {
		t.Errorf("the worker reached the loopback web %d times without --allow-private", n)
	}
	recs := fetched(t, []string{local.Data})
	if len(recs) == 0 {
		t.Fatal("no records: the seeds were never tried")
	}
	for u, r := range recs {
		if r.Outcome != crawl.OutcomeForbiddenAddress {
			t.Errorf("%s: outcome %q, want %q", u, r.Outcome, crawl.OutcomeForbiddenAddress)
		}
	}
}

// TestAttackerConfigInRedis: someone who can write the crawl's config key
// sets allow_private, a resolve file, a data directory and huge limits.
// LoadConfig must drop every one of them, keep the crawl rules, and warn
// once, naming them.
func TestAttackerConfigInRedis(t *testing.T) {
	f := newFixture(t, websim.Config{Seed: 1, Hosts: 1, PagesPerHost: 1}, websim.TruthRules{MaxDepth: 1})
	hostile := map[string]any{
		"AllowPrivate": true, "ResolveFile": "/etc/passwd", "Resolve": []string{"*:80:169.254.169.254"},
		"Data": "/", "Topics": "/etc/shadow", "Concurrency": 100000, "MemoryBudget": 1 << 40,
		"MaxBodyBytes": 1 << 50, "Timeout": int64(time.Hour * 1000), "ConnectTimeout": 1, "FirstByteTimeout": 1,
		"UserAgent": "evil/1", "MaxDepth": 9, "Scope": "any",
	}
	b, _ := json.Marshal(hostile)
	if err := f.rdb.Set(context.Background(), "{spider:evil}:mw:config", b, 0).Err(); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	cfg, err := masterworker.LoadConfig(context.Background(), f.rdb, "evil", logger)
	if err != nil {
		t.Fatal(err)
	}
	var zero crawl.Config
	zero.SetLocal(cfg)
	var none crawl.Config
	if b1, _ := json.Marshal(zero); string(b1) != func() string { b2, _ := json.Marshal(none); return string(b2) }() {
		t.Errorf("local-only settings taken from Redis: %+v", zero)
	}
	if cfg.UserAgent != "evil/1" || cfg.MaxDepth != 9 || cfg.Scope != "any" {
		t.Errorf("crawl rules lost: agent %q depth %d scope %q", cfg.UserAgent, cfg.MaxDepth, cfg.Scope)
	}
	out := logs.String()
	if strings.Count(out, "level=WARN") != 1 || !strings.Contains(out, "AllowPrivate") || !strings.Contains(out, "ResolveFile") {
		t.Errorf("want one warning naming the ignored settings, got:\n%s", out)
	}
	// The worker's own settings then pass validation and keep the guard on.
	local := crawl.NewConfig()
	local.Data = t.TempDir()
	cfg.SetLocal(local)
	cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		t.Errorf("rules plus local settings: %v", err)
	}
	if cfg.AllowPrivate || cfg.Data != local.Data || cfg.MaxBodyBytes != local.MaxBodyBytes {
		t.Errorf("after SetLocal: allow-private %v, data %q, max body %d", cfg.AllowPrivate, cfg.Data, cfg.MaxBodyBytes)
	}
}
