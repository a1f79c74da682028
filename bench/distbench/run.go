package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/spider-crawler/spider/internal/websim"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/p2p"
	"github.com/spider-crawler/spider/internal/partition"
	"github.com/spider-crawler/spider/internal/store"
)

// bench holds what every run shares: the binary, Redis and the work
// directory.
type bench struct {
	bin     string
	rs      *redisServer
	work    string
	log     io.Writer
	timeout time.Duration
	buckets int
	level   string        // --log-level of every process
	stagger time.Duration // pause between process starts
	stall   time.Duration // a run with no request for this long is a hang (0: no check)
}

// topology is "p2p" or "mw" (master–worker).
type topology string

const (
	topoP2P topology = "p2p"
	topoMW  topology = "mw"
)

// runSpec is one distributed crawl.
type runSpec struct {
	Name        string
	Topo        topology
	Members     []partition.Member // p2p: the nodes and weights
	Workers     int                // mw: worker processes
	Concurrency int
	Delay       time.Duration
	Timeout     time.Duration // fetch time-out (0: spider's default)
	Buckets     int           // p2p --buckets (0: the bench's)
	Extra       []string      // more crawl flags (p2p nodes, or the master)
}

// nodeResult is one process's view of the crawl.
type nodeResult struct {
	Name    string
	Weight  int
	Proc    *proc
	Summary *crawl.Summary // nil if its data directory has no records
	URLs    map[string]int // URL → records in this node's directory
	Agent   string         // the User-Agent it sent (p2p)
}

// runResult is everything measured about one run.
type runResult struct {
	Spec      runSpec
	Nodes     []*nodeResult // p2p nodes, or the workers
	Master    *proc         // mw only
	Err       error
	Wall      time.Duration // first process start to last exit
	Start     time.Time     // first process start
	Log       logCheck
	Sent      map[string]map[string]int64
	Commands  int64
	TopCmds   []cmdCount
	MemBefore int64 // used_memory after the flush
	MemPeak   int64 // largest used_memory sampled while the crawl ran
	MemAfter  int64 // used_memory when every process had exited
	Seen      int64 // p2p: Σ seen over the buckets' meta
	Pending   int64 // p2p: Σ pending over the buckets
	Buckets   int   // p2p: buckets with state
	CallKeys  int   // rstate reply keys (:call:*) still alive after the run
	CallBytes int64 // their MEMORY USAGE
	RedisCPU  time.Duration
	BenchCPU  time.Duration // this process (websim, sampling) during the run
	CrossDup  int           // URLs recorded by more than one node
	Records   int           // records over every node
	LogNotes  []string      // warnings and errors the processes logged, counted by message
	Hung      bool          // stopped by the stall check; Wall ends at the last request
	Args      []string      // one node's command line, for the report
	MWArgs    []string      // mw: the master's and one worker's command line
}

// Fetched is the number of distinct URLs recorded over every node.
func (r *runResult) Fetched() int {
	seen := map[string]bool{}
	for _, n := range r.Nodes {
		for u := range n.URLs {
			seen[u] = true
		}
	}
	return len(seen)
}

// PagesPerSec is the access log's page requests over the run's wall time.
func (r *runResult) PagesPerSec() float64 {
	if r.Wall <= 0 {
		return 0
	}
	return float64(r.Log.Pages) / r.Wall.Seconds()
}

// ActivePerSec is page requests over the access log's active window.
func (r *runResult) ActivePerSec() float64 {
	a := r.Log.Active()
	if a <= 0 {
		return 0
	}
	return float64(r.Log.Pages) / a.Seconds()
}

// CrawlCPU is the CPU time of every spider process.
func (r *runResult) CrawlCPU() time.Duration {
	var t time.Duration
	for _, n := range r.Nodes {
		t += n.Proc.CPU
	}
	if r.Master != nil {
		t += r.Master.CPU
	}
	return t
}

// agentOf is the User-Agent a p2p node sends: its robots.txt token stays
// "spider", the comment names the node so that the access log tells the
// nodes apart.
func agentOf(node string) string { return "spider/0.1 (distbench node " + node + ")" }

// run performs one crawl of w and measures it. A run that fails (a process
// exits with an error, or a hang) is returned with Err set and whatever was
// measured.
func (b *bench) run(ctx context.Context, w *web, spec runSpec) *runResult {
	res := &runResult{Spec: spec}
	dir := filepath.Join(b.work, spec.Name)
	os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		res.Err = fmt.Errorf("cannot create %s: %w", dir, err)
		return res
	}
	if err := b.rs.reset(ctx); err != nil {
		res.Err = err
		return res
	}
	w.srv.Log().Reset()
	before, err := b.rs.info(ctx, "memory", "cpu")
	if err != nil {
		res.Err = err
		return res
	}
	res.MemBefore = before.int("used_memory")
	res.MemPeak = res.MemBefore
	crawlName := strings.ReplaceAll(spec.Name, "/", "-")
	buckets := spec.Buckets
	if buckets == 0 {
		buckets = b.buckets
	}
	common := []string{"--redis", b.rs.url(), "--crawl", crawlName}
	crawlFlags := []string{"--resolve-file", w.resolveFile, "--allow-private", "--delay", spec.Delay.String(),
		"--scope", "any", "--max-depth", "-1", "--concurrency", strconv.Itoa(spec.Concurrency), "--config", w.configFile}
	if spec.Timeout > 0 {
		crawlFlags = append(crawlFlags, "--timeout", spec.Timeout.String(), "--first-byte-timeout", spec.Timeout.String())
	}
	crawlFlags = append(crawlFlags, spec.Extra...)
	var ps []*proc
	switch spec.Topo {
	case topoP2P:
		for _, m := range spec.Members {
			data := filepath.Join(dir, m.ID)
			args := append(append([]string{"crawl"}, common...), "--node-id", m.ID, "--weight", strconv.Itoa(m.Weight),
				"--buckets", strconv.Itoa(buckets), "--data", data, "--quiet", "--user-agent", agentOf(m.ID))
			args = append(args, crawlFlags...)
			args = append(args, "--log-level", b.level)
			p := &proc{Name: m.ID, Args: args, Data: data, LogFile: filepath.Join(dir, m.ID+".log")}
			ps = append(ps, p)
			res.Nodes = append(res.Nodes, &nodeResult{Name: m.ID, Weight: m.Weight, Proc: p, Agent: agentOf(m.ID)})
		}
		res.Args = ps[0].Args
	case topoMW:
		mdata := filepath.Join(dir, "master")
		margs := append(append([]string{"master"}, common...), "--data", mdata, "--quiet")
		margs = append(margs, crawlFlags...)
		margs = append(margs, "--log-level", b.level)
		res.Master = &proc{Name: "master", Args: margs, Data: mdata, LogFile: filepath.Join(dir, "master.log")}
		ps = append(ps, res.Master)
		for i := 1; i <= spec.Workers; i++ {
			name := "w" + strconv.Itoa(i)
			data := filepath.Join(dir, name)
			args := append(append([]string{"worker"}, common...), "--data", data, "--resolve-file", w.resolveFile,
				"--allow-private", "--concurrency", strconv.Itoa(spec.Concurrency), "--log-level", b.level)
			p := &proc{Name: name, Args: args, Data: data, LogFile: filepath.Join(dir, name+".log")}
			ps = append(ps, p)
			res.Nodes = append(res.Nodes, &nodeResult{Name: name, Proc: p})
		}
		res.MWArgs = []string{strings.Join(margs, " "), strings.Join(ps[1].Args, " ")}
	default:
		res.Err = fmt.Errorf("cannot run topology %q: want p2p or mw", spec.Topo)
		return res
	}
	cpu0 := selfCPU()
	var mu sync.Mutex
	lastLen, lastChange := -1, time.Now()
	sample := func() error {
		if in, err := b.rs.info(ctx, "memory"); err == nil {
			mu.Lock()
			res.MemPeak = max(res.MemPeak, in.int("used_memory"))
			mu.Unlock()
		}
		if n := w.srv.Log().Len(); n != lastLen {
			lastLen, lastChange = n, time.Now()
			return nil
		}
		if b.stall <= 0 || time.Since(lastChange) < b.stall {
			return nil
		}
		return fmt.Errorf("%w: no request for %s while the processes ran (%d requests in all); %s",
			errStall, b.stall, lastLen, idleReports(ctx, b.rs.rdb, crawlName))
	}
	fmt.Fprintf(b.log, "  run %s: %d processes\n", spec.Name, len(ps))
	res.Err = runProcs(ctx, b.bin, ps, b.stagger, b.timeout, sample)
	res.Wall = span(ps)
	res.Start = firstStart(ps)
	waitQuiet(w.srv.Log())
	if os.Getenv("DISTBENCH_TIMELINE") != "" {
		timeline(b.log, spec.Name, firstStart(ps), w.srv.Log().Entries())
	}
	res.BenchCPU = selfCPU() - cpu0
	for _, p := range ps {
		if p.Err != nil && res.Err == nil {
			res.Err = fmt.Errorf("%s: %w; output: %s", p.Name, p.Err, strings.TrimSpace(p.Output))
		}
	}
	for _, p := range ps {
		res.LogNotes = append(res.LogNotes, logNotes(p)...)
	}
	after, err := b.rs.info(ctx, "memory", "cpu", "commandstats")
	if err != nil {
		res.Err = errors.Join(res.Err, err)
		return res
	}
	res.MemAfter = after.int("used_memory")
	res.MemPeak = max(res.MemPeak, res.MemAfter)
	cpuSecs := after.float("used_cpu_user") + after.float("used_cpu_sys") - before.float("used_cpu_user") - before.float("used_cpu_sys")
	res.RedisCPU = time.Duration(cpuSecs * float64(time.Second))
	calls, err := after.commandCalls()
	if err != nil {
		res.Err = errors.Join(res.Err, err)
	}
	res.Commands, res.TopCmds = crawlCalls(calls)
	names := []string{"mw"} // the master's state (rstate bucket "mw")
	if spec.Topo == topoP2P {
		res.Sent, err = p2p.SentTable(ctx, b.rs.rdb, crawlName)
		if err != nil {
			res.Err = errors.Join(res.Err, err)
		}
		names = names[:0]
		for i := range buckets {
			names = append(names, "b"+strconv.Itoa(i))
		}
	}
	res.Seen, res.Pending, res.Buckets, err = bucketSizes(ctx, b.rs.rdb, crawlName, names)
	if err != nil {
		res.Err = errors.Join(res.Err, err)
	}
	res.CallKeys, res.CallBytes, err = callKeys(ctx, b.rs.rdb, crawlName)
	if err != nil {
		res.Err = errors.Join(res.Err, err)
	}
	res.Log = w.check()
	if errors.Is(res.Err, errStall) && !res.Log.Last.IsZero() {
		// The crawl's work ended with its last request; the wait for an
		// end that never came is not crawl time.
		res.Wall = res.Log.Last.Sub(firstStart(ps))
		res.Hung = true
	}
	all := map[string]int{}
	for _, n := range res.Nodes {
		n.URLs, err = recordURLs(n.Proc.Data)
		if err != nil {
			res.Err = errors.Join(res.Err, err)
		}
		if s, err := crawl.Stats(n.Proc.Data); err == nil {
			n.Summary = s
		}
		for u, c := range n.URLs {
			res.Records += c
			all[u]++
		}
	}
	for _, c := range all {
		if c > 1 {
			res.CrossDup++
		}
	}
	return res
}

// recordURLs reads the URLs of a data directory's records (URL → records).
// A directory without records gives an empty map.
func recordURLs(dir string) (map[string]int, error) {
	out := map[string]int{}
	if _, err := os.Stat(filepath.Join(dir, "records.jsonl")); errors.Is(err, os.ErrNotExist) {
		return out, nil
	}
	rs, err := store.OpenRecords(dir, store.Options{})
	if err != nil {
		return out, fmt.Errorf("cannot open the records of %s: %w", dir, err)
	}
	defer rs.Close()
	_, err = rs.Iterate(func(r store.Record) error { out[r.URL]++; return nil })
	if err != nil {
		return out, fmt.Errorf("cannot read the records of %s: %w", dir, err)
	}
	return out, nil
}

// bucketSizes sums seen and pending over the named rstate buckets of a
// crawl ("b0"… for p2p, "mw" for the master), from each bucket's meta hash
// and pending hash, and counts the buckets that have state.
func bucketSizes(ctx context.Context, rdb *redis.Client, crawlName string, names []string) (seen, pending int64, buckets int, err error) {
	m := len(names)
	pipe := rdb.Pipeline()
	metas := make([]*redis.StringCmd, m)
	pends := make([]*redis.IntCmd, m)
	for i, name := range names {
		prefix := "spider:" + crawlName + ":{" + name + "}:"
		metas[i] = pipe.HGet(ctx, prefix+"meta", "seen")
		pends[i] = pipe.HLen(ctx, prefix+"pending")
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return 0, 0, 0, fmt.Errorf("cannot read the buckets' sizes: %w", err)
	}
	for i := range m {
		v, err := metas[i].Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		n, perr := strconv.ParseInt(v, 10, 64)
		if err != nil || perr != nil {
			return 0, 0, 0, fmt.Errorf("cannot read bucket %s's seen count %q: %v", names[i], v, errors.Join(err, perr))
		}
		buckets++
		seen += n
		pending += pends[i].Val()
	}
	return seen, pending, buckets, nil
}

// selfCPU is this process's user + system CPU time so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// logNotes counts the WARN and ERROR lines a process logged by message:
// "B: 3 × ERROR cannot open an acquired bucket".
func logNotes(p *proc) []string {
	if p.LogFile == "" {
		return nil
	}
	raw, err := os.ReadFile(p.LogFile)
	if err != nil {
		return []string{p.Name + ": cannot read its log: " + err.Error()}
	}
	counts := map[string]int{}
	var order []string
	for line := range strings.Lines(string(raw)) {
		level, msg, ok := slogFields(line)
		if !ok || (level != "WARN" && level != "ERROR") {
			continue
		}
		key := level + " " + msg
		if counts[key] == 0 {
			order = append(order, key)
		}
		counts[key]++
	}
	var out []string
	for _, k := range order {
		out = append(out, fmt.Sprintf("%s: %d × %s", p.Name, counts[k], k))
	}
	return out
}

// slogFields extracts level and msg from one line of slog's text handler
// (time=… level=WARN msg="cannot …" key=value …).
func slogFields(line string) (level, msg string, ok bool) {
	i := strings.Index(line, "level=")
	if i < 0 {
		return "", "", false
	}
	rest := line[i+len("level="):]
	level, rest, _ = strings.Cut(rest, " ")
	j := strings.Index(rest, "msg=")
	if j < 0 {
		return level, "", true
	}
	rest = rest[j+len("msg="):]
	if strings.HasPrefix(rest, "\"") {
		if v, err := strconv.QuotedPrefix(rest); err == nil {
			if u, err := strconv.Unquote(v); err == nil {
				return level, u, true
			}
		}
		return level, strings.TrimPrefix(rest, "\""), true
	}
	msg, _, _ = strings.Cut(strings.TrimRight(rest, "\n"), " ")
	return level, msg, true
}

// callKeys counts the rstate reply keys of a crawl (spider:NAME:{…}:call:ID,
// kept for rstate.ReplyTTL after each accepting call) and sums their
// MEMORY USAGE: memory that goes away by itself shortly after a crawl.
func callKeys(ctx context.Context, rdb *redis.Client, crawlName string) (int, int64, error) {
	var keys []string
	iter := rdb.Scan(ctx, 0, "spider:"+crawlName+":{*}:call:*", 1000).Iterator()
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		return 0, 0, fmt.Errorf("cannot scan the reply keys: %w", err)
	}
	pipe := rdb.Pipeline()
	cmds := make([]*redis.IntCmd, len(keys))
	for i, k := range keys {
		cmds[i] = pipe.MemoryUsage(ctx, k)
	}
	if len(keys) > 0 {
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return 0, 0, fmt.Errorf("cannot read the reply keys' memory: %w", err)
		}
	}
	var total int64
	for _, c := range cmds {
		total += c.Val()
	}
	return len(keys), total, nil
}

// idleReports describes the p2p nodes' termination reports and the queues
// that decide the end of a crawl, for a hang's diagnosis.
func idleReports(ctx context.Context, rdb *redis.Client, crawlName string) string {
	prefix := "spider:" + crawlName + ":{" + crawlName + ".p2p}:"
	idle, err := rdb.HGetAll(ctx, prefix+"idle").Result()
	if err != nil || len(idle) == 0 {
		mw := "{spider:" + crawlName + "}:mw:"
		srq, _ := rdb.LLen(ctx, mw+"srq").Result()
		nrq, _ := rdb.LLen(ctx, mw+"nrq").Result()
		done, _ := rdb.Exists(ctx, mw+"done").Result()
		return fmt.Sprintf("master–worker: srq %d, nrq %d, done %d", srq, nrq, done)
	}
	var parts []string
	for _, id := range sortedKeys(idle) {
		parts = append(parts, id+" "+idle[id])
	}
	sum := func(key string) int64 {
		m, _ := rdb.HGetAll(ctx, prefix+key).Result()
		var t int64
		for _, v := range m {
			n, _ := strconv.ParseInt(v, 10, 64)
			t += n
		}
		return t
	}
	return fmt.Sprintf("idle reports: %s; URLs sent %d, received %d", strings.Join(parts, ", "), sum("sent"), sum("received"))
}

// timeline writes the requests started in each second of a run (with
// DISTBENCH_TIMELINE set), to see where a run loses time.
func timeline(out io.Writer, name string, start time.Time, entries []websim.Entry) {
	var per []int
	for _, e := range entries {
		i := int(e.Time.Sub(start) / time.Second)
		for len(per) <= i {
			per = append(per, 0)
		}
		per[i]++
	}
	fmt.Fprintf(out, "  timeline %s (requests per second from the first start): %v\n", name, per)
}
