package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spider-crawler/spider/internal/websim"

	"github.com/spider-crawler/spider/bench/internal/redisproc"
)

// distCrawl is the --crawl name of every distributed run; each run has a
// redis-server of its own, so one name serves them all.
const distCrawl = "peerbench"

// prepareDist returns the command prefix of distributed crawler name
// (spider-p2p or spider-mw): spider's, from the spider callback (which
// builds it once for all three names). Without redis-server on PATH the
// crawler is not installed.
func prepareDist(ctx context.Context, name string, spider func() (prepared, error)) (prepared, error) {
	rs, err := exec.LookPath("redis-server")
	if err != nil {
		return prepared{}, fmt.Errorf("%w: %s needs redis-server, which is not on PATH (Debian: apt-get install redis-server)", errNotInstalled, name)
	}
	p, err := spider()
	if err != nil {
		return prepared{}, err
	}
	v := "unknown"
	if out, err := exec.CommandContext(ctx, rs, "--version").Output(); err == nil {
		for f := range strings.FieldsSeq(string(out)) {
			if s, ok := strings.CutPrefix(f, "v="); ok {
				v = s
			}
		}
	}
	return prepared{Argv: p.Argv, Version: "this tree, " + runtime.Version() + "; redis-server " + v}, nil
}

// procSpec is one process of a distributed run: its name in the report
// ("n1", "master", "w1"), its arguments after spider's binary, and its
// --data directory (also its working directory).
type procSpec struct {
	Name string
	Args []string
	Data string
}

// splitConcurrency shares total fetch goroutines among n processes, the
// first ones getting one more when n does not divide total, so that the sum
// is total. total ≥ n ≥ 1 (parseFlags checks it).
func splitConcurrency(total, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = total / n
		if i < total%n {
			out[i]++
		}
	}
	return out
}

// distSpecs returns the processes of one run of distributed crawler name
// writing under data, on the Redis at redisURL, in start order. spider-p2p
// is c.DistNodes peer-to-peer nodes (spider crawl --redis), each with the
// same seeds and rules as single-node spider, --spider-args included;
// spider-mw is spider master with those rules, then c.DistNodes workers,
// given only what a worker takes (data, concurrency, resolve file, private
// addresses). The fetching processes share c.Concurrency (splitConcurrency);
// the master, which fetches nothing, gets it whole (its tasks in flight are
// 4 × that).
func distSpecs(c config, name, data, resolve, redisURL string, seeds []string) []procSpec {
	conc := splitConcurrency(c.Concurrency, c.DistNodes)
	redisArgs := []string{"--redis", redisURL, "--crawl", distCrawl}
	// withRole turns single-node spider's command line (crawlerArgs) into
	// one of role ("crawl" or "master") on Redis.
	withRole := func(role string, cc config, dir string, extra ...string) []string {
		a := crawlerArgs(cc, "spider", dir, resolve, "", seeds)
		return append(append(append([]string{role}, redisArgs...), extra...), a[1:]...)
	}
	var out []procSpec
	switch name {
	case "spider-p2p":
		for i, n := range conc {
			id := "n" + strconv.Itoa(i+1)
			dir := filepath.Join(data, id)
			cc := c
			cc.Concurrency = n
			out = append(out, procSpec{Name: id, Data: dir, Args: withRole("crawl", cc, dir, "--node-id", id)})
		}
	case "spider-mw":
		dir := filepath.Join(data, "master")
		out = append(out, procSpec{Name: "master", Data: dir, Args: withRole("master", c, dir)})
		for i, n := range conc {
			id := "w" + strconv.Itoa(i+1)
			dir := filepath.Join(data, id)
			args := append(append([]string{"worker"}, redisArgs...), "--data", dir, "--concurrency", strconv.Itoa(n),
				"--resolve-file", resolve, "--allow-private")
			out = append(out, procSpec{Name: id, Data: dir, Args: args})
		}
	}
	return out
}

// procUse is one process's share of a distributed run.
type procUse struct {
	Name   string
	CPU    time.Duration
	MaxRSS int64 // bytes
}

// groupUse is what a distributed run used besides the totals of result:
// each spider process's CPU and peak RSS, and redis-server's.
type groupUse struct {
	Procs    []procUse
	RedisCPU time.Duration // user + system during the run (INFO cpu, before the first start and after the last exit)
	RedisHWM int64         // redis-server's VmHWM at the end of the run, bytes
	First    time.Time     // the first process's start
	Last     time.Time     // the last process's exit
	// Startup is First to websim's first request, Tail the last request's
	// end to Last (set by window; zero without requests): where the wall
	// time went besides fetching (joining, bucket leases, termination).
	Startup, Tail time.Duration
}

// window sets g.Startup and g.Tail from the run's access log.
func (g *groupUse) window(entries []websim.Entry) {
	if len(entries) == 0 || g.First.IsZero() {
		return
	}
	first, last := entries[0].Time, entries[0].End
	for _, e := range entries {
		if e.Time.Before(first) {
			first = e.Time
		}
		if e.End.After(last) {
			last = e.End
		}
	}
	g.Startup, g.Tail = first.Sub(g.First), g.Last.Sub(last)
}

// runGroup runs one distributed crawl into res: a fresh redis-server in
// data/redis, then every process of distSpecs through the launcher (so
// each ru_maxrss is the process's own), until all have exited. A process
// exiting non-zero, or ctx ending (the run's time-out), stops the others
// and sets res.Err. res.Wall is the first process's start to the last
// one's exit; res.CPU the sum of every process's CPU and redis-server's;
// res.MaxRSS the sum of their peaks and redis-server's VmHWM: an upper
// bound of the group's peak, as the peaks need not coincide.
func (b *bench) runGroup(ctx context.Context, res *result, data, self string) {
	rs, err := redisproc.Start(ctx, filepath.Join(data, "redis"))
	if err != nil {
		res.Err = fmt.Errorf("cannot start redis-server for %s: %w", res.Crawler, err)
		return
	}
	defer rs.Close()
	cpu0, err := redisCPU(ctx, rs.Client)
	if err != nil {
		res.Err = err
		return
	}
	specs := distSpecs(b.cfg, res.Crawler, data, b.resolve, rs.URL(), b.seeds)
	logPrefix := filepath.Join(b.work, fmt.Sprintf("log-%s-%d-", res.Crawler, res.Run))
	usagePrefix := filepath.Join(b.work, fmt.Sprintf("usage-%s-%d-", res.Crawler, res.Run))
	before := selfCPU()
	res.Err = runProcs(ctx, self, b.bins[res.Crawler].Argv, specs, usagePrefix, logPrefix, b.cfg.Timeout)
	res.ServerCPU = selfCPU() - before
	g := &groupUse{}
	res.Group = g
	// The time-out's context may be over; the server still answers.
	infoCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cpu1, err := redisCPU(infoCtx, rs.Client)
	if err != nil {
		res.Err = errors.Join(res.Err, err)
	}
	g.RedisCPU = max(cpu1-cpu0, 0)
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", rs.PID()))
	if err != nil {
		res.Err = errors.Join(res.Err, fmt.Errorf("cannot read redis-server's peak memory: %w", err))
	}
	g.RedisHWM = parseStatusKB(status, "VmHWM:")
	var first, last int64
	for _, s := range specs {
		u, err := readUsage(usagePrefix + s.Name + ".json")
		if err != nil {
			if res.Err == nil {
				res.Err = fmt.Errorf("%s: %w", s.Name, err)
			}
			continue
		}
		pu := procUse{Name: s.Name, CPU: time.Duration(u.UserNS + u.SysNS), MaxRSS: u.MaxRSSKB << 10}
		g.Procs = append(g.Procs, pu)
		res.CPU += pu.CPU
		res.MaxRSS += pu.MaxRSS
		if first == 0 || u.StartNS < first {
			first = u.StartNS
		}
		last = max(last, u.StartNS+u.WallNS)
	}
	if first > 0 {
		res.Wall = time.Duration(last - first)
		g.First, g.Last = time.Unix(0, first), time.Unix(0, last)
	}
	res.CPU += g.RedisCPU
	res.MaxRSS += g.RedisHWM
}

// runProcs starts one launcher per spec (measureArg, usagePrefix+NAME.json,
// argv, the spec's arguments), each writing its output to
// logPrefix+NAME.log, and waits for all. The first process to exit with an
// error, or the end of ctx, kills the others (the launcher's death kills
// its crawler); the error names the process and ends with its output's
// tail.
func runProcs(ctx context.Context, self string, argv []string, specs []procSpec, usagePrefix, logPrefix string, timeout time.Duration) error {
	type member struct {
		spec procSpec
		cmd  *exec.Cmd
		log  string
		err  error // set by its Wait goroutine before it is sent on done
		over bool  // received from done (read and written by this goroutine only)
	}
	ms := make([]*member, 0, len(specs))
	killAll := func() {
		for _, m := range ms {
			_ = m.cmd.Process.Kill() // an exited one answers "already finished"
		}
	}
	done := make(chan *member, len(specs))
	for _, s := range specs {
		if err := os.MkdirAll(s.Data, 0o755); err != nil {
			killAll()
			return fmt.Errorf("cannot create the data directory of %s: %w", s.Name, err)
		}
		m := &member{spec: s, log: logPrefix + s.Name + ".log"}
		f, err := os.Create(m.log)
		if err != nil {
			killAll()
			return fmt.Errorf("cannot create the log of %s: %w", s.Name, err)
		}
		usage := usagePrefix + s.Name + ".json"
		_ = os.Remove(usage) // a kept --work may hold one from an earlier invocation
		args := append(append([]string{measureArg, usage}, argv...), s.Args...)
		m.cmd = exec.Command(self, args...)
		m.cmd.Stdout, m.cmd.Stderr, m.cmd.Dir = f, f, s.Data
		err = m.cmd.Start()
		f.Close() // the child has its own descriptor
		if err != nil {
			killAll()
			return fmt.Errorf("cannot start %s: %w", s.Name, err)
		}
		ms = append(ms, m)
		go func() { m.err = m.cmd.Wait(); done <- m }()
	}
	var first error
	ctxDone := ctx.Done()
	for left := len(ms); left > 0; {
		select {
		case m := <-done:
			left--
			m.over = true
			if m.err != nil && first == nil {
				first = fmt.Errorf("%s failed: %w\n%s", m.spec.Name, m.err, logTail(m.log, 2000))
				killAll()
			}
		case <-ctxDone:
			ctxDone = nil
			if first == nil {
				var running []string
				for _, m := range ms {
					if !m.over {
						running = append(running, m.spec.Name)
					}
				}
				first = fmt.Errorf("stopped after %s with %s still running: %w", timeout, strings.Join(running, ", "), ctx.Err())
			}
			killAll()
		}
	}
	return first
}

// logTail returns the last n bytes of the file at path.
func logTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(no output: " + err.Error() + ")"
	}
	return tail(string(b), n)
}

// redisCPU returns redis-server's user + system CPU time so far, from
// INFO cpu (getrusage of the server: microseconds, where /proc/PID/stat
// counts 10 ms ticks).
func redisCPU(ctx context.Context, c *redis.Client) (time.Duration, error) {
	raw, err := c.Info(ctx, "cpu").Result()
	if err != nil {
		return 0, fmt.Errorf("cannot read redis-server's CPU time (INFO cpu): %w", err)
	}
	return parseRedisCPU(raw)
}

// parseRedisCPU returns used_cpu_user + used_cpu_sys of an INFO reply
// (seconds with a fraction). Hand-written: go-redis returns INFO as text.
func parseRedisCPU(info string) (time.Duration, error) {
	var total time.Duration
	found := 0
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimRight(sc.Text(), "\r"), ":")
		if !ok || (k != "used_cpu_user" && k != "used_cpu_sys") {
			continue
		}
		s, err := strconv.ParseFloat(v, 64)
		if err != nil || !(s >= 0 && s <= 1e9) { // NaN fails both
			return 0, fmt.Errorf("cannot read redis-server's %s %q: want seconds ≥ 0", k, v)
		}
		total += time.Duration(s * float64(time.Second))
		found++
	}
	if found != 2 {
		return 0, errors.New("cannot find used_cpu_user and used_cpu_sys in redis-server's INFO cpu: is it Redis ≥ 2.6?")
	}
	return total, nil
}

// isDist reports whether crawler name is distributed spider.
func isDist(name string) bool { return slices.Contains(distCrawlers, name) }

// String is one line for the report: each process's CPU and peak RSS,
// then redis-server's.
func (g *groupUse) String() string {
	var parts []string
	for _, p := range g.Procs {
		parts = append(parts, fmt.Sprintf("%s %.2f s, %.0f MiB", p.Name, p.CPU.Seconds(), float64(p.MaxRSS)/(1<<20)))
	}
	parts = append(parts, fmt.Sprintf("redis-server %.2f s, VmHWM %.0f MiB", g.RedisCPU.Seconds(), float64(g.RedisHWM)/(1<<20)))
	return fmt.Sprintf("first request %.2f s after the first start, last exit %.2f s after the last answer; CPU and peak RSS: %s",
		g.Startup.Seconds(), g.Tail.Seconds(), strings.Join(parts, "; "))
}
