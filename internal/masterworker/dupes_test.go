package masterworker_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/masterworker"
)

// dupLog collects the master's "duplicate content" debug records.
type dupLog struct {
	mu   sync.Mutex
	dups map[string]string // URL → "near|exact ORIGINAL"
	next slog.Handler      // the rest, at Info and above
}

func (l *dupLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *dupLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *dupLog) WithGroup(string) slog.Handler            { return l }
func (l *dupLog) Handle(ctx context.Context, r slog.Record) error {
	if r.Message != "duplicate content" {
		if r.Level >= slog.LevelInfo {
			return l.next.Handle(ctx, r)
		}
		return nil
	}
	var u, of string
	near := false
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "url":
			u = a.Value.String()
		case "duplicate_of":
			of = a.Value.String()
		case "near":
			near = a.Value.Bool()
		}
		return true
	})
	kind := "exact"
	if near {
		kind = "near"
	}
	l.mu.Lock()
	l.dups[u] = kind + " " + of
	l.mu.Unlock()
	return nil
}

// TestMasterWorkersDuplicateRecords (issue #27): the workers write the
// records, the master completes; an article on one host and, on another,
// its exact copy and a copy with a date line, fetched by two workers at
// once. The records name the originals (duplicate_of; near for the dated
// copy), the originals name none, and the master's log says the same of
// every page: one decision per page, made by the worker before its record.
func TestMasterWorkersDuplicateRecords(t *testing.T) {
	r := rand.New(rand.NewPCG(27, 27))
	var words []string
	for range 400 {
		words = append(words, fmt.Sprintf("w%d", r.IntN(5000)))
	}
	article := strings.Join(words, " ")
	page := func(text string) string {
		return "<!doctype html><html><head><title>t</title></head><body><p>" + text + "</p></body></html>"
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		host, _, _ := net.SplitHostPort(req.Host)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		switch {
		case req.URL.Path == "/robots.txt":
			http.NotFound(w, req)
		case host == "a.test" && req.URL.Path == "/":
			fmt.Fprint(w, page(`<a href="/article">article</a> `+strings.Join(words[:40], " ")))
		case host == "a.test" && req.URL.Path == "/article":
			fmt.Fprint(w, page(article))
		case host == "b.test" && req.URL.Path == "/":
			fmt.Fprint(w, page(`<a href="/copy">copy</a> <a href="/dated">dated</a> `+strings.Join(words[200:260], " ")))
		case host == "b.test" && req.URL.Path == "/copy":
			fmt.Fprint(w, page(article))
		case host == "b.test" && req.URL.Path == "/dated":
			fmt.Fprint(w, page("Updated 25 November 2026. "+article))
		default:
			http.NotFound(w, req)
		}
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	cfg := crawl.NewConfig()
	for _, h := range []string{"a.test", "b.test"} {
		cfg.Seeds = append(cfg.Seeds, "http://"+h+":"+port+"/")
		cfg.Resolve = append(cfg.Resolve, h+":"+port+":127.0.0.1")
	}
	cfg.MaxDepth = 2
	cfg.AllowPrivate = true
	cfg.Delay = crawl.Duration(time.Millisecond)
	cfg.Timeout = crawl.Duration(3 * time.Second)
	rs := redistest.Start(t)
	f := &fixture{cfg: cfg, rs: rs, rdb: rs.Client()}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const name = "mwdup"
	st, err := masterworker.OpenState(ctx, f.rdb, name, masterworker.StateOptions{SeenMode: cfg.Seen, MaxDepth: cfg.MaxDepth}) // the crawl's duplicate tables, as spider master
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	mcfg := cfg
	mcfg.Data = t.TempDir()
	fetcher, err := crawl.NewFetcher(mcfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	seeds, err := fetcher.SeedRequests()
	fetcher.Close()
	if err != nil {
		t.Fatal(err)
	}
	dl := &dupLog{dups: map[string]string{}, next: slog.NewTextHandler(t.Output(), nil)}
	sched, err := crawl.NewScheduler(mcfg, st, slog.New(dl), nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := masterworker.NewMaster(mcfg, sched, seeds, f.rdb, opts(name), 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return m.Run(gctx) })
	var dirs []string
	for range 2 {
		w, dir := f.worker(t, name, 2)
		dirs = append(dirs, dir)
		g.Go(func() error { return w.Run(gctx) })
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	recs := fetched(t, dirs)
	a, cp, dated := "http://a.test:"+port+"/article", "http://b.test:"+port+"/copy", "http://b.test:"+port+"/dated"
	t.Logf("duplicates logged by the master: %v", dl.dups)
	if len(recs) != 5 {
		t.Fatalf("%d records, want 5: %v", len(recs), recs)
	}
	// The exact pair: one names the other, not near.
	ra, rc := recs[a], recs[cp]
	if !(ra.DuplicateOf == cp && !ra.Near) && !(rc.DuplicateOf == a && !rc.Near) {
		t.Errorf("the exact copies' records: %s duplicate_of %q near %v; %s duplicate_of %q near %v; want one naming the other, not near",
			a, ra.DuplicateOf, ra.Near, cp, rc.DuplicateOf, rc.Near)
	}
	// The dated copy is near whichever of the pair was filed (or is the
	// original, when it was fetched first: then both others name it).
	if rd := recs[dated]; rd.DuplicateOf != "" && (!rd.Near || rd.DuplicateOf != a && rd.DuplicateOf != cp) {
		t.Errorf("the dated copy's record: duplicate_of %q near %v; want the article or its copy, near", rd.DuplicateOf, rd.Near)
	} else if rd.DuplicateOf == "" && ra.DuplicateOf != dated && rc.DuplicateOf != dated {
		t.Errorf("the dated copy is recorded as an original, but no page names it: %+v %+v", ra, rc)
	}
	named := 0
	for u, rec := range recs {
		want := ""
		if rec.DuplicateOf != "" {
			named++
			want = "exact " + rec.DuplicateOf
			if rec.Near {
				want = "near " + rec.DuplicateOf
			}
		}
		if dl.dups[u] != want {
			t.Errorf("%s: the record says %q, the master logged %q", u, want, dl.dups[u])
		}
	}
	if named != 2 {
		t.Errorf("%d records name an original, want 2 (of 3 copies of one text)", named)
	}
}
