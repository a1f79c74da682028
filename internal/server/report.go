package server

import "time"

// Sources of a CrawlStatus or ClusterStatus read from Redis.
const (
	SourceMasterWorker = "master-worker"
	SourcePeer         = "peer-to-peer"
	SourceLayered      = "layered"
	SourceProtocol     = "protocol" // design §0: hosts and centers
)

// CrawlReport is the crawl-wide report every topology keeps in Redis
// (cluster.ReadReports): the crawl's state, its totals by result row and
// outcome, and one row per node that ever reported (final once the node
// published its last figures). "report" in GET /api/crawl and in spider
// status --redis --json.
type CrawlReport struct {
	// State is running, paused, done, failed or stopped; "" when no node
	// reported.
	State string `json:"state"`
	// Final is true when every node published its last figures: the
	// totals are then the union of the nodes' records.
	Final       bool             `json:"final"`
	Pages       int64            `json:"pages"` // URLs completed, all nodes
	Bytes       int64            `json:"bytes"` // body bytes stored, all nodes
	PagesPerSec float64          `json:"pages_per_s"`
	Rows        map[string]int64 `json:"rows"`     // SPEC §3 result row → URLs
	Outcomes    map[string]int64 `json:"outcomes"` // outcome class → URLs
	Nodes       []ReportNode     `json:"nodes"`
	// Updated is the Redis server time of the read.
	Updated time.Time `json:"updated"`
}

// ReportNode is one node's row of a CrawlReport.
type ReportNode struct {
	ID          string           `json:"id"`
	Role        string           `json:"role"`  // peer, master, worker, host, center, layered
	State       string           `json:"state"` // running, paused, done, failed, stopped
	Final       bool             `json:"final"` // its last figures
	Stale       bool             `json:"stale"` // not final and silent for cluster.ReportStale: the node is gone
	Pages       int64            `json:"pages"`
	Bytes       int64            `json:"bytes"`
	PagesPerSec float64          `json:"pages_per_s"`
	Rows        map[string]int64 `json:"rows"`
	Outcomes    map[string]int64 `json:"outcomes"`
	// Detail is the topology's own figures of the node (queued, in_flight,
	// round, ...); a key ending in _ms holds milliseconds.
	Detail  map[string]int64 `json:"detail"`
	Started time.Time        `json:"started"` // this run's start
	Updated time.Time        `json:"updated"` // its last publish (Redis server time)
}
