package server

import (
	"context"
	"errors"
	"time"
)

// Errors a Searcher or Controller returns to choose the HTTP answer; wrap
// them with %w and a message saying what was wrong and what to do.
var (
	// ErrBadQuery: the search query cannot be parsed (400).
	ErrBadQuery = errors.New("bad query")
	// ErrUnsupported: the operation does not exist for this crawl, e.g.
	// pausing a crawl that runs in another process, or changing a topic's
	// priority when topics are not enabled (501).
	ErrUnsupported = errors.New("not supported here")
	// ErrConflict: the operation exists but not in the crawl's current
	// state, e.g. pausing a crawl that already ended (409).
	ErrConflict = errors.New("not possible in the crawl's current state")
	// ErrUnavailable: the searcher has nothing to search yet, e.g. the
	// index is not built (503).
	ErrUnavailable = errors.New("not available yet")
	// ErrInvalid: the request's input is wrong, e.g. a seed that is not an
	// http(s) URL (400).
	ErrInvalid = errors.New("invalid input")
)

// SearchRequest is one search: Query in the index's syntax, the page of
// hits [Offset, Offset+Limit), RankWeight the weight of PageRank in the
// score (negative: the index's default; 0: BM25 alone), Explain asks for
// each hit's score breakdown.
type SearchRequest struct {
	Query      string
	Offset     int
	Limit      int
	RankWeight float64
	Explain    bool
}

// Fragment is a piece of a snippet; Match marks query terms.
type Fragment struct {
	Text  string `json:"text"`
	Match bool   `json:"match,omitempty"`
}

// Hit is one search result with its rank signals.
type Hit struct {
	URL      string     `json:"url"`
	Title    string     `json:"title"`
	Snippet  []Fragment `json:"snippet"`
	Score    float64    `json:"score"`
	BM25     float64    `json:"bm25"`
	PageRank float64    `json:"pagerank"`
	Explain  string     `json:"explain,omitempty"`
}

// SearchResult is a page of hits out of Total matches; Terms are the
// query's terms after analysis (segmentation, stemming).
type SearchResult struct {
	Total int           `json:"total"`
	Hits  []Hit         `json:"hits"`
	Took  time.Duration `json:"-"`
	// Cached is set by the server when the result came from its cache
	// (Took is then 0).
	Cached bool     `json:"-"`
	Terms  []string `json:"terms"`
}

// IndexStats describes the search index.
type IndexStats struct {
	Docs     int   `json:"docs"`
	Terms    int   `json:"terms"`
	Segments int   `json:"segments"`
	Bytes    int64 `json:"bytes"`
}

// Searcher answers queries; internal/index behind an adapter in
// cmd/spider. Search returns an error wrapping ErrBadQuery for a query it
// cannot parse. Both methods are called concurrently.
type Searcher interface {
	Search(ctx context.Context, req SearchRequest) (*SearchResult, error)
	Stats() IndexStats
}

// CrawlView gives the dashboard's data. Snapshot is called concurrently
// and about once a second per open dashboard; it returns a new value the
// caller may keep.
type CrawlView interface {
	Snapshot(ctx context.Context) (*CrawlStatus, error)
}

// Controller changes a running crawl. Every method returns an error
// wrapping ErrUnsupported, ErrConflict or ErrInvalid when it cannot do what
// was asked, and is safe for concurrent use.
type Controller interface {
	Pause(ctx context.Context) error
	Resume(ctx context.Context) error
	Stop(ctx context.Context) error
	// AddSeeds records new depth-0 URLs and returns how many were new.
	AddSeeds(ctx context.Context, urls []string) (int, error)
	// SetTopicPriority changes the priority of a topic's URLs.
	SetTopicPriority(ctx context.Context, topic string, priority int) error
}

// CrawlStatus is the dashboard's data; every field is in the JSON API.
type CrawlStatus struct {
	// Source says where the data comes from: "data-dir" (records.jsonl of
	// a data directory), "in-process" (the crawl runs in this process),
	// "master-worker" or "peer-to-peer" (Redis).
	Source string `json:"source"`
	// State is idle, running, paused, stopping, stopped (a data directory
	// no process holds), finished or unknown.
	State string `json:"state"`
	// Pages counts distinct URLs completed; PagesPerSec is the rate over
	// the last RateWindow.
	Pages       int64   `json:"pages"`
	PagesPerSec float64 `json:"pages_per_s"`
	// Series is pages/s over time, oldest first.
	Series []RatePoint `json:"series"`
	// Rows are the SPEC §3 result rows in table order; Outcomes the exact
	// outcome classes, most frequent first.
	Rows     []Count `json:"rows"`
	Outcomes []Count `json:"outcomes"`
	TopHosts []Count `json:"top_hosts"`
	Bytes    int64   `json:"bytes"`
	// Queue is nil when the queue depths are not known (a data directory
	// read from outside the crawl).
	Queue  *Queue        `json:"queue"`
	Nodes  []Node        `json:"nodes"`
	Topics []Topic       `json:"topics"`
	Errors []RecentError `json:"recent_errors"`
	// Control tells whether the control endpoints act on this crawl.
	Control bool `json:"control"`
	// Updated is when this snapshot was taken.
	Updated time.Time `json:"updated"`
}

// RatePoint is the crawl rate over the interval starting at T (Unix
// seconds) and lasting Step seconds.
type RatePoint struct {
	T           int64   `json:"t"`
	Step        int64   `json:"step"`
	PagesPerSec float64 `json:"pages_per_s"`
}

// Count is a name and a number.
type Count struct {
	Name  string `json:"name"`
	Count int64  `json:"count"`
}

// Queue is the scheduling side's queue depths; fields a source does not
// have are zero.
type Queue struct {
	Queued   int64 `json:"queued"`    // URLs waiting in the frontier(s)
	InFlight int64 `json:"in_flight"` // URLs being fetched
	Hosts    int64 `json:"hosts"`     // hosts with queued URLs
	SRQ      int64 `json:"srq"`       // master–worker: tasks waiting for a worker
	NRQ      int64 `json:"nrq"`       // master–worker: results waiting for the master
	TRQ      int64 `json:"trq"`       // master–worker: free work numbers
}

// Node is one crawl process of a distributed crawl.
type Node struct {
	ID          string  `json:"id"`
	Role        string  `json:"role"` // "peer" or "worker"
	Weight      int     `json:"weight"`
	Buckets     int     `json:"buckets"`
	PagesPerSec float64 `json:"pages_per_s"`
	Queue       int64   `json:"queue"`
	Fetched     int64   `json:"fetched"` // peer: URLs it completed
	Inbox       int64   `json:"inbox"`
	InFlight    int64   `json:"in_flight"`
	LastBeatMS  int64   `json:"last_beat_ms"`
	Idle        bool    `json:"idle"`
}

// Topic is one topic of a topic-focused crawl.
type Topic struct {
	Name     string `json:"name"`
	Priority int    `json:"priority"`
	Pages    int64  `json:"pages"`
	Queued   int64  `json:"queued"`
}

// RecentError is a URL whose last fetch did not end 2xx or 3xx.
type RecentError struct {
	At      time.Time `json:"at"`
	URL     string    `json:"url"`
	Outcome string    `json:"outcome"`
	Status  int       `json:"status"`
	Error   string    `json:"error,omitempty"`
}
