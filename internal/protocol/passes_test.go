package protocol

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
)

// These tests drive the passes' handlers directly (no goroutines), against a real
// redis-server. Nodes share one server here: their keys are namespaced by address.

func testConfig(nets ...string) *Config {
	c := &Config{Crawl: "u", Batch: 8}
	for _, n := range nets {
		c.Networks = append(c.Networks, Network{Name: n, CenterRedis: "redis://unused"})
	}
	if err := c.Validate(); err != nil {
		panic(err)
	}
	return c
}

func newTestCenter(t *testing.T, rdb redis.UniversalClient, cfg *Config, net string, hosts ...string) *Center {
	t.Helper()
	c, err := NewCenter(CenterOptions{Config: cfg, Network: net, Redis: rdb,
		Dial: func(string) (redis.UniversalClient, error) { return rdb, nil }})
	if err != nil {
		t.Fatal(err)
	}
	c.hosts = hosts
	c.nets = cfg.NetworkNames()
	for _, h := range append([]string{"h1"}, hosts...) { // h1 submits in every test
		rdb.HSet(context.Background(), c.k.registered(), h, "redis://unused")
	}
	return c
}

// outbox pops every frame queued by a node, with its destination.
func outbox(t *testing.T, rdb redis.UniversalClient, crawl, addr string) map[string][]*Frame {
	t.Helper()
	ctx := context.Background()
	k := keysFor(crawl, addr)
	out := map[string][]*Frame{}
	for {
		raw, err := rdb.LPop(ctx, k.outbox()).Result()
		if err == redis.Nil {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		var env envelope
		if err := json.Unmarshal([]byte(raw), &env); err != nil {
			t.Fatal(err)
		}
		f, err := DecodeFrame(env.Frame)
		if err != nil {
			t.Fatal(err)
		}
		out[env.To] = append(out[env.To], f)
	}
}

func set(urls ...string) map[string]uint8 {
	m := map[string]uint8{}
	for _, u := range urls {
		m[u] = 0
	}
	return m
}

func answer(req *Frame, from string, seen ...string) *Frame {
	a := &Frame{URLSet: map[string]uint8{}, IP: from, Number: req.Number, Flag: FlagAnswer}
	for u := range req.URLSet {
		a.URLSet[u] = 0
	}
	for _, u := range seen {
		a.URLSet[u] = 1
	}
	return a
}

func tasks(t *testing.T, rdb redis.UniversalClient, c *Center) map[string]bool {
	t.Helper()
	items, err := rdb.LRange(context.Background(), c.k.taskURL(), 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, it := range items {
		var tk Task
		json.Unmarshal([]byte(it), &tk)
		out[tk.URL] = true
	}
	return out
}

// allClaims reads the claims of every part.
func allClaims(t *testing.T, rdb redis.UniversalClient, c *Center) map[string]string {
	t.Helper()
	out := map[string]string{}
	for i := range Parts {
		m, err := rdb.HGetAll(context.Background(), c.k.claims(i)).Result()
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

func stat(t *testing.T, rdb redis.UniversalClient, c *Center, field string) int64 {
	n, _ := rdb.HGet(context.Background(), c.k.stats(), field).Int64()
	return n
}

// backend is a Redis for a test: a single redis-server or a Redis Cluster of 3
// masters, where a transaction or script whose keys are not in one slot fails.
type backend struct {
	client func() redis.UniversalClient // a new client; the caller closes it
	flush  func()                       // empties every master
	// flushScripts empties every master's script cache.
	flushScripts func()
}

// rdb returns a new client closed when the test ends.
func (b backend) rdb(t *testing.T) redis.UniversalClient {
	c := b.client()
	t.Cleanup(func() { c.Close() })
	return c
}

// onBackends runs body on a redis-server and on a 3-master Redis Cluster.
func onBackends(t *testing.T, body func(t *testing.T, b backend)) {
	t.Run("server", func(t *testing.T) {
		srv := redistest.Start(t)
		body(t, backend{
			client:       func() redis.UniversalClient { return redis.NewClient(&redis.Options{Addr: srv.Addr()}) },
			flush:        func() { srv.Client().FlushAll(context.Background()) },
			flushScripts: func() { srv.Client().ScriptFlush(context.Background()) }})
	})
	t.Run("cluster", func(t *testing.T) {
		if testing.Short() {
			t.Skip("-short: no Redis Cluster")
		}
		cl := redistest.StartCluster(t, 3)
		body(t, backend{
			client: func() redis.UniversalClient { return redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs()}) },
			flush: func() {
				for _, srv := range cl.Servers {
					c := srv.Client()
					c.FlushAll(context.Background())
					c.Close()
				}
			},
			flushScripts: func() {
				for _, srv := range cl.Servers {
					c := srv.Client()
					c.ScriptFlush(context.Background())
					c.Close()
				}
			}})
	})
}

func TestURLHashMatchesLua(t *testing.T) {
	rdb := redistest.Start(t).Client()
	for _, u := range []string{"http://a.test/", "http://b.test/x?y=1#", "中文"} {
		got, err := rdb.Eval(context.Background(), hashLua+"return h(ARGV[1])", nil, u).Text()
		if err != nil || got != URLHash(u) {
			t.Errorf("%q: Lua %q %v, Go %q", u, got, err, URLHash(u))
		}
	}
}

// TestLocalPass: URLs already in finish_URL are dropped; the rest leave URL_pool as one
// flag-1 frame with a fresh number, the host's address and the depths.
func TestLocalPass(t *testing.T) { onBackends(t, testLocalPass) }

func testLocalPass(t *testing.T, b backend) {
	ctx := context.Background()
	rdb := b.rdb(t)
	cfg := testConfig("n1")
	h, err := NewHost(HostOptions{Config: cfg, Network: "n1", ID: "h1", Local: rdb, Center: rdb, LocalURL: "redis://x"})
	if err != nil {
		t.Fatal(err)
	}
	rdb.SAdd(ctx, h.k.finishURL(PartOf("http://a.test/old")), URLHash("http://a.test/old"))
	h.AddSeeds(ctx, []Task{{URL: "http://a.test/old"}, {URL: "http://a.test/new", Depth: 3}, {URL: "http://b.test/", Hops: 1}})
	h.AddSeeds(ctx, []Task{{URL: "http://a.test/new", Depth: 1}}) // smaller depth wins
	kept, dropped, err := h.LocalPass(ctx)
	if err != nil || kept != 2 || dropped != 1 {
		t.Fatalf("kept %d dropped %d %v", kept, dropped, err)
	}
	out := outbox(t, rdb, cfg.Crawl, "n1/h1")
	fs := out["n1"]
	if len(fs) != 1 {
		t.Fatalf("outbox %v", out)
	}
	f := fs[0]
	if f.Flag != FlagSubmit || f.IP != "n1/h1" || f.Number != "n1/h1/1" || len(f.URLSet) != 2 || f.Depth["http://a.test/new"] != 1 || f.Hops["http://b.test/"] != 1 {
		t.Fatalf("frame %+v", f)
	}
	if kept, dropped, _ := h.LocalPass(ctx); kept+dropped != 0 {
		t.Fatal("URL_pool not emptied")
	}
}

// TestHostAnswer: a request is answered with flag 3 and the URLs of finish_URL set to
// 1; the host's own frame is ignored.
func TestHostAnswer(t *testing.T) { onBackends(t, testHostAnswer) }

func testHostAnswer(t *testing.T, b backend) {
	ctx := context.Background()
	rdb := b.rdb(t)
	cfg := testConfig("n1")
	h, _ := NewHost(HostOptions{Config: cfg, Network: "n1", ID: "h2", Local: rdb, Center: rdb, LocalURL: "redis://x"})
	rdb.SAdd(ctx, h.k.finishURL(PartOf("http://a.test/1")), URLHash("http://a.test/1"))
	req := &Frame{URLSet: set("http://a.test/1", "http://a.test/2"), IP: "n1/h1", Number: "n1/h1/5", Flag: FlagRequest}
	if err := h.answer(ctx, req); err != nil {
		t.Fatal(err)
	}
	own := &Frame{URLSet: set("http://a.test/1"), IP: "n1/h2", Number: "n1/h2/5", Flag: FlagRequest}
	h.answer(ctx, own)
	out := outbox(t, rdb, cfg.Crawl, "n1/h2")["n1"]
	if len(out) != 1 {
		t.Fatalf("%d answers", len(out))
	}
	a := out[0]
	if a.Flag != FlagAnswer || a.IP != "n1/h2" || a.Number != "n1/h1/5" || a.URLSet["http://a.test/1"] != 1 || a.URLSet["http://a.test/2"] != 0 {
		t.Fatalf("answer %+v", a)
	}
}

// TestNetworkPass: the center broadcasts to the other hosts, drops what an answer marks,
// counts duplicate, unknown and late answers, and with one network hands the survivors
// to task_URL. A second frame in flight with the same URL loses it to the claim.
func TestNetworkPass(t *testing.T) { onBackends(t, testNetworkPass) }

func testNetworkPass(t *testing.T, b backend) {
	ctx := context.Background()
	rdb := b.rdb(t)
	cfg := testConfig("n1")
	c := newTestCenter(t, rdb, cfg, "n1", "h1", "h2", "h3")
	sub := &Frame{URLSet: set("http://a.test/1", "http://a.test/2", "http://a.test/3"), IP: "n1/h1", Number: "n1/h1/1", Flag: FlagSubmit,
		Depth: map[string]int{"http://a.test/3": 2}}
	if err := c.handle(ctx, sub); err != nil {
		t.Fatal(err)
	}
	out := outbox(t, rdb, cfg.Crawl, "n1")
	if len(out) != 2 || len(out["n1/h2"]) != 1 || len(out["n1/h3"]) != 1 || out["n1/h1"] != nil {
		t.Fatalf("broadcast went to %v", out)
	}
	req := out["n1/h2"][0]
	if req.Flag != FlagRequest || req.IP != "n1/h1" {
		t.Fatalf("request %+v", req)
	}
	// In flight at the same time, from h2: http://a.test/1 is already claimed.
	sub2 := &Frame{URLSet: set("http://a.test/1", "http://a.test/9"), IP: "n1/h2", Number: "n1/h2/1", Flag: FlagSubmit}
	c.handle(ctx, sub2)
	if r := c.local["n1/h2/1"]; r == nil || len(r.URLs) != 1 || r.URLs["http://a.test/9"] != 0 {
		t.Fatalf("second frame %+v", c.local["n1/h2/1"])
	}
	c.handle(ctx, sub) // the same frame again (a re-delivery)
	c.handle(ctx, answer(req, "n1/h2", "http://a.test/2"))
	c.handle(ctx, answer(req, "n1/h2"))                    // duplicate
	c.handle(ctx, answer(req, "n2/h1"))                    // not in this network
	c.handle(ctx, answer(req, "n1/h3"))                    // last answer: round over
	c.handle(ctx, answer(req, "n1/h3", "http://a.test/1")) // late
	got := tasks(t, rdb, c)
	if len(got) != 2 || !got["http://a.test/1"] || !got["http://a.test/3"] {
		t.Fatalf("task_URL %v", got)
	}
	for f, want := range map[string]int64{"answers_ok": 2, "answers_duplicate": 1, "unknown_sender": 1, "answers_late": 1,
		"duplicate_frames": 1, "claimed_dup": 1, "urls_passed": 2} {
		if n := stat(t, rdb, c, f); n != want {
			t.Errorf("%s = %d, want %d", f, n, want)
		}
	}
	claims := allClaims(t, rdb, c)
	if claims[URLHash("http://a.test/1")] != "P:n1/h1/1" || claims[URLHash("http://a.test/2")] != "S:n1/h1/1" {
		t.Errorf("claims %v", claims)
	}
}

// TestHostTimeout: a host that does not answer is left out after AnswerTimeout, one
// that left the membership at once.
func TestHostTimeout(t *testing.T) { onBackends(t, testHostTimeout) }

func testHostTimeout(t *testing.T, b backend) {
	ctx := context.Background()
	rdb := b.rdb(t)
	cfg := testConfig("n1")
	c := newTestCenter(t, rdb, cfg, "n1", "h1", "h2", "h3")
	c.handle(ctx, &Frame{URLSet: set("http://a.test/1"), IP: "n1/h1", Number: "n1/h1/1", Flag: FlagSubmit})
	req := outbox(t, rdb, cfg.Crawl, "n1")["n1/h2"][0]
	c.handle(ctx, answer(req, "n1/h2"))
	c.tick(ctx)
	if c.local["n1/h1/1"] == nil {
		t.Fatal("round ended before its time-out")
	}
	c.local["n1/h1/1"].Deadline = 0
	c.tick(ctx)
	if c.local["n1/h1/1"] != nil || !tasks(t, rdb, c)["http://a.test/1"] || stat(t, rdb, c, "host_timeouts") != 1 {
		t.Fatalf("time-out not applied: %v %d", tasks(t, rdb, c), stat(t, rdb, c, "host_timeouts"))
	}
	// A departed host does not hold a round up to its time-out.
	c.handle(ctx, &Frame{URLSet: set("http://a.test/2"), IP: "n1/h1", Number: "n1/h1/2", Flag: FlagSubmit})
	c.hosts = []string{"h1", "h2"}
	req = outbox(t, rdb, cfg.Crawl, "n1")["n1/h2"][0]
	c.handle(ctx, answer(req, "n1/h2"))
	c.tick(ctx)
	if c.local["n1/h1/2"] != nil {
		t.Fatal("round waits for a host that left")
	}
}

// urlHomedAt finds a URL whose home is net.
func urlHomedAt(cfg *Config, net string, tag string) string {
	for i := 0; ; i++ {
		u := fmt.Sprintf("http://%s%d.test/", tag, i)
		if cfg.Home(u) == net {
			return u
		}
	}
}

// TestCrossNetworkRace: two networks each have a frame in flight with the same URL;
// the URL's home decides first come first served, so exactly one frame keeps it. The
// answers of each network's center, delivered by hand, complete both rounds.
func TestCrossNetworkRace(t *testing.T) { onBackends(t, testCrossNetworkRace) }

func testCrossNetworkRace(t *testing.T, b backend) {
	ctx := context.Background()
	rdb := b.rdb(t)
	cfg := testConfig("n1", "n2")
	c1 := newTestCenter(t, rdb, cfg, "n1")
	c2 := newTestCenter(t, rdb, cfg, "n2")
	x := urlHomedAt(cfg, "n1", "x") // home n1
	y := urlHomedAt(cfg, "n2", "y") // home n2
	only2 := urlHomedAt(cfg, "n1", "z")
	// Both frames are submitted before either network answers the other.
	c1.handle(ctx, &Frame{URLSet: set(x, y), IP: "n1/h1", Number: "n1/h1/1", Flag: FlagSubmit})
	c2.handle(ctx, &Frame{URLSet: set(x, y, only2), IP: "n2/h1", Number: "n2/h1/1", Flag: FlagSubmit})
	req1 := outbox(t, rdb, cfg.Crawl, "n1")["n2"][0] // n1's request to n2
	req2 := outbox(t, rdb, cfg.Crawl, "n2")["n1"][0]
	// n2's request reaches n1 first: x is homed at n1 and claimed by n1's own frame.
	c1.handle(ctx, req2)
	c2.handle(ctx, req1)
	ans1 := outbox(t, rdb, cfg.Crawl, "n1")["n2"][0] // n1's answer to n2
	ans2 := outbox(t, rdb, cfg.Crawl, "n2")["n1"][0]
	if ans1.URLSet[x] != 1 || ans1.URLSet[y] != 0 || ans1.URLSet[only2] != 0 {
		t.Errorf("n1's answer %v", ans1.URLSet)
	}
	if ans2.URLSet[y] != 1 || ans2.URLSet[x] != 0 {
		t.Errorf("n2's answer %v", ans2.URLSet)
	}
	c1.handle(ctx, ans2)
	c2.handle(ctx, ans1)
	t1, t2 := tasks(t, rdb, c1), tasks(t, rdb, c2)
	if !t1[x] || t1[y] || len(t1) != 1 {
		t.Errorf("n1 passed %v", t1)
	}
	if !t2[y] || t2[x] || !t2[only2] || len(t2) != 2 {
		t.Errorf("n2 passed %v", t2)
	}
	// A later frame with x in n2 stops at n2's own claims (x is known seen there).
	c2.handle(ctx, &Frame{URLSet: set(x), IP: "n2/h1", Number: "n2/h1/2", Flag: FlagSubmit})
	if len(outbox(t, rdb, cfg.Crawl, "n2")) != 0 || tasks(t, rdb, c2)[x] || stat(t, rdb, c2, "claimed_dup") != 1 {
		t.Error("x went on a second time")
	}
	// A later frame with x in a third place is refused by the home: n2 asks n1 about a
	// new frame holding x and only2's twin.
	c2.handle(ctx, &Frame{URLSet: set(x + "?again"), IP: "n2/h1", Number: "n2/h1/3", Flag: FlagSubmit})
	outbox(t, rdb, cfg.Crawl, "n2")
	// A repeated request gets the same answer again (counted).
	c1.handle(ctx, req2)
	if again := outbox(t, rdb, cfg.Crawl, "n1")["n2"]; len(again) != 1 || again[0].URLSet[x] != 1 || stat(t, rdb, c1, "duplicate_requests") != 1 {
		t.Errorf("repeated request: %v", again)
	}
}

// TestHomeTimeout: a late non-home network is left out; a late home network is asked
// again and waited for, since only its answer keeps the URL from passing twice.
func TestHomeTimeout(t *testing.T) { onBackends(t, testHomeTimeout) }

func testHomeTimeout(t *testing.T, b backend) {
	ctx := context.Background()
	rdb := b.rdb(t)
	cfg := testConfig("n1", "n2", "n3")
	c1 := newTestCenter(t, rdb, cfg, "n1")
	x := urlHomedAt(cfg, "n2", "x")
	c1.handle(ctx, &Frame{URLSet: set(x), IP: "n1/h1", Number: "n1/h1/1", Flag: FlagSubmit})
	outbox(t, rdb, cfg.Crawl, "n1")
	r := c1.dist["n1/h1/1"]
	if r == nil || !r.Waiting["n2"] || !r.Waiting["n3"] {
		t.Fatalf("round %+v", r)
	}
	r.Deadline = 0
	c1.tick(ctx)
	if r.Waiting["n3"] || !r.Waiting["n2"] || c1.dist["n1/h1/1"] == nil {
		t.Fatalf("after the time-out waiting %v", r.Waiting)
	}
	if resent := outbox(t, rdb, cfg.Crawl, "n1")["n2"]; len(resent) != 1 || stat(t, rdb, c1, "requests_resent") != 1 || stat(t, rdb, c1, "network_timeouts") != 1 {
		t.Fatalf("resent %v", resent)
	}
	c1.handle(ctx, &Frame{URLSet: map[string]uint8{x: 0}, IP: "n2", Number: "n1/h1/1", Flag: FlagAnswer})
	if !tasks(t, rdb, c1)[x] {
		t.Fatal("x not passed after its home answered")
	}
	c1.handle(ctx, &Frame{URLSet: map[string]uint8{x: 0}, IP: "n3", Number: "n1/h1/1", Flag: FlagAnswer})
	if stat(t, rdb, c1, "answers_late") != 1 {
		t.Error("late answer not counted")
	}
}

// crashHook makes a client fail every command from the at-th on, as if the process had
// died there (a MULTI/EXEC pipeline counts as one command: Redis applies it whole or not
// at all).
type crashHook struct{ n, at int }

var errCrash = fmt.Errorf("crashed")

func (h *crashHook) step() error {
	h.n++
	if h.n >= h.at {
		return errCrash
	}
	return nil
}

func (h *crashHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *crashHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if err := h.step(); err != nil {
			return err
		}
		return next(ctx, cmd)
	}
}
func (h *crashHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if err := h.step(); err != nil {
			return err
		}
		return next(ctx, cmds)
	}
}

// TestCenterCrashAtEveryCommand kills a center (in effect) before each Redis command it
// sends while handling a frame's rounds, then starts a new center on the same Redis that
// reads its rounds back and gets the unacknowledged frame again (the transport's
// processing list re-delivers it): every URL must reach task_URL exactly once. This is
// what lost a whole frame once: the frame's number was committed before its round moved
// on, so the re-delivered frame was taken for a duplicate.
func TestCenterCrashAtEveryCommand(t *testing.T) {
	onBackends(t, testCenterCrashAtEveryCommand)
}

func testCenterCrashAtEveryCommand(t *testing.T, b backend) {
	urls := []string{"http://a.test/1", "http://b.test/2", "http://c.test/3", "http://d.test/4"}
	for _, nets := range [][]string{{"n1"}, {"n1", "n2"}} {
		t.Run(fmt.Sprint(len(nets), "networks"), func(t *testing.T) {
			ctx := context.Background()
			cfg := testConfig(nets...)
			sub := &Frame{URLSet: set(urls...), IP: "n1/h1", Number: "n1/h1/1", Flag: FlagSubmit}
			frames := []*Frame{sub}
			if len(nets) == 2 {
				frames = append(frames, &Frame{URLSet: set(urls...), IP: "n2", Number: sub.Number, Flag: FlagAnswer})
			}
			for at := 1; ; at++ {
				b.flush()
				rdb := b.client()
				c := newTestCenter(t, rdb, cfg, "n1", "h1")
				rdb.AddHook(&crashHook{at: at})
				crashed := -1
				for i, f := range frames {
					if err := c.handle(ctx, f); err != nil {
						crashed = i
						break
					}
				}
				rdb.Close()
				if crashed < 0 {
					if at == 1 {
						t.Fatal("the hook never fired")
					}
					break // every crash point tried
				}
				rdb2 := b.client()
				c2 := newTestCenter(t, rdb2, cfg, "n1", "h1")
				if err := c2.loadPools(ctx); err != nil {
					t.Fatal(err)
				}
				for _, f := range frames[crashed:] {
					if err := c2.handle(ctx, f); err != nil {
						t.Fatalf("crash before command %d: after restart: %v", at, err)
					}
				}
				items, _ := rdb2.LRange(ctx, c2.k.taskURL(), 0, -1).Result()
				got := map[string]int{}
				for _, it := range items {
					var tk Task
					json.Unmarshal([]byte(it), &tk)
					got[tk.URL]++
				}
				for _, u := range urls {
					if got[u] != 1 {
						t.Errorf("crash before command %d (frame %d): %s is %d times in task_URL, want once (task_URL %v)", at, crashed, u, got[u], got)
					}
				}
				rdb2.Close()
			}
		})
	}
}

// TestHostLeave: a leaving host hands back its tasks (pool and processing), submits its
// unsubmitted URL_pool, delivers its whole outbox to the center and only then moves from
// registered to left; the center still accepts the frames of a host that left, and a
// host that comes back is registered again.
func TestHostLeave(t *testing.T) { onBackends(t, testHostLeave) }

func testHostLeave(t *testing.T, b backend) {
	ctx := context.Background()
	rdb := b.rdb(t)
	cfg := testConfig("n1")
	h, err := NewHost(HostOptions{Config: cfg, Network: "n1", ID: "h2", Local: rdb, Center: rdb, LocalURL: "redis://x"})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	c := newTestCenter(t, rdb, cfg, "n1") // no live host to ask: a frame passes at once
	rdb.HSet(ctx, c.k.registered(), "h2", "redis://x")
	rdb.RPush(ctx, h.k.taskPool(PartOf("http://a.test/queued")), mustJSON(Task{URL: "http://a.test/queued"}))
	rdb.RPush(ctx, h.k.taskProc(PartOf("http://a.test/in-flight")), mustJSON(Task{URL: "http://a.test/in-flight"}))
	if err := h.AddSeeds(ctx, []Task{{URL: "http://b.test/found", Depth: 2}}); err != nil {
		t.Fatal(err)
	}
	if err := h.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	h.Close()
	if got := tasks(t, rdb, c); len(got) != 2 || !got["http://a.test/queued"] || !got["http://a.test/in-flight"] {
		t.Fatalf("task_URL after the leave: %v", got)
	}
	st, err := ReadHostState(ctx, rdb, cfg.Crawl, h.Addr())
	if err != nil || st.Busy() {
		t.Fatalf("the host still holds work after leaving: %+v %v", st, err)
	}
	if reg, _ := rdb.HExists(ctx, c.k.registered(), "h2").Result(); reg {
		t.Error("h2 is still registered")
	}
	if left, _ := rdb.SIsMember(ctx, c.k.left(), "h2").Result(); !left {
		t.Error("h2 is not listed as left")
	}
	// A hand-out that read the registration before the leave is refused, not lost.
	if err := c.handOut(ctx, "h2", map[string]string{"h2": "redis://x"}, []any{URLHash("http://a.test/late"), mustJSON(Task{URL: "http://a.test/late"})}); err == nil {
		t.Error("a host that left accepted a hand-out")
	}
	if n, _ := rdb.LLen(ctx, h.k.taskPool(PartOf("http://a.test/late"))).Result(); n != 0 {
		t.Errorf("task_pool of a host that left holds %d tasks", n)
	}
	// The URL_pool's frame reached the center's inbox; handled after the host left, it
	// is accepted, and its URL passes.
	raw, err := rdb.LPop(ctx, c.k.inbox()).Result()
	if err != nil {
		t.Fatalf("no frame in the center's inbox: %v", err)
	}
	f, err := DecodeFrame([]byte(raw))
	if err != nil || f.Flag != FlagSubmit || f.IP != "n1/h2" {
		t.Fatalf("frame %+v %v", f, err)
	}
	if err := c.handle(ctx, f); err != nil {
		t.Fatal(err)
	}
	if !tasks(t, rdb, c)["http://b.test/found"] || stat(t, rdb, c, "unknown_sender") != 0 {
		t.Fatalf("the frame of a host that left was not passed: task_URL %v, unknown %d", tasks(t, rdb, c), stat(t, rdb, c, "unknown_sender"))
	}
	// Coming back registers it again.
	h2, _ := NewHost(HostOptions{Config: cfg, Network: "n1", ID: "h2", Local: rdb, Center: rdb, LocalURL: "redis://x"})
	if err := h2.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer h2.Close()
	if left, _ := rdb.SIsMember(ctx, c.k.left(), "h2").Result(); left {
		t.Error("h2 came back but is still listed as left")
	}
	if reg, _ := rdb.HExists(ctx, c.k.registered(), "h2").Result(); !reg {
		t.Error("h2 came back but is not registered")
	}
}

// TestConfigMismatchRefused: a host or a center whose configuration's Fingerprint
// differs from a live center's refuses to start, naming that center; the same
// configuration starts.
func TestConfigMismatchRefused(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Start(t).Client()
	cfg := testConfig("n1", "n2")
	c := newTestCenter(t, rdb, cfg, "n1")
	if err := c.joinCenters(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, m := range c.centerMems {
			if m != nil {
				m.Close()
			}
		}
	}()
	other := testConfig("n1", "n2")
	other.Batch = 9
	h, _ := NewHost(HostOptions{Config: other, Network: "n1", ID: "h9", Local: rdb, Center: rdb, LocalURL: "redis://x"})
	if err := h.Start(ctx); err == nil || !strings.Contains(err.Error(), "differs from the one center n1 runs with") {
		h.Close()
		t.Errorf("a host with another batch started: %v", err)
	}
	c2 := newTestCenter(t, rdb, testConfig("n1", "n2", "n3"), "n2")
	if err := c2.joinCenters(ctx); err == nil || !strings.Contains(err.Error(), "--protocol-config") {
		t.Errorf("a center with another network list started: %v", err)
	}
	same, _ := NewHost(HostOptions{Config: testConfig("n1", "n2"), Network: "n1", ID: "h1", Local: rdb, Center: rdb, LocalURL: "redis://x"})
	if err := same.Start(ctx); err != nil {
		t.Errorf("a host with the same configuration was refused: %v", err)
	}
	same.Close()
}

// TestOldLayoutRefused: a host and a center whose Redis holds the crawl in the key
// layout of an older spider refuse to start and say what to do.
func TestOldLayoutRefused(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Start(t).Client()
	cfg := testConfig("n1")
	rdb.HSet(ctx, "spider:proto:u:n1/h1:stats", "tasks_done", 3)
	rdb.Set(ctx, "spider:proto:u:n1:received", 7, 0)
	h, _ := NewHost(HostOptions{Config: cfg, Network: "n1", ID: "h1", Local: rdb, Center: rdb, LocalURL: "redis://x"})
	if err := h.Start(ctx); err == nil || !strings.Contains(err.Error(), "older spider") {
		h.Close()
		t.Errorf("host: %v, want the older layout refused", err)
	}
	c := newTestCenter(t, rdb, cfg, "n1")
	if err := c.Run(ctx); err == nil || !strings.Contains(err.Error(), "spider drop") {
		t.Errorf("center: %v, want the older layout refused", err)
	}
}
