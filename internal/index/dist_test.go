package index

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/crawls"
	"github.com/spider-crawler/spider/internal/store"
	"github.com/spider-crawler/spider/internal/websim"
)

// segmentBytes returns the bytes of the index's only segment.
func segmentBytes(t *testing.T, dir string) []byte {
	t.Helper()
	m, _, err := readManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Segments) != 1 {
		t.Fatalf("%s has %d segments, want 1", dir, len(m.Segments))
	}
	b, err := os.ReadFile(filepath.Join(dir, m.Segments[0].Name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDistributedEqualsEmbedded builds the index of one crawl twice: embedded
// in one batch, and over a real redis-server with three mappers, one of
// which dies in the middle of a task (no clean-up, like kill -9: its
// heartbeat stops and its lease is left behind). The dead mapper's task must
// be redone and the segment must be byte-identical to the embedded one.
func TestDistributedEqualsEmbedded(t *testing.T) {
	if testing.Short() {
		t.Skip("crawls a synthetic web and runs redis-server (about 20 s; longer under -race)")
	}
	data, _, _ := crawlWeb(t, websim.Config{Seed: 4, Hosts: 6, PagesPerHost: 30}, 4)
	if _, err := Build(context.Background(), data, BuildOptions{Rebuild: true}); err != nil {
		t.Fatal(err)
	}
	want := segmentBytes(t, filepath.Join(data, DirName))

	srv := redistest.Start(t)
	rdb := srv.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out := t.TempDir()
	opt := MapperOptions{Crawl: "t", Node: "n1", TaskRecords: 40, PacketDocs: 5, Heartbeat: 50 * time.Millisecond}

	// The doomed mapper: its context is cancelled right after its second
	// packet, inside its first task.
	doomedCtx, kill := context.WithCancel(ctx)
	doomed := opt
	doomed.afterPacket = func(n int) {
		if n == 2 {
			kill()
		}
	}
	if _, err := RunMapper(doomedCtx, rdb, data, doomed); !errors.Is(err, context.Canceled) {
		t.Fatalf("doomed mapper: %v", err)
	}
	if n := queuedPackets(ctx, rdb, "t"); n != 2 {
		t.Fatalf("doomed mapper left %d packets, want 2", n)
	}

	var wg sync.WaitGroup
	var progress []WriterProgress
	var st DistStats
	var werr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		st, werr = RunDistWriter(ctx, rdb, filepath.Join(out, DirName), DistWriterOptions{Crawl: "t", LeaseTTL: 500 * time.Millisecond,
			Progress: func(p WriterProgress) { progress = append(progress, p) }})
	}()
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := RunMapper(ctx, rdb, data, opt); err != nil {
				t.Errorf("mapper: %v", err)
			}
		}()
	}
	wg.Wait()
	if werr != nil {
		t.Fatal(werr)
	}
	// The dead mapper's task must be redone; a live mapper starved past its
	// 500 ms lease on a loaded machine may lose one too (the index must still
	// come out identical, checked below).
	if st.Requeued < 1 {
		t.Errorf("%d tasks re-queued, want at least 1 (the dead mapper's)", st.Requeued)
	}
	if len(progress) == 0 {
		t.Error("no progress reported")
	}
	got := segmentBytes(t, filepath.Join(out, DirName))
	if !bytes.Equal(got, want) {
		t.Errorf("distributed segment (%d bytes) differs from the embedded one (%d bytes)", len(got), len(want))
	}
	if keys, _ := rdb.Keys(ctx, "*").Result(); len(keys) != 0 {
		t.Errorf("keys left after the build: %v", keys)
	}
	ix := openIndex(t, filepath.Join(out, DirName))
	if res, err := ix.Search(ctx, Request{Query: "football OR 足球"}); err != nil || res.Total == 0 {
		t.Errorf("search of the distributed index: %+v %v", res, err)
	}
}

// queuedPackets is the number of packets in the build's result lists.
func queuedPackets(ctx context.Context, rdb redis.UniversalClient, crawl string) int64 {
	var n int64
	for i := range resultLists {
		n += rdb.LLen(ctx, newDistKeys(crawl).results(i)).Val()
	}
	return n
}

func TestPacketRoundTrip(t *testing.T) {
	a := analyzer(t)
	d := NewDoc(a, "http://x.test/", "Title", "some words 足球比赛 words")
	p := &packet{kind: 'D', tag: "n/1", attempt: "m#1", seq: 3, items: []packetItem{
		{url: d.URL, fetched: 12345, offset: 99, doc: &d,
			dup: &clusterPage{url: d.URL, final: "http://x.test/f", canonical: "http://x.test/c", depth: 3, fp: 1 << 63, sim: 0xfeed}},
		{url: "http://gone.test/", fetched: 1, offset: 7},
	}}
	got, err := decodePacket(encodePacket(p))
	if err != nil {
		t.Fatal(err)
	}
	if got.tag != p.tag || got.attempt != p.attempt || got.seq != 3 || len(got.items) != 2 || got.items[1].doc != nil {
		t.Fatalf("round trip: %+v", got)
	}
	if c := got.items[0].dup; c == nil || *c != *p.items[0].dup || got.items[1].dup != nil {
		t.Fatalf("cluster info: %+v, want %+v", c, p.items[0].dup)
	}
	g := got.items[0].doc
	if g.Title != d.Title || g.Len != d.Len || len(g.Terms) != len(d.Terms) || !bytes.Equal(g.Text, d.Text) {
		t.Fatalf("doc differs: %+v vs %+v", g, d)
	}
	e, err := decodePacket(encodePacket(&packet{kind: 'E', tag: "n/1", attempt: "m#1", seq: 4, count: 4}))
	if err != nil || e.count != 4 {
		t.Fatalf("end packet: %+v %v", e, err)
	}
	for _, bad := range [][]byte{nil, []byte("SPK"), []byte("XXX\x01D"), append(encodePacket(p), 0)} {
		if _, err := decodePacket(bad); !errors.Is(err, ErrPacket) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func FuzzDecodePacket(f *testing.F) {
	a, err := analyzerForFuzz()
	if err != nil {
		f.Fatal(err)
	}
	d := NewDoc(a, "http://x.test/", "T", "alpha beta alpha")
	f.Add(encodePacket(&packet{kind: 'D', tag: "n/1", attempt: "m#1", items: []packetItem{{url: d.URL, doc: &d,
		dup: &clusterPage{url: d.URL, canonical: "http://x.test/c", depth: 2, fp: 7, sim: 9}}, {url: "u"}}}))
	f.Add(encodePacket(&packet{kind: 'E', tag: "n/1", attempt: "m#1", count: 2}))
	fd := NewDocFields(a, Fields{URL: "http://x.test/f", Title: "Title", Headings: []string{"Head"}, Text: "gamma", Anchors: []string{"delta"}}, DefaultFieldWeights)
	f.Add(encodePacket(&packet{kind: 'D', tag: "n/2", attempt: "m#2", items: []packetItem{{url: fd.URL, doc: &fd,
		final: "http://x.test/g", anchors: []anchor{{"http://x.test/", "home"}, {"http://y.test/", "elsewhere"}}}}}))
	f.Add([]byte("SPK\x01D"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := decodePacket(b)
		if err != nil {
			return
		}
		// A decoded packet re-encodes to a packet that decodes the same.
		q, err := decodePacket(encodePacket(p))
		if err != nil || len(q.items) != len(p.items) || q.tag != p.tag {
			t.Fatalf("re-encoding failed: %v", err)
		}
		for i := range p.items {
			if (q.items[i].dup == nil) != (p.items[i].dup == nil) || q.items[i].dup != nil && *q.items[i].dup != *p.items[i].dup {
				t.Fatalf("item %d: cluster info changed in re-encoding", i)
			}
			if len(q.items[i].anchors) != len(p.items[i].anchors) || q.items[i].final != p.items[i].final {
				t.Fatalf("item %d: anchors or final URL changed in re-encoding", i)
			}
		}
	})
}

// TestDistOnCluster: the distributed build on a Redis Cluster of 3
// masters gives the embedded build's segment byte for byte, and while the
// mappers' results wait for the writer (the build's memory) no master
// holds more than 45% of it: the result lists spread over the masters
// (slots.SpreadTag). Fails if the lists share one tag again, or if a
// script or transaction crosses slots (go-redis refuses it on a cluster).
func TestDistOnCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("crawls a synthetic web and runs a Redis Cluster")
	}
	data, _, _ := crawlWeb(t, websim.Config{Seed: 4, Hosts: 6, PagesPerHost: 30}, 4)
	if _, err := Build(context.Background(), data, BuildOptions{Rebuild: true}); err != nil {
		t.Fatal(err)
	}
	want := segmentBytes(t, filepath.Join(data, DirName))
	rdb := redistest.StartCluster(t, 3).Client()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	opt := MapperOptions{Crawl: "c", Node: "n1", TaskRecords: 3, PacketDocs: 2, Heartbeat: 50 * time.Millisecond, MaxQueued: 1 << 20}
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := RunMapper(ctx, rdb, data, opt); err != nil {
				t.Errorf("mapper: %v", err)
			}
		}()
	}
	// Every task analysed and queued (the writer is not started yet).
	k := newDistKeys("c")
	for {
		planned, _ := rdb.HGet(ctx, k.plan(), "n1").Int()
		if planned > 0 && rdb.HLen(ctx, k.tasks()).Val() == int64(planned) && rdb.LLen(ctx, k.trq("n1")).Val() == 0 &&
			rdb.ZCard(ctx, k.mappers()).Val() == 2 && procEmpty(ctx, rdb, k) {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the mappers did not queue every task in time")
		}
		time.Sleep(20 * time.Millisecond)
	}
	shards, err := crawls.PerMaster(ctx, rdb, "c")
	if err != nil {
		t.Fatal(err)
	}
	keys, mem := crawls.Spread(shards)
	for _, s := range shards {
		t.Logf("%s: %d keys %v, %d bytes", s.Addr, s.Total, s.Keys, s.MemoryBytes)
	}
	if len(shards) != 3 || mem > 0.45 {
		t.Errorf("largest of %d shards holds %.0f%% of the build's memory (%.0f%% of its keys), want at most 45%% on 3", len(shards), 100*mem, 100*keys)
	}
	out := filepath.Join(t.TempDir(), DirName)
	if _, err := RunDistWriter(ctx, rdb, out, DistWriterOptions{Crawl: "c", LeaseTTL: 5 * time.Second}); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if got := segmentBytes(t, out); !bytes.Equal(got, want) {
		t.Errorf("distributed segment on a cluster (%d bytes) differs from the embedded one (%d bytes)", len(got), len(want))
	}
	if left, err := crawls.PerMaster(ctx, rdb, "c"); err != nil {
		t.Fatal(err)
	} else {
		for _, s := range left {
			if s.Total != 0 {
				t.Errorf("%s: %d keys left after the build: %v", s.Addr, s.Total, s.Keys)
			}
		}
	}
}

// procEmpty reports whether no mapper holds a task.
func procEmpty(ctx context.Context, rdb redis.UniversalClient, k distKeys) bool {
	for _, m := range rdb.HKeys(ctx, k.mapNode()).Val() {
		if rdb.LLen(ctx, k.proc(m)).Val() > 0 {
			return false
		}
	}
	return true
}

// TestDistributedClusters: two nodes crawled the same web with duplicate
// pages (websim --near-dups), so a page's last record is on one node and
// its copy's often on the other. The distributed writer must write
// ClustersFile as the embedded build does over the pages the build keeps
// (the later record of each URL): exact, near and canonical members,
// clusters that span the nodes, and a search of the distributed index
// that shows one hit per cluster. Before, the writer wrote no clusters at
// all (every copy shown).
func TestDistributedClusters(t *testing.T) {
	if testing.Short() {
		t.Skip("crawls a synthetic web twice and runs redis-server (about 20 s)")
	}
	srv, err := websim.Start(context.Background(), websim.Config{Seed: 27, Hosts: 4, PagesPerHost: 25, NearDups: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	rules := websim.TruthRules{Seeds: srv.SeedURLs(2), MaxDepth: 4, Scope: websim.ScopeAny}
	nodes := map[string]string{"a": crawlInto(t, srv, rules), "b": crawlInto(t, srv, rules)}
	// b crawled last, so every URL's later fetch would be b's: make half
	// of b's records (by URL hash) older than a's, so the build keeps
	// about half the pages from each node.
	backdate(t, nodes["b"], func(u string) bool { return urlHash(u)%2 == 0 })

	// What the embedded build computes over the pages the distributed one
	// keeps: each URL's last record on its node, the later fetch across
	// nodes (winner.newer).
	type kept struct {
		node string
		rec  Record
	}
	last := map[string]kept{}
	for _, node := range []string{"a", "b"} {
		if _, err := ScanRecords(nodes[node], 0, -1, func(r Record, _ int64) bool {
			if old, ok := last[r.URL]; !ok || old.node == node || r.FetchedAt.After(old.rec.FetchedAt) ||
				r.FetchedAt.Equal(old.rec.FetchedAt) && node > old.node {
				last[r.URL] = kept{node, r}
			}
			return true
		}); err != nil {
			t.Fatal(err)
		}
	}
	var cps []clusterPage
	for _, k := range last {
		if c := clusterPageOf(k.rec); c != nil {
			cps = append(cps, *c)
		}
	}
	wantMs, err := clustersOf(cps, DefaultNearDupDistance)
	if err != nil {
		t.Fatal(err)
	}
	kinds, across := map[string]int{}, 0
	for _, m := range wantMs {
		kinds[m.Kind]++
		if last[m.URL].node != last[m.Root].node {
			across++
		}
	}
	if kinds[ClusterExact] == 0 || kinds[ClusterNear] == 0 || kinds[ClusterCanonical] == 0 || across == 0 {
		t.Fatalf("the crawls give no test: members by kind %v, %d across the nodes", kinds, across)
	}
	wantDir := t.TempDir()
	if err := writeClusterFile(wantDir, DefaultNearDupDistance, wantMs); err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(filepath.Join(wantDir, ClustersFile))

	rs := redistest.Start(t)
	rdb := rs.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out := filepath.Join(t.TempDir(), DirName)
	var wg sync.WaitGroup
	var st DistStats
	var werr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		st, werr = RunDistWriter(ctx, rdb, out, DistWriterOptions{Crawl: "c", Nodes: 2})
	}()
	for node, dir := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := RunMapper(ctx, rdb, dir, MapperOptions{Crawl: "c", Node: node, TaskRecords: 30, PacketDocs: 7}); err != nil {
				t.Errorf("mapper %s: %v", node, err)
			}
		}()
	}
	wg.Wait()
	if werr != nil {
		t.Fatal(werr)
	}
	got, err := os.ReadFile(filepath.Join(out, ClustersFile))
	if err != nil {
		t.Fatalf("the distributed build wrote no clusters: %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("distributed clusters (%d bytes) differ from the embedded computation (%d bytes):\n%s\nwant:\n%s", len(got), len(want), got, want)
	}
	if st.Folded != len(wantMs) {
		t.Errorf("DistStats.Folded %d, want %d", st.Folded, len(wantMs))
	}
	t.Logf("%d members (%v), %d of them on another node than their cluster's page", len(wantMs), kinds, across)

	// Search shows one hit per cluster: a near-duplicate's cluster page
	// and the member never both, and the kept hit counts its copies.
	ix := openIndex(t, out)
	var m ClusterMember
	for _, c := range wantMs {
		if c.Kind == ClusterNear && last[c.URL].node != last[c.Root].node {
			m = c
			break
		}
	}
	if m.URL == "" {
		m = wantMs[0]
	}
	res, err := ix.Search(ctx, Request{Query: last[m.Root].rec.Title, Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	var sawRoot, sawMember bool
	for _, h := range res.Hits {
		if h.URL == m.Root {
			sawRoot = true
			if h.Similar < 1 {
				t.Errorf("%s shown with %d similar pages, want at least 1 (%s)", h.URL, h.Similar, m.URL)
			}
		}
		sawMember = sawMember || h.URL == m.URL
	}
	if !sawRoot || sawMember {
		t.Errorf("search %q: cluster page %s shown %v, its copy %s shown %v; want only the cluster page", last[m.Root].rec.Title, m.Root, sawRoot, m.URL, sawMember)
	}
}

// backdate rewrites dataDir's records of the URLs old picks as fetched in
// 2000.
func backdate(t *testing.T, dataDir string, old func(url string) bool) {
	t.Helper()
	path := filepath.Join(dataDir, store.RecordsFileName)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []byte
	for _, line := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatal(err)
		}
		if u, _ := m["url"].(string); old(u) {
			m["fetched_at"] = "2000-01-01T00:00:00Z"
		}
		l, _ := json.Marshal(m)
		out = append(append(out, l...), '\n')
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// crawlInto crawls srv's web by rules into a new data directory.
func crawlInto(t *testing.T, srv *websim.Server, rules websim.TruthRules) string {
	t.Helper()
	c := crawl.NewConfig()
	c.Data = t.TempDir()
	c.Seeds = rules.Seeds
	c.MaxDepth = rules.MaxDepth
	c.Scope = rules.Scope
	c.Resolve = srv.Resolve()
	c.AllowPrivate = true
	c.Delay = 0
	c.Concurrency = 16
	eng, err := crawl.New(c, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := eng.Run(ctx); err != nil {
		t.Fatal(err)
	}
	return c.Data
}
