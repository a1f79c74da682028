// Command protocol measures the SPEC §0 de-duplication protocol against two simpler
// alternatives on the same URL stream, each with real redis-server processes on
// loopback, and prints Markdown:
//
//	protocol      NETS networks × HOSTS hosts, one Redis per center and per host; every
//	              host's URL_pool receives its share of the stream; the time until every
//	              distinct URL has passed the protocol (and was handed to a task_pool,
//	              which a stub crawler drains), frames and bytes per URL, round latency.
//	bucket-owner  the same hosts' Redis; each URL is checked (SADD) in the Redis of
//	              the host that owns its site (rendezvous hash), one pipeline per owner
//	              per batch.
//	central-bloom one Redis holds a Bloom filter; every host sends each batch to it
//	              (one Lua test-and-set per batch).
//
//	go run ./bench/protocol --networks 2 --hosts 3 --urls 20000 --dup 3
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"math/bits"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/spider-crawler/spider/internal/dedup"
	"github.com/spider-crawler/spider/internal/protocol"
)

func main() {
	nets := flag.Int("networks", 2, "networks")
	hosts := flag.Int("hosts", 3, "hosts per network")
	nURLs := flag.Int("urls", 20000, "distinct URLs in the stream")
	dup := flag.Int("dup", 3, "times each URL appears (at random hosts)")
	batch := flag.Int("batch", 256, "URLs per frame / per batch")
	flag.Parse()
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "protocol-bench")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	var servers []*redisServer
	defer func() {
		for _, s := range servers {
			s.close()
		}
	}()
	start := func(name string) *redisServer {
		s, err := startRedis(ctx, filepath.Join(dir, name))
		if err != nil {
			log.Fatal(err)
		}
		servers = append(servers, s)
		return s
	}
	cfg := &protocol.Config{Crawl: "bench", Batch: *batch, Flush: protocol.Duration(20 * time.Millisecond),
		Heartbeat: protocol.Duration(200 * time.Millisecond), MemberTTL: protocol.Duration(2 * time.Second),
		Stable: protocol.Duration(300 * time.Millisecond)}
	centerRedis := map[string]*redisServer{}
	hostRedis := map[string]*redisServer{}
	var hostAddrs []string
	for i := range *nets {
		n := fmt.Sprintf("n%d", i+1)
		centerRedis[n] = start(n)
		nw := protocol.Network{Name: n, CenterRedis: "redis://" + centerRedis[n].addr}
		for j := range *hosts {
			id := fmt.Sprintf("h%d", j+1)
			a := protocol.HostAddr(n, id)
			hostRedis[a] = start(n + "-" + id)
			hostAddrs = append(hostAddrs, a)
			nw.Hosts = append(nw.Hosts, protocol.HostEntry{ID: id, Redis: "redis://" + hostRedis[a].addr})
		}
		cfg.Networks = append(cfg.Networks, nw)
	}
	if err := cfg.Validate(); err != nil {
		log.Fatal(err)
	}
	// The stream: each distinct URL dup times, at random hosts.
	rng := rand.New(rand.NewPCG(1, 2))
	stream := map[string][]string{}
	for i := range *nURLs {
		u := fmt.Sprintf("http://site%d.test/p/%d.html", i%500, i)
		for range *dup {
			a := hostAddrs[rng.IntN(len(hostAddrs))]
			stream[a] = append(stream[a], u)
		}
	}
	total := *nURLs * *dup
	fmt.Printf("# design §0 de-duplication protocol vs alternatives\n\n%s; %d networks × %d hosts (one redis-server each, plus one per center); %d distinct URLs × %d = %d URLs in; batch %d.\n\n",
		time.Now().UTC().Format("2006-01-02"), *nets, *hosts, *nURLs, *dup, total, *batch)
	fmt.Println("| method | distinct URLs out | time (s) | input URLs/s | messages per input URL | bytes per input URL | mean round (ms) |")
	fmt.Println("|---|---|---|---|---|---|---|")
	runProtocol(ctx, cfg, centerRedis, hostRedis, stream, *nURLs, total)
	runBucketOwner(ctx, hostRedis, hostAddrs, stream, *nURLs, total, *batch)
	runBloom(ctx, centerRedis["n1"], stream, *nURLs, total, *batch)
}

func runProtocol(ctx context.Context, cfg *protocol.Config, centers, hostsR map[string]*redisServer, stream map[string][]string, distinct, total int) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	regs := map[string]*prometheus.Registry{}
	var wg sync.WaitGroup
	for n, s := range centers {
		reg := prometheus.NewRegistry()
		regs[n] = reg
		c, err := protocol.NewCenter(protocol.CenterOptions{Config: cfg, Network: n, Redis: s.rdb, Registerer: reg})
		if err != nil {
			log.Fatal(err)
		}
		wg.Add(1)
		go func() { defer wg.Done(); c.Run(ctx) }()
	}
	var handed atomic.Int64
	var hs []*protocol.Host
	for a, s := range hostsR {
		net, id := protocol.SplitAddr(a)
		h, err := protocol.NewHost(protocol.HostOptions{Config: cfg, Network: net, ID: id, Local: s.rdb, Center: centers[net].rdb, LocalURL: "redis://" + s.addr})
		if err != nil {
			log.Fatal(err)
		}
		if err := h.Start(ctx); err != nil {
			log.Fatal(err)
		}
		hs = append(hs, h)
		// A stub crawler: takes tasks and completes them without fetching.
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				ts, err := h.Take(ctx, 256)
				if err != nil || len(ts) == 0 {
					time.Sleep(5 * time.Millisecond)
					continue
				}
				for _, t := range ts {
					h.Complete(ctx, t, nil)
				}
				handed.Add(int64(len(ts)))
			}
		}()
	}
	time.Sleep(500 * time.Millisecond) // memberships settle
	t0 := time.Now()
	for a, us := range stream {
		h := findHost(hs, a)
		ts := make([]protocol.Task, len(us))
		for i, u := range us {
			ts[i] = protocol.Task{URL: u}
		}
		if err := h.AddSeeds(ctx, ts); err != nil {
			log.Fatal(err)
		}
	}
	for handed.Load() < int64(distinct) && time.Since(t0) < 5*time.Minute {
		time.Sleep(5 * time.Millisecond)
	}
	el := time.Since(t0)
	time.Sleep(200 * time.Millisecond) // anything extra (a duplicate) would show now
	var frames, bytes int64
	for n, s := range centers {
		st, _ := protocol.ReadCenterState(ctx, s.rdb, cfg.Crawl, n)
		frames += st.Stats["frames_sent"] + st.Stats["tasks_dispatched"]/int64(cfg.Batch) + 1
		bytes += st.Stats["bytes_sent"]
	}
	for a, s := range hostsR {
		st, _ := protocol.ReadHostState(ctx, s.rdb, cfg.Crawl, a)
		frames += st.Stats["frames_sent"]
		bytes += st.Stats["bytes_sent"]
	}
	var sum float64
	var cnt uint64
	for _, reg := range regs {
		mfs, _ := reg.Gather()
		for _, mf := range mfs {
			if mf.GetName() != "spider_protocol_round_seconds" {
				continue
			}
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "pass" && l.GetValue() == "total" {
						sum += m.GetHistogram().GetSampleSum()
						cnt += m.GetHistogram().GetSampleCount()
					}
				}
			}
		}
	}
	fmt.Printf("| protocol (design §0) | %d | %.2f | %.0f | %.3f | %.1f | %.1f |\n", handed.Load(), el.Seconds(), float64(total)/el.Seconds(),
		float64(frames)/float64(total), float64(bytes)/float64(total), 1000*sum/float64(max(cnt, 1)))
	cancel()
	for _, h := range hs {
		h.Close()
	}
	wg.Wait()
}

func findHost(hs []*protocol.Host, a string) *protocol.Host {
	for _, h := range hs {
		if h.Addr() == a {
			return h
		}
	}
	log.Fatalf("no host %s", a)
	return nil
}

func runBucketOwner(ctx context.Context, hostsR map[string]*redisServer, addrs []string, stream map[string][]string, distinct, total, batch int) {
	var news, msgs, bytes atomic.Int64
	var wg sync.WaitGroup
	t0 := time.Now()
	for _, us := range stream {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < len(us); i += batch {
				part := us[i:min(i+batch, len(us))]
				groups := map[string][]string{}
				for _, u := range part {
					o := protocol.Pick(protocol.Site(u), addrs)
					groups[o] = append(groups[o], u)
				}
				for o, g := range groups {
					p := hostsR[o].rdb.Pipeline()
					cmds := make([]*redis.IntCmd, len(g))
					for j, u := range g {
						cmds[j] = p.SAdd(ctx, "bench:owner:seen", protocol.URLHash(u))
						bytes.Add(int64(len(u)))
					}
					if _, err := p.Exec(ctx); err != nil {
						log.Fatal(err)
					}
					msgs.Add(1)
					for _, c := range cmds {
						news.Add(c.Val())
					}
				}
			}
		}()
	}
	wg.Wait()
	el := time.Since(t0)
	fmt.Printf("| bucket-owner SADD | %d | %.2f | %.0f | %.3f | %.1f | – |\n", news.Load(), el.Seconds(), float64(total)/el.Seconds(),
		float64(msgs.Load())/float64(total), float64(bytes.Load())/float64(total))
}

// bloomScript tests and sets k bits per URL in one Redis string; it returns the number
// of URLs that were new. Written here rather than taken from internal/rstate because
// rstate's filter lives inside its per-bucket state scripts.
var bloomScript = redis.NewScript(`
local k = tonumber(ARGV[1])
local new = 0
for i = 2, #ARGV, k do
  local seen = true
  for j = 0, k - 1 do
    if redis.call('SETBIT', KEYS[1], ARGV[i + j], 1) == 0 then seen = false end
  end
  if not seen then new = new + 1 end
end
return new`)

func runBloom(ctx context.Context, s *redisServer, stream map[string][]string, distinct, total, batch int) {
	const m = 1 << 24 // bits: about 0.01% false positives at 20,000 URLs with k = 7
	const k = 7
	var news, msgs, bytes atomic.Int64
	var wg sync.WaitGroup
	t0 := time.Now()
	for _, us := range stream {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < len(us); i += batch {
				part := us[i:min(i+batch, len(us))]
				args := []any{k}
				for _, u := range part {
					key := dedup.KeyOf(u)
					h := key.H1
					for range k {
						pos, _ := bits.Mul64(h, m)
						args = append(args, strconv.FormatUint(pos, 10))
						h += key.H2
					}
					bytes.Add(int64(len(u)))
				}
				n, err := bloomScript.Run(ctx, s.rdb, []string{"bench:bloom"}, args...).Int64()
				if err != nil {
					log.Fatal(err)
				}
				news.Add(n)
				msgs.Add(1)
			}
		}()
	}
	wg.Wait()
	el := time.Since(t0)
	fmt.Printf("| central Bloom (one Redis) | %d | %.2f | %.0f | %.3f | %.1f | – |\n", news.Load(), el.Seconds(), float64(total)/el.Seconds(),
		float64(msgs.Load())/float64(total), float64(bytes.Load())/float64(total))
}
