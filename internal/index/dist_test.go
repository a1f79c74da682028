package index

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
	"github.com/spider-crawler/spider/internal/crawls"
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
		{url: d.URL, fetched: 12345, offset: 99, doc: &d},
		{url: "http://gone.test/", fetched: 1, offset: 7},
	}}
	got, err := decodePacket(encodePacket(p))
	if err != nil {
		t.Fatal(err)
	}
	if got.tag != p.tag || got.attempt != p.attempt || got.seq != 3 || len(got.items) != 2 || got.items[1].doc != nil {
		t.Fatalf("round trip: %+v", got)
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
	f.Add(encodePacket(&packet{kind: 'D', tag: "n/1", attempt: "m#1", items: []packetItem{{url: d.URL, doc: &d}, {url: "u"}}}))
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
// (crawls.SpreadTag). Fails if the lists share one tag again, or if a
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
