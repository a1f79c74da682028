// Command topics runs the SPEC §4 experiment on websim: three topics crawled
// with traditional scheduling (FIFO: the URL whose host waited longest,
// topics mode "fifo") and with PQ-MCSA (mode "pq"), the same web, workers
// and politeness. Pages per topic are sampled every -sample over -duration
// (the paper's 24 h sampled every 2 h, scaled to minutes); the report gives
// per-interval pages, the coefficient of variation across topics, the
// intervals where a topic got no page, and the time from publication to
// fetch of the articles websim publishes during the run on the
// high-priority topic's host.
//
//	go run ./bench/topics -duration 60s -sample 5s
//
// With -cluster (cluster.go) it runs the experiment of issue 25 on the
// master–worker topology instead: the real binary as one coordinator
// (spider master --topics) and -nodes crawl nodes (spider worker --topics)
// over a redis-server, on a websim whose topics differ in size and latency,
// pages counted from the access log:
//
//	go run ./bench/topics -cluster
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/store"
	"github.com/spider-crawler/spider/internal/websim"
)

var names = []string{"alpha", "beta", "gamma"}

func main() {
	duration := flag.Duration("duration", 60*time.Second, "crawl time per mode (cluster default 90s)")
	sample := flag.Duration("sample", 5*time.Second, "sampling interval (cluster default 10s)")
	workers := flag.Int("concurrency", 2, "fetch workers (cluster: per crawl node, default 4)")
	latency := flag.Duration("latency", 20*time.Millisecond, "websim first-byte latency (fetch cost; single node only)")
	publish := flag.Duration("publish-every", 2*time.Second, "websim publishes one new article per section every … (single node only)")
	var cl clusterFlags
	cl.register(flag.CommandLine)
	flag.Parse()
	if cl.on {
		set := map[string]bool{}
		flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if !set["duration"] {
			*duration = 90 * time.Second
		}
		if !set["sample"] {
			*sample = 10 * time.Second
		}
		if !set["concurrency"] {
			*workers = 4
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err := runCluster(ctx, os.Stdout, cl, *duration, *sample, *workers)
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, "topics bench:", err)
			os.Exit(1)
		}
		return
	}
	fmt.Printf("# PQ-MCSA vs FIFO on websim (%s)\n\n", time.Now().Format("2006-01-02"))
	fmt.Printf("command: go run ./bench/topics -duration %s -sample %s -concurrency %d -latency %s -publish-every %s\n\n",
		*duration, *sample, *workers, *latency, *publish)
	var res []*modeResult
	for _, mode := range []string{"fifo", "pq"} {
		r, err := runMode(mode, *duration, *sample, *workers, *latency, *publish)
		if err != nil {
			fmt.Fprintln(os.Stderr, "topics bench:", err)
			os.Exit(1)
		}
		res = append(res, r)
	}
	summary(os.Stdout, res[0], res[1])
}

func runMode(mode string, duration, sample time.Duration, workers int, latency, publish time.Duration) (*modeResult, error) {
	ctx := context.Background()
	srv, err := websim.Start(ctx, websim.Config{Seed: 11, Hosts: 40, Domains: 4, PagesPerHost: 1000,
		Latency: latency, PublishEvery: publish})
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	dir, err := os.MkdirTemp("", "topics-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	words := func(tp websim.Topic) string {
		en, zh := websim.TopicWords(tp)
		return "[" + strings.Join(append(append([]string(nil), en...), zh...), ", ") + "]"
	}
	// alpha: one host, time-critical (hubs /s/1/ and /s/2/); beta: one
	// domain (10 hosts); gamma: two domains (20 hosts).
	yml := fmt.Sprintf(`mode: %s
period: %s
tick: 250ms
base_slice: 200ms
topics:
  - name: alpha
    priority: 2
    seeds: [%s]
    patterns: ["http://(test,d0,www,"]
    terms: %s
    min_pages: 40
    recrawl: 1s
    hubs: [%s, %s]
  - name: beta
    priority: 1
    seeds: [%s]
    patterns: ["http://(test,d1,"]
    terms: %s
    min_pages: 40
  - name: gamma
    priority: 0
    seeds: [%s, %s]
    patterns: ["http://(test,d2,", "http://(test,d3,"]
    terms: %s
    min_pages: 40
`, mode, sample, srv.URL("www.d0.test", "/"), words(websim.TopicTax), srv.URL("www.d0.test", "/s/1/"), srv.URL("www.d0.test", "/s/2/"),
		srv.URL("www.d1.test", "/"), words(websim.TopicFinance),
		srv.URL("www.d2.test", "/"), srv.URL("www.d3.test", "/"), words(websim.TopicSports))
	tfile := filepath.Join(dir, "topics.yaml")
	if err := os.WriteFile(tfile, []byte(yml), 0o644); err != nil {
		return nil, err
	}
	cfg := crawl.NewConfig()
	cfg.Data = filepath.Join(dir, "data")
	cfg.Topics = tfile
	cfg.Scope = "domain"
	cfg.AllowPrivate = true
	cfg.Resolve = srv.Resolve()
	cfg.Concurrency = workers
	cfg.Delay = crawl.Duration(10 * time.Millisecond)
	cfg.MaxDepth = -1
	eng, err := crawl.New(cfg, nil, prometheus.NewRegistry())
	if err != nil {
		return nil, err
	}
	defer eng.Close()
	rctx, cancel := context.WithTimeout(ctx, duration)
	defer cancel()
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- eng.Run(rctx) }()
	var samples []map[string]int64
	tick := time.NewTicker(sample)
	defer tick.Stop()
	running := true
	for running {
		select {
		case err := <-done:
			running = false
			if err != nil && !errors.Is(err, context.DeadlineExceeded) {
				return nil, err
			}
		case <-tick.C:
			st, _ := eng.TopicStatus()
			m := map[string]int64{}
			for _, t := range st.Tasks {
				m[t.Name] = t.Pages
				m[t.Name+"/relevant"] = t.Relevant
			}
			samples = append(samples, m)
		}
	}
	elapsed := time.Since(start)
	st, _ := eng.TopicStatus()
	if err := eng.Close(); err != nil {
		return nil, err
	}
	res := report(os.Stdout, mode, names, elapsed, sample, samples, fmt.Sprintf("pre-emptions %d", st.Preemptions))
	return res, freshness(cfg.Data, srv)
}

// freshness reports the delay from publication to first fetch of the new
// articles on alpha's host (www.d0.test).
func freshness(data string, srv *websim.Server) error {
	f, err := os.Open(filepath.Join(data, "records.jsonl"))
	if err != nil {
		return err
	}
	defer f.Close()
	first := map[string]time.Time{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		var r store.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return err
		}
		// Only the hubs' sections: other sections' new articles are found
		// by the ordinary crawl of their section pages, not by revisits.
		if !strings.Contains(r.URL, "//www.d0.test") || !strings.Contains(r.URL, "/s/1/new/") && !strings.Contains(r.URL, "/s/2/new/") {
			continue
		}
		if _, ok := websim.NewArticle(r.URL); ok {
			if t, seen := first[r.URL]; !seen || r.FetchedAt.Before(t) {
				first[r.URL] = r.FetchedAt
			}
		}
	}
	var lags []float64
	for u, at := range first {
		k, _ := websim.NewArticle(u)
		lags = append(lags, at.Sub(srv.PublishedAt(k)).Seconds())
	}
	sort.Float64s(lags)
	published := srv.Published()
	if len(lags) == 0 {
		fmt.Printf("freshness (alpha, hubs /s/1/ /s/2/): %d articles published per section, none fetched\n\n", published)
		return nil
	}
	fmt.Printf("freshness (alpha, hubs /s/1/ /s/2/): %d new articles fetched (of about %d published on the two hubs' sections); publication→fetch median %.2fs, p90 %.2fs, max %.2fs\n\n",
		len(lags), 2*published, lags[len(lags)/2], lags[len(lags)*9/10], lags[len(lags)-1])
	return nil
}
