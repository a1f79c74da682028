// Command rank measures PageRank (SPEC §1 experiment): the map/reduce form
// over Redis with 1–4 workers and the in-memory form on a synthetic site
// graph of 35,602 pages, and the edge throughput of one thread on a large
// graph. It prints a Markdown table.
//
//	go run ./bench/rank                        # starts its own redis-server
//	go run ./bench/rank -redis redis://host:6379/0 -edges 50000000
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spider-crawler/spider/internal/graph"
	"github.com/spider-crawler/spider/internal/rank"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "rank bench:", err)
		os.Exit(1)
	}
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("rank", flag.ContinueOnError)
	redisURL := fs.String("redis", "", "Redis URL; empty starts a private redis-server from PATH")
	pages := fs.Int("pages", 35602, "pages of the site graph (design §1, the paper's graph: 35,602)")
	maxWorkers := fs.Int("workers", 4, "map/reduce runs with 1..N workers")
	parts := fs.Int("parts", 0, "tasks per round (0: automatic)")
	edges := fs.Int("edges", 50_000_000, "edges of the throughput graph (0 skips it)")
	iters := fs.Int("iters", 10, "iterations of the throughput run")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx := context.Background()
	url := *redisURL
	if url == "" {
		stop, u, err := startRedis()
		if err != nil {
			return err
		}
		defer stop()
		url = u
	}
	opt, err := redis.ParseURL(url)
	if err != nil {
		return fmt.Errorf("bad -redis URL: %w", err)
	}

	t0 := time.Now()
	g := graph.SiteGraph(graph.SiteGraphConfig{Pages: *pages, Seed: 1})
	fmt.Fprintf(out, "site graph: %d pages, %d edges, %d hosts (generated in %.2fs); GOMAXPROCS %d, %s\n\n",
		g.N(), g.M(), max(1, *pages/50), time.Since(t0).Seconds(), runtime.GOMAXPROCS(0), time.Now().UTC().Format("2006-01-02"))
	fmt.Fprintln(out, "| form | workers | seconds | iterations | L1 vs in-memory |")
	fmt.Fprintln(out, "|---|---|---|---|---|")

	m := rank.NewMatrix(g)
	var ref rank.Result
	for _, w := range []int{1, runtime.GOMAXPROCS(0)} {
		best := math.Inf(1)
		for range 5 {
			t := time.Now()
			res, err := m.Compute(ctx, rank.Options{Workers: w})
			if err != nil {
				return err
			}
			best = min(best, time.Since(t).Seconds())
			ref = res
		}
		fmt.Fprintf(out, "| in-memory (best of 5, transpose excluded) | %d threads | %.4f | %d | 0 |\n", w, best, ref.Iterations)
	}
	t := time.Now()
	if _, err := rank.Compute(ctx, g, rank.Options{Workers: 1}); err != nil {
		return err
	}
	fmt.Fprintf(out, "| in-memory incl. transpose | 1 thread | %.4f | %d | 0 |\n", time.Since(t).Seconds(), ref.Iterations)

	for w := 1; w <= *maxWorkers; w++ {
		secs, res, err := mapReduce(ctx, opt, g, w, *parts)
		if err != nil {
			return err
		}
		var l1 float64
		for i := range res.Ranks {
			l1 += math.Abs(res.Ranks[i] - ref.Ranks[i])
		}
		fmt.Fprintf(out, "| map/reduce over Redis | %d | %.3f | %d | %.2g |\n", w, secs, res.Iterations, l1)
	}

	if *edges > 0 {
		if err := throughput(ctx, out, *edges, *iters); err != nil {
			return err
		}
	}
	return nil
}

// mapReduce runs one master and w workers (goroutines with their own
// connections) and returns the master's wall time, graph upload included.
func mapReduce(ctx context.Context, opt *redis.Options, g *graph.Graph, w, parts int) (float64, rank.Result, error) {
	crawl := "bench" + strconv.Itoa(w)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, w)
	for range w {
		rdb := redis.NewClient(opt)
		defer rdb.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := rank.RunWorker(wctx, rdb, rank.WorkerConfig{Crawl: crawl}); err != nil && !errors.Is(err, context.Canceled) {
				errs <- err
			}
		}()
	}
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	start := time.Now()
	m, err := rank.NewMaster(ctx, rdb, rank.MasterConfig{Crawl: crawl, Parts: parts, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return 0, rank.Result{}, err
	}
	res, err := m.Compute(ctx, g, rank.Options{})
	secs := time.Since(start).Seconds()
	if cerr := m.Close(ctx); err == nil {
		err = cerr
	}
	wg.Wait()
	select {
	case werr := <-errs:
		if err == nil {
			err = werr
		}
	default:
	}
	return secs, res, err
}

// throughput measures edges per second of one thread on a large site graph.
func throughput(ctx context.Context, out io.Writer, edges, iters int) error {
	pagesN := edges * 100 / 708 // SiteGraph keeps about 7.08 distinct links per page after de-duplication
	t0 := time.Now()
	g := graph.SiteGraph(graph.SiteGraphConfig{Pages: pagesN, Seed: 2})
	gen := time.Since(t0)
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	m := rank.NewMatrix(g)
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	matrixBytes := float64(after.HeapAlloc) - float64(before.HeapAlloc)
	fmt.Fprintf(out, "\nthroughput graph: %d pages, %d edges (generated in %.1fs)\n\n", g.N(), m.Edges(), gen.Seconds())
	fmt.Fprintln(out, "| threads | iterations | wall s | wall s/iteration | edges/s per iteration (wall) | edges/s per CPU-second of the thread |")
	fmt.Fprintln(out, "|---|---|---|---|---|---|")
	for _, w := range []int{1, runtime.GOMAXPROCS(0)} {
		// One worker runs on the calling goroutine: lock it to its thread so
		// the thread's CPU time (immune to other processes' load) is its own.
		runtime.LockOSThread()
		c0 := threadCPU()
		t := time.Now()
		res, err := m.Compute(ctx, rank.Options{Workers: w, MaxIter: iters, Tolerance: 1e-300})
		if err != nil {
			return err
		}
		secs := time.Since(t).Seconds()
		cpu := (threadCPU() - c0).Seconds()
		runtime.UnlockOSThread()
		per := secs / float64(res.Iterations)
		cpuRate := "n/a (several threads)"
		if w == 1 {
			cpuRate = fmt.Sprintf("%.0f M", float64(m.Edges())*float64(res.Iterations)/cpu/1e6)
		}
		fmt.Fprintf(out, "| %d | %d | %.2f | %.3f | %.0f M | %s |\n", w, res.Iterations, secs, per, float64(m.Edges())/per/1e6, cpuRate)
	}
	n := float64(g.N())
	fmt.Fprintf(out, "\nmemory: pull matrix %.1f bytes/edge (heap growth of NewMatrix: in-link CSR + out-degrees), "+
		"plus 3 float64 vectors = %.1f bytes/edge; the forward graph (loaded from DATA/graph) adds %.1f bytes/edge of ids\n",
		matrixBytes/float64(m.Edges()), 24*n/float64(m.Edges()), (4*float64(g.M())+8*n)/float64(m.Edges()))
	return nil
}

// threadCPU returns the CPU time of the calling OS thread (RUSAGE_THREAD).
func threadCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1, &ru); err != nil { // 1 = RUSAGE_THREAD (Linux)
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// startRedis starts a private redis-server on a free loopback port.
func startRedis() (stop func(), url string, err error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, "", fmt.Errorf("cannot find redis-server on PATH: install it or pass -redis: %w", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", fmt.Errorf("cannot find a free port: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir, err := os.MkdirTemp("", "rankbench")
	if err != nil {
		return nil, "", err
	}
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, "", fmt.Errorf("cannot start redis-server: %w", err)
	}
	stop = func() { cmd.Process.Kill(); cmd.Wait(); os.RemoveAll(dir) }
	url = "redis://127.0.0.1:" + strconv.Itoa(port) + "/0"
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(port)})
	defer rdb.Close()
	for i := 0; ; i++ {
		if rdb.Ping(context.Background()).Err() == nil {
			return stop, url, nil
		}
		if i == 100 {
			stop()
			return nil, "", errors.New("redis-server did not answer PING within 5s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
