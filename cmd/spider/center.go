package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"
	"github.com/spf13/pflag"

	"github.com/spider-crawler/spider/internal/cluster"
	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/mixed"
	"github.com/spider-crawler/spider/internal/protocol"
)

const centerSynopsis = `center --protocol-config FILE --network NET [flags]

Runs the center host of network NET in the de-dup protocol (docs/design.md §0):
it receives its hosts' URL sets (flag 1), checks them with the network's
hosts and with the other networks' centers (flags 2 and 3), and hands the
surviving URLs to the hosts' task pools. Start one per network, and the
hosts with "spider crawl --dedup protocol --network NET --host-id ID".
Every center and host exits by itself when the whole system is idle.

With --status it prints the network's pools, hosts and counters and exits.`

// mixedOptions are the flags of a host in the mixed topology (spider crawl --dedup
// protocol).
type mixedOptions struct {
	// dedup is --dedup: bucket, or protocol for these options to apply.
	dedup       string
	configFile  string
	network     string
	hostID      string
	localRedis  string
	centerRedis string
	leave       bool
}

// bind registers --dedup and the flags of a host of the protocol.
func (mo *mixedOptions) bind(fs *pflag.FlagSet) {
	fs.StringVar(&mo.dedup, "dedup", "bucket", "distributed de-dup: bucket (each bucket's owner), or protocol (the mixed topology's two-tier protocol, docs/design.md §0)")
	fs.StringVar(&mo.configFile, "protocol-config", "", "with --dedup protocol: YAML file naming the networks, their centers' Redis and their hosts")
	fs.StringVar(&mo.network, "network", "", "with --dedup protocol: this host's network")
	fs.StringVar(&mo.hostID, "host-id", "", "with --dedup protocol: this host's name in its network")
	fs.StringVar(&mo.localRedis, "local-redis", "", "with --dedup protocol: this host's own Redis URL, a Redis Cluster with addr= or cluster=true parameters (default: its entry in --protocol-config)")
	fs.StringVar(&mo.centerRedis, "center-redis", "", "with --dedup protocol: the network center's Redis URL, a Redis Cluster with addr= or cluster=true parameters (default: from --protocol-config)")
	fs.BoolVar(&mo.leave, "leave", false, "with --dedup protocol: at the end hand unfinished tasks back to the center and leave the network (default: keep them for a restart)")
}

// loadProtocolConfig reads --protocol-config and checks the network name.
func loadProtocolConfig(file, network string) (*protocol.Config, protocol.Network, error) {
	if file == "" {
		return nil, protocol.Network{}, errors.New("--protocol-config FILE is required: a YAML file listing the networks (see docs/distributed.md, \"Mixed topology\")")
	}
	cfg, err := protocol.LoadConfig(file)
	if err != nil {
		return nil, protocol.Network{}, err
	}
	if network == "" {
		return nil, protocol.Network{}, fmt.Errorf("--network is required: one of %v", cfg.NetworkNames())
	}
	nw, ok := cfg.Network(network)
	if !ok {
		return nil, protocol.Network{}, fmt.Errorf("network %q is not in %s: use one of %v", network, file, cfg.NetworkNames())
	}
	return cfg, nw, nil
}

// dialRedis connects to a Redis URL of the protocol configuration (a Redis Cluster
// when protocol.ClusterURL says so) and pings it; what names the role in errors.
func dialRedis(ctx context.Context, what, rawURL string) (redis.UniversalClient, error) {
	clean, isCluster, err := protocol.ClusterURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	rf := redisFlags{url: clean, cluster: isCluster}
	rdb, err := rf.open(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return rdb, nil
}

func runMixed(ctx context.Context, cfg crawl.Config, mo *mixedOptions, quiet bool, logger *slog.Logger, stdout io.Writer) error {
	// The protocol's tasks are URLs, not requests: a sitemap would be
	// fetched as a page. Mixed crawls read no sitemaps.
	cfg.Sitemaps = false
	pc, nw, err := loadProtocolConfig(mo.configFile, mo.network)
	if err != nil {
		return err
	}
	if mo.hostID == "" {
		return fmt.Errorf("--host-id is required with --dedup protocol: this host's name in network %s", nw.Name)
	}
	if err := protocol.CheckName(mo.hostID); err != nil {
		return fmt.Errorf("--host-id: %w", err)
	}
	localURL := mo.localRedis
	for _, h := range nw.Hosts {
		if h.ID == mo.hostID && localURL == "" {
			localURL = h.Redis
		}
	}
	if localURL == "" {
		return fmt.Errorf("no Redis for host %s: give --local-redis URL or list the host under network %s in %s", mo.hostID, nw.Name, mo.configFile)
	}
	centerURL := mo.centerRedis
	if centerURL == "" {
		centerURL = nw.CenterRedis
	}
	local, err := dialRedis(ctx, "this host's Redis", localURL)
	if err != nil {
		return err
	}
	defer local.Close()
	center, err := dialRedis(ctx, "the center's Redis", centerURL)
	if err != nil {
		return err
	}
	defer center.Close()
	res, err := mixed.Run(ctx, mixed.Options{Crawl: cfg, Leave: mo.leave, Logger: logger, Registerer: prometheus.NewRegistry(),
		Host: protocol.HostOptions{Config: pc, Network: nw.Name, ID: mo.hostID, Local: local, Center: center, LocalURL: localURL}})
	// Interrupted (Ctrl-C): this host's summary so far, then err (exit 130).
	interrupted := errors.Is(err, context.Canceled) && ctx.Err() != nil
	if interrupted && cfg.Continuous {
		err = nil // Ctrl-C is how a continuous crawl ends: exit 0, as in the other modes
	}
	if err != nil && !interrupted || quiet {
		return err
	}
	verb, state := "crawled", "; stopped"
	switch {
	case interrupted:
		verb, state = "interrupted after", ""
	case res.Done:
		state = "; system done"
	}
	fmt.Fprintf(stdout, "host %s: %s %d URLs in %s (%.1f/s) into %s%s\n", protocol.HostAddr(nw.Name, mo.hostID), verb, res.Fetched,
		res.Elapsed.Round(time.Millisecond), float64(res.Fetched)/max(res.Elapsed.Seconds(), 1e-9), cfg.Data, state)
	if s, serr := crawl.Stats(cfg.Data); serr == nil {
		s.Print(stdout)
	}
	crawl.ScheduleStatus{Counts: res.Revisits}.Print(stdout, time.Now(), res.Fetched)
	return err
}

func runCenter(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("center", centerSynopsis, stderr)
	file := fs.String("protocol-config", "", "YAML file naming the networks, their centers' Redis and their hosts (required)")
	network := fs.String("network", "", "this center's network (required)")
	centerRedis := fs.String("center-redis", "", "this center's Redis URL, a Redis Cluster with addr= or cluster=true parameters (default: from --protocol-config)")
	status := fs.Bool("status", false, "print the network's pools, hosts and counters, then exit")
	asJSON := fs.Bool("json", false, "with --status: print JSON")
	metricsAddr := fs.String("metrics-addr", "", "serve Prometheus /metrics on this address, e.g. 127.0.0.1:9101")
	var expire time.Duration
	expireDoneFlag(fs, &expire)
	logLevel := fs.String("log-level", "warn", "log level: debug, info, warn, error")
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q: center takes only flags", fs.Arg(0))
	}
	if err := checkExpireDone(expire); err != nil {
		return err
	}
	logger, err := newLogger(stderr, *logLevel)
	if err != nil {
		return err
	}
	cfg, nw, err := loadProtocolConfig(*file, *network)
	if err != nil {
		return err
	}
	url := *centerRedis
	if url == "" {
		url = nw.CenterRedis
	}
	rdb, err := dialRedis(ctx, "the center's Redis", url)
	if err != nil {
		return err
	}
	defer rdb.Close()
	if *status {
		return printCenterStatus(ctx, rdb, cfg, nw.Name, *asJSON, stdout)
	}
	reg := prometheus.NewRegistry()
	if *metricsAddr != "" {
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		srv := &http.Server{Addr: *metricsAddr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go func() {
			if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
				logger.Error("cannot serve metrics", "addr", *metricsAddr, "err", err)
			}
		}()
		defer srv.Close()
	}
	c, err := protocol.NewCenter(protocol.CenterOptions{Config: cfg, Network: nw.Name, Redis: rdb, RedisURL: url, Logger: logger, Registerer: reg})
	if err != nil {
		return err
	}
	start := time.Now()
	if err := c.Run(ctx); err != nil {
		return err
	}
	st, err := protocol.ReadCenterState(ctx, rdb, cfg.Crawl, nw.Name)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "center %s: system done after %s; %d URLs submitted, %d passed, %d dropped as duplicates\n", nw.Name,
		time.Since(start).Round(time.Millisecond), st.Stats["urls_submitted"], st.Stats["urls_passed"],
		st.Stats["claimed_dup"]+st.Stats["network_dup"]+st.Stats["remote_dup"])
	// The system is done: --expire-done on this center's Redis.
	return expireDone(ctx, rdb, &redisFlags{url: url}, cfg.Crawl, expire, stdout)
}

// centerStatus is what spider center --status prints.
type centerStatus struct {
	Crawl      string            `json:"crawl"`
	Network    string            `json:"network"`
	Done       bool              `json:"done"`
	Pools      map[string]int64  `json:"pools"`
	Registered []string          `json:"registered_hosts"`
	LiveHosts  []string          `json:"live_hosts"`
	LiveNets   []string          `json:"live_networks"`
	Counters   map[string]int64  `json:"counters"`
	Hosts      map[string]any    `json:"hosts"`
	Errors     map[string]string `json:"errors,omitempty"`
}

func printCenterStatus(ctx context.Context, rdb redis.UniversalClient, cfg *protocol.Config, net string, asJSON bool, w io.Writer) error {
	st, err := protocol.ReadCenterState(ctx, rdb, cfg.Crawl, net)
	if err != nil {
		return err
	}
	s := centerStatus{Crawl: cfg.Crawl, Network: net, Done: st.Done, Counters: st.Stats, Hosts: map[string]any{}, Errors: map[string]string{},
		Pools: map[string]int64{"task_url": st.TaskURL, "local_reduce_pool": st.LocalPool, "dist_reduce_pool": st.DistPool,
			"inbox": st.Inbox, "outbox": st.Outbox, "claims": st.Claims}}
	for id := range st.Registered {
		s.Registered = append(s.Registered, id)
	}
	sort.Strings(s.Registered)
	s.LiveHosts, _ = liveMembers(ctx, rdb, protocol.HostMembersCrawl(cfg.Crawl, net))
	s.LiveNets, _ = liveMembers(ctx, rdb, protocol.CenterMembersCrawl(cfg.Crawl))
	for _, id := range s.Registered {
		hr, err := protocol.DialURL(st.Registered[id])
		if err != nil {
			s.Errors[id] = err.Error()
			continue
		}
		hs, err := protocol.ReadHostState(ctx, hr, cfg.Crawl, protocol.HostAddr(net, id))
		hr.Close()
		if err != nil {
			s.Errors[id] = err.Error()
			continue
		}
		s.Hosts[id] = map[string]int64{"task_pool": hs.TaskPool, "processing": hs.Processing, "url_pool": hs.URLPool,
			"finish_url": hs.Finished, "inbox": hs.Inbox, "outbox": hs.Outbox, "tasks_done": hs.Stats["tasks_done"]}
	}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(s)
	}
	fmt.Fprintf(w, "crawl %s, network %s, done: %v\n", s.Crawl, s.Network, s.Done)
	fmt.Fprintf(w, "live networks: %v\nregistered hosts: %v (live: %v)\n", s.LiveNets, s.Registered, s.LiveHosts)
	for _, k := range sortedKeys(s.Pools) {
		fmt.Fprintf(w, "  %-18s %d\n", k, s.Pools[k])
	}
	fmt.Fprintln(w, "counters:")
	for _, k := range sortedKeys(s.Counters) {
		fmt.Fprintf(w, "  %-18s %d\n", k, s.Counters[k])
	}
	for _, id := range s.Registered {
		if e, ok := s.Errors[id]; ok {
			fmt.Fprintf(w, "host %s: %s\n", id, e)
			continue
		}
		m := s.Hosts[id].(map[string]int64)
		fmt.Fprintf(w, "host %s:", id)
		for _, k := range sortedKeys(m) {
			fmt.Fprintf(w, " %s=%d", k, m[k])
		}
		fmt.Fprintln(w)
	}
	return nil
}

func liveMembers(ctx context.Context, rdb redis.UniversalClient, crawlName string) ([]string, error) {
	keys, err := cluster.NewKeys(crawlName)
	if err != nil {
		return nil, err
	}
	v, err := cluster.NewMembership(rdb, keys, cluster.MembershipConfig{}).Members(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(v.Members))
	for _, m := range v.Members {
		out = append(out, m.ID)
	}
	return out, nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
