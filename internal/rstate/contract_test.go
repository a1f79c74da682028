package rstate_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
	"github.com/spider-crawler/spider/internal/rstate"
	"github.com/spider-crawler/spider/internal/state"
	"github.com/spider-crawler/spider/internal/state/statetest"
)

var _ statetest.Backend = (*rstate.Store)(nil)

// backend adds statetest.Counter to a Store.
type backend struct{ *rstate.Store }

// filerBackend adds statetest.Filer to a backend: the crawl's duplicate
// tables (Dupes) under the store's crawl name, as the processes that write
// the records use them (crawl.Fetcher.FileContent).
type filerBackend struct {
	backend
	dupes *rstate.Dupes
}

func (b filerBackend) File(ctx context.Context, url string, fp, sim uint64, k int) (string, bool, error) {
	return b.dupes.File(ctx, url, fp, sim, k)
}

// withDupes returns b with File over the duplicate tables of crawl name
// spread over tags.
func withDupes(t *testing.T, b backend, rdb redis.UniversalClient, name string, tags []string) filerBackend {
	t.Helper()
	d, err := rstate.NewDupes(rdb, "spider:"+name+":", tags)
	if err != nil {
		t.Fatal(err)
	}
	return filerBackend{b, d}
}

func (b backend) Counts(ctx context.Context) (statetest.Counts, error) {
	st, err := b.Stats(ctx)
	return statetest.Counts{Pending: st.Pending, Seen: st.Seen, PagesStored: st.PagesStored}, err
}

// TestContract runs the crawl-state contract against a real redis-server
// with the append-only file on: a name is a crawl name, so reopening a name
// opens the same keys through a new client.
func TestContract(t *testing.T) {
	srv := redistest.Start(t, redistest.AppendOnly())
	statetest.Run(t, func(t *testing.T, name string, opt state.Options) statetest.Backend {
		s, err := rstate.Open(context.Background(), srv.Client(), rstate.Options{
			Crawl: name, SeenMode: opt.SeenMode, ExpectedURLs: opt.ExpectedURLs, FPRate: opt.FPRate,
			Relink: opt.Relink, MaxDepth: opt.MaxDepth,
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		// Dupes beside the store's own tables (no DupTags): Complete with
		// Outcome.Filed leaves the bucket's tables alone.
		return withDupes(t, backend{s}, srv.Client(), name, []string{"dd-0", "dd-1", "dd-2"})
	})
}
