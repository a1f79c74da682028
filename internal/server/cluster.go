package server

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/masterworker"
	"github.com/spider-crawler/spider/internal/p2p"
)

// RedisView is the CrawlView of a distributed crawl, read from Redis:
// master–worker (masterworker.ReadStatus) when a master ever ran the
// crawl, peer-to-peer (p2p.ReadStatus) otherwise. Redis holds no rate
// history, so the pages/s series is sampled here, at most once a second,
// from the snapshots taken. With a data directory (Dir), the record
// counts, hosts and errors of this machine's part are shown too. Safe for
// concurrent use.
type RedisView struct {
	rdb     redis.UniversalClient
	crawl   string
	buckets int
	dir     *DirView
	now     func() time.Time

	mu      sync.Mutex
	samples []RatePoint // sampled rates, oldest first
	lastT   time.Time
	cfg     *CrawlConfig // the master's published rules; nil: not read yet
	cfgOf   int64        // the master's epoch cfg was read in
}

var _ CrawlView = (*RedisView)(nil)

// NewRedisView views the crawl named crawlName; buckets is the peers'
// --buckets (for the bucket shares of a peer-to-peer crawl); dir may be
// nil; now may be nil (time.Now).
func NewRedisView(rdb redis.UniversalClient, crawlName string, buckets int, dir *DirView, now func() time.Time) *RedisView {
	if now == nil {
		now = time.Now
	}
	return &RedisView{rdb: rdb, crawl: crawlName, buckets: buckets, dir: dir, now: now}
}

// Snapshot implements CrawlView.
func (v *RedisView) Snapshot(ctx context.Context) (*CrawlStatus, error) {
	var st *CrawlStatus
	if v.dir != nil {
		var err error
		if st, err = v.dir.Snapshot(ctx); err != nil {
			return nil, err
		}
	} else {
		st = &CrawlStatus{Series: []RatePoint{}, Nodes: []Node{}, Topics: []Topic{}, Errors: []RecentError{},
			Rows: []Count{}, Outcomes: []Count{}, TopHosts: []Count{}, Hosts: []HostRow{}, Failures: []crawl.FailureClass{},
			Updated: v.now().UTC()}
	}
	mw, err := masterworker.ReadStatus(ctx, v.rdb, v.crawl)
	if err != nil {
		return nil, err
	}
	if mw.Master["epoch"] != 0 || len(mw.Workers) > 0 {
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
		st.PagesPerSec = 0
		for _, n := range ps.Nodes {
			st.PagesPerSec += n.PagesPerSec
		}
		st.Queue = peerQueue(ps)
	}
	st.State = v.controlState(ctx, st.State)
	st.Control = st.State == "running" || st.State == "paused"
	st.Series = v.sample(st.PagesPerSec)
	return st, nil
}

// masterConfig returns the crawl rules the master of epoch published for
// its workers (masterworker.LoadConfig), read once per epoch; nil while
// they cannot be read. The rules leave out each node's local settings
// (crawl.LocalFields): concurrency and time-out are then 0.
func (v *RedisView) masterConfig(ctx context.Context, epoch int64) *CrawlConfig {
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
	c := NewCrawlConfig(rules)
	v.mu.Lock()
	v.cfg, v.cfgOf = c, epoch
	v.mu.Unlock()
	cc := *c
	return &cc
}

// sample records the rate (once a second at most) and returns the series.
func (v *RedisView) sample(rate float64) []RatePoint {
	v.mu.Lock()
	defer v.mu.Unlock()
	now := v.now()
	if v.lastT.IsZero() || now.Sub(v.lastT) >= time.Second {
		v.samples = append(v.samples, RatePoint{T: now.Unix(), Step: 1, PagesPerSec: rate})
		if len(v.samples) > SeriesPoints {
			v.samples = append(v.samples[:0], v.samples[len(v.samples)-SeriesPoints:]...)
		}
		v.lastT = now
	}
	return append([]RatePoint(nil), v.samples...)
}
