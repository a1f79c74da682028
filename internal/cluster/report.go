package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// The crawl-wide report (issue #24): every node of every topology (p2p
// peers, the master–worker master and workers, §0 hosts and centers,
// layered coordinators and workers) publishes its counters and state here,
// and `spider status --redis` and `spider serve --redis` read them back.
// Keys, all in the membership's hash tag {C.m} (like the control keys), so
// one script writes a node's report and its time together on a Redis
// Cluster:
//
//	spider:C:{C.m}:report        hash: node ID → JSON NodeReport (without UpdatedMS)
//	spider:C:{C.m}:report.at     hash: node ID → Redis server time of the node's last publish, Unix ms
//	spider:C:{C.m}:report.state  string: JSON CrawlState, the crawl-wide state a topology set
//
// A node's report covers all its runs: a Reporter starts from the node's
// last published figures (Counts of its earlier runs) and adds this run's.

// Report states of a node and of a crawl.
const (
	ReportRunning = "running" // fetching (or ready to)
	ReportPaused  = "paused"  // paused by spider control
	ReportDone    = "done"    // the crawl ended with nothing left to do
	ReportFailed  = "failed"  // the node (or the crawl) ended on an error
	ReportStopped = "stopped" // stopped (spider control stop, a signal) with URLs left for a next run
)

// Report roles: which part a node plays in its topology.
const (
	RolePeer    = "peer"    // peer-to-peer node (design §3)
	RoleMaster  = "master"  // master–worker master (design §1)
	RoleWorker  = "worker"  // master–worker worker, or a layered worker
	RoleHost    = "host"    // §0 host
	RoleCenter  = "center"  // §0 center
	RoleLayered = "layered" // a layered crawl's coordinator (design §2)
)

// ReportEvery is how often a Reporter publishes by default.
const ReportEvery = time.Second

// ReportStale is how old a node's last publish may be before readers mark
// a report that is not final as stale (the node died or lost Redis).
const ReportStale = 10 * time.Second

// Counts are a node's (or a crawl's) results: URLs completed, by SPEC §3
// result row (crawl.Row of the outcome) and by exact outcome class, and the
// body bytes stored. crawl.Counts has the same fields, so one converts to
// the other (cluster.Counts(c)); internal/crawl cannot link this package.
type Counts struct {
	Pages    int64            `json:"pages"`    // URLs completed (records written)
	Bytes    int64            `json:"bytes"`    // body bytes stored
	Rows     map[string]int64 `json:"rows"`     // SPEC §3 result row → URLs
	Outcomes map[string]int64 `json:"outcomes"` // outcome class → URLs
}

// Add adds o to c (allocating c's maps as needed).
func (c *Counts) Add(o Counts) {
	c.Pages += o.Pages
	c.Bytes += o.Bytes
	c.Rows = addMap(c.Rows, o.Rows)
	c.Outcomes = addMap(c.Outcomes, o.Outcomes)
}

func addMap(dst, src map[string]int64) map[string]int64 {
	if dst == nil {
		dst = make(map[string]int64, len(src))
	}
	for k, v := range src {
		dst[k] += v
	}
	return dst
}

// Clone returns a copy of c that shares no map with it (never nil maps).
func (c Counts) Clone() Counts { return c.clone() }

func (c Counts) clone() Counts {
	c.Rows, c.Outcomes = maps.Clone(c.Rows), maps.Clone(c.Outcomes)
	if c.Rows == nil {
		c.Rows = map[string]int64{}
	}
	if c.Outcomes == nil {
		c.Outcomes = map[string]int64{}
	}
	return c
}

// NodeReport is one node's published figures. Its Counts are the records
// the node itself wrote (its data directory's records.jsonl), so that the
// crawl's totals are the union of the nodes' records: a node that writes
// no records (a master–worker master, a §0 center, a layered coordinator
// that only merges) leaves them zero and puts its own figures in Detail.
type NodeReport struct {
	Node  string `json:"node"`  // the node's ID
	Role  string `json:"role"`  // a Role* constant
	State string `json:"state"` // a Report* state
	Counts
	PagesPerSec float64 `json:"pages_per_s"` // recent rate (live) or the run's average (final)
	StartedMS   int64   `json:"started_ms"`  // when this run started (node clock, Unix ms)
	// UpdatedMS is the Redis server time of the last publish (Unix ms),
	// filled by ReadReports.
	UpdatedMS int64 `json:"updated_ms,omitempty"`
	// Final is true once the node published its last figures (Reporter.Stop).
	Final bool `json:"final"`
	// Stale is set by ReadReports for a report that is not final and was
	// not refreshed within ReportStale: the node is gone.
	Stale bool `json:"stale,omitempty"`
	// Detail is the topology's own figures (queued, in flight, round...).
	Detail map[string]int64 `json:"detail,omitempty"`
}

// CrawlState is a crawl-wide state set by a topology (SetCrawlState).
type CrawlState struct {
	State string `json:"state"`
	AtMS  int64  `json:"at_ms"` // Redis server time, Unix ms
}

// Report is a crawl's report as ReadReports reads it.
type Report struct {
	Crawl string
	// State is the crawl's state: the one a topology set with SetCrawlState
	// if any; else paused if every live node is paused, running if any
	// node is live, failed if a node failed, stopped if every node ended
	// stopped, done if every node ended done; "" with no node at all.
	State string
	// Nodes are the nodes' reports, by role then ID.
	Nodes []NodeReport
	// Totals is the sum of the nodes' Counts; Totals.Rows has every row
	// a node reported.
	Totals Counts
	// PagesPerSec is the sum of the live nodes' rates.
	PagesPerSec float64
	// NowMS is the Redis server time of the read, Unix ms.
	NowMS int64
}

// Final reports whether every node published its final figures.
func (r *Report) Final() bool {
	for _, n := range r.Nodes {
		if !n.Final {
			return false
		}
	}
	return len(r.Nodes) > 0
}

func reportKey(k Keys) string      { return k.mtag + "report" }
func reportAtKey(k Keys) string    { return k.mtag + "report.at" }
func reportStateKey(k Keys) string { return k.mtag + "report.state" }

// ReportKeys returns the names of the report's keys (for clean-up and tests).
func ReportKeys(k Keys) []string {
	return []string{reportKey(k), reportAtKey(k), reportStateKey(k)}
}

// publishScript: KEYS report, report.at; ARGV node, JSON. Stores the JSON
// and the server time.
var publishScript = redis.NewScript(LuaNow + `
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('HSET', KEYS[2], ARGV[1], string.format('%d', now_ms))
return now_ms`)

// stateScript: KEYS report.state; ARGV state. Stores {state, at_ms}.
var stateScript = redis.NewScript(LuaNow + `
redis.call('SET', KEYS[1], '{"state":"' .. ARGV[1] .. '","at_ms":' .. string.format('%d', now_ms) .. '}')
return now_ms`)

func checkState(s string) error {
	switch s {
	case ReportRunning, ReportPaused, ReportDone, ReportFailed, ReportStopped:
		return nil
	}
	return fmt.Errorf("cannot report state %q: want %s, %s, %s, %s or %s", s, ReportRunning, ReportPaused, ReportDone, ReportFailed, ReportStopped)
}

// Publish stores r as node r.Node's report of the crawl named by k (the
// whole report replaces the previous one). It does not change r.
func Publish(ctx context.Context, rdb redis.UniversalClient, k Keys, r NodeReport) error {
	if err := CheckNodeID(r.Node); err != nil {
		return err
	}
	if err := checkState(r.State); err != nil {
		return err
	}
	r.UpdatedMS, r.Stale = 0, false
	r.Counts = r.Counts.clone()
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("cannot encode node %s's report: %w", r.Node, err)
	}
	if err := publishScript.Run(ctx, rdb, []string{reportKey(k), reportAtKey(k)}, r.Node, string(b)).Err(); err != nil {
		return fmt.Errorf("cannot publish node %s's report (is Redis reachable?): %w", r.Node, err)
	}
	return nil
}

// PublishFinal is Publish with r.Final set: the node's last figures.
func PublishFinal(ctx context.Context, rdb redis.UniversalClient, k Keys, r NodeReport) error {
	r.Final = true
	return Publish(ctx, rdb, k, r)
}

// SetCrawlState records the crawl-wide state (a Report* constant) that
// ReadReports returns instead of deriving one from the nodes; a topology
// sets it when it knows the whole crawl's state (its end).
func SetCrawlState(ctx context.Context, rdb redis.UniversalClient, k Keys, state string) error {
	if err := checkState(state); err != nil {
		return err
	}
	if err := stateScript.Run(ctx, rdb, []string{reportStateKey(k)}, state).Err(); err != nil {
		return fmt.Errorf("cannot record the crawl's state %s (is Redis reachable?): %w", state, err)
	}
	return nil
}

// ClearCrawlState removes the crawl-wide state (a new run starts).
func ClearCrawlState(ctx context.Context, rdb redis.UniversalClient, k Keys) error {
	if err := rdb.Del(ctx, reportStateKey(k)).Err(); err != nil {
		return fmt.Errorf("cannot clear the crawl's state: %w", err)
	}
	return nil
}

// ReadNodeReport returns node's last published report, ok false if it
// never published one.
func ReadNodeReport(ctx context.Context, rdb redis.UniversalClient, k Keys, node string) (r NodeReport, ok bool, err error) {
	v, err := rdb.HGet(ctx, reportKey(k), node).Result()
	if errors.Is(err, redis.Nil) {
		return NodeReport{}, false, nil
	}
	if err != nil {
		return NodeReport{}, false, fmt.Errorf("cannot read node %s's report (is Redis reachable?): %w", node, err)
	}
	if err := json.Unmarshal([]byte(v), &r); err != nil {
		return NodeReport{}, false, fmt.Errorf("cannot decode node %s's report %q: %w", node, v, err)
	}
	return r, true, nil
}

// ReadReports reads the report of crawl: every node's last figures, their
// totals and the crawl's state. A crawl whose nodes never published has
// no Nodes and State "". Reports that cannot be decoded are skipped.
func ReadReports(ctx context.Context, rdb redis.UniversalClient, crawl string) (*Report, error) {
	k, err := NewKeys(crawl)
	if err != nil {
		return nil, err
	}
	pipe := rdb.Pipeline()
	all := pipe.HGetAll(ctx, reportKey(k))
	at := pipe.HGetAll(ctx, reportAtKey(k))
	st := pipe.Get(ctx, reportStateKey(k))
	tm := pipe.Time(ctx)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("cannot read crawl %q's report (is Redis reachable?): %w", crawl, err)
	}
	rep := &Report{Crawl: crawl, NowMS: tm.Val().UnixMilli(), Totals: Counts{Rows: map[string]int64{}, Outcomes: map[string]int64{}}}
	for node, v := range all.Val() {
		var n NodeReport
		if json.Unmarshal([]byte(v), &n) != nil {
			continue
		}
		n.Node = node
		n.Counts = n.Counts.clone()
		n.UpdatedMS, _ = strconv.ParseInt(at.Val()[node], 10, 64)
		n.Stale = !n.Final && rep.NowMS-n.UpdatedMS > ReportStale.Milliseconds()
		rep.Nodes = append(rep.Nodes, n)
		rep.Totals.Add(n.Counts)
		if !n.Final && !n.Stale {
			rep.PagesPerSec += n.PagesPerSec
		}
	}
	sort.Slice(rep.Nodes, func(i, j int) bool {
		a, b := rep.Nodes[i], rep.Nodes[j]
		if a.Role != b.Role {
			return roleOrder(a.Role) < roleOrder(b.Role)
		}
		return a.Node < b.Node
	})
	var cs CrawlState
	if v := st.Val(); v != "" && json.Unmarshal([]byte(v), &cs) == nil && cs.State != "" {
		rep.State = cs.State
	} else {
		rep.State = deriveState(rep.Nodes)
	}
	return rep, nil
}

func roleOrder(role string) int {
	switch role {
	case RoleLayered, RoleMaster, RoleCenter:
		return 0
	}
	return 1
}

// deriveState is the crawl state of Report.State from its nodes.
func deriveState(nodes []NodeReport) string {
	if len(nodes) == 0 {
		return ""
	}
	var live, paused, failed, stopped int
	for _, n := range nodes {
		switch {
		case !n.Final && !n.Stale:
			live++
			if n.State == ReportPaused {
				paused++
			}
		case n.State == ReportFailed || n.Stale:
			failed++
		case n.State == ReportStopped:
			stopped++
		}
	}
	switch {
	case live > 0 && paused == live:
		return ReportPaused
	case live > 0:
		return ReportRunning
	case failed > 0:
		return ReportFailed
	case stopped > 0:
		return ReportStopped
	}
	return ReportDone
}

// Reporter publishes one node's report every interval until Stop. It is
// safe for concurrent use.
type Reporter struct {
	rdb    redis.UniversalClient
	k      Keys
	node   string
	role   string
	source func() NodeReport
	log    *slog.Logger
	base   Counts // the node's earlier runs
	start  time.Time

	mu       sync.Mutex
	state    string
	rateAt   time.Time
	ratePage int64
	rate     float64
	stopped  bool

	stopLoop func() // ends the publishing every ReporterConfig.Every (Every)
}

// ReporterConfig configures StartReporter.
type ReporterConfig struct {
	Node string // the node's ID (CheckNodeID)
	Role string // a Role* constant
	// Source returns this run's figures: Counts (of this run only; the
	// Reporter adds the node's earlier runs), Detail, and optionally State
	// and PagesPerSec (else the Reporter's SetState and its own rate).
	// It is called from the Reporter's goroutine and from Stop.
	Source func() NodeReport
	// Every is the publish interval; 0 means ReportEvery.
	Every time.Duration
	// Fresh drops the node's earlier figures instead of adding to them
	// (a crawl that starts over).
	Fresh  bool
	Logger *slog.Logger
}

// StartReporter reads node's earlier figures (unless cfg.Fresh), publishes
// a first report at once (state running) and then one every cfg.Every
// until Stop or ctx's end. A publish that fails is logged and retried at
// the next tick; only the first read and publish return errors.
func StartReporter(ctx context.Context, rdb redis.UniversalClient, k Keys, cfg ReporterConfig) (*Reporter, error) {
	if err := CheckNodeID(cfg.Node); err != nil {
		return nil, err
	}
	if cfg.Source == nil {
		cfg.Source = func() NodeReport { return NodeReport{} }
	}
	if cfg.Every <= 0 {
		cfg.Every = ReportEvery
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	r := &Reporter{rdb: rdb, k: k, node: cfg.Node, role: cfg.Role, source: cfg.Source, log: cfg.Logger,
		start: time.Now(), state: ReportRunning}
	r.rateAt = r.start
	if !cfg.Fresh {
		prev, ok, err := ReadNodeReport(ctx, rdb, k, cfg.Node)
		if err != nil {
			return nil, err
		}
		if ok {
			r.base = prev.Counts.clone()
		}
	}
	if err := Publish(ctx, rdb, k, r.snapshot(false)); err != nil {
		return nil, err
	}
	r.stopLoop = Every(ctx, cfg.Every, r.publish, func(err error) {
		r.log.Warn("cannot publish the node's report for spider status; retrying", "err", err)
	})
	return r, nil
}

// publish is the periodic publish; it does nothing once Stop began (Stop publishes the
// final report).
func (r *Reporter) publish(ctx context.Context) error {
	r.mu.Lock()
	stopped := r.stopped
	r.mu.Unlock()
	if stopped {
		return nil
	}
	return Publish(ctx, r.rdb, r.k, r.snapshot(false))
}

// SetState sets the state the next publishes carry (a Report* constant)
// when Source leaves it empty; Publish at once with Flush.
func (r *Reporter) SetState(state string) {
	r.mu.Lock()
	r.state = state
	r.mu.Unlock()
}

// Flush publishes the current figures now.
func (r *Reporter) Flush(ctx context.Context) error {
	return Publish(ctx, r.rdb, r.k, r.snapshot(false))
}

// snapshot builds the report from Source, the base and the rate.
func (r *Reporter) snapshot(final bool) NodeReport {
	s := r.source()
	r.mu.Lock()
	defer r.mu.Unlock()
	rep := NodeReport{Node: r.node, Role: r.role, State: s.State, Counts: r.base.clone(), PagesPerSec: s.PagesPerSec,
		StartedMS: r.start.UnixMilli(), Detail: s.Detail, Final: final}
	rep.Add(s.Counts)
	if rep.State == "" {
		rep.State = r.state
	}
	now := time.Now()
	if rep.PagesPerSec == 0 {
		if final {
			if el := now.Sub(r.start).Seconds(); el > 0 {
				rep.PagesPerSec = float64(s.Pages) / el
			}
		} else {
			if el := now.Sub(r.rateAt); el >= time.Second/2 {
				r.rate = float64(s.Pages-r.ratePage) / el.Seconds()
				r.rateAt, r.ratePage = now, s.Pages
			}
			rep.PagesPerSec = r.rate
		}
	}
	return rep
}

// Stop ends the publishing loop and publishes the last figures as final,
// with state (a Report* constant; "" keeps the current one). It returns
// the publish's error; a second Stop does nothing.
func (r *Reporter) Stop(ctx context.Context, state string) error {
	r.mu.Lock()
	if r.stopped {
		r.mu.Unlock()
		return nil
	}
	r.stopped = true
	if state != "" {
		r.state = state
	}
	r.mu.Unlock()
	r.stopLoop()
	rep := r.snapshot(true)
	if state != "" {
		rep.State = state
	}
	return Publish(ctx, r.rdb, r.k, rep)
}
