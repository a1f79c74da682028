package redisview

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spider-crawler/spider/internal/cluster"
	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/masterworker"
	"github.com/spider-crawler/spider/internal/p2p"
	"github.com/spider-crawler/spider/internal/server"
)

// View is the server.CrawlView of a distributed crawl, read from Redis: the
// crawl-wide report every topology publishes (cluster.ReadReports: pages,
// result rows, outcomes, bytes and one row per node, for the whole crawl),
// then the topology's own figures: master–worker (masterworker.ReadStatus)
// when a master ever ran the crawl, layered or §0 when their nodes
// reported, peer-to-peer (p2p.ReadStatus) otherwise. Redis holds no rate
// history, so the pages/s series is sampled here, at most once a second,
// from the snapshots taken. With a data directory (Dir), the record
// counts, hosts and errors of this machine's part are shown too. Safe for
// concurrent use.
type View struct {
	rdb     redis.UniversalClient
	crawl   string
	buckets int
	dir     *server.DirView
	now     func() time.Time

	mu      sync.Mutex
	samples []server.RatePoint // sampled rates, oldest first
	lastT   time.Time
	cfg     *server.CrawlConfig // the master's published rules; nil: not read yet
	cfgOf   int64               // the master's epoch cfg was read in
}

var _ server.CrawlView = (*View)(nil)

// New views the crawl named crawlName; buckets is the peers'
// --buckets (for the bucket shares of a peer-to-peer crawl); dir may be
// nil; now may be nil (time.Now).
func New(rdb redis.UniversalClient, crawlName string, buckets int, dir *server.DirView, now func() time.Time) *View {
	if now == nil {
		now = time.Now
	}
	return &View{rdb: rdb, crawl: crawlName, buckets: buckets, dir: dir, now: now}
}

// Snapshot implements server.CrawlView.
func (v *View) Snapshot(ctx context.Context) (*server.CrawlStatus, error) {
	var st *server.CrawlStatus
	if v.dir != nil {
		var err error
		if st, err = v.dir.Snapshot(ctx); err != nil {
			return nil, err
		}
	} else {
		st = &server.CrawlStatus{Series: []server.RatePoint{}, Nodes: []server.Node{}, Topics: []server.Topic{}, TopicNodes: []masterworker.NodeLoad{}, Errors: []server.RecentError{},
			Rows: []server.Count{}, Outcomes: []server.Count{}, TopHosts: []server.Count{}, Hosts: []server.HostRow{}, Failures: []crawl.FailureClass{},
			Updated: v.now().UTC()}
	}
	rep, err := cluster.ReadReports(ctx, v.rdb, v.crawl)
	if err != nil {
		return nil, err
	}
	mw, err := masterworker.ReadStatus(ctx, v.rdb, v.crawl)
	if err != nil {
		return nil, err
	}
	if src := ReportSource(rep); src == server.SourceLayered || src == server.SourceProtocol {
		st.Source = src
		st.State = reportDashState(rep.State)
		st.PagesPerSec = rep.PagesPerSec
		st.Queue = &server.Queue{}
		for _, n := range rep.Nodes {
			st.Queue.Queued += n.Detail["queued"]
			st.Queue.InFlight += n.Detail["in_flight"]
		}
	} else if mw.Master["epoch"] != 0 || len(mw.Workers) > 0 {
		m := mw.Master
		st.Source = "master-worker"
		st.State = "running"
		if mw.Done {
			st.State = "finished"
		}
		st.Pages = max(st.Pages, m["fetched"])
		st.PagesPerSec = 0
		if ms := m["elapsed_ms"]; ms > 0 {
			st.PagesPerSec = float64(m["fetched"]) / (float64(ms) / 1000)
		}
		st.Queue = masterWorkerQueue(mw)
		st.Nodes = workerNodes(mw)
		st.Config = v.masterConfig(ctx, m["epoch"])
		c, ok, err := masterworker.ReadSchedule(ctx, v.rdb, v.crawl, v.now())
		if err != nil {
			return nil, err
		}
		st.Schedule = nil
		if ok {
			st.Schedule = server.NewSchedule(c, v.now())
		}
	} else {
		ps, err := p2p.ReadStatus(ctx, v.rdb, v.crawl, v.buckets)
		if err != nil {
			return nil, err
		}
		st.Source = "peer-to-peer"
		switch {
		case ps.Done:
			st.State = "finished"
		case len(ps.Nodes) == 0:
			st.State = "idle"
		default:
			st.State = "running"
		}
		st.Nodes = peerNodes(ps)
		c, ok, err := p2p.ReadSchedule(ctx, v.rdb, v.crawl, v.buckets, v.now())
		if err != nil {
			return nil, err
		}
		st.Schedule = nil
		if ok {
			st.Schedule = server.NewSchedule(c, v.now())
		}
		st.PagesPerSec = 0
		for _, n := range ps.Nodes {
			st.PagesPerSec += n.PagesPerSec
		}
		st.Queue = peerQueue(ps)
	}
	applyReport(st, rep)
	v.redisTopics(ctx, st)
	st.State = v.controlState(ctx, st.State)
	st.Control = st.State == "running" || st.State == "paused"
	st.Series = v.sample(st.PagesPerSec)
	return st, nil
}

// masterConfig returns the crawl rules the master of epoch published for
// its workers (masterworker.LoadConfig), read once per epoch; nil while
// they cannot be read. The rules leave out each node's local settings
// (crawl.LocalFields): concurrency and time-out are then 0.
func (v *View) masterConfig(ctx context.Context, epoch int64) *server.CrawlConfig {
	v.mu.Lock()
	if v.cfg != nil && v.cfgOf == epoch {
		c := *v.cfg
		v.mu.Unlock()
		return &c
	}
	v.mu.Unlock()
	// LoadConfig waits for a master that has not published yet: not here.
	lctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	rules, err := masterworker.LoadConfig(lctx, v.rdb, v.crawl, nil)
	if err != nil {
		return nil
	}
	c := server.NewCrawlConfig(rules)
	v.mu.Lock()
	v.cfg, v.cfgOf = c, epoch
	v.mu.Unlock()
	cc := *c
	return &cc
}

// sample records the rate (once a second at most) and returns the series.
func (v *View) sample(rate float64) []server.RatePoint {
	v.mu.Lock()
	defer v.mu.Unlock()
	now := v.now()
	if v.lastT.IsZero() || now.Sub(v.lastT) >= time.Second {
		v.samples = append(v.samples, server.RatePoint{T: now.Unix(), Step: 1, PagesPerSec: rate})
		if len(v.samples) > server.SeriesPoints {
			v.samples = append(v.samples[:0], v.samples[len(v.samples)-server.SeriesPoints:]...)
		}
		v.lastT = now
	}
	return append([]server.RatePoint(nil), v.samples...)
}

// ReportSource is the topology the nodes of rep say the crawl has (from
// their roles), "" when no node reported.
func ReportSource(rep *cluster.Report) string {
	src := ""
	for _, n := range rep.Nodes {
		switch n.Role {
		case cluster.RoleLayered:
			return server.SourceLayered
		case cluster.RoleHost, cluster.RoleCenter:
			return server.SourceProtocol
		case cluster.RoleMaster:
			return server.SourceMasterWorker
		case cluster.RolePeer:
			src = server.SourcePeer
		}
	}
	return src
}

// reportDashState maps a report state to the dashboard's states.
func reportDashState(s string) string {
	switch s {
	case cluster.ReportDone:
		return "finished"
	case "":
		return "idle"
	}
	return s // running, paused, stopped, failed
}

// NewCrawlReport is the server.CrawlReport of rep (maps and lists never nil).
func NewCrawlReport(rep *cluster.Report) *server.CrawlReport {
	out := &server.CrawlReport{State: rep.State, Final: rep.Final(), Pages: rep.Totals.Pages, Bytes: rep.Totals.Bytes,
		PagesPerSec: rep.PagesPerSec, Rows: nonNil(rep.Totals.Rows), Outcomes: nonNil(rep.Totals.Outcomes),
		Nodes: make([]server.ReportNode, 0, len(rep.Nodes)), Updated: time.UnixMilli(rep.NowMS).UTC()}
	for _, n := range rep.Nodes {
		out.Nodes = append(out.Nodes, server.ReportNode{ID: n.Node, Role: n.Role, State: n.State, Final: n.Final, Stale: n.Stale,
			Pages: n.Pages, Bytes: n.Bytes, PagesPerSec: n.PagesPerSec, Rows: nonNil(n.Rows), Outcomes: nonNil(n.Outcomes),
			Detail: nonNil(n.Detail), Started: time.UnixMilli(n.StartedMS).UTC(), Updated: time.UnixMilli(n.UpdatedMS).UTC()})
	}
	return out
}

func nonNil(m map[string]int64) map[string]int64 {
	if m == nil {
		return map[string]int64{}
	}
	return m
}

// applyReport makes st show the crawl-wide report when its nodes
// reported: pages, rows, outcomes and bytes of the whole crawl (not only
// of this machine's data directory), each node's pages and state on its
// row (a row added for a node the topology's own status does not list).
func applyReport(st *server.CrawlStatus, rep *cluster.Report) {
	if len(rep.Nodes) == 0 {
		return
	}
	st.Report = NewCrawlReport(rep)
	st.Pages, st.Bytes = rep.Totals.Pages, rep.Totals.Bytes
	st.Rows = st.Rows[:0]
	for _, row := range crawl.TableRows {
		st.Rows = append(st.Rows, server.Count{Name: row, Count: rep.Totals.Rows[row]})
	}
	st.Outcomes = server.SortedCounts(rep.Totals.Outcomes, 0)
	if st.PagesPerSec == 0 {
		st.PagesPerSec = rep.PagesPerSec
	}
	st.Nodes = reportNodes(st.Nodes, rep)
}

// reportNodes adds the report's figures to nodes (by ID) and a row for
// every node of rep that nodes lacks.
func reportNodes(nodes []server.Node, rep *cluster.Report) []server.Node {
	at := make(map[string]int, len(nodes))
	for i, n := range nodes {
		at[n.ID] = i
	}
	for _, r := range rep.Nodes {
		state := r.State
		if r.Stale {
			state = "lost"
		}
		if i, ok := at[r.Node]; ok {
			nodes[i].Fetched, nodes[i].State = NodeFetched(r), state
			continue
		}
		n := server.Node{ID: r.Node, Role: r.Role, Fetched: NodeFetched(r), State: state, Queue: r.Detail["queued"], InFlight: r.Detail["in_flight"],
			Idle: r.Final || r.State == cluster.ReportPaused}
		if !r.Final && !r.Stale {
			n.PagesPerSec = r.PagesPerSec
		}
		nodes = append(nodes, n)
	}
	return nodes
}

// NodeFetched is the URLs a node completed as its row shows them: its
// Pages, or for a node whose records another keeps (a layered worker's go
// to the coordinator's page store) the "fetched" of its Detail.
func NodeFetched(r cluster.NodeReport) int64 {
	if r.Pages == 0 {
		return r.Detail["fetched"]
	}
	return r.Pages
}
