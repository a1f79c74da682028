package server

import (
	"time"

	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/crawlstate"
	"github.com/spider-crawler/spider/internal/partition"
	"github.com/spider-crawler/spider/internal/topics"
)

// The JSON spider prints, in the API's answers and in the command line's
// --json outputs, follows one style (issue 20), and where the two show the
// same thing they share the types of this file, so they cannot drift:
//
//   - keys are snake_case, set by explicit tags on output-only structs;
//   - a duration is a number of milliseconds in a key ending in _ms;
//   - a time is an RFC 3339 string (time.Time);
//   - an absent list is [] rather than null where a client iterates it.
//
// openapi.json declares every one of them under components/schemas (its
// description names the command that prints each), and the tests check
// real outputs against those declarations.

// SearchAnswer is the body of GET /api/search and what spider search --json
// prints.
type SearchAnswer struct {
	Query  string   `json:"query"`
	Offset int      `json:"offset"`
	Limit  int      `json:"limit"`
	Total  int      `json:"total"`
	TookMS float64  `json:"took_ms"` // time in the index, to the microsecond; 0 for a cached answer
	Cached bool     `json:"cached"`  // the answer came from the server's result cache
	Terms  []string `json:"terms"`   // the query's terms after analysis
	Hits   []Hit    `json:"hits"`
}

// NewSearchAnswer is the answer to req that res (a Searcher's result for
// it) gives; nil slices of res become empty ones.
func NewSearchAnswer(req SearchRequest, res *SearchResult) SearchAnswer {
	res = normalise(res)
	return SearchAnswer{Query: req.Query, Offset: req.Offset, Limit: req.Limit, Total: res.Total,
		TookMS: float64(res.Took.Microseconds()) / 1000, Cached: res.Cached, Terms: res.Terms, Hits: res.Hits}
}

// CrawlStats is what spider stats --json prints: the crawl stored in a data
// directory, from its records (crawl.Stats), with the topic scheduler's
// status for a crawl run with --topics. Rows and Outcomes are maps from a
// result row or an outcome class to its count; their keys are data, not
// field names.
type CrawlStats struct {
	URLs       int64            `json:"urls"`       // distinct URLs completed
	Rows       map[string]int64 `json:"rows"`       // result rows of the crawl summary's table
	Outcomes   map[string]int64 `json:"outcomes"`   // exact outcome classes
	TopHosts   []Count          `json:"top_hosts"`  // the busiest hosts: name and completed URLs
	Bytes      int64            `json:"bytes"`      // body bytes stored
	Duplicates int64            `json:"duplicates"` // 2xx pages whose text an earlier page had
	// NearDuplicates are the pages whose text's SimHash is within the
	// crawl's --near-dup-distance of an earlier page's (the text not
	// identical): the crawl's decisions from the records, or for records
	// without them recomputed within 3 bits (crawl.Summary).
	NearDuplicates int64 `json:"near_duplicates"`
	Corrupt        int   `json:"corrupt"`    // record lines that could not be read
	Rerecorded     int64 `json:"rerecorded"` // URLs with more than one record (fetched again after a kill)
	// Failures are the failed URLs by outcome class, the largest class
	// first, each with its first examples and a hint.
	Failures []crawl.FailureClass `json:"failures"`
	Topics   *topics.Status       `json:"topics,omitempty"`
}

// NewCrawlStats is the CrawlStats of s; ts may be nil (no topics).
func NewCrawlStats(s *crawl.Summary, ts *topics.Status) CrawlStats {
	out := CrawlStats{URLs: s.URLs, Rows: s.Rows, Outcomes: s.Outcomes, TopHosts: make([]Count, 0, len(s.TopHosts)),
		Bytes: s.Bytes, Duplicates: s.Duplicates, NearDuplicates: s.NearDuplicates, Corrupt: s.Corrupt, Rerecorded: s.Rerecorded, Failures: s.Failures, Topics: ts}
	if out.Rows == nil {
		out.Rows = map[string]int64{}
	}
	if out.Outcomes == nil {
		out.Outcomes = map[string]int64{}
	}
	if out.Failures == nil {
		out.Failures = []crawl.FailureClass{}
	}
	for _, h := range s.TopHosts {
		out.TopHosts = append(out.TopHosts, Count{Name: h.Host, Count: h.Pages})
	}
	return out
}

// ClusterStatus is what spider status --redis URL --json prints: a
// distributed crawl as read from Redis. Its queue and nodes are built by
// the functions that build /api/crawl's for the same crawl (package
// redisview: MasterWorkerStatus, PeerStatus).
type ClusterStatus struct {
	Crawl string `json:"crawl"`
	// Source is "master-worker", "peer-to-peer", "layered" or "protocol",
	// as in CrawlStatus.
	Source string `json:"source"`
	Done   bool   `json:"done"`
	// Epoch is the peers' membership epoch, or the master's epoch.
	Epoch int64  `json:"epoch"`
	Queue *Queue `json:"queue"`
	Nodes []Node `json:"nodes"`
	// Master is the master's last published counters (master–worker);
	// a key ending in _ms holds milliseconds.
	Master map[string]int64 `json:"master,omitempty"`
	// Sent counts the URLs sent from one peer (outer key) to another
	// (inner key) (peer-to-peer).
	Sent map[string]map[string]int64 `json:"sent,omitempty"`
	// Spread is how far the peers' loads are from their weights' shares
	// (peer-to-peer).
	Spread *partition.LoadSpread `json:"spread,omitempty"`
	// Report is the crawl-wide report every topology keeps (state, totals
	// by result row and outcome, one row per node); nil before a node
	// reported.
	Report *CrawlReport `json:"report,omitempty"`
	// Topics is a topics crawl's coordinator status (its PQ-MCSA
	// scheduler and each crawl node's load); nil for other crawls.
	Topics *topics.ClusterStatus `json:"topics,omitempty"`
	// Schedule is the crawl's revisit schedule over all its buckets or
	// parts; nil when it has none.
	Schedule *Schedule `json:"schedule,omitempty"`
}

// OpenAPIDocument returns openapi.json: the API's description, and under
// components/schemas the schemas of every JSON spider prints or writes for
// users (tests check real outputs against them, see openapitest).
func OpenAPIDocument() []byte {
	b, err := assets.ReadFile("openapi.json")
	if err != nil {
		panic("openapi.json is not embedded: " + err.Error())
	}
	return b
}

// Schedule is a crawl's revisit schedule (issue 26) as spider status and
// the dashboard show it: "schedule" in GET /api/crawl and in spider status
// --json, absent for a crawl that has none (a one-shot crawl with
// --revisit off and no failure to retry).
type Schedule struct {
	// Scheduled are the URLs with a revisit record: pages to fetch again
	// and failures to retry.
	Scheduled int64 `json:"scheduled"`
	// Due of them have a next fetch time; Overdue of those are due now
	// or earlier (waiting for the frontier, within --revisit-share, or
	// for the next continuous run).
	Due     int64 `json:"due"`
	Overdue int64 `json:"overdue"`
	// Failed are the URLs whose last fetch failed, waiting for a retry on
	// their class's back-off (spider crawl --retry-failed: now).
	Failed int64 `json:"failed"`
	// NextDue is the earliest next fetch; absent when none is due.
	NextDue time.Time `json:"next_due,omitzero"`
	// At is when the figures were read (a running data-directory crawl
	// rewrites them every 2 s).
	At time.Time `json:"at"`
	// Run is this run's revisits: only where the crawl runs in this
	// process (spider crawl --serve).
	Run *ScheduleRun `json:"run,omitempty"`
}

// ScheduleRun is what a crawl's revisit schedule did in this run
// (crawl.RevisitCounts).
type ScheduleRun struct {
	Revisits    int64 `json:"revisits"`     // completions of URLs fetched before
	NotModified int64 `json:"not_modified"` // of them answered 304 to a conditional request
	Changed     int64 `json:"changed"`      // of them with a new fingerprint
	Unchanged   int64 `json:"unchanged"`
	Retried     int64 `json:"retried"` // completions of URLs whose previous fetch failed
	Hinted      int64 `json:"hinted"`  // fetches brought forward by a sitemap's lastmod
	Taken       int64 `json:"taken"`   // due URLs moved into the frontier
}

// NewSchedule is the Schedule of c read at at; nil when c holds no
// record (no schedule: nothing to show).
func NewSchedule(c crawlstate.ScheduleCounts, at time.Time) *Schedule {
	if c.Records == 0 {
		return nil
	}
	s := &Schedule{Scheduled: c.Records, Due: c.Due, Overdue: c.Overdue, Failed: c.Failed, At: at.UTC()}
	if !c.Next.IsZero() {
		s.NextDue = c.Next.UTC()
	}
	return s
}

// NewScheduleRun is the ScheduleRun of c.
func NewScheduleRun(c crawl.RevisitCounts) *ScheduleRun {
	return &ScheduleRun{Revisits: c.Revisits, NotModified: c.NotModified, Changed: c.Changed, Unchanged: c.Unchanged,
		Retried: c.Retried, Hinted: c.Hinted, Taken: c.Taken}
}

// DataStatus is what spider status --data DIR --json prints: the topic
// scheduler's status of a crawl run with --topics (its keys, as
// TopicsStatus) and the revisit schedule; each is absent when the crawl
// has none.
type DataStatus struct {
	*topics.Status
	Schedule *Schedule `json:"schedule,omitempty"`
}
