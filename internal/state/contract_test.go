package state_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/spider-crawler/spider/internal/state"
	"github.com/spider-crawler/spider/internal/state/statetest"
)

var _ statetest.Backend = (*state.Store)(nil)

// backend adds statetest.Counter to the bbolt store.
type backend struct{ *state.Store }

func (b backend) Counts(context.Context) (statetest.Counts, error) {
	return statetest.Counts{Pending: b.PendingCount(), Seen: b.SeenCount(), PagesStored: b.PagesStored()}, nil
}

// TestContract runs the crawl-state contract against the bbolt back-end: a
// name is a directory under one temporary directory, so reopening a name
// reopens the same database file.
func TestContract(t *testing.T) {
	base := t.TempDir()
	statetest.Run(t, func(t *testing.T, name string, opt state.Options) statetest.Backend {
		s, err := state.Open(filepath.Join(base, name), opt)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return backend{s}
	})
}

// TestMetaAndCreatedSurviveReopen covers what the contract does not: the
// bbolt store's meta values and creation time.
func TestMetaAndCreatedSurviveReopen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := state.Open(dir, state.Options{ExpectedURLs: 1000})
	if err != nil {
		t.Fatal(err)
	}
	created := s.Created()
	if err := s.SetMeta(ctx, []byte("config"), []byte("fp-123")); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = state.Open(dir, state.Options{ExpectedURLs: 1000})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !s.Created().Equal(created) {
		t.Fatalf("creation time changed on reopen: %v, was %v", s.Created(), created)
	}
	if v, err := s.Meta(ctx, []byte("config")); err != nil || string(v) != "fp-123" {
		t.Fatalf("Meta after reopen = %q, %v", v, err)
	}
}
