package crawls

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spider-crawler/spider/internal/cluster"
	"github.com/spider-crawler/spider/internal/cluster/redistest"
	"github.com/spider-crawler/spider/internal/cluster/slots"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		key, crawl, kind string
	}{
		{"{spider:news}:mw:srq", "news", KindMasterWorker},
		{"{spider:news}:layered:round", "news", KindLayered},
		{"{spider:a.b-c_1}:rank:task:3", "a.b-c_1", KindRank},
		{"{spider:news}:index:seg", "news", KindIndex},
		{"spider:news:{b17}:pending", "news", KindPeer},
		{"spider:news:{news.m}:members", "news", KindPeer},
		{"spider:news:{news.m}:control", "news", KindControl},
		{"spider:news:{news.m}:ctl.acks", "news", KindControl},
		{"spider:news:{news.m}:report", "news", KindReport},
		{"spider:news:{ly-3-17}:out:fetch-r000-p00-g0003", "news", KindLayered},
		{"spider:ly-3-1:{ly-3-1.m}:members", "ly-3-1", KindPeer},
		{"spider:news:{mw-3-17}:pending", "news", KindMasterWorker},
		{"spider:news:{mw-3-17}:robots:http://a.test/robots.txt", "news", KindMasterWorker},
		{"spider:news:{rk-0-4}:graph:r1:7", "news", KindRank},
		{"spider:news:{ix-11-2}:postings:t3", "news", KindIndex},
		{"spider:mw-1-2:{mw-1-2.m}:members", "mw-1-2", KindPeer},
		{"spider:news:{mw-1-x}:pending", "news", KindPeer},
		{"spider:news:{rk-1}:pending", "news", KindPeer},
		{"spider:news:{news.m}:report.at", "news", KindReport},
		{"spider:news:{news.m}:reports", "news", KindPeer},
		{"spider:news:{other.m}:control", "news", KindPeer},
		{"spider:proto:news:NET:pool", "news", KindProtocol},
		{"spider:proto:{b3}:owner", "proto", KindPeer}, // a p2p crawl named "proto"
		{"spider:proto:news:{budget}:used", "news", KindProtocol},
		{"spider:lost", "", ""},
		{"spider:news:plain", "", ""},
		{"{spider:news}:other:x", "", ""},
		{"{spider:a:b}:mw:srq", "", ""},
		{"{spider:a*}:mw:srq", "", ""},
		{"user:1", "", ""},
	} {
		crawl, kind, ok := Parse(c.key)
		if crawl != c.crawl || kind != c.kind || ok != (c.crawl != "") {
			t.Errorf("Parse(%q) = %q, %q, %v; want %q, %q", c.key, crawl, kind, ok, c.crawl, c.kind)
		}
	}
}

// FuzzParse: a key Parse gives to a crawl matches that crawl's pattern
// of that kind and of no other crawl's: dropping one crawl can never
// touch another's keys.
func FuzzParse(f *testing.F) {
	for _, k := range []string{"{spider:a}:mw:x", "spider:a:{b1}:p", "spider:proto:a:N:x", "spider:proto:{x}", "spider:lost",
		"spider:a:{mw-1-2}:x", "spider:a:{ly-3-0}:todo", "spider:a:{rk-0-4}:g", "spider:a:{ix-2-9}:t", "spider:ly-1-2:{ly-1-2.m}:members"} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, key string) {
		crawl, kind, ok := Parse(key)
		if !ok {
			return
		}
		if err := CheckName(crawl); err != nil {
			t.Fatalf("Parse(%q) gave a bad name %q", key, crawl)
		}
		pat := Patterns(crawl)[KeyPatternKind(key, kind)]
		if !strings.HasPrefix(key, strings.TrimSuffix(pat, "*")) {
			t.Fatalf("Parse(%q) = %q %s, but the pattern %q does not match it", key, crawl, kind, pat)
		}
	})
}

func set(t *testing.T, rdb redis.UniversalClient, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if err := rdb.Set(context.Background(), k, "x", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDropKeepsOtherCrawls: Drop removes every key of its crawl, of every
// kind, and no key of a crawl whose name it prefixes, of a p2p crawl named
// "proto", or of anything else.
func TestDropKeepsOtherCrawls(t *testing.T) {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: redistest.Start(t).Addr()})
	defer rdb.Close()
	mine := []string{"{spider:a}:mw:srq", "{spider:a}:mw:stats", "{spider:a}:rank:t", "{spider:a}:index:x", "{spider:a}:layered:r",
		"spider:a:{b1}:pending", "spider:a:{a.m}:members", "spider:proto:a:NET:pool"}
	others := []string{"{spider:ab}:mw:srq", "spider:ab:{b1}:pending", "spider:proto:{b1}:x", "spider:proto:ab:NET:pool",
		"{spider:a.}:mw:srq", "spider:lost", "user:a"}
	set(t, rdb, mine...)
	set(t, rdb, others...)
	r, err := Drop(ctx, rdb, "a")
	if err != nil {
		t.Fatal(err)
	}
	if r.Total != int64(len(mine)) || r.Keys[KindMasterWorker] != 2 || r.Keys[KindPeer] != 2 || r.Keys[KindProtocol] != 1 {
		t.Errorf("removed %+v, want %d keys (master-worker 2, peer-to-peer 2, protocol 1)", r, len(mine))
	}
	for _, k := range mine {
		if n := rdb.Exists(ctx, k).Val(); n != 0 {
			t.Errorf("%s survived the drop", k)
		}
	}
	for _, k := range others {
		if n := rdb.Exists(ctx, k).Val(); n != 1 {
			t.Errorf("%s of another crawl was removed", k)
		}
	}
	list, err := List(ctx, rdb)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range list {
		names = append(names, c.Name+"/"+c.Topology)
	}
	if got := strings.Join(names, " "); got != "a./master-worker ab/master-worker proto/peer-to-peer" {
		t.Errorf("crawls after the drop: %s", got)
	}
	if _, err := Get(ctx, rdb, "a"); !errors.Is(err, ErrNoCrawl) || !strings.Contains(err.Error(), `no crawl named "a" on this Redis; crawls: a., ab, proto`) {
		t.Errorf("Get of the dropped crawl: %v", err)
	}
	if _, err := Drop(ctx, rdb, "a*"); err == nil {
		t.Error("Drop accepted the name a*")
	}
}

// failAfter fails every DEL pipeline after the first n: Redis going away in
// the middle of a drop.
type failAfter struct{ n atomic.Int64 }

func (f *failAfter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (f *failAfter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return next
}
func (f *failAfter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) > 0 && cmds[0].Name() == "del" && f.n.Add(-1) < 0 {
			return errors.New("connection reset by peer")
		}
		return next(ctx, cmds)
	}
}

// TestDropInterrupted: an error in the middle returns the error and the
// count removed so far (never the whole), and running Drop again removes
// the rest.
func TestDropInterrupted(t *testing.T) {
	ctx := context.Background()
	addr := redistest.Start(t).Addr()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	const n = 5000
	pipe := rdb.Pipeline()
	for i := range n {
		pipe.Set(ctx, fmt.Sprintf("spider:c:{b%d}:pending", i), "x", 0)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	broken := redis.NewClient(&redis.Options{Addr: addr})
	defer broken.Close()
	f := &failAfter{}
	f.n.Store(1)
	broken.AddHook(f)
	r, err := Drop(ctx, broken, "c")
	if err == nil || r.Total == 0 || r.Total >= n {
		t.Fatalf("interrupted drop: removed %d of %d, err %v; want an error after some keys", r.Total, n, err)
	}
	left := rdb.DBSize(ctx).Val()
	if left+r.Total != n {
		t.Errorf("the drop reported %d removed, but %d of %d keys are left", r.Total, left, n)
	}
	r2, err := Drop(ctx, rdb, "c")
	if err != nil || r2.Total != left || rdb.DBSize(ctx).Val() != 0 {
		t.Errorf("second drop: removed %d (want %d), err %v, %d keys left", r2.Total, left, err, rdb.DBSize(ctx).Val())
	}
}

// TestCluster: on a 3-master Redis Cluster, List counts the keys of every
// master and Drop removes keys spread over every slot.
func TestCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	ctx := context.Background()
	c := redistest.StartCluster(t, 3)
	rdb := c.Client()
	const n = 600
	for i := range n {
		set(t, rdb, fmt.Sprintf("spider:c:{b%d}:pending", i))
	}
	set(t, rdb, "{spider:c}:mw:srq", "spider:d:{b1}:pending", "spider:d:{b2}:pending")
	list, err := List(ctx, rdb)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].Name != "c" || list[0].Total != n+1 || list[1].Total != 2 {
		t.Fatalf("crawls on the cluster: %+v", list)
	}
	r, err := Drop(ctx, rdb, "c")
	if err != nil || r.Total != n+1 {
		t.Fatalf("drop on the cluster: removed %d, err %v; want %d", r.Total, err, n+1)
	}
	var left atomic.Int64 // ForEachMaster calls at once
	if err := rdb.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		left.Add(m.DBSize(ctx).Val())
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if left := left.Load(); left != 2 {
		t.Errorf("%d keys left on the cluster, want crawl d's 2", left)
	}
}

// TestExpire: every key of the crawl gets the time to live, a sooner one
// is kept, other crawls' keys get none.
func TestExpire(t *testing.T) {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: redistest.Start(t).Addr()})
	defer rdb.Close()
	set(t, rdb, "{spider:a}:mw:srq", "spider:a:{b1}:p", "spider:b:{b1}:p")
	rdb.Set(ctx, "spider:a:{b2}:p", "x", time.Minute)
	r, err := Expire(ctx, rdb, "a", time.Hour)
	if err != nil || r.Total != 2 {
		t.Fatalf("expire: %+v, %v; want 2 keys given the TTL", r, err)
	}
	for k, want := range map[string][2]time.Duration{"{spider:a}:mw:srq": {59 * time.Minute, time.Hour}, "spider:a:{b1}:p": {59 * time.Minute, time.Hour},
		"spider:a:{b2}:p": {0, time.Minute}, "spider:b:{b1}:p": {-1, -1}} {
		ttl := rdb.PTTL(ctx, k).Val()
		if want[0] == -1 {
			if ttl != -1 {
				t.Errorf("%s of another crawl got TTL %s", k, ttl)
			}
		} else if ttl <= want[0] || ttl > want[1] {
			t.Errorf("%s: TTL %s, want in (%s, %s]", k, ttl, want[0], want[1])
		}
	}
}

// TestExists: a crawl exists by any key of any kind, and not by the keys of
// a crawl whose name extends its own.
func TestExists(t *testing.T) {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: redistest.Start(t).Addr()})
	defer rdb.Close()
	set(t, rdb, "{spider:ab}:mw:stats", "spider:ab:{ab.m}:epoch", "spider:proto:ab:NET:x")
	for _, key := range []string{"", "{spider:a}:layered:r", "{spider:a}:rank:t", "{spider:a}:index:x", "spider:a:{b9}:pending",
		"spider:proto:a:NET:pool", "{spider:a}:mw:srq", "spider:a:{a.m}:info"} {
		if key != "" {
			set(t, rdb, key)
		}
		ok, err := Exists(ctx, rdb, "a")
		if err != nil || ok != (key != "") {
			t.Errorf("Exists(a) with key %q: %v, %v", key, ok, err)
		}
		if err := Check(ctx, rdb, "a"); (err == nil) != (key != "") {
			t.Errorf("Check(a) with key %q: %v", key, err)
		}
		rdb.Del(ctx, key)
	}
	if _, err := Exists(ctx, rdb, "a?"); err == nil {
		t.Error("Exists accepted the name a?")
	}
}

// TestLayeredState: a layered crawl is running while its coordinator's or
// a worker's report is live, done once finished (the meta hash's field, or
// an older spider's key), stopped otherwise; its URLs are its report's.
func TestLayeredState(t *testing.T) {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: redistest.Start(t).Addr()})
	defer rdb.Close()
	p := "{spider:l}:layered:"
	k, err := cluster.NewKeys("l")
	if err != nil {
		t.Fatal(err)
	}
	rdb.HSet(ctx, p+"meta", "layout", "2 shards=12")
	w1 := cluster.NodeReport{Node: "w1", Role: cluster.RoleWorker, State: cluster.ReportRunning}
	coord := cluster.NodeReport{Node: "coordinator", Role: cluster.RoleLayered, State: cluster.ReportRunning, Counts: cluster.Counts{Pages: 8}}
	for _, r := range []cluster.NodeReport{w1, {Node: "w2", Role: cluster.RoleWorker, State: cluster.ReportDone, Final: true}, coord} {
		if err := cluster.Publish(ctx, rdb, k, r); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		step  func()
		state string
		nodes int
	}{
		{func() {}, StateRunning, 2},
		{func() { cluster.PublishFinal(ctx, rdb, k, coord); cluster.PublishFinal(ctx, rdb, k, w1) }, StateStopped, 0},
		{func() { rdb.HSet(ctx, p+"meta", "finished", "1") }, StateDone, 0},
		{func() { rdb.HDel(ctx, p+"meta", "finished"); rdb.Set(ctx, p+"finished", "1", 0) }, StateDone, 0},
	} {
		c.step()
		cr, err := Get(ctx, rdb, "l")
		if err != nil || cr.Topology != KindLayered || cr.State != c.state || cr.Nodes != c.nodes || cr.URLsDone != 8 {
			t.Errorf("layered crawl: %+v, %v; want %s with %d nodes, 8 URLs", cr, err, c.state, c.nodes)
		}
	}
}

// TestProtocolMembership: the membership lists of a §0 crawl are listed and
// dropped with it, never as crawls of their own, and never with another §0
// crawl whose name starts the same.
func TestProtocolMembership(t *testing.T) {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: redistest.Start(t).Addr()})
	defer rdb.Close()
	set(t, rdb, "spider:proto:a:NET:pool", "spider:proto.a.centers:{proto.a.centers.m}:members", "spider:proto.a.n1.hosts:{proto.a.n1.hosts.m}:members",
		"spider:proto:a.n1:NET:pool", "spider:proto.a.n1.n2.hosts:{proto.a.n1.n2.hosts.m}:members", "spider:proto.a.n1.centers:{proto.a.n1.centers.m}:info")
	list, err := List(ctx, rdb)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range list {
		got = append(got, fmt.Sprintf("%s/%s/%d", c.Name, c.Topology, c.Total))
	}
	if strings.Join(got, " ") != "a/protocol/3 a.n1/protocol/3" {
		t.Errorf("crawls: %v, want a and a.n1, 3 protocol keys each", got)
	}
	r, err := Drop(ctx, rdb, "a")
	if err != nil || r.Total != 3 || r.Keys[KindProtocol] != 3 {
		t.Errorf("drop a: %+v, %v; want 3 protocol keys", r, err)
	}
	if n := rdb.DBSize(ctx).Val(); n != 3 {
		t.Errorf("%d keys left, want a.n1's 3", n)
	}
}

// TestControlKeysKeepTopology: the run-control and report keys every
// topology writes (spider:C:{C.m}:control, ctl.*, report, report.*) are
// counted as control and report keys, never make
// a master–worker or §0 crawl look peer-to-peer, and are dropped with
// their crawl under their own kind.
func TestControlKeysKeepTopology(t *testing.T) {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: redistest.Start(t).Addr()})
	defer rdb.Close()
	set(t, rdb, "{spider:mwc}:mw:srq", "spider:mwc:{mwc.m}:control", "spider:mwc:{mwc.m}:ctl.acks",
		"spider:mwc:{mwc.m}:report", "spider:mwc:{mwc.m}:report.at",
		"spider:proto:pc:NET:pool", "spider:pc:{pc.m}:control", "spider:pc:{pc.m}:report")
	list, err := List(ctx, rdb)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Crawl{}
	for _, c := range list {
		got[c.Name] = c
	}
	if c := got["mwc"]; c.Topology != KindMasterWorker || c.Keys[KindControl] != 2 || c.Keys[KindReport] != 2 || c.Keys[KindPeer] != 0 {
		t.Errorf("master-worker crawl with control keys: topology %q, keys %v", c.Topology, c.Keys)
	}
	if c := got["pc"]; c.Topology != KindProtocol || c.Keys[KindControl] != 1 || c.Keys[KindReport] != 1 {
		t.Errorf("§0 crawl with a control key: topology %q, keys %v", c.Topology, c.Keys)
	}
	r, err := Drop(ctx, rdb, "mwc")
	if err != nil {
		t.Fatal(err)
	}
	if r.Keys[KindControl] != 2 || r.Keys[KindReport] != 2 || r.Keys[KindMasterWorker] != 1 || r.Keys[KindPeer] != 0 || r.Total != 5 {
		t.Errorf("drop of the master-worker crawl removed %v (total %d), want 2 control, 2 report, 1 master-worker", r.Keys, r.Total)
	}
}

// TestSpreadTag: part i of n (slots.SpreadTag) lies in the i-th of n slot ranges (so the
// parts spread evenly over a cluster's masters), KeySlot agrees with
// Redis's CLUSTER KEYSLOT, and the tags parse as their kind's.
func TestSpreadTag(t *testing.T) {
	rdb := redistest.StartCluster(t, 3).Client()
	ctx := context.Background()
	for prefix, kind := range map[string]string{"mw-": KindMasterWorker, "ly-": KindLayered, "rk-": KindRank, "ix-": KindIndex} {
		for _, n := range []int{1, 3, 12} {
			for i := range n {
				tag := slots.SpreadTag(prefix, i, n)
				key := "spider:c:{" + tag + "}:x"
				s := slots.KeySlot(key)
				if s < i*slots.Slots/n || s >= (i+1)*slots.Slots/n {
					t.Errorf("SpreadTag(%q, %d, %d) = %q in slot %d, outside its range", prefix, i, n, tag, s)
				}
				if want := rdb.ClusterKeySlot(ctx, key).Val(); int64(s) != want {
					t.Errorf("KeySlot(%q) = %d, Redis says %d", key, s, want)
				}
				if _, k, ok := Parse(key); !ok || k != kind {
					t.Errorf("Parse(%q) = %q, %v; want %q", key, k, ok, kind)
				}
			}
		}
	}
}
