package server

import (
	"context"
	"errors"
	"time"

	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/topics"
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
	// Similar is the number of other pages in the hit's duplicate cluster
	// (exact and near duplicates, pages naming it canonical), not listed.
	Similar int `json:"similar,omitempty"`
	// FetchedAt is when the crawl last fetched the page (a 304 "not
	// modified" answer counts); zero (absent) when the index does not know.
	FetchedAt time.Time `json:"fetched_at,omitzero"`
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
	Queue  *Queue  `json:"queue"`
	Nodes  []Node  `json:"nodes"`
	Topics []Topic `json:"topics"`
	// TopicNodes is each crawl node's load as the coordinator of a topics
	// crawl on a cluster last published it (masterworker.TopicStatus);
	// empty for other crawls. TopicsAt is when the topics' figures were
	// taken (zero, absent, when there are none).
	TopicNodes []topics.NodeLoad `json:"topic_nodes"`
	TopicsAt   time.Time         `json:"topics_at,omitzero"`
	Errors     []RecentError     `json:"recent_errors"`
	// Hosts are the MaxHostRows hosts with the most pages (ties by name)
	// out of HostsTotal hosts with records. Their politeness fields
	// (HostRow.NextFetchMS, InFlight, Queued) are known only when
	// HostClock is set: the crawl runs in this process.
	Hosts      []HostRow `json:"hosts"`
	HostsTotal int64     `json:"hosts_total"`
	HostClock  bool      `json:"host_clock"`
	// Failures are the failed URLs by class, the largest class first, with
	// the first crawl.MaxFailureExamples URLs of each and the same hints
	// as the CLI's summary; empty when no URL failed.
	Failures []crawl.FailureClass `json:"failures"`
	// Config is the crawl's effective configuration (for master–worker,
	// the rules the master published), nil when this view cannot know it (a
	// data directory read from outside the crawl, a peer-to-peer crawl). It
	// never holds a secret.
	Config *CrawlConfig `json:"config"`
	// Control tells whether the control endpoints act on this crawl.
	Control bool `json:"control"`
	// Report is the crawl-wide report of a crawl read from Redis (every
	// topology keeps one), nil for other sources or before a node reported.
	Report *CrawlReport `json:"report,omitempty"`
	// Schedule is the crawl's revisit schedule (issue 26); nil when it
	// has none.
	Schedule *Schedule `json:"schedule,omitempty"`
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
	Role        string  `json:"role"` // "peer", "worker", "master", "host", "center" or "layered"
	Weight      int     `json:"weight"`
	Buckets     int     `json:"buckets"`
	PagesPerSec float64 `json:"pages_per_s"`
	Queue       int64   `json:"queue"`
	Fetched     int64   `json:"fetched"` // peer: URLs it completed
	Inbox       int64   `json:"inbox"`
	InFlight    int64   `json:"in_flight"`
	LastBeatMS  int64   `json:"last_beat_ms"`
	Idle        bool    `json:"idle"`
	// State is the node's reported state (running, paused, done, failed,
	// stopped; lost for a node silent too long); "" when it never reported.
	State string `json:"state"`
}

// Topic is one topic of a topic-focused crawl (a task of granularity
// topic of its PQ-MCSA scheduler, the background task "(other)" included):
// a row of the dashboard's topics table.
type Topic struct {
	Name     string `json:"name"`
	Priority int    `json:"priority"`
	// FilePriority is the topics file's priority; Priority differs after a
	// change at run time (PUT /api/topics/{topic}/priority).
	FilePriority  int    `json:"file_priority"`
	State         string `json:"state"` // ready, running, expired, idle
	SliceTotalMS  int64  `json:"slice_total_ms"`
	SliceRemainMS int64  `json:"slice_remain_ms"`
	Pages         int64  `json:"pages"`
	Relevant      int64  `json:"relevant"`
	Queued        int64  `json:"queued"`
	Preemptions   int64  `json:"preemptions"`
	// Blocked counts the topic's URLs robots.txt disallowed (no page), and
	// Note says why a topic shows no page when all were (topics.TaskStatus).
	Blocked int64  `json:"blocked"`
	Note    string `json:"note,omitempty"`
}

// RecentError is a URL whose last fetch did not end 2xx or 3xx.
type RecentError struct {
	At      time.Time `json:"at"`
	URL     string    `json:"url"`
	Outcome string    `json:"outcome"`
	Status  int       `json:"status"`
	Error   string    `json:"error,omitempty"`
}

// HostRow is one host of the dashboard's host table.
type HostRow struct {
	Host   string `json:"host"`   // host[:port]
	Pages  int64  `json:"pages"`  // distinct URLs completed
	Errors int64  `json:"errors"` // of which the last record failed (crawl.Failed)
	// MeanLatencyMS is the mean fetch time of the host's records (every
	// attempt recorded, the latest record of a URL and earlier ones alike).
	MeanLatencyMS float64 `json:"mean_latency_ms"`
	// NextFetchMS is how long until the host's next request may start by
	// the crawl's politeness (delay, robots.txt Crawl-delay, back-off); 0:
	// now. InFlight is its requests being made, Queued its URLs waiting in
	// memory. All three are 0 when CrawlStatus.HostClock is false.
	NextFetchMS int64 `json:"next_fetch_ms"`
	InFlight    int   `json:"in_flight"`
	Queued      int   `json:"queued"`
}

// CrawlConfig is the part of a crawl's effective configuration the
// dashboard shows: the crawl's rules, never a secret (no token, no Redis
// URL or password, no local paths).
type CrawlConfig struct {
	// Mode is "normal" or "topics" (a topic-focused crawl).
	Mode string `json:"mode"`
	// Seeds are the first MaxConfigSeeds seeds of SeedsTotal.
	Seeds       []string `json:"seeds"`
	SeedsTotal  int      `json:"seeds_total"`
	Scope       string   `json:"scope"`
	ScopeRegexp string   `json:"scope_regexp,omitempty"`
	// MaxDepth is the deepest link depth fetched; -1: unlimited.
	MaxDepth int `json:"max_depth"`
	// LooseDepth says whether depth levels overlap (the default); false:
	// level by level (--strict-levels). crawl.Config.LevelsOverlap.
	LooseDepth bool `json:"loose_depth"`
	// MaxPages is the crawl's page budget; 0: none.
	MaxPages int64 `json:"max_pages"`
	// Concurrency and TimeoutMS are 0 for a distributed crawl, whose
	// published rules leave them to each node (crawl.LocalFields).
	Concurrency int     `json:"concurrency"`
	PerHost     int     `json:"per_host"`
	PerIP       bool    `json:"per_ip"`
	DelayMS     int64   `json:"delay_ms"`
	DelayFrom   string  `json:"delay_from"`
	MaxRate     float64 `json:"max_rate"` // requests/s over the crawl; 0: no cap
	MaxRetries  int     `json:"max_retries"`
	TimeoutMS   int64   `json:"timeout_ms"`
	UserAgent   string  `json:"user_agent"`
	RobotsAgent string  `json:"robots_agent"`
}

// MaxConfigSeeds bounds CrawlConfig.Seeds.
const MaxConfigSeeds = 20

// NewCrawlConfig gives what the dashboard shows of cfg (with its defaults
// filled, as crawl.Engine.Config returns it).
func NewCrawlConfig(cfg crawl.Config) *CrawlConfig {
	c := &CrawlConfig{
		Mode: "normal", SeedsTotal: len(cfg.Seeds), Scope: cfg.Scope, ScopeRegexp: cfg.ScopeRegexp,
		MaxDepth: cfg.MaxDepth, LooseDepth: cfg.LevelsOverlap(), MaxPages: cfg.MaxPages,
		Concurrency: cfg.Concurrency, PerHost: cfg.PerHost, PerIP: cfg.PerIP,
		DelayMS: time.Duration(cfg.Delay).Milliseconds(), DelayFrom: cfg.DelayFrom, MaxRate: cfg.MaxRate,
		MaxRetries: cfg.MaxRetries, TimeoutMS: time.Duration(cfg.Timeout).Milliseconds(),
		UserAgent: cfg.UserAgent, RobotsAgent: cfg.RobotsAgent,
	}
	if c.MaxDepth < 0 {
		c.MaxDepth = -1
	}
	if cfg.Topics != "" {
		c.Mode = "topics"
	}
	c.Seeds = append([]string{}, cfg.Seeds[:min(len(cfg.Seeds), MaxConfigSeeds)]...)
	return c
}
