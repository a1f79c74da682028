package protocol

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/spider-crawler/spider/internal/cluster"
)

// Round kinds of a center's pools.
const (
	kindLocal = "local" // network pass of a frame from one of our hosts (local_reduce_pool)
	kindOut   = "out"   // cross-network pass of our frame (dist_reduce_pool)
	kindIn    = "in"    // another network's request being checked by our hosts (dist_reduce_pool)
)

// round is one frame in a center's pools, with whom it waits for.
type round struct {
	Number  string           `json:"number"`
	Kind    string           `json:"kind"`
	Origin  string           `json:"origin"` // host address (local, out) or network (in)
	URLs    map[string]uint8 `json:"urls"`
	Dropped []string         `json:"dropped,omitempty"` // out/local: URLs marked seen by an answer
	Depth   map[string]int   `json:"depth,omitempty"`
	Hops    map[string]int   `json:"hops,omitempty"`
	Waiting map[string]bool  `json:"waiting"`
	Done    map[string]bool  `json:"answered"`
	// Homes (out) are the other networks that are homes of URLs still in the round.
	Homes map[string]bool `json:"homes,omitempty"`
	// Arrived is when the frame reached this center; PassStart when the current pass
	// began; Deadline when the current wait times out; ReplyAt (in, with AnswerDelay)
	// when the answer is due. Unix ms.
	Arrived   int64 `json:"arrived"`
	PassStart int64 `json:"pass_start"`
	Deadline  int64 `json:"deadline"`
	ReplyAt   int64 `json:"reply_at,omitempty"`
}

// CenterOptions configures a Center.
type CenterOptions struct {
	// Config is the system's configuration (validated).
	Config *Config
	// Network names this center's network.
	Network string
	// Redis is this center's Redis (center_Redis). RedisURL is how others dial it
	// (default: the configuration's center_redis).
	Redis    redis.UniversalClient
	RedisURL string
	// Dial opens a client for a Redis URL (hosts' and other centers' Redis). Default:
	// redis.ParseURL and redis.NewClient.
	Dial func(rawURL string) (redis.UniversalClient, error)
	// AnswerDelay delays every answer this center sends to another network: a slow
	// network, for tests and experiments. Default 0.
	AnswerDelay time.Duration
	// Logger receives warnings; nil discards.
	Logger *slog.Logger
	// Registerer receives the center's metrics; nil registers nothing.
	Registerer prometheus.Registerer
}

// Center is the center host of one network: it runs the network pass and the
// cross-network pass over its pools, assigns surviving URLs to its hosts, keeps the
// membership of centers and decides, when it is the leader, that the whole system is
// done. See the package documentation.
type Center struct {
	opt   CenterOptions
	cfg   *Config
	net   string
	k     nodeKeys
	rdb   redis.UniversalClient
	tr    *transport
	m     *metrics
	log   *slog.Logger
	homes []string

	hostMem    *cluster.Membership // read only: the hosts' list in our Redis
	centerMems []*cluster.Membership

	// Event-loop state (one goroutine).
	local map[string]*round
	dist  map[string]*round
	hosts []string // live hosts (IDs), sorted
	nets  []string // live networks, sorted, self included

	dialMu  sync.Mutex
	clients map[string]redis.UniversalClient // by URL
	regMu   sync.Mutex
	reg     map[string]string // registered host ID → Redis URL
}

// NewCenter checks the options and returns a center that has done no I/O yet.
func NewCenter(opt CenterOptions) (*Center, error) {
	if opt.Config == nil {
		return nil, errors.New("cannot start a center without a configuration")
	}
	nw, ok := opt.Config.Network(opt.Network)
	if !ok {
		return nil, fmt.Errorf("cannot start the center of %q: it is not in the configuration: add it under networks:", opt.Network)
	}
	if opt.Redis == nil {
		return nil, errors.New("cannot start a center without its Redis")
	}
	if opt.RedisURL == "" {
		opt.RedisURL = nw.CenterRedis
	}
	if opt.Dial == nil {
		opt.Dial = DialURL
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	c := &Center{opt: opt, cfg: opt.Config, net: opt.Network, k: keysFor(opt.Config.Crawl, opt.Network),
		rdb: opt.Redis, m: newMetrics(opt.Registerer, opt.Network), log: opt.Logger,
		homes: opt.Config.NetworkNames(), local: map[string]*round{}, dist: map[string]*round{},
		clients: map[string]redis.UniversalClient{opt.RedisURL: opt.Redis}, reg: map[string]string{}}
	c.tr = &transport{crawl: c.cfg.Crawl, self: c.net, rdb: c.rdb, k: c.k, m: c.m, log: c.log,
		resolve: c.resolve, giveUp: 4 * time.Duration(c.cfg.RemoteTimeout)}
	return c, nil
}

// DialURL opens a Redis client for a redis:// or rediss:// URL: a cluster client when
// the URL names a Redis Cluster (ClusterURL), else a client of one server. It does no
// I/O.
func DialURL(rawURL string) (redis.UniversalClient, error) {
	clean, isCluster, err := ClusterURL(rawURL)
	if err != nil {
		return nil, err
	}
	if isCluster {
		o, err := redis.ParseClusterURL(clean)
		if err != nil {
			return nil, fmt.Errorf("cannot use Redis Cluster URL %s: %w", redactURL(rawURL), err)
		}
		return redis.NewClusterClient(o), nil
	}
	o, err := redis.ParseURL(clean)
	if err != nil {
		return nil, fmt.Errorf("cannot use Redis URL %s: %w", redactURL(rawURL), err)
	}
	return redis.NewClient(o), nil
}

// ClusterURL tells whether a Redis URL of the configuration (a center_redis, a host's
// redis, --local-redis, --center-redis) names a Redis Cluster: it does when it has
// addr= parameters, more seed nodes in go-redis's form
// (redis://h1:7000?addr=h2:7001&addr=h3:7002), or cluster=true
// (redis://h1:7000?cluster=true, one seed node). It returns the URL without the
// cluster parameter, ready for redis.ParseClusterURL or redis.ParseURL. Each center's
// and each host's Redis may be a cluster or a single server, independently of the
// others'.
func ClusterURL(rawURL string) (clean string, isCluster bool, err error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", false, fmt.Errorf("cannot use Redis URL %s: it does not parse: give redis://host:port or rediss://host:port", redactURL(rawURL))
	}
	q := u.Query()
	if v, ok := q["cluster"]; ok {
		switch v[len(v)-1] {
		case "true", "1", "yes":
			isCluster = true
		case "false", "0", "no":
		default:
			return "", false, fmt.Errorf("cannot use Redis URL %s: cluster=%s: want cluster=true or cluster=false", redactURL(rawURL), v[len(v)-1])
		}
		q.Del("cluster")
	}
	if len(q["addr"]) > 0 {
		isCluster = true
	}
	if _, had := u.Query()["cluster"]; !had {
		return rawURL, isCluster, nil
	}
	u.RawQuery = q.Encode()
	return u.String(), isCluster, nil
}

func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}

// client returns a cached client for a Redis URL.
func (c *Center) client(rawURL string) (redis.UniversalClient, error) {
	c.dialMu.Lock()
	defer c.dialMu.Unlock()
	if cl, ok := c.clients[rawURL]; ok {
		return cl, nil
	}
	cl, err := c.opt.Dial(rawURL)
	if err != nil {
		return nil, err
	}
	c.clients[rawURL] = cl
	return cl, nil
}

// resolve maps a node address to its Redis: a network to its center's, one of our hosts
// to the Redis it registered.
func (c *Center) resolve(ctx context.Context, addr string) (redis.UniversalClient, error) {
	net, host := SplitAddr(addr)
	if host == "" {
		nw, ok := c.cfg.Network(net)
		if !ok {
			return nil, fmt.Errorf("network %q is not in the configuration", net)
		}
		if net == c.net {
			return c.rdb, nil
		}
		return c.client(nw.CenterRedis)
	}
	if net != c.net {
		return nil, fmt.Errorf("host %s belongs to another network", addr)
	}
	u, err := c.hostURL(ctx, host)
	if err != nil {
		return nil, err
	}
	return c.client(u)
}

func (c *Center) hostURL(ctx context.Context, id string) (string, error) {
	c.regMu.Lock()
	u, ok := c.reg[id]
	c.regMu.Unlock()
	if ok {
		return u, nil
	}
	u, err := c.rdb.HGet(ctx, c.k.registered(), id).Result()
	if errors.Is(err, redis.Nil) {
		return "", fmt.Errorf("host %s/%s is not registered: %w", c.net, id, errNotRegistered)
	}
	if err != nil {
		return "", fmt.Errorf("cannot read the registration of host %s/%s: %w", c.net, id, err)
	}
	return u, nil
}

// errNotRegistered: a host address that the center's Redis does not list.
var errNotRegistered = errors.New("not registered")

// Run runs the center until the system is done (it returns nil) or ctx ends (it returns
// ctx's error). A restarted center resumes from its Redis.
func (c *Center) Run(ctx context.Context) (retErr error) {
	if err := checkOldLayout(ctx, c.rdb, c.cfg.Crawl, c.net); err != nil {
		return fmt.Errorf("cannot start the center of %s: %w", c.net, err)
	}
	if err := c.tr.recover(ctx); err != nil {
		return err
	}
	if err := c.loadPools(ctx); err != nil {
		return err
	}
	if err := c.joinCenters(ctx); err != nil {
		return err
	}
	defer func() {
		for _, m := range c.centerMems {
			m.Close()
		}
	}()
	// The crawl-wide report (spider status, serve --redis): this center's figures in
	// the first network's center's Redis, live every second, final when Run ends.
	if rep, err := c.startReport(ctx); err != nil {
		c.log.Warn("spider status will not show this center", "err", err)
	} else {
		defer func() {
			state := cluster.ReportFailed
			switch {
			case retErr == nil:
				state = cluster.ReportDone
			case ctx.Err() != nil:
				state = cluster.ReportStopped
			}
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := rep.Stop(sctx, state); err != nil {
				c.log.Warn("cannot publish this center's final report for spider status", "err", err)
			}
		}()
	}
	hk, err := cluster.NewKeys(HostMembersCrawl(c.cfg.Crawl, c.net))
	if err != nil {
		return err
	}
	c.hostMem = cluster.NewMembership(c.rdb, hk, cluster.MembershipConfig{Heartbeat: time.Duration(c.cfg.Heartbeat), TTL: time.Duration(c.cfg.MemberTTL)})
	c.refresh(ctx)

	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	doneCh := make(chan struct{})
	wg.Add(3)
	go func() { defer wg.Done(); c.tr.forward(lctx) }()
	go func() { defer wg.Done(); c.dispatchLoop(lctx) }()
	go func() { defer wg.Done(); c.terminationLoop(lctx, doneCh) }()
	err = c.loop(lctx, doneCh)
	cancel()
	wg.Wait()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// startReport starts this center's crawl-wide report (cluster.StartReporter, role
// center, node ID its network) in the first network's center's Redis, where the hosts
// publish theirs. A center writes no records: its figures go in Detail.
func (c *Center) startReport(ctx context.Context) (*cluster.Reporter, error) {
	rdb := c.rdb
	if first := c.cfg.Networks[0]; first.Name != c.net {
		var err error
		if rdb, err = c.client(first.CenterRedis); err != nil {
			return nil, err
		}
	}
	k, err := cluster.NewKeys(c.cfg.Crawl)
	if err != nil {
		return nil, err
	}
	return cluster.StartReporter(ctx, rdb, k, cluster.ReporterConfig{Node: c.net, Role: cluster.RoleCenter, Source: c.report, Logger: c.log})
}

// report is the center's part of the crawl-wide report: its pools and counters.
func (c *Center) report() cluster.NodeReport {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	st, err := ReadCenterState(ctx, c.rdb, c.cfg.Crawl, c.net)
	if err != nil {
		return cluster.NodeReport{}
	}
	return cluster.NodeReport{Detail: map[string]int64{"queued": st.TaskURL, "rounds": st.LocalPool + st.DistPool,
		"claims": st.Claims, "urls_submitted": st.Stats["urls_submitted"], "urls_passed": st.Stats["urls_passed"],
		"duplicates": st.Stats["claimed_dup"] + st.Stats["network_dup"] + st.Stats["remote_dup"], "hosts": int64(len(st.Registered))}}
}

// centerInstance is the Instance every center of network net joins with: the same for
// all, so a center restarted after a crash takes its network's place back at once (a
// center keeps no data directory for a token of its own), and two centers started for
// one network are not refused by the membership (as before instances existed).
func centerInstance(net string) string { return "center:" + net }

// joinCenters registers this center in the centers' membership kept in every
// configured center's Redis (its own included): each center learns which networks are
// live from its own Redis.
func (c *Center) joinCenters(ctx context.Context) error {
	keys, err := cluster.NewKeys(CenterMembersCrawl(c.cfg.Crawl))
	if err != nil {
		return err
	}
	if err := checkPeers(ctx, c.rdb, c.cfg, c.net); err != nil {
		return fmt.Errorf("cannot start the center of %s: %w", c.net, err)
	}
	for _, nw := range c.cfg.Networks {
		rdb := c.rdb
		if nw.Name != c.net {
			if rdb, err = c.client(nw.CenterRedis); err != nil {
				return err
			}
		}
		m := cluster.NewMembership(rdb, keys, cluster.MembershipConfig{Heartbeat: time.Duration(c.cfg.Heartbeat),
			TTL: time.Duration(c.cfg.MemberTTL), Logger: c.log})
		jctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		_, err := m.Join(jctx, cluster.Member{ID: c.net, Weight: 1, Addr: c.opt.RedisURL, Instance: centerInstance(c.net), Meta: map[string]string{"config": c.cfg.Fingerprint()}})
		cancel()
		if err != nil && nw.Name == c.net {
			return fmt.Errorf("cannot join the centers' membership in our own Redis: %w", err)
		}
		if err != nil {
			// The other center's Redis is down: we are not listed there until it is back
			// and we rejoin (refresh retries).
			c.log.Warn("cannot reach another center's Redis", "network", nw.Name, "err", err)
			c.centerMems = append(c.centerMems, nil)
			continue
		}
		c.centerMems = append(c.centerMems, m)
	}
	return nil
}

// checkPeers refuses a configuration that differs from a live center's listed in rdb
// (the centers' membership, which every center keeps in every center's Redis): the
// Fingerprint covers what decides frames and homes, so two of them would split the
// crawl's URLs two ways. self (a center's own network) is not compared: a center
// restarted with a new configuration replaces its own listing.
func checkPeers(ctx context.Context, rdb redis.UniversalClient, cfg *Config, self string) error {
	keys, err := cluster.NewKeys(CenterMembersCrawl(cfg.Crawl))
	if err != nil {
		return err
	}
	v, err := cluster.NewMembership(rdb, keys, cluster.MembershipConfig{}).Members(ctx)
	if err != nil {
		return fmt.Errorf("cannot read the centers' membership: %w", err)
	}
	for _, m := range v.Members {
		if fp := m.Meta["config"]; m.ID != self && fp != "" && fp != cfg.Fingerprint() {
			return fmt.Errorf("this protocol configuration (fingerprint %s) differs from the one center %s runs with (%s): give every center and host the same --protocol-config (crawl name, batch and network names must match)",
				cfg.Fingerprint(), m.ID, fp)
		}
	}
	return nil
}

// loadPools reads local_reduce_pool and dist_reduce_pool back after a restart (or after
// a failed step), replacing the rounds in memory.
func (c *Center) loadPools(ctx context.Context) error {
	clear(c.local)
	clear(c.dist)
	for key, into := range map[string]map[string]*round{c.k.localReducePool(): c.local, c.k.distReducePool(): c.dist} {
		all, err := c.rdb.HGetAll(ctx, key).Result()
		if err != nil {
			return fmt.Errorf("cannot read %s: %w", key, err)
		}
		for n, raw := range all {
			var r round
			if err := json.Unmarshal([]byte(raw), &r); err != nil {
				return fmt.Errorf("cannot decode round %s of %s: %w", n, key, err)
			}
			into[n] = &r
		}
	}
	return nil
}

// refresh re-reads the live hosts, the live networks and the registered hosts, and
// rejoins centers whose Redis was down.
func (c *Center) refresh(ctx context.Context) {
	if v, err := c.hostMem.Members(ctx); err == nil {
		hosts := make([]string, 0, len(v.Members))
		for _, m := range v.Members {
			if m.Meta["config"] != c.cfg.Fingerprint() {
				c.log.Warn("ignoring a host whose configuration differs from ours", "host", m.ID)
				continue
			}
			hosts = append(hosts, m.ID)
		}
		c.hosts = hosts
	} else {
		c.log.Warn("cannot read the hosts' membership", "err", err)
	}
	keys, _ := cluster.NewKeys(CenterMembersCrawl(c.cfg.Crawl))
	if v, err := cluster.NewMembership(c.rdb, keys, cluster.MembershipConfig{}).Members(ctx); err == nil {
		nets := []string{}
		for _, m := range v.Members {
			if _, ok := c.cfg.Network(m.ID); ok && m.Meta["config"] == c.cfg.Fingerprint() {
				nets = append(nets, m.ID)
			}
		}
		if !slices.Contains(nets, c.net) {
			nets = append(nets, c.net)
		}
		sort.Strings(nets)
		c.nets = nets
	}
	if reg, err := c.rdb.HGetAll(ctx, c.k.registered()).Result(); err == nil {
		c.regMu.Lock()
		c.reg = reg
		c.regMu.Unlock()
	}
	for i, nw := range c.cfg.Networks {
		if c.centerMems[i] != nil {
			continue
		}
		cl, err := c.client(nw.CenterRedis)
		if err != nil {
			continue
		}
		m := cluster.NewMembership(cl, keys, cluster.MembershipConfig{Heartbeat: time.Duration(c.cfg.Heartbeat),
			TTL: time.Duration(c.cfg.MemberTTL), Logger: c.log})
		jctx, cancel := context.WithTimeout(ctx, time.Second)
		if _, err := m.Join(jctx, cluster.Member{ID: c.net, Weight: 1, Addr: c.opt.RedisURL, Instance: centerInstance(c.net), Meta: map[string]string{"config": c.cfg.Fingerprint()}}); err == nil {
			c.centerMems[i] = m
		}
		cancel()
	}
}

// loop is the event loop: frames from the inbox one at a time, time-outs, membership.
func (c *Center) loop(ctx context.Context, doneCh <-chan struct{}) error {
	lastRefresh := time.Now()
	lastTick := time.Now()
	stale := false
	// The center's Redis failing without a success in between (a frame handled, or an
	// empty inbox and a clean tick) for RedisTimeout ends Run with an error.
	down := Outage{What: "this center's Redis (" + redactURL(c.opt.RedisURL) + ")", Limit: time.Duration(c.cfg.RedisTimeout)}
	failed := func(err error) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return down.Fail(err)
	}
	for {
		select {
		case <-doneCh:
			return nil
		default:
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if stale {
			// A handler or time-out failed half-way: the rounds in memory may be ahead of
			// Redis. Redis is the truth; read it back before going on.
			if err := c.loadPools(ctx); err != nil {
				if ferr := failed(err); ferr != nil {
					return ferr
				}
				c.log.Warn("cannot read the rounds back from Redis, will retry", "err", err)
				sleep(ctx, 200*time.Millisecond)
				continue
			}
			stale = false
		}
		raw, f, ok, err := c.tr.next(ctx, 50*time.Millisecond)
		if err != nil {
			if ferr := failed(err); ferr != nil {
				return ferr
			}
			c.log.Warn("inbox", "err", err)
			sleep(ctx, 200*time.Millisecond)
			continue
		}
		if ok {
			if err := c.handle(ctx, f); err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				if ferr := failed(err); ferr != nil {
					return ferr
				}
				c.log.Warn("cannot handle a frame, will retry", "number", f.Number, "flag", f.Flag, "err", err)
				stale = true
				c.tr.retry(ctx, raw)
				sleep(ctx, 100*time.Millisecond)
			} else {
				c.tr.ack(ctx, raw)
				down.OK()
			}
		}
		now := time.Now()
		if now.Sub(lastRefresh) >= time.Duration(c.cfg.Heartbeat)/2 {
			c.refresh(ctx)
			lastRefresh = now
		}
		if now.Sub(lastTick) >= 50*time.Millisecond || !ok {
			if err := c.tick(ctx); err != nil && ctx.Err() == nil {
				if ferr := failed(err); ferr != nil {
					return ferr
				}
				c.log.Warn("time-out processing failed", "err", err)
				stale = true
			} else if !ok && err == nil {
				down.OK()
			}
			lastTick = now
		}
	}
}

func nowMS() int64 { return time.Now().UnixMilli() }

// count adds to the center's persistent statistics (shown by spider center --status).
func (c *Center) count(ctx context.Context, field string, n int64) {
	if n != 0 {
		c.rdb.HIncrBy(ctx, c.k.stats(), field, n)
	}
}

// handle dispatches one frame by flag.
func (c *Center) handle(ctx context.Context, f *Frame) error {
	switch f.Flag {
	case FlagSubmit:
		return c.onSubmit(ctx, f)
	case FlagRequest:
		return c.onRequest(ctx, f)
	default:
		return c.onAnswer(ctx, f)
	}
}

// unknown counts a frame from a sender that has no business sending it.
func (c *Center) unknown(ctx context.Context, f *Frame, why string) error {
	c.log.Info("dropping a frame from an unknown sender", "ip", f.IP, "number", f.Number, "flag", f.Flag, "why", why)
	c.m.answers.WithLabelValues("unknown").Inc()
	c.count(ctx, "unknown_sender", 1)
	return nil
}

// onSubmit: SPEC §0 step 2 begins. A flag-1 frame from one of our hosts is claimed
// (URLs claimed by an earlier frame of any network are dropped, which is how two frames
// in flight with the same URL are resolved), stored in local_reduce_pool with flag 2,
// and broadcast to every other live host of the network.
func (c *Center) onSubmit(ctx context.Context, f *Frame) error {
	n, _ := ParseNumber(f.Number)
	if n.Network != c.net || HostAddr(n.Network, n.Host) != f.IP {
		return c.unknown(ctx, f, "flag 1 from outside the network, or number and IP disagree")
	}
	if _, err := c.hostURL(ctx, n.Host); errors.Is(err, errNotRegistered) {
		// A host that left delivers its last frames before it deregisters; they may be
		// handled after it did.
		left, err := c.rdb.SIsMember(ctx, c.k.left(), n.Host).Result()
		if err != nil {
			return err
		}
		if !left {
			return c.unknown(ctx, f, "host not registered")
		}
	} else if err != nil {
		return err // Redis failed: the frame is retried, not dropped
	}
	if c.local[f.Number] != nil || c.dist[f.Number] != nil {
		c.count(ctx, "duplicate_frames", 1)
		return nil
	}
	if ok, err := c.rdb.SIsMember(ctx, c.k.numbers(), f.Number).Result(); err != nil {
		return err
	} else if ok {
		c.count(ctx, "duplicate_frames", 1)
		return nil
	}
	surv, err := c.claimLocal(ctx, f)
	if err != nil {
		return err
	}
	c.m.urls.WithLabelValues("claimed_dup").Add(float64(len(f.URLSet) - len(surv)))
	r := c.newRound(kindLocal, f, len(surv))
	for _, u := range surv {
		r.URLs[u] = 0
		if d := f.Depth[u]; d > 0 {
			if r.Depth == nil {
				r.Depth = map[string]int{}
			}
			r.Depth[u] = d
		}
		if h := f.Hops[u]; h > 0 {
			if r.Hops == nil {
				r.Hops = map[string]int{}
			}
			r.Hops[u] = h
		}
	}
	p := c.rdb.TxPipeline()
	p.SAdd(ctx, c.k.numbers(), f.Number)
	p.HIncrBy(ctx, c.k.stats(), "frames_submitted", 1)
	p.HIncrBy(ctx, c.k.stats(), "urls_submitted", int64(len(f.URLSet)))
	p.HIncrBy(ctx, c.k.stats(), "claimed_dup", int64(len(f.URLSet)-len(surv)))
	if len(surv) == 0 {
		_, err := p.Exec(ctx)
		return err
	}
	for _, h := range c.hosts {
		if HostAddr(c.net, h) != f.IP {
			r.Waiting[HostAddr(c.net, h)] = true
		}
	}
	if len(r.Waiting) == 0 {
		// The frame's number and the round's next step commit together: a crash between
		// two transactions would leave the number marked seen (the re-delivered frame
		// then counts as a duplicate) with the round in neither pool, and its URLs lost.
		return c.endLocal(ctx, p, r)
	}
	c.local[r.Number] = r
	return c.ask(ctx, p, c.k.localReducePool(), r, f)
}

// newRound is the round of frame f's pass of kind, for n URLs, starting now: it must
// end by the answer time-out.
func (c *Center) newRound(kind string, f *Frame, n int) *round {
	now := nowMS()
	return &round{Number: f.Number, Kind: kind, Origin: f.IP, URLs: make(map[string]uint8, n),
		Waiting: map[string]bool{}, Done: map[string]bool{}, Arrived: now, PassStart: now,
		Deadline: now + time.Duration(c.cfg.AnswerTimeout).Milliseconds()}
}

// ask stores round r in pool and queues the request of its URLs (flag 2, under frame
// f's number) to every host r waits for, all in the transaction p, and runs p.
func (c *Center) ask(ctx context.Context, p redis.Pipeliner, pool string, r *round, f *Frame) error {
	p.HSet(ctx, pool, r.Number, mustJSON(r))
	req := &Frame{URLSet: zeroSet(r.URLs), IP: f.IP, Number: f.Number, Flag: FlagRequest}
	for to := range r.Waiting {
		c.tr.queue(p, ctx, to, req, false)
	}
	_, err := p.Exec(ctx)
	return err
}

// endLocal ends the network pass of r: the frame leaves local_reduce_pool for
// dist_reduce_pool and is sent to the other networks (SPEC §0 step 3), or, with no
// other network to ask, is finalized. p carries the commands that must commit with it
// (they run in the same transaction).
func (c *Center) endLocal(ctx context.Context, p redis.Pipeliner, r *round) error {
	now := nowMS()
	c.m.roundTime.WithLabelValues("network").Observe(float64(now-r.PassStart) / 1000)
	delete(c.local, r.Number)
	r.Kind, r.PassStart = kindOut, now
	r.Deadline = now + time.Duration(c.cfg.RemoteTimeout).Milliseconds()
	r.Waiting, r.Done = map[string]bool{}, map[string]bool{}
	for _, n := range c.nets {
		if n != c.net {
			r.Waiting[n] = true
		}
	}
	r.Homes = c.homesOf(r)
	for n := range r.Homes {
		r.Waiting[n] = true
	}
	if len(r.URLs) == 0 || len(r.Waiting) == 0 {
		p.HDel(ctx, c.k.localReducePool(), r.Number)
		return c.finalize(ctx, p, r)
	}
	c.dist[r.Number] = r
	p.HDel(ctx, c.k.localReducePool(), r.Number)
	p.HSet(ctx, c.k.distReducePool(), r.Number, mustJSON(r))
	req := &Frame{URLSet: zeroSet(r.URLs), IP: c.net, Number: r.Number, Flag: FlagRequest}
	for to := range r.Waiting {
		c.tr.queue(p, ctx, to, req, false)
	}
	_, err := p.Exec(ctx)
	return err
}

// homesOf returns the other networks that are homes of URLs still in r.
func (c *Center) homesOf(r *round) map[string]bool {
	out := map[string]bool{}
	for u := range r.URLs {
		if h := Pick(Site(u), c.homes); h != c.net {
			out[h] = true
		}
	}
	return out
}

// finalize ends the cross-network pass: the surviving URLs are marked passed in the
// claims and appended to task_URL; the dropped ones are marked seen. p carries the
// commands that remove r from its pool.
func (c *Center) finalize(ctx context.Context, p redis.Pipeliner, r *round) error {
	now := nowMS()
	if r.Kind == kindOut {
		c.m.roundTime.WithLabelValues("cross").Observe(float64(now-r.PassStart) / 1000)
	}
	c.m.roundTime.WithLabelValues("total").Observe(float64(now-r.Arrived) / 1000)
	delete(c.dist, r.Number)
	p.HDel(ctx, c.k.distReducePool(), r.Number)
	// The claims live in the parts, so they cannot commit with the round's end (the
	// core): they are written first, naming the frame ("P:NUMBER", "S:NUMBER"). After a
	// crash between the two steps the round (read back from its pool) or its frame
	// (delivered again) runs again: claimLocalLua lets a frame keep the URLs it passed,
	// and setting a claim again is harmless. To every other frame a P claim is final
	// evidence, as it will be once the round ends.
	claims := map[int][]any{}
	if len(r.URLs) > 0 {
		tasks := make([]any, 0, len(r.URLs))
		for u := range r.URLs {
			i := PartOf(u)
			claims[i] = append(claims[i], URLHash(u), "P:"+r.Number)
			tasks = append(tasks, mustJSON(Task{URL: u, Depth: r.Depth[u], Hops: r.Hops[u]}))
		}
		p.RPush(ctx, c.k.taskURL(), tasks...)
	}
	for _, u := range r.Dropped {
		i := PartOf(u)
		claims[i] = append(claims[i], URLHash(u), "S:"+r.Number)
	}
	if len(claims) > 0 {
		cp := c.rdb.Pipeline()
		for i, kv := range claims {
			cp.HSet(ctx, c.k.claims(i), kv...)
		}
		if _, err := cp.Exec(ctx); err != nil {
			p.Discard()
			return fmt.Errorf("cannot mark claims: %w", err)
		}
	}
	p.HIncrBy(ctx, c.k.stats(), "urls_passed", int64(len(r.URLs)))
	p.HIncrBy(ctx, c.k.stats(), "rounds_finished", 1)
	c.m.urls.WithLabelValues("passed").Add(float64(len(r.URLs)))
	_, err := p.Exec(ctx)
	return err
}

// onRequest: SPEC §0 step 3 at the receiving network. The request is checked against
// our claims (first come first served for URLs homed here; passed URLs otherwise),
// stored in dist_reduce_pool and broadcast to our live hosts; their answers are merged
// and the answer goes back to the originating network.
func (c *Center) onRequest(ctx context.Context, f *Frame) error {
	n, _ := ParseNumber(f.Number)
	if _, ok := c.cfg.Network(f.IP); !ok || f.IP == c.net || n.Network != f.IP {
		return c.unknown(ctx, f, "flag 2 not from another configured network")
	}
	if c.dist[f.Number] != nil {
		c.count(ctx, "duplicate_requests", 1)
		return nil
	}
	if prev, err := c.rdb.Get(ctx, c.k.answered(f.Number)).Result(); err == nil {
		// Asked again (our answer was late or lost): the same answer again.
		c.count(ctx, "duplicate_requests", 1)
		ans, derr := DecodeFrame([]byte(prev))
		if derr != nil {
			return derr
		}
		p := c.rdb.TxPipeline()
		c.tr.queue(p, ctx, f.IP, ans, false)
		_, err := p.Exec(ctx)
		return err
	} else if !errors.Is(err, redis.Nil) {
		return err
	}
	us, marks, err := c.claimRemote(ctx, f)
	if err != nil {
		return err
	}
	r := c.newRound(kindIn, f, len(us))
	for i, u := range us {
		r.URLs[u] = uint8(marks[i])
	}
	for _, h := range c.hosts {
		r.Waiting[HostAddr(c.net, h)] = true
	}
	c.count(ctx, "requests_received", 1)
	if len(r.Waiting) == 0 {
		return c.answerRemote(ctx, r)
	}
	c.dist[r.Number] = r
	return c.ask(ctx, c.rdb.TxPipeline(), c.k.distReducePool(), r, f)
}

// answerRemote sends the merged answer of an incoming round to its network (after
// AnswerDelay, if set) and remembers it for repeated requests.
func (c *Center) answerRemote(ctx context.Context, r *round) error {
	now := nowMS()
	if c.opt.AnswerDelay > 0 && r.ReplyAt == 0 {
		r.ReplyAt = now + c.opt.AnswerDelay.Milliseconds()
		r.Waiting = map[string]bool{}
		c.dist[r.Number] = r
		return c.rdb.HSet(ctx, c.k.distReducePool(), r.Number, mustJSON(r)).Err()
	}
	c.m.roundTime.WithLabelValues("remote_check").Observe(float64(now-r.PassStart) / 1000)
	ans := &Frame{URLSet: r.URLs, IP: c.net, Number: r.Number, Flag: FlagAnswer}
	// The answer kept for a repeated request lives in a part: it is written first (a
	// crash before the round ends answers again, the same answer).
	if err := c.rdb.Set(ctx, c.k.answered(r.Number), ans.Encode(), time.Hour).Err(); err != nil {
		return err
	}
	delete(c.dist, r.Number)
	p := c.rdb.TxPipeline()
	p.HDel(ctx, c.k.distReducePool(), r.Number)
	c.tr.queue(p, ctx, r.Origin, ans, false)
	_, err := p.Exec(ctx)
	return err
}

// onAnswer applies a flag-3 answer to its round: in the network pass every URL marked 1
// leaves the frame; in an incoming round the marks are merged; in the cross-network pass
// URLs marked 1 leave the frame. Answers for rounds already over are late; answers from
// a node the round did not wait for are duplicates or unknown; all are counted.
func (c *Center) onAnswer(ctx context.Context, f *Frame) error {
	r := c.local[f.Number]
	if r == nil {
		r = c.dist[f.Number]
	}
	if r == nil || r.Kind == kindIn && r.ReplyAt != 0 {
		c.m.answers.WithLabelValues("late").Inc()
		c.count(ctx, "answers_late", 1)
		return nil
	}
	sender := f.IP
	if !r.Waiting[sender] {
		switch {
		case r.Done[sender]:
			c.m.answers.WithLabelValues("duplicate").Inc()
			c.count(ctx, "answers_duplicate", 1)
		case c.inScope(r, sender):
			c.m.answers.WithLabelValues("late").Inc()
			c.count(ctx, "answers_late", 1)
		default:
			return c.unknown(ctx, f, "answer from a node the round did not ask")
		}
		return nil
	}
	c.m.answers.WithLabelValues("ok").Inc()
	c.count(ctx, "answers_ok", 1)
	delete(r.Waiting, sender)
	r.Done[sender] = true
	dropped := 0
	for u, v := range f.URLSet {
		if v == 0 {
			continue
		}
		if _, ok := r.URLs[u]; !ok {
			continue
		}
		if r.Kind == kindIn {
			r.URLs[u] = 1
			continue
		}
		delete(r.URLs, u)
		r.Dropped = append(r.Dropped, u)
		dropped++
	}
	if r.Kind == kindLocal {
		c.m.urls.WithLabelValues("network_dup").Add(float64(dropped))
		c.count(ctx, "network_dup", int64(dropped))
	} else if r.Kind == kindOut {
		if dropped > 0 {
			r.Homes = c.homesOf(r)
		}
		c.m.urls.WithLabelValues("remote_dup").Add(float64(dropped))
		c.count(ctx, "remote_dup", int64(dropped))
	}
	return c.progress(ctx, r)
}

// inScope reports whether sender is a node r could have asked (a late answer rather
// than an unknown sender).
func (c *Center) inScope(r *round, sender string) bool {
	net, host := SplitAddr(sender)
	if r.Kind == kindOut {
		_, ok := c.cfg.Network(net)
		return host == "" && ok
	}
	if net != c.net || host == "" {
		return false
	}
	_, err := c.hostURL(context.Background(), host)
	return err == nil
}

// progress moves r on when nobody is left to wait for, else saves it.
func (c *Center) progress(ctx context.Context, r *round) error {
	if r.Kind == kindOut && len(r.URLs) == 0 {
		r.Waiting = map[string]bool{}
	}
	if len(r.Waiting) > 0 {
		key := c.k.distReducePool()
		if r.Kind == kindLocal {
			key = c.k.localReducePool()
		}
		return c.rdb.HSet(ctx, key, r.Number, mustJSON(r)).Err()
	}
	switch r.Kind {
	case kindLocal:
		return c.endLocal(ctx, c.rdb.TxPipeline(), r)
	case kindIn:
		return c.answerRemote(ctx, r)
	default:
		return c.finalize(ctx, c.rdb.TxPipeline(), r)
	}
}

// tick applies time-outs and departures. A host that is late or gone is left out of its
// round (a host never decides alone: claims already protect the network). Another
// network that is late is left out unless it is the home of a URL still in the frame;
// then it is asked again, because the home's first-come-first-served answer is what
// keeps two networks from both passing a URL.
func (c *Center) tick(ctx context.Context) error {
	now := nowMS()
	live := map[string]bool{}
	for _, h := range c.hosts {
		live[HostAddr(c.net, h)] = true
	}
	liveNets := map[string]bool{}
	for _, n := range c.nets {
		liveNets[n] = true
	}
	var errs []error
	for _, pool := range []map[string]*round{c.local, c.dist} {
		for _, r := range sortedRounds(pool) {
			changed := false
			switch {
			case r.Kind == kindIn && r.ReplyAt != 0:
				if now >= r.ReplyAt {
					errs = append(errs, c.answerRemote(ctx, r))
				}
				continue
			case r.Kind == kindOut:
				homes := r.Homes
				for w := range r.Waiting {
					if homes[w] {
						if now >= r.Deadline {
							// The home decides: ask again.
							req := &Frame{URLSet: zeroSet(r.URLs), IP: c.net, Number: r.Number, Flag: FlagRequest}
							p := c.rdb.TxPipeline()
							c.tr.queue(p, ctx, w, req, false)
							p.HIncrBy(ctx, c.k.stats(), "requests_resent", 1)
							_, err := p.Exec(ctx)
							errs = append(errs, err)
							c.m.resent.Inc()
							changed = true
						}
						continue
					}
					if now >= r.Deadline || !liveNets[w] {
						delete(r.Waiting, w)
						c.m.timeouts.WithLabelValues("network").Inc()
						c.count(ctx, "network_timeouts", 1)
						changed = true
					}
				}
				if changed && now >= r.Deadline {
					r.Deadline = now + time.Duration(c.cfg.RemoteTimeout).Milliseconds()
				}
			default:
				for w := range r.Waiting {
					if now >= r.Deadline || !live[w] {
						delete(r.Waiting, w)
						c.m.timeouts.WithLabelValues("host").Inc()
						c.count(ctx, "host_timeouts", 1)
						changed = true
					}
				}
			}
			if changed {
				errs = append(errs, c.progress(ctx, r))
			}
		}
	}
	return errors.Join(errs...)
}

func sortedRounds(pool map[string]*round) []*round {
	out := make([]*round, 0, len(pool))
	for _, r := range pool {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Number < out[j].Number })
	return out
}

func zeroSet(m map[string]uint8) map[string]uint8 {
	out := make(map[string]uint8, len(m))
	for u := range m {
		out[u] = 0
	}
	return out
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("protocol: cannot encode %T: %v", v, err)) // only plain structs and maps
	}
	return b
}

// dispatchLoop moves task_URL to the hosts' task_pools. A URL goes to the registered
// host picked by rendezvous hashing of its host:port over the registered hosts, so one
// site is fetched by one host of the network (its politeness and robots.txt stay in one
// place) and a host that joins or leaves moves only its share of sites. A registered
// host that is down keeps its sites: their URLs wait in its Redis (or in task_URL while
// its Redis is unreachable) until it is back, or until it leaves.
func (c *Center) dispatchLoop(ctx context.Context) {
	// A crash between the move and the hand-out left a batch in task_URL:sending: put it
	// back (acceptLua makes a repeated hand-out harmless).
	for ctx.Err() == nil && c.rdb.LMove(ctx, c.k.taskURLSend(), c.k.taskURL(), "RIGHT", "LEFT").Err() == nil {
	}
	for ctx.Err() == nil {
		n, err := c.dispatch(ctx)
		if err != nil && ctx.Err() == nil {
			c.log.Warn("dispatch failed", "err", err)
		}
		if n == 0 || err != nil {
			sleep(ctx, 50*time.Millisecond)
		}
	}
}

// dispatch hands out one batch of task_URL; it returns how many URLs it handed out.
// A URL whose home is another network goes to that network's task_URL (the frame was
// de-duplicated here, the site is crawled there); the others go to the host picked for
// their site.
func (c *Center) dispatch(ctx context.Context) (int, error) {
	reg, err := c.rdb.HGetAll(ctx, c.k.registered()).Result()
	if err != nil {
		return 0, err
	}
	ids := make([]string, 0, len(reg))
	for id := range reg {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	items, err := moveBatchScript.Run(ctx, c.rdb, []string{c.k.taskURL(), c.k.taskURLSend()}, 256).StringSlice()
	if err != nil || len(items) == 0 {
		return 0, err
	}
	groups := map[string][]any{} // host ID or "@NET" → hash, task pairs (tasks only for networks)
	var failed []any
	for _, raw := range items {
		var t Task
		if json.Unmarshal([]byte(raw), &t) != nil {
			c.log.Error("dropping an unreadable task_URL entry", "entry", raw)
			continue
		}
		if home := Pick(Site(t.URL), c.homes); home != c.net {
			groups["@"+home] = append(groups["@"+home], raw)
			continue
		}
		if len(ids) == 0 {
			failed = append(failed, raw) // no host has joined yet
			continue
		}
		h := Pick(Site(t.URL), ids)
		groups[h] = append(groups[h], URLHash(t.URL), raw)
	}
	sent := 0
	for dest, args := range groups {
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		err := c.handOut(cctx, dest, reg, args)
		cancel()
		if err == nil {
			if dest[0] == '@' {
				sent += len(args)
			} else {
				sent += len(args) / 2
			}
			continue
		}
		c.log.Debug("destination unreachable, its tasks wait", "to", dest, "err", err)
		if dest[0] == '@' {
			failed = append(failed, args...)
			continue
		}
		for i := 1; i < len(args); i += 2 {
			failed = append(failed, args[i])
		}
	}
	p := c.rdb.TxPipeline()
	p.Del(ctx, c.k.taskURLSend())
	if len(failed) > 0 {
		p.RPush(ctx, c.k.taskURL(), failed...)
	}
	p.HIncrBy(ctx, c.k.stats(), "tasks_dispatched", int64(sent))
	if _, err := p.Exec(ctx); err != nil {
		return sent, err
	}
	c.m.tasksPushed.Add(float64(sent))
	if len(failed) > 0 {
		return 0, nil // back off: a destination is down
	}
	return sent, nil
}

// handOut delivers one group: to another network's task_URL (counted in its received
// counter, for termination) or, through acceptLua, to one of our hosts.
func (c *Center) handOut(ctx context.Context, dest string, reg map[string]string, args []any) error {
	if dest[0] == '@' {
		net := dest[1:]
		cl, err := c.resolve(ctx, net)
		if err != nil {
			return err
		}
		rk := keysFor(c.cfg.Crawl, net)
		p := cl.TxPipeline()
		p.RPush(ctx, rk.taskURL(), args...)
		p.Incr(ctx, rk.received())
		_, err = p.Exec(ctx)
		return err
	}
	cl, err := c.client(reg[dest])
	if err != nil {
		return err
	}
	hk := keysFor(c.cfg.Crawl, HostAddr(c.net, dest))
	byPart := map[int][]any{}
	for i := 0; i < len(args); i += 2 {
		j := partOfHash(args[i].(string))
		byPart[j] = append(byPart[j], args[i], args[i+1])
	}
	b := newScriptBatch(cl)
	calls := make([]*scriptCall, 0, len(byPart))
	for i, a := range byPart {
		calls = append(calls, b.add(ctx, acceptScript, []string{hk.finishURL(i), hk.taskPool(i), hk.partReceived(i), hk.leaving(i)}, a...))
	}
	if err := b.exec(ctx); err != nil {
		return err
	}
	for _, call := range calls {
		if n, err := call.cmd.Int64(); err != nil {
			return err
		} else if n < 0 {
			return fmt.Errorf("host %s is leaving", dest)
		}
	}
	return nil
}

// claimLocal runs claimLocalLua on every part that holds URLs of f and returns the
// survivors.
func (c *Center) claimLocal(ctx context.Context, f *Frame) ([]string, error) {
	byPart := map[int][]any{}
	for u := range f.URLSet {
		i := PartOf(u)
		if byPart[i] == nil {
			byPart[i] = []any{f.Number}
		}
		byPart[i] = append(byPart[i], u)
	}
	b := newScriptBatch(c.rdb)
	calls := make([]*scriptCall, 0, len(byPart))
	for i, args := range byPart {
		calls = append(calls, b.add(ctx, claimLocalScript, []string{c.k.claims(i)}, args...))
	}
	if err := b.exec(ctx); err != nil {
		return nil, fmt.Errorf("cannot claim URLs: %w", err)
	}
	var surv []string
	for _, call := range calls {
		v, err := call.cmd.StringSlice()
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, fmt.Errorf("cannot claim URLs: %w", err)
		}
		surv = append(surv, v...)
	}
	return surv, nil
}

// claimRemote runs claimRemoteLua on every part that holds URLs of f and returns
// the URLs with their marks.
func (c *Center) claimRemote(ctx context.Context, f *Frame) ([]string, []int64, error) {
	byPart := map[int][]string{}
	for u := range f.URLSet {
		byPart[PartOf(u)] = append(byPart[PartOf(u)], u)
	}
	b := newScriptBatch(c.rdb)
	type call struct {
		us []string
		sc *scriptCall
	}
	calls := make([]call, 0, len(byPart))
	for i, us := range byPart {
		args := make([]any, 0, 2*len(us)+1)
		args = append(args, f.Number)
		for _, u := range us {
			home := "0"
			if Pick(Site(u), c.homes) == c.net {
				home = "1"
			}
			args = append(args, u, home)
		}
		calls = append(calls, call{us, b.add(ctx, claimRemoteScript, []string{c.k.claims(i)}, args...)})
	}
	if err := b.exec(ctx); err != nil {
		return nil, nil, fmt.Errorf("cannot check claims: %w", err)
	}
	var us []string
	var marks []int64
	for _, cl := range calls {
		m, err := cl.sc.cmd.Int64Slice()
		if err != nil || len(m) != len(cl.us) {
			return nil, nil, fmt.Errorf("cannot check claims: %v (%d marks for %d URLs)", err, len(m), len(cl.us))
		}
		us = append(us, cl.us...)
		marks = append(marks, m...)
	}
	return us, marks, nil
}

// CenterState is the work held in a center's Redis.
type CenterState struct {
	TaskURL, LocalPool, DistPool, Inbox, Outbox int64
	Claims                                      int64
	Received                                    int64
	Done                                        bool
	Registered                                  map[string]string
	Stats                                       map[string]int64
}

// Busy reports whether the center holds any work.
func (s CenterState) Busy() bool {
	return s.TaskURL+s.LocalPool+s.DistPool+s.Inbox+s.Outbox > 0
}

// ReadCenterState reads a center's state from its Redis in one transaction.
func ReadCenterState(ctx context.Context, rdb redis.UniversalClient, crawl, net string) (CenterState, error) {
	k := keysFor(crawl, net)
	p := rdb.TxPipeline()
	lens := []*redis.IntCmd{p.LLen(ctx, k.taskURL()), p.LLen(ctx, k.taskURLSend()), p.HLen(ctx, k.localReducePool()),
		p.HLen(ctx, k.distReducePool()), p.LLen(ctx, k.inbox()), p.LLen(ctx, k.inboxProc()), p.LLen(ctx, k.outbox()),
		p.LLen(ctx, k.outboxSend()), p.Exists(ctx, k.done())}
	recv := p.Get(ctx, k.received())
	reg := p.HGetAll(ctx, k.registered())
	stats := p.HGetAll(ctx, k.stats())
	if _, err := p.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return CenterState{}, fmt.Errorf("cannot read the state of center %s: %w", net, err)
	}
	r, _ := recv.Int64()
	// The claims (in the parts) hold no work: counted after, outside the transaction.
	cp := rdb.Pipeline()
	claims := make([]*redis.IntCmd, Parts)
	for i := range Parts {
		claims[i] = cp.HLen(ctx, k.claims(i))
	}
	if _, err := cp.Exec(ctx); err != nil {
		return CenterState{}, fmt.Errorf("cannot read the claims of center %s: %w", net, err)
	}
	var nclaims int64
	for _, c := range claims {
		nclaims += c.Val()
	}
	return CenterState{TaskURL: lens[0].Val() + lens[1].Val(), LocalPool: lens[2].Val(), DistPool: lens[3].Val(),
		Inbox: lens[4].Val() + lens[5].Val(), Outbox: lens[6].Val() + lens[7].Val(), Claims: nclaims,
		Done: lens[8].Val() > 0, Received: r, Registered: reg.Val(), Stats: parseStats(stats.Val())}, nil
}

// terminationLoop: the leader (the live network with the smallest name) scans the whole
// system every Stable; two scans in a row that find no work anywhere and the same
// delivery counters, after at least one URL was handed out, end the crawl: the done
// flag is set in every center's Redis. Every center returns from Run when its own Redis
// has the flag (after a grace of two heartbeats, so its hosts see it first).
func (c *Center) terminationLoop(ctx context.Context, doneCh chan<- struct{}) {
	stable := time.Duration(c.cfg.Stable)
	var prev *scanResult
	for ctx.Err() == nil {
		sleep(ctx, stable)
		if ctx.Err() != nil {
			return
		}
		if ok, _ := c.rdb.Exists(ctx, c.k.done()).Result(); ok > 0 {
			sleep(ctx, 2*time.Duration(c.cfg.Heartbeat))
			close(doneCh)
			return
		}
		keys, _ := cluster.NewKeys(CenterMembersCrawl(c.cfg.Crawl))
		v, err := cluster.NewMembership(c.rdb, keys, cluster.MembershipConfig{}).Members(ctx)
		if err != nil || len(v.Members) == 0 || v.Members[0].ID != c.net {
			prev = nil
			continue
		}
		cur := c.scan(ctx)
		if cur.idle && cur.started && prev != nil && prev.idle && prev.sum == cur.sum {
			c.log.Info("the whole system is idle: crawl done", "network", c.net)
			for _, nw := range c.cfg.Networks {
				if cl, err := c.resolve(ctx, nw.Name); err == nil {
					cl.Set(ctx, keysFor(c.cfg.Crawl, nw.Name).done(), nowMS(), 0)
				}
			}
			continue
		}
		prev = &cur
	}
}

type scanResult struct {
	idle, started bool
	sum           int64
	busy          string
}

// scan reads every reachable center and every registered host. An unreachable live
// center or registered host counts as busy (its work is unknown).
func (c *Center) scan(ctx context.Context) scanResult {
	res := scanResult{idle: true}
	keys, _ := cluster.NewKeys(CenterMembersCrawl(c.cfg.Crawl))
	v, _ := cluster.NewMembership(c.rdb, keys, cluster.MembershipConfig{}).Members(ctx)
	for _, nw := range c.cfg.Networks {
		cl, err := c.resolve(ctx, nw.Name)
		if err != nil {
			continue
		}
		cs, err := ReadCenterState(ctx, cl, c.cfg.Crawl, nw.Name)
		if err != nil {
			if v.Has(nw.Name) {
				res.idle, res.busy = false, nw.Name+" unreachable"
			}
			continue
		}
		if cs.Busy() {
			res.idle, res.busy = false, nw.Name
		}
		res.sum += cs.Received
		if cs.Stats["tasks_dispatched"] > 0 {
			res.started = true
		}
		for id, u := range cs.Registered {
			addr := HostAddr(nw.Name, id)
			hc, err := c.client(u)
			if err != nil {
				res.idle, res.busy = false, addr+" has a bad Redis URL"
				continue
			}
			hs, err := ReadHostState(ctx, hc, c.cfg.Crawl, addr)
			if err != nil {
				res.idle, res.busy = false, addr+" unreachable"
				continue
			}
			if hs.Busy() {
				res.idle, res.busy = false, addr
			}
			res.sum += hs.Received
		}
	}
	return res
}

// Live returns the live hosts and networks as last read (for status and tests).
func (c *Center) Live() (hosts, nets []string) {
	return slices.Clone(c.hosts), slices.Clone(c.nets)
}

// String names the center.
func (c *Center) String() string { return "center " + c.net + " (" + strconv.Quote(c.cfg.Crawl) + ")" }
