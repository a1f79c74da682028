package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/spider-crawler/spider/internal/index"
	"github.com/spider-crawler/spider/internal/server"
)

// indexSearcher adapts internal/index to server.Searcher. The index is
// opened on first use and, while it does not exist yet, tried again at
// most once a second, so that spider serve (or crawl --addr) started
// before spider index picks the index up without a restart; once open,
// the index follows the writer by itself.
type indexSearcher struct {
	dir string
	opt index.Options
	log *slog.Logger

	mu    sync.Mutex
	ix    *index.Index
	tried time.Time
	err   error // the last open failure
}

var _ server.Searcher = (*indexSearcher)(nil)

// openSearcher prepares a searcher over the index in dir (DATA/index),
// opened with opt (its Logger is set to logger). A missing index is not an
// error: searches answer "not available" until it exists. A damaged one is
// reported now. logger may be nil.
func openSearcher(dir string, opt index.Options, logger *slog.Logger) (*indexSearcher, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	opt.Logger = logger
	s := &indexSearcher{dir: dir, opt: opt, log: logger}
	if _, err := s.index(); err != nil && !errors.Is(err, index.ErrNoIndex) {
		return nil, err
	}
	return s, nil
}

// index returns the open index, opening it if the last try is more than a
// second old.
func (s *indexSearcher) index() (*index.Index, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ix != nil {
		return s.ix, nil
	}
	if !s.tried.IsZero() && time.Since(s.tried) < time.Second {
		return nil, s.err
	}
	s.tried = time.Now()
	s.ix, s.err = index.Open(s.dir, s.opt)
	if s.err == nil {
		s.log.Info("search index opened", "dir", s.dir, "docs", s.ix.Stats().Docs)
	}
	return s.ix, s.err
}

// taggedError is err that also matches tag with errors.Is, with err's
// message alone.
type taggedError struct{ err, tag error }

func (e taggedError) Error() string   { return e.err.Error() }
func (e taggedError) Unwrap() []error { return []error{e.err, e.tag} }

// Search implements server.Searcher.
func (s *indexSearcher) Search(ctx context.Context, req server.SearchRequest) (*server.SearchResult, error) {
	ix, err := s.index()
	if errors.Is(err, index.ErrNoIndex) {
		return nil, taggedError{err, server.ErrUnavailable}
	}
	if err != nil {
		return nil, err
	}
	res, err := ix.Search(ctx, index.Request{Query: req.Query, Offset: req.Offset, Limit: req.Limit, RankWeight: req.RankWeight, Explain: req.Explain})
	if errors.Is(err, index.ErrQuery) {
		return nil, taggedError{err, server.ErrBadQuery}
	}
	if err != nil {
		return nil, fmt.Errorf("cannot search %s: %w", s.dir, err)
	}
	return searchResultOf(res), nil
}

// searchResultOf is res as the server (and spider search --json) shows it.
func searchResultOf(res *index.Result) *server.SearchResult {
	out := &server.SearchResult{Total: res.Total, Took: res.Took, Terms: res.Terms, Hits: make([]server.Hit, len(res.Hits))}
	for i, h := range res.Hits {
		frags := make([]server.Fragment, len(h.Snippet))
		for j, f := range h.Snippet {
			frags[j] = server.Fragment{Text: f.Text, Match: f.Match}
		}
		out.Hits[i] = server.Hit{URL: h.URL, Title: h.Title, Snippet: frags, Score: h.Score, BM25: h.BM25, PageRank: h.PageRank, Explain: h.Explain, Similar: h.Similar, FetchedAt: h.Fetched}
	}
	return out
}

// Stats implements server.Searcher; zero before the index exists.
func (s *indexSearcher) Stats() server.IndexStats {
	ix, err := s.index()
	if err != nil {
		return server.IndexStats{}
	}
	st := ix.Stats()
	return server.IndexStats{Docs: st.Docs, Terms: st.Terms, Segments: st.Segments, Bytes: st.Bytes}
}

// Close closes the index if it was opened.
func (s *indexSearcher) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ix == nil {
		return nil
	}
	err := s.ix.Close()
	s.ix = nil
	return err
}
