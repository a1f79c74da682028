package mixed_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/crawls"
	"github.com/spider-crawler/spider/internal/store"
	"github.com/spider-crawler/spider/internal/websim"
)

// dupRecords collects the hosts' "duplicate content" debug records and
// passes every record of warning level or above to next.
type dupRecords struct {
	mu   sync.Mutex
	dups map[string]dupFound
	next slog.Handler
}

type dupFound struct {
	of   string
	near bool
}

func (h *dupRecords) Enabled(context.Context, slog.Level) bool { return true }
func (h *dupRecords) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *dupRecords) WithGroup(string) slog.Handler            { return h }
func (h *dupRecords) Handle(ctx context.Context, r slog.Record) error {
	if r.Message != "duplicate content" {
		if r.Level >= slog.LevelWarn {
			return h.next.Handle(ctx, r)
		}
		return nil
	}
	var u string
	var f dupFound
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "url":
			u = a.Value.String()
		case "duplicate_of":
			f.of = a.Value.String()
		case "near":
			f.near = a.Value.Bool()
		}
		return true
	})
	h.mu.Lock()
	h.dups[u] = f
	h.mu.Unlock()
	return nil
}

// TestDuplicates: §0 hosts of two networks find exact and near-duplicate
// pages at crawl time as the other topologies do (websim --near-dups:
// mirrors, dated copies, print views), in crawl-wide tables kept in the
// first network's center's Redis under the crawl's §0 keys; every near
// duplicate they report is one in the web's truth, every exact one has
// its original's fingerprint. Before, a §0 host
// looked no page's text up at all.
func TestDuplicates(t *testing.T) {
	s := newSystem(t, 2, 2, websim.Config{Seed: 27, Hosts: 8, PagesPerHost: 25, NearDups: true})
	rec := &dupRecords{dups: map[string]dupFound{}, next: s.log.Handler()}
	s.log = slog.New(rec)
	for _, n := range []string{"n1", "n2"} {
		s.startCenter(n, 0)
		for _, h := range []string{"h1", "h2"} {
			s.startHost(n, h, 0)
		}
	}
	s.wait(90 * time.Second)

	root := func(u string) string {
		if d, ok := s.truth.Duplicates[u]; ok {
			return d.Of
		}
		return u
	}
	// The pages' fingerprints as the hosts recorded them: an exact
	// duplicate has its original's (websim's /?q=1 is its / byte for
	// byte, a copy the truth does not label).
	fps := map[string]string{}
	recs := map[string]store.Record{} // the last record of each URL
	for _, d := range s.dirs {
		rs, err := store.OpenRecords(d, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		rs.Iterate(func(r store.Record) error {
			fps[r.URL] = r.Fingerprint
			recs[r.URL] = r
			return nil
		})
		rs.Close()
	}
	// The records say what the hosts logged (issue #27): one decision
	// per page, made before its record was written.
	for u, r := range recs {
		if got, want := (dupFound{r.DuplicateOf, r.Near}), rec.dups[u]; got != want {
			t.Errorf("%s: the record says duplicate_of %q near %v; the host logged %q near %v", u, got.of, got.near, want.of, want.near)
		}
	}
	for u := range rec.dups {
		if _, ok := recs[u]; !ok {
			t.Errorf("%s logged as a duplicate has no record", u)
		}
	}
	var exact, near int
	for u, f := range rec.dups {
		if f.near && root(u) != root(f.of) {
			t.Errorf("%s reported a near-duplicate of %s; the truth has them apart", u, f.of)
		}
		if !f.near && (fps[u] == "" || fps[u] != fps[f.of]) {
			t.Errorf("%s reported an exact duplicate of %s; their fingerprints are %q and %q", u, f.of, fps[u], fps[f.of])
		}
		if f.near {
			near++
		} else {
			exact++
		}
	}
	t.Logf("%d exact and %d near duplicates reported; the truth labels %d copies", exact, near, len(s.truth.Duplicates))
	if exact == 0 || near == 0 {
		t.Errorf("%d exact and %d near duplicates reported, want some of each", exact, near)
	}
	// The tables are the crawl's: in the first center's Redis, §0 keys of
	// crawl "t".
	c := s.client("n1")
	keys, err := c.Keys(context.Background(), "spider:proto:t:{dd-*}:dup*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) < 2 {
		t.Fatalf("duplicate tables in the first center's Redis: %v", keys)
	}
	for _, k := range keys {
		if crawl, kind, ok := crawls.Parse(k); !ok || crawl != "t" || kind != crawls.KindProtocol {
			t.Errorf("%s parses as crawl %q kind %q (%v), want the §0 crawl t", k, crawl, kind, ok)
		}
	}
}
