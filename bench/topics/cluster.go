package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spider-crawler/spider/bench/internal/benchdir"
	"github.com/spider-crawler/spider/bench/internal/redisproc"
	"github.com/spider-crawler/spider/internal/store"
	"github.com/spider-crawler/spider/internal/websim"
)

// clusterFlags are the flags of the cluster experiment (-cluster).
type clusterFlags struct {
	on       bool
	nodes    int
	delay    time.Duration
	minPages int
	period   time.Duration
	quantum  time.Duration
	work     string
	keep     bool
	bin      string
	modes    string
	seed     int64
}

func (c *clusterFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&c.on, "cluster", false, "run the experiment on a cluster: the real binary, redis-server, one coordinator (spider master --topics) and -nodes crawl nodes (spider worker --topics), separate processes")
	fs.IntVar(&c.nodes, "nodes", 2, "cluster: crawl nodes; 0 runs one single-node `spider crawl --topics` process instead (the same web and sampling, for comparison)")
	fs.DurationVar(&c.delay, "delay", 100*time.Millisecond, "cluster: --delay, the smallest gap between requests to one host")
	fs.IntVar(&c.minPages, "min-pages", 15, "cluster: every topic's min_pages (relevant pages per period)")
	fs.DurationVar(&c.period, "period", 5*time.Second, "cluster: the topics file's period (the relevance daemon's accounting period)")
	fs.DurationVar(&c.quantum, "quantum", 100*time.Millisecond, "cluster: the topics file's quantum (the daemon's slice step; base_slice is 200ms)")
	fs.StringVar(&c.work, "work", "", "cluster: work directory (default: a new temporary one, removed at the end unless -keep)")
	fs.BoolVar(&c.keep, "keep", false, "cluster: keep the work directory (logs, data directories, topics files, and websim's access log as access.jsonl)")
	fs.StringVar(&c.bin, "bin", "", "cluster: a spider binary to run (default: go build ./cmd/spider into the work directory)")
	fs.StringVar(&c.modes, "modes", "fifo,pq", "cluster: the modes to run, in order")
	fs.Int64Var(&c.seed, "seed", 11, "cluster: websim seed")
}

// runCluster runs the SPEC §4 experiment on a cluster (issue 25): for each
// mode one coordinator and cl.nodes crawl nodes as separate processes of
// the real binary, on one redis-server and one websim, for duration;
// pages per topic are counted from websim's access log (hosts classified
// by topic) in intervals of sample from the coordinator's start. Every
// process it starts is stopped before it returns, also when ctx is
// cancelled.
func runCluster(ctx context.Context, out io.Writer, cl clusterFlags, duration, sample time.Duration, conc int) error {
	if sample <= 0 || duration < sample {
		return fmt.Errorf("cannot sample every %s over %s: give -sample > 0 and -duration ≥ -sample", sample, duration)
	}
	if cl.nodes < 0 {
		return fmt.Errorf("cannot run %d crawl nodes: give -nodes ≥ 0", cl.nodes)
	}
	root, err := benchdir.Root()
	if err != nil {
		return err
	}
	work, cleanup, err := benchdir.Work(cl.work, "topics-cluster", cl.keep)
	if err != nil {
		return err
	}
	failed := false // a failed run keeps its work directory: the processes' logs tell why
	defer func() {
		if !failed {
			cleanup()
		}
	}()
	bin := cl.bin
	if bin == "" {
		fmt.Fprintln(os.Stderr, "topics bench: building ./cmd/spider …")
		bin = filepath.Join(work, "spider")
		cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/spider")
		cmd.Dir = root
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("cannot build spider: %w\n%s", err, b)
		}
	}
	var rs *redisproc.Server // none for -nodes 0: the single-node crawl needs no Redis
	if cl.nodes > 0 {
		if rs, err = redisproc.Start(ctx, filepath.Join(work, "redis")); err != nil {
			return err
		}
		defer rs.Close()
	}
	var accessLog io.Writer
	if cl.keep {
		f, err := os.Create(filepath.Join(work, "access.jsonl"))
		if err != nil {
			return fmt.Errorf("cannot create the access log file: %w", err)
		}
		defer f.Close() // after web.Close (deferred later, run first)
		accessLog = f
	}
	web, err := startClusterWeb(ctx, work, cl.seed, accessLog)
	if err != nil {
		return err
	}
	defer web.Close()

	load, _ := os.ReadFile("/proc/loadavg")
	topo := "1 single-node process (spider crawl --topics)"
	if cl.nodes > 0 {
		topo = fmt.Sprintf("1 coordinator + %d crawl nodes (spider master / spider worker, separate processes); redis-server %s", cl.nodes, rs.Addr)
	}
	fmt.Fprintf(out, "# SPEC §4 on a cluster: PQ-MCSA vs FIFO (%s)\n\n", time.Now().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(out, "command: go run ./bench/topics -cluster -nodes %d -duration %s -sample %s -concurrency %d -delay %s -min-pages %d -period %s -quantum %s -seed %d\n\n",
		cl.nodes, duration, sample, conc, cl.delay, cl.minPages, cl.period, cl.quantum, cl.seed)
	fmt.Fprintf(out, "load average at start: %s\n\n", strings.TrimSpace(string(load)))
	fmt.Fprintf(out, "Setup: %s; websim seed %d, %d hosts in %d domains, %d pages a host; --concurrency %d per process, --delay %s, --scope domain, no depth limit; topics file: period %s, tick 250ms, base_slice 200ms, quantum %s, min_pages %d for every topic; pages sampled every %s.\n\n",
		topo, cl.seed, clusterHosts, clusterDomains, clusterPages, conc, cl.delay, cl.period, cl.quantum, cl.minPages, sample)
	fmt.Fprintf(out, "| topic | priority | websim domains | hosts | first-byte latency |\n|---|---|---|---|---|\n")
	for _, t := range clusterTopics {
		fmt.Fprintf(out, "| %s | %d | %v | %d | %s |\n", t.Name, t.Priority, t.Domains, len(web.seeds(t)), t.Latency)
	}
	fmt.Fprintln(out)

	results := map[string]*modeResult{}
	for _, mode := range strings.Split(cl.modes, ",") {
		mode = strings.TrimSpace(mode)
		if mode != "fifo" && mode != "pq" {
			return fmt.Errorf("cannot run mode %q: give -modes with fifo and/or pq", mode)
		}
		r, err := runClusterMode(ctx, out, cl, bin, rs, web, filepath.Join(work, mode), mode, duration, sample, conc)
		if err != nil {
			failed = true
			return fmt.Errorf("mode %s: %w (logs and data directories kept in %s)", mode, err, filepath.Join(work, mode))
		}
		results[mode] = r
	}
	summary(out, results["fifo"], results["pq"])
	load, _ = os.ReadFile("/proc/loadavg")
	fmt.Fprintf(out, "load average at end: %s\n", strings.TrimSpace(string(load)))
	if cl.keep {
		fmt.Fprintf(out, "\nwork directory kept: %s\n", work)
	}
	return nil
}

// topicsFile writes the topics file of mode: the cluster topics, each
// seeded with all its hosts and covering its domains.
func topicsFile(path, mode string, web *clusterWeb, period, quantum time.Duration, minPages int) error {
	var b strings.Builder
	fmt.Fprintf(&b, "mode: %s\nperiod: %s\ntick: 250ms\nbase_slice: 200ms\nquantum: %s\ntopics:\n", mode, period, quantum)
	for _, t := range clusterTopics {
		en, zh := websim.TopicWords(t.Terms)
		var pats []string
		for _, d := range t.Domains {
			pats = append(pats, strconv.Quote(fmt.Sprintf("http://(test,d%d,", d)))
		}
		fmt.Fprintf(&b, "  - name: %s\n    priority: %d\n    seeds: [%s]\n    patterns: [%s]\n    terms: [%s]\n    min_pages: %d\n",
			t.Name, t.Priority, strings.Join(web.seeds(t), ", "), strings.Join(pats, ", "),
			strings.Join(append(append([]string(nil), en...), zh...), ", "), minPages)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("cannot write the topics file: %w", err)
	}
	return nil
}

// runClusterMode runs one mode and prints its tables.
func runClusterMode(ctx context.Context, out io.Writer, cl clusterFlags, bin string, rs *redisproc.Server, web *clusterWeb,
	dir, mode string, duration, sample time.Duration, conc int) (*modeResult, error) {
	os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cannot create %s: %w", dir, err)
	}
	tfile := filepath.Join(dir, "topics.yaml")
	if err := topicsFile(tfile, mode, web, cl.period, cl.quantum, cl.minPages); err != nil {
		return nil, err
	}
	crawlName := "topics-" + mode
	crawlFlags := []string{"--resolve-file", web.resolveF, "--allow-private", "--scope", "domain", "--max-depth", "-1",
		"--delay", cl.delay.String(), "--concurrency", strconv.Itoa(conc), "--log-level", "warn"}
	var ps []*proc
	if cl.nodes == 0 {
		data := filepath.Join(dir, "crawl")
		args := append([]string{"crawl", "--topics", tfile, "--data", data, "--quiet"}, crawlFlags...)
		ps = append(ps, &proc{Name: "crawl", Args: args, Data: data, LogFile: filepath.Join(dir, "crawl.log")})
	} else {
		common := []string{"--redis", rs.URL(), "--crawl", crawlName, "--topics", tfile}
		mdata := filepath.Join(dir, "coordinator")
		// --wait-nodes: no task goes out before every crawl node joined, so
		// the first interval is not one node's alone.
		margs := append(append([]string{"master"}, common...), "--data", mdata, "--quiet", "--wait-nodes", strconv.Itoa(cl.nodes))
		margs = append(margs, crawlFlags...)
		ps = append(ps, &proc{Name: "coordinator", Args: margs, Data: mdata, LogFile: filepath.Join(dir, "coordinator.log")})
		for i := 1; i <= cl.nodes; i++ {
			name := "node" + strconv.Itoa(i)
			data := filepath.Join(dir, name)
			args := append(append([]string{"worker"}, common...), "--data", data, "--resolve-file", web.resolveF,
				"--allow-private", "--concurrency", strconv.Itoa(conc), "--log-level", "warn")
			ps = append(ps, &proc{Name: name, Args: args, Data: data, LogFile: filepath.Join(dir, name+".log")})
		}
	}
	fmt.Fprintf(os.Stderr, "topics bench: mode %s: %d processes for %s\n", mode, len(ps), duration)
	for i, p := range ps {
		fmt.Fprintf(out, "%s: `spider %s`\n\n", p.Name, strings.Join(p.Args, " "))
		if i > 0 {
			break // the other crawl nodes differ only in their --data
		}
	}
	web.Log().Reset()
	defer stopAll(ps, 15*time.Second)
	for i, p := range ps {
		if err := p.begin(bin); err != nil {
			return nil, err
		}
		if i == 0 && len(ps) > 1 {
			// The coordinator publishes the crawl's configuration first;
			// a crawl node started before it waits for it anyway.
			time.Sleep(300 * time.Millisecond)
		}
	}
	t0 := ps[0].start
	end := t0.Add(duration)
	var statuses []coordStatus
	tick := time.NewTicker(sample)
	defer tick.Stop()
	for time.Now().Before(end) {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
			if st, ok := readCoordStatus(ctx, rs, crawlName); ok {
				statuses = append(statuses, st)
			}
		case <-time.After(time.Until(end)):
		}
		for _, p := range ps {
			if p.exited() {
				return nil, fmt.Errorf("%s ended after %s, before the run's end: %v; its output ends: %s",
					p.Name, time.Since(p.start).Round(time.Second), p.err, p.out.String())
			}
		}
	}
	if st, ok := readCoordStatus(ctx, rs, crawlName); ok {
		statuses = append(statuses, st)
	}
	stopAll(ps, 15*time.Second)
	for _, p := range ps {
		if p.err != nil && p.cmd.ProcessState.ExitCode() != 130 { // 130: spider's "interrupted", the normal end of a stopped crawl
			fmt.Fprintf(out, "note: %s ended with %v after SIGTERM; its output ends: %s\n\n", p.Name, p.err, tailLines(p.out.String(), 5))
		}
	}

	// Pages per topic per interval, from the access log.
	n := int(duration / sample)
	names := make([]string, 0, len(clusterTopics))
	for _, t := range clusterTopics {
		names = append(names, t.Name)
	}
	per := make([]map[string]int64, n)
	for i := range per {
		per[i] = map[string]int64{}
	}
	other := 0
	for _, e := range web.Log().Entries() {
		if !isPage(e.Path) || e.Time.Before(t0) || !e.Time.Before(t0.Add(time.Duration(n)*sample)) {
			continue
		}
		tp := web.topicOfHost(e.Host)
		if tp == "" {
			other++
			continue
		}
		per[int(e.Time.Sub(t0)/sample)][tp]++
	}
	samples := make([]map[string]int64, n)
	cum := map[string]int64{}
	for i := range per {
		for k, v := range per[i] {
			cum[k] += v
		}
		samples[i] = map[string]int64{}
		for k, v := range cum {
			samples[i][k] = v
		}
	}
	res := report(out, mode, names, time.Duration(n)*sample, sample, samples, fmt.Sprintf("requests to hosts of no topic %d", other))
	if cl.nodes == 0 {
		// The single-node crawl writes the same status to a file.
		var st coordStatus
		if b, err := os.ReadFile(filepath.Join(ps[0].Data, "topics", "status.json")); err == nil && json.Unmarshal(b, &st) == nil {
			statuses = append(statuses, st)
		}
	}
	if len(statuses) > 0 {
		printCoordStatus(out, statuses[len(statuses)-1])
	} else if cl.nodes > 0 {
		fmt.Fprintf(out, "the coordinator published no topics status (key {spider:%s}:mw:topics:status)\n\n", crawlName)
	}
	hostGaps(out, web, names, t0, t0.Add(time.Duration(n)*sample), cl.delay)
	nodeShares(out, ps, names, web, t0, t0.Add(time.Duration(n)*sample))
	dup := web.Log().Duplicates()
	extra := 0
	for _, c := range dup {
		extra += c - 1
	}
	fmt.Fprintf(out, "duplicate fetches (access log, whole run, robots.txt excluded): %d URLs fetched more than once, %d extra fetches", len(dup), extra)
	if len(dup) > 0 {
		shown := 0
		for u, c := range dup {
			if shown == 3 {
				break
			}
			fmt.Fprintf(out, "; e.g. %s ×%d", u, c)
			shown++
		}
	}
	fmt.Fprintf(out, "\n\n")
	return res, nil
}

// hostGaps prints, per topic, the median time from the end of a host's
// answer to the next request to that host, in [from, to): what politeness
// (--delay) and the round trip between the crawl's scheduler and its
// fetchers add to each page of a host.
func hostGaps(out io.Writer, web *clusterWeb, names []string, from, to time.Time, delay time.Duration) {
	last := map[string]time.Time{}
	gaps := map[string][]time.Duration{}
	for _, e := range web.Log().Entries() { // by arrival; a host's requests do not overlap
		if e.Time.Before(from) || !e.Time.Before(to) {
			continue
		}
		tp := web.topicOfHost(e.Host)
		if tp == "" {
			continue
		}
		// An entry's Time is after the latency the benchmark's handler
		// added: the request arrived that much earlier.
		if prev, ok := last[e.Host]; ok && e.Time.Add(-web.latency[e.Host]).After(prev) {
			gaps[tp] = append(gaps[tp], e.Time.Add(-web.latency[e.Host]).Sub(prev))
		}
		if e.End.After(last[e.Host]) {
			last[e.Host] = e.End
		}
	}
	var cells []string
	for _, n := range names {
		g := gaps[n]
		if len(g) == 0 {
			cells = append(cells, n+" -")
			continue
		}
		slices.Sort(g)
		cells = append(cells, fmt.Sprintf("%s %s", n, g[len(g)/2].Round(time.Millisecond)))
	}
	fmt.Fprintf(out, "per-host gap from an answer's end to the host's next request, median (--delay %s): %s\n\n", delay, strings.Join(cells, ", "))
}

// isPage tells a page request from robots.txt and sitemaps.
func isPage(path string) bool {
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	return path != "/robots.txt" && path != "/robots-real.txt" && !strings.HasPrefix(path, "/sitemap")
}

// nodeShares prints each crawl node's pages per topic within [from, to),
// from the records.jsonl of its data directory.
func nodeShares(out io.Writer, ps []*proc, names []string, web *clusterWeb, from, to time.Time) {
	type row struct {
		name   string
		counts map[string]int
		total  int
	}
	var rows []row
	all := 0
	for _, p := range ps {
		if p.Name == "coordinator" {
			continue
		}
		r := row{name: p.Name, counts: map[string]int{}}
		err := eachRecord(filepath.Join(p.Data, "records.jsonl"), func(rec *store.Record) {
			if rec.FetchedAt.Before(from) || !rec.FetchedAt.Before(to) {
				return
			}
			host := rec.URL
			if i := strings.Index(host, "://"); i >= 0 {
				host = host[i+3:]
			}
			if i := strings.IndexAny(host, ":/"); i >= 0 {
				host = host[:i]
			}
			if !isPage(strings.TrimPrefix(rec.URL, "http://"+host)) {
				return
			}
			tp := web.topicOfHost(host)
			if tp == "" {
				tp = "(none)"
			}
			r.counts[tp]++
			r.total++
		})
		if err != nil {
			fmt.Fprintf(out, "%s: cannot read its records: %v\n\n", p.Name, err)
			continue
		}
		all += r.total
		rows = append(rows, r)
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(out, "pages per crawl node (its records.jsonl, same window):\n\n| node | %s | no topic | total | share |\n|---|%s---|---|---|\n",
		strings.Join(names, " | "), strings.Repeat("---|", len(names)))
	for _, r := range rows {
		cells := []string{}
		for _, n := range names {
			cells = append(cells, strconv.Itoa(r.counts[n]))
		}
		share := 0.0
		if all > 0 {
			share = 100 * float64(r.total) / float64(all)
		}
		fmt.Fprintf(out, "| %s | %s | %d | %d | %.0f%% |\n", r.name, strings.Join(cells, " | "), r.counts["(none)"], r.total, share)
	}
	fmt.Fprintln(out)
}

// eachRecord calls f for every record of a records.jsonl file; a torn last
// line (a process killed while writing) is skipped.
func eachRecord(path string, f func(*store.Record)) error {
	fh, err := os.Open(path)
	if err != nil {
		return err
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		var r store.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			continue
		}
		f(&r)
	}
	return sc.Err()
}

// coordStatus is the part of the coordinator's topics status
// ({spider:NAME}:mw:topics:status, masterworker.TopicStatus) the report
// prints. It is decoded here rather than with the masterworker type so the
// benchmark reads what the coordinator wrote, whatever else it holds.
type coordStatus struct {
	Preemptions int64 `json:"preemptions"`
	Switches    int64 `json:"switches"`
	Tasks       []struct {
		Name     string `json:"name"`
		Priority int    `json:"priority"`
		Pages    int64  `json:"pages"`
		Relevant int64  `json:"relevant"`
		SliceMS  int64  `json:"slice_total_ms"`
		Shrinks  int64  `json:"shrinks"`
		Grows    int64  `json:"grows"`
	} `json:"tasks"`
	Nodes []struct {
		Worker      int     `json:"worker"`
		Node        string  `json:"node"`
		Fetched     int64   `json:"fetched"`
		PagesPerSec float64 `json:"pages_per_sec"`
		Buckets     int     `json:"buckets"`
		Alive       bool    `json:"alive"`
	} `json:"nodes"`
}

func readCoordStatus(ctx context.Context, rs *redisproc.Server, crawl string) (coordStatus, bool) {
	var st coordStatus
	if rs == nil {
		return st, false
	}
	b, err := rs.Client.Get(ctx, "{spider:"+crawl+"}:mw:topics:status").Bytes()
	if err != nil || json.Unmarshal(b, &st) != nil {
		return st, false
	}
	return st, true
}

func printCoordStatus(out io.Writer, st coordStatus) {
	fmt.Fprintf(out, "scheduler's topics status at the end (coordinator's topics:status, or the single node's status file): pre-emptions %d, switches %d\n\n| task | priority | pages | relevant | slice | shrinks | grows |\n|---|---|---|---|---|---|---|\n",
		st.Preemptions, st.Switches)
	for _, t := range st.Tasks {
		fmt.Fprintf(out, "| %s | %d | %d | %d | %dms | %d | %d |\n", t.Name, t.Priority, t.Pages, t.Relevant, t.SliceMS, t.Shrinks, t.Grows)
	}
	fmt.Fprintln(out)
	if len(st.Nodes) > 0 {
		fmt.Fprintf(out, "| crawl node | worker | fetched | pages/s | buckets | alive |\n|---|---|---|---|---|---|\n")
		for _, n := range st.Nodes {
			fmt.Fprintf(out, "| %s | %d | %d | %.1f | %d | %v |\n", n.Node, n.Worker, n.Fetched, n.PagesPerSec, n.Buckets, n.Alive)
		}
		fmt.Fprintln(out)
	}
}

func tailLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " / ")
}
