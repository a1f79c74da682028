package p2p

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/spider-crawler/spider/internal/cluster"
	"github.com/spider-crawler/spider/internal/partition"
)

// NodeStatus is one live peer as `spider status` shows it.
type NodeStatus struct {
	ID          string  `json:"id"`
	Weight      int     `json:"weight"`
	Buckets     int     `json:"buckets"` // buckets the ring gives it (of Options.Buckets)
	PagesPerSec float64 `json:"pages_per_s"`
	Queue       int64   `json:"queue"`
	Fetched     int64   `json:"fetched"`
	Inbox       int64   `json:"inbox"` // batches waiting
	Idle        bool    `json:"idle"`
	// Left is true for a node that ran and left the crawl (its row is its
	// final count); Fetched of a live node adds its earlier runs' counts.
	Left bool `json:"left,omitempty"`
}

// LoadSpread says how evenly the two-level mapping spreads the work
// (partition.LoadSpread: the HTTP front shows it without linking this
// package).
type LoadSpread = partition.LoadSpread

// Status is a peer-to-peer crawl as seen in Redis.
type Status struct {
	Crawl string                      `json:"crawl"`
	Done  bool                        `json:"done"`
	Epoch int64                       `json:"epoch"`
	Nodes []NodeStatus                `json:"nodes"`
	Sent  map[string]map[string]int64 `json:"sent"` // URLs sent from → to (SPEC §3)
	// Spread is the load spread over the live nodes, from the loads they
	// report with their heartbeats.
	Spread LoadSpread `json:"spread"`
}

// spread computes the LoadSpread of nodes.
func spread(nodes []NodeStatus) LoadSpread {
	var w, f, q float64
	for _, n := range nodes {
		w += float64(n.Weight)
		f += float64(n.Fetched)
		q += float64(n.Queue)
	}
	var s LoadSpread
	if w == 0 {
		return s
	}
	for _, n := range nodes {
		want := float64(n.Weight) / w
		if f > 0 {
			s.FetchedMaxDev = max(s.FetchedMaxDev, math.Abs(float64(n.Fetched)/f/want-1))
		}
		if q > 0 {
			s.QueueMaxDev = max(s.QueueMaxDev, math.Abs(float64(n.Queue)/q/want-1))
		}
	}
	return s
}

// ReadStatus reads members, bucket shares, inboxes and counters; buckets is
// the crawl's M (the nodes' --buckets).
func ReadStatus(ctx context.Context, rdb redis.UniversalClient, crawlName string, buckets int) (*Status, error) {
	keys, err := cluster.NewKeys(crawlName)
	if err != nil {
		return nil, err
	}
	view, err := cluster.NewMembership(rdb, keys, cluster.MembershipConfig{}).Members(ctx)
	if err != nil {
		return nil, fmt.Errorf("cannot read the crawl's members: %w", err)
	}
	k := newQKeys(crawlName)
	st := &Status{Crawl: crawlName, Epoch: view.Epoch}
	if n, _ := rdb.Exists(ctx, k.done()).Result(); n > 0 {
		st.Done = true
	}
	owned := map[string]int{}
	if ring, err := view.Ring(partition.PointsPerWeight(partition.DefaultPointsPerWeight)); err == nil {
		for _, id := range ring.Balanced(buckets, 0) {
			owned[id]++
		}
	}
	idle, _ := rdb.HGetAll(ctx, k.idle()).Result()
	final, err := finalCounts(ctx, rdb, k)
	if err != nil {
		return nil, err
	}
	for _, m := range view.Members {
		inbox, _ := rdb.LLen(ctx, k.inbox(m.ID)).Result()
		var rep idleReport
		_ = json.Unmarshal([]byte(idle[m.ID]), &rep)
		st.Nodes = append(st.Nodes, NodeStatus{ID: m.ID, Weight: m.Weight, Buckets: owned[m.ID],
			PagesPerSec: m.Load.PagesPerSec, Queue: m.Load.Queue, Fetched: m.Load.Fetched + final[m.ID], Inbox: inbox, Idle: rep.Idle})
		delete(final, m.ID)
	}
	// The nodes that left: after the end, every node; their rows keep the
	// status equal to the union of the nodes' records.
	left := make([]string, 0, len(final))
	for id := range final {
		left = append(left, id)
	}
	sort.Strings(left)
	for _, id := range left {
		st.Nodes = append(st.Nodes, NodeStatus{ID: id, Fetched: final[id], Idle: true, Left: true})
	}
	st.Spread = spread(st.Nodes[:len(view.Members)])
	st.Sent, err = SentTable(ctx, rdb, crawlName)
	return st, err
}

// finalCounts returns each node's URLs completed in its ended runs.
func finalCounts(ctx context.Context, rdb redis.UniversalClient, k qkeys) (map[string]int64, error) {
	raw, err := rdb.HGetAll(ctx, k.final()).Result()
	if err != nil {
		return nil, fmt.Errorf("cannot read the nodes' final counts: %w", err)
	}
	out := make(map[string]int64, len(raw))
	for id, v := range raw {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			out[id] = n
		}
	}
	return out, nil
}
