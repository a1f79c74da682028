package mixed_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spider-crawler/spider/internal/cluster"
	"github.com/spider-crawler/spider/internal/cluster/redistest"
	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/mixed"
	"github.com/spider-crawler/spider/internal/protocol"
	"github.com/spider-crawler/spider/internal/store"
	"github.com/spider-crawler/spider/internal/websim"
)

// system is a mixed-topology deployment on loopback: one redis-server per center and per
// host, as SPEC §0 has it, a websim web, and the goroutines running centers and hosts.
type system struct {
	t     *testing.T
	srv   *websim.Server
	truth *websim.Truth
	cfg   *protocol.Config
	crawl crawl.Config
	redis map[string]*redistest.Server // node address → its Redis (a single server)
	// clusters: node address → its Redis Cluster (newClusterSystem); a node is in
	// redis or in clusters
	clusters map[string]*redistest.Cluster
	dirs     map[string]string // host address → data directory
	log      *slog.Logger

	mu      sync.Mutex
	running map[string]context.CancelFunc
	errs    map[string]chan error
	results map[string][]mixed.Result
	leave   map[string]bool // host address → run with Options.Leave
}

func newSystem(t *testing.T, nets, hostsPer int, web websim.Config) *system {
	t.Helper()
	return newClusterSystem(t, nets, hostsPer, web, nil)
}

// newClusterSystem is newSystem with some nodes' Redis a 3-master Redis Cluster:
// onCluster maps a node address ("n1", "n1/h2") to a cluster name, and nodes given the
// same name share that cluster. The others get a redis-server each.
func newClusterSystem(t *testing.T, nets, hostsPer int, web websim.Config, onCluster map[string]string) *system {
	t.Helper()
	srv, err := websim.Start(context.Background(), web)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	rules := websim.TruthRules{Seeds: srv.SeedURLs(2), MaxDepth: -1, Scope: websim.ScopeAny}
	truth, err := srv.Truth(rules)
	if err != nil {
		t.Fatal(err)
	}
	s := &system{t: t, srv: srv, truth: truth, redis: map[string]*redistest.Server{}, dirs: map[string]string{},
		log:     slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		running: map[string]context.CancelFunc{}, errs: map[string]chan error{}, results: map[string][]mixed.Result{},
		leave: map[string]bool{}, clusters: map[string]*redistest.Cluster{}}
	byName := map[string]*redistest.Cluster{}
	backend := func(addr string) string {
		if name, ok := onCluster[addr]; ok {
			if byName[name] == nil {
				byName[name] = redistest.StartCluster(t, 3)
			}
			s.clusters[addr] = byName[name]
			return s.url(addr)
		}
		s.redis[addr] = redistest.Start(t, redistest.AppendOnlyEverySec())
		return s.redis[addr].URL()
	}
	cfg := &protocol.Config{Crawl: "t", Batch: 16, Flush: protocol.Duration(40 * time.Millisecond),
		AnswerTimeout: protocol.Duration(400 * time.Millisecond), RemoteTimeout: protocol.Duration(800 * time.Millisecond),
		Heartbeat: protocol.Duration(150 * time.Millisecond), MemberTTL: protocol.Duration(900 * time.Millisecond),
		Stable: protocol.Duration(300 * time.Millisecond)}
	for i := range nets {
		name := fmt.Sprintf("n%d", i+1)
		nw := protocol.Network{Name: name, CenterRedis: backend(name)}
		for j := range hostsPer {
			id := fmt.Sprintf("h%d", j+1)
			addr := protocol.HostAddr(name, id)
			u := backend(addr)
			s.dirs[addr] = t.TempDir()
			nw.Hosts = append(nw.Hosts, protocol.HostEntry{ID: id, Redis: u})
		}
		cfg.Networks = append(cfg.Networks, nw)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	s.cfg = cfg
	c := crawl.NewConfig()
	c.Seeds = rules.Seeds
	c.MaxDepth = -1
	c.Scope = websim.ScopeAny
	c.Resolve = srv.Resolve()
	c.AllowPrivate = true
	c.Delay = crawl.Duration(2 * time.Millisecond)
	c.Concurrency = 4
	c.RetryDelay = crawl.Duration(50 * time.Millisecond)
	s.crawl = c
	t.Cleanup(s.stopAll)
	return s
}

// client returns a new client of a node's Redis (a cluster client for a cluster),
// closed when the test ends.
func (s *system) client(addr string) redis.UniversalClient {
	if cl := s.clusters[addr]; cl != nil {
		return cl.Client()
	}
	c := s.redis[addr].Client()
	s.t.Cleanup(func() { c.Close() })
	return c
}

// url is the Redis URL of a node as the configuration names it: a cluster's lists
// every master (protocol.ClusterURL).
func (s *system) url(addr string) string {
	if cl := s.clusters[addr]; cl != nil {
		as := cl.Addrs()
		u := "redis://" + as[0] + "?cluster=true"
		for _, a := range as[1:] {
			u += "&addr=" + a
		}
		return u
	}
	return s.redis[addr].URL()
}

// startCenter runs the center of net.
func (s *system) startCenter(net string, delay time.Duration) {
	c, err := protocol.NewCenter(protocol.CenterOptions{Config: s.cfg, Network: net, Redis: s.client(net), AnswerDelay: delay, Logger: s.log})
	if err != nil {
		s.t.Fatal(err)
	}
	s.run(net, func(ctx context.Context) error { return c.Run(ctx) })
}

// startHost runs host id of net.
func (s *system) startHost(net, id string, delay time.Duration) {
	addr := protocol.HostAddr(net, id)
	cfg := s.crawl
	cfg.Data = s.dirs[addr]
	opt := mixed.Options{Crawl: cfg, Logger: s.log, Leave: s.leave[addr], Host: protocol.HostOptions{Config: s.cfg, Network: net, ID: id,
		Local: s.client(addr), Center: s.client(net), LocalURL: s.url(addr), AnswerDelay: delay}}
	s.run(addr, func(ctx context.Context) error {
		res, err := mixed.Run(ctx, opt)
		s.mu.Lock()
		s.results[addr] = append(s.results[addr], res)
		s.mu.Unlock()
		return err
	})
}

func (s *system) run(name string, fn func(context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan error, 1)
	s.mu.Lock()
	s.running[name], s.errs[name] = cancel, ch
	s.mu.Unlock()
	go func() { ch <- fn(ctx) }()
}

// kill stops a node as a crash would (its context ends; nothing is handed back).
func (s *system) kill(name string) {
	s.mu.Lock()
	cancel, ch := s.running[name], s.errs[name]
	delete(s.running, name)
	s.mu.Unlock()
	cancel()
	<-ch
}

func (s *system) stopAll() {
	s.mu.Lock()
	names := make([]string, 0, len(s.running))
	for n := range s.running {
		names = append(names, n)
	}
	s.mu.Unlock()
	for _, n := range names {
		s.kill(n)
	}
}

// wait waits for every running node to return by itself.
func (s *system) wait(timeout time.Duration) {
	s.t.Helper()
	deadline := time.After(timeout)
	s.mu.Lock()
	names := make([]string, 0, len(s.errs))
	for n := range s.running {
		names = append(names, n)
	}
	s.mu.Unlock()
	sort.Strings(names)
	for _, n := range names {
		select {
		case err := <-s.errs[n]:
			if err != nil {
				s.t.Errorf("%s: %v", n, err)
			}
			s.mu.Lock()
			delete(s.running, n)
			s.mu.Unlock()
		case <-deadline:
			s.report()
			s.t.Fatalf("%s did not finish within %v", n, timeout)
		}
	}
}

// report logs every node's state (for a failing test).
func (s *system) report() {
	ctx := context.Background()
	addrs := []string{}
	for addr := range s.redis {
		addrs = append(addrs, addr)
	}
	for addr := range s.clusters {
		addrs = append(addrs, addr)
	}
	for _, addr := range addrs {
		net, host := protocol.SplitAddr(addr)
		c := s.client(addr)
		if host == "" {
			st, err := protocol.ReadCenterState(ctx, c, s.cfg.Crawl, net)
			s.t.Logf("%s: %+v %v", addr, st, err)
		} else {
			st, err := protocol.ReadHostState(ctx, c, s.cfg.Crawl, addr)
			s.t.Logf("%s: %+v %v", addr, st, err)
		}
		c.Close()
	}
}

// check compares what the hosts fetched with the ground truth: every URL of MustFetch
// fetched, no URL recorded by two hosts, at most allowedRepeats repeated requests.
func (s *system) check(allowedRepeats int) map[string]int {
	s.t.Helper()
	owner := map[string]string{}
	perHost := map[string]int{}
	var twice []string // URLs recorded by two hosts
	attempts := map[string]int{}
	for addr, d := range s.dirs {
		rs, err := store.OpenRecords(d, store.Options{})
		if err != nil {
			s.t.Fatal(err)
		}
		rs.Iterate(func(r store.Record) error {
			if o, ok := owner[r.URL]; ok && o != addr {
				twice = append(twice, fmt.Sprintf("%s (%s and %s)", r.URL, o, addr))
			}
			owner[r.URL] = addr
			attempts[r.URL] = max(attempts[r.URL], r.Attempts, 1)
			return nil
		})
		rs.Close()
		perHost[addr] = 0
	}
	for _, a := range owner {
		perHost[a]++
	}
	// Two hosts record one URL only when a host that leaves hands back a task it was
	// fetching: one of the requests in flight, counted below as a repeat too.
	if len(twice) > allowedRepeats {
		s.t.Errorf("%d URLs crawled by two hosts (at most %d allowed), e.g. %s", len(twice), allowedRepeats, strings.Join(twice[:min(5, len(twice))], ", "))
	}
	var missing []string
	for _, u := range s.truth.MustFetch {
		if _, ok := owner[u]; !ok {
			missing = append(missing, u)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		s.t.Errorf("%d of %d URLs never fetched, e.g. %s", len(missing), len(s.truth.MustFetch), strings.Join(missing[:min(5, len(missing))], " "))
	}
	repeats := 0
	retries := s.srv.Log().Retries()
	for u, n := range s.srv.Log().Duplicates() {
		if retries[u] == 0 && n > attempts[u] {
			repeats += n - attempts[u]
			s.t.Logf("%s requested %d times", u, n)
		}
	}
	if repeats > allowedRepeats {
		s.t.Errorf("%d repeated requests, want at most %d", repeats, allowedRepeats)
	}
	return perHost
}

func (s *system) stat(net, field string) int64 {
	st, err := protocol.ReadCenterState(context.Background(), s.client(net), s.cfg.Crawl, net)
	if err != nil {
		s.t.Fatal(err)
	}
	return st.Stats[field]
}

// TestTwoNetworks: 2 networks × 3 hosts, each with its own Redis, crawl a web together
// and stop by themselves; every URL of the ground truth is fetched exactly once across
// the whole system, and the work is spread over the hosts.
func TestTwoNetworks(t *testing.T) {
	s := newSystem(t, 2, 3, websim.Config{Seed: 71, Hosts: 18, PagesPerHost: 20})
	for _, n := range []string{"n1", "n2"} {
		s.startCenter(n, 0)
		for _, h := range []string{"h1", "h2", "h3"} {
			s.startHost(n, h, 0)
		}
	}
	s.wait(90 * time.Second)
	per := s.check(0)
	// Sites are handed to the hosts registered when a site is first seen,
	// so which hosts get work depends on timing (18 sites over 6 hosts);
	// the work must still be spread, not done by one or two hosts.
	busy := 0
	for _, n := range per {
		if n > 0 {
			busy++
		}
	}
	if busy < 3 {
		t.Errorf("only %d of 6 hosts crawled anything: %v", busy, per)
	}
	t.Logf("pages per host: %v; URLs of the truth: %d", per, len(s.truth.MustFetch))
	for _, n := range []string{"n1", "n2"} {
		if s.stat(n, "urls_passed") == 0 || s.stat(n, "answers_ok") == 0 {
			t.Errorf("%s: no URL passed or no answer received", n)
		}
		t.Logf("%s: claimed_dup %d network_dup %d remote_dup %d passed %d", n, s.stat(n, "claimed_dup"),
			s.stat(n, "network_dup"), s.stat(n, "remote_dup"), s.stat(n, "urls_passed"))
	}
}

// TestFailures: hosts killed and restarted mid-crawl, a host whose answers come after
// the time-out, a network whose answers come after the time-out, and a host that
// starts late: still no URL lost and none crawled by two hosts; the late and timed-out
// answers are counted. The faults land at points of the crawl's progress (requests the
// web received), not at clock times, so each lands inside the crawl on any machine; a
// crawl that ends before a fault point fails the test.
func TestFailures(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the failure test takes about 30 s")
	}
	web := websim.Config{Seed: 72, Hosts: 12, PagesPerHost: 15, Latency: 5 * time.Millisecond}
	s := newSystem(t, 2, 3, web)
	slowHost := 600 * time.Millisecond // > AnswerTimeout
	slowNet := 1200 * time.Millisecond // > RemoteTimeout
	urls := len(s.truth.MustFetch)
	s.startCenter("n1", 0)
	s.startCenter("n2", slowNet)
	s.startHost("n1", "h1", 0)
	s.startHost("n1", "h2", slowHost)
	s.startHost("n1", "h3", 0)
	s.startHost("n2", "h1", 0)
	s.startHost("n2", "h2", 0)
	s.progress(urls * 15 / 100)
	s.kill("n1/h1")
	s.kill("n2") // a center restarts too

	time.Sleep(300 * time.Millisecond) // time is the subject: the center's outage
	s.startCenter("n2", slowNet)
	s.startHost("n2", "h3", 0) // joins late
	s.progress(urls * 30 / 100)
	s.startHost("n1", "h1", 0)
	s.progress(urls * 45 / 100)
	s.kill("n2/h2")
	s.left("n2", "h2") // past the member TTL: it leaves the network's list
	s.startHost("n2", "h2", 0)
	s.wait(120 * time.Second)
	// Each kill may repeat the requests in flight at that moment (concurrency 4).
	s.check(2 * 4)
	if n := s.stat("n1", "host_timeouts"); n == 0 {
		t.Errorf("n1 counted no host time-out, with a host answering after the time-out")
	}
	if n := s.stat("n1", "answers_late"); n == 0 {
		t.Errorf("n1 counted no late answer")
	}
	if n := s.stat("n1", "requests_resent") + s.stat("n1", "network_timeouts"); n == 0 {
		t.Errorf("n1 neither re-sent a request nor timed out a network, with n2 answering late")
	}
	for _, n := range []string{"n1", "n2"} {
		t.Logf("%s: host_timeouts %d answers_late %d duplicate %d resent %d network_timeouts %d", n,
			s.stat(n, "host_timeouts"), s.stat(n, "answers_late"), s.stat(n, "answers_duplicate")+s.stat(n, "duplicate_requests"),
			s.stat(n, "requests_resent"), s.stat(n, "network_timeouts"))
	}
}

// progress waits until the web has received n requests (robots.txt included), woken by
// each request the access log records; it fails the test when the crawl does not get
// there within a minute (it ended before, or stalled): a fault meant for that point
// would never land inside the crawl.
func (s *system) progress(n int) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.srv.Log().WaitFor(ctx, func(es []websim.Entry) bool { return len(es) >= n }); err != nil {
		s.report()
		s.t.Fatalf("the crawl did not reach %d requests (%d so far): %v", n, s.srv.Log().Len(), err)
	}
	if s.truthDone() {
		s.t.Fatalf("the crawl had fetched every URL of the truth at the fault point (%d requests): the fault would test nothing", n)
	}
}

// truthDone reports whether every URL of the truth has been requested.
func (s *system) truthDone() bool {
	for _, u := range s.truth.MustFetch {
		if s.srv.Log().Count(u) == 0 {
			return false
		}
	}
	return true
}

// left waits until host id (killed) has left the member list of net's hosts, which
// happens once its heartbeats are older than the member TTL (time is the subject: the
// list is polled every heartbeat); it fails the test after 30 s.
func (s *system) left(net, id string) {
	s.t.Helper()
	keys, err := cluster.NewKeys(protocol.HostMembersCrawl(s.cfg.Crawl, net))
	if err != nil {
		s.t.Fatal(err)
	}
	m := cluster.NewMembership(s.client(net), keys, cluster.MembershipConfig{})
	deadline := time.Now().Add(30 * time.Second)
	for {
		v, err := m.Members(context.Background())
		if err == nil && !v.Has(id) {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("%s/%s still in the member list 30 s after its kill (%v)", net, id, err)
		}
		time.Sleep(time.Duration(s.cfg.Heartbeat))
	}
}

// TestHostLeaves: a host stopped with Leave in the middle of the crawl hands back its
// tasks, submits its unsubmitted URLs and delivers its last frames; its sites move to the
// remaining hosts and the crawl completes with every URL of the truth fetched once (up
// to the requests the leaving host had in flight).
func TestHostLeaves(t *testing.T) {
	s := newSystem(t, 1, 3, websim.Config{Seed: 73, Hosts: 12, PagesPerHost: 20, Latency: 5 * time.Millisecond})
	s.leave["n1/h2"] = true
	s.startCenter("n1", 0)
	for _, h := range []string{"h1", "h2", "h3"} {
		s.startHost("n1", h, 0)
	}
	leaver := s.client("n1/h2")
	// Poll the host's state (its Redis, every 20 ms) until it has done 3 tasks; the
	// deadline fails a host that never gets there.
	deadline := time.Now().Add(60 * time.Second)
	for {
		st, err := protocol.ReadHostState(context.Background(), leaver, s.cfg.Crawl, "n1/h2")
		if err == nil && st.Stats["tasks_done"] >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("n1/h2 did not complete 3 tasks within 60 s: %+v %v", st, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.kill("n1/h2") // its context ends: with Leave set, it leaves
	st, err := protocol.ReadHostState(context.Background(), leaver, s.cfg.Crawl, "n1/h2")
	if err != nil || st.TaskPool+st.Processing+st.URLPool+st.Outbox > 0 {
		t.Fatalf("n1/h2 still holds work after leaving: %+v %v", st, err)
	}
	cs, err := protocol.ReadCenterState(context.Background(), s.client("n1"), s.cfg.Crawl, "n1")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cs.Registered["h2"]; ok {
		t.Error("n1/h2 is still registered after leaving")
	}
	s.wait(90 * time.Second)
	per := s.check(s.crawl.Concurrency)
	t.Logf("pages per host: %v; URLs of the truth: %d", per, len(s.truth.MustFetch))
	if per["n1/h1"]+per["n1/h3"] == 0 {
		t.Error("the remaining hosts fetched nothing")
	}
}
