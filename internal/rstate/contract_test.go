package rstate_test

import (
	"context"
	"testing"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
	"github.com/spider-crawler/spider/internal/rstate"
	"github.com/spider-crawler/spider/internal/state"
	"github.com/spider-crawler/spider/internal/state/statetest"
)

var _ statetest.Backend = (*rstate.Store)(nil)

// backend adds statetest.Counter to a Store.
type backend struct{ *rstate.Store }

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
		return backend{s}
	})
}
