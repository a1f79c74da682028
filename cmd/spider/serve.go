package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/index"
	"github.com/spider-crawler/spider/internal/index/analysis"
	"github.com/spider-crawler/spider/internal/server"
	"github.com/spider-crawler/spider/internal/server/redisview"
	"github.com/spider-crawler/spider/internal/store"
)

const serveSynopsis = `serve (--data DIR | --redis URL) [--addr HOST:PORT] [flags]

Serves the search page (/), the crawl dashboard (/dashboard), the JSON API
(/api/…, described at /api/openapi.json), /metrics and /healthz.

--data DIR searches DIR/index (once spider index has built it) and shows the
crawl recorded in DIR/records.jsonl, live while a crawl writes it. --redis
URL shows a distributed crawl's nodes, buckets and queues. Control endpoints
(pause, resume, stop, add seeds) act on a crawl in the same process
(spider crawl --addr) or, with --redis, on every node of a distributed crawl
within a second (as spider control does); they need the bearer token of
--token-file or SPIDER_TOKEN.`

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("serve", serveSynopsis, stderr)
	data := fs.String("data", "", "data directory of a crawl (its index is DIR/index)")
	addr := fs.String("addr", "127.0.0.1:8080", "address to listen on; :8080 listens on every interface")
	tokenFile := fs.String("token-file", "", "file holding the control endpoints' bearer token (default: $SPIDER_TOKEN)")
	pageSize := fs.Int("page-size", 10, "search hits per page")
	buckets := fs.Int("buckets", 4096, "with --redis, peer-to-peer crawls: the nodes' --buckets")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn, error")
	cacheSize := fs.Int("cache-size", server.DefaultCacheSize, "search cache entries (rendered pages and API answers, and results); 0 or -1 turns the caches off")
	cacheMB := fs.Int("cache-mb", server.DefaultCacheBytes>>20, "memory bound of the rendered-answer cache, in MiB")
	cacheTTL := fs.Duration("cache-ttl", server.DefaultCacheTTL, "longest time a cached search answer is served (a new index version drops the cache at once)")
	maxSearches := fs.Int("max-searches", 0, "index searches running at once, the others wait their turn (default 2×GOMAXPROCS); -1: no bound")
	preload := fs.String("preload", "background", "when to load the query analyser's Chinese dictionaries (about 300 MB, seconds of CPU): background (while serving), wait (before listening), off (at the first Chinese query)")
	mapsMB := fs.Int("doc-maps-mb", index.DefaultDocMapBytes>>20, "memory per index segment for the document maps of frequent words (a bitmap and a frequency byte per page each), which answer AND queries of them without decoding postings; 0 turns them off")
	pprofAddr := fs.String("pprof", "", "serve Go's profiler (net/http/pprof) on this separate address, e.g. 127.0.0.1:6060; keep it private")
	var allowedHosts []string
	fs.Var(listFlag{&allowedHosts}, "allowed-hosts", "host names the server answers to besides its listening address (and localhost on loopback): comma-separated, *.suffix allowed, repeatable; other Host headers get 421 (DNS rebinding protection)")
	var rf redisFlags
	rf.register(fs)
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	allowedHosts, herr := splitHosts(allowedHosts)
	if herr != nil {
		return usageError(stderr, "%v", herr)
	}
	if fs.NArg() > 0 {
		return usageError(stderr, "unexpected argument %q: serve takes flags only", fs.Arg(0))
	}
	if *data == "" && rf.url == "" {
		fs.Usage()
		return usageError(stderr, "give --data DIR (a crawl's data directory) or --redis URL (a distributed crawl)")
	}
	if *data != "" && rf.url == "" {
		// A typo must not serve an empty site; with --redis, --data may
		// hold only the index of a distributed build.
		if err := needCrawlOrIndex(*data); err != nil {
			return fmt.Errorf("cannot serve: %w", err)
		}
	} else if *data != "" {
		if fi, err := os.Stat(*data); err != nil || !fi.IsDir() {
			return fmt.Errorf("cannot serve %s: it is not a directory; build the index into it first (spider index --data %s --redis URL --writer): %w", *data, *data, crawl.ErrNoCrawl)
		}
	}
	if *preload != "background" && *preload != "wait" && *preload != "off" {
		return usageError(stderr, "--preload %q: use background, wait or off", *preload)
	}
	if *mapsMB < 0 {
		return usageError(stderr, "--doc-maps-mb %d: give 0 (no maps) or more", *mapsMB)
	}
	if *maxSearches < -1 {
		return usageError(stderr, "--max-searches %d: give -1 (no bound), 0 (2×GOMAXPROCS) or a positive number", *maxSearches)
	}
	if *cacheSize < -1 || *cacheMB < 1 || *cacheTTL <= 0 {
		return usageError(stderr, "bad cache flags (--cache-size %d, --cache-mb %d, --cache-ttl %s): give --cache-size -1 (off) or more, --cache-mb 1 or more, a positive --cache-ttl", *cacheSize, *cacheMB, *cacheTTL)
	}
	if *cacheSize == 0 {
		*cacheSize = -1 // no entries: off
	}
	logger, err := newLogger(stderr, *logLevel)
	if err != nil {
		return err
	}
	token, err := loadToken(*tokenFile)
	if err != nil {
		return err
	}
	opt := server.Options{Token: token, Registry: newServeRegistry(), Logger: logger, PageSize: *pageSize,
		CacheSize: *cacheSize, CacheBytes: int64(*cacheMB) << 20, CacheTTL: *cacheTTL, MaxSearches: *maxSearches,
		AllowedHosts: allowedHosts}
	if *pprofAddr != "" {
		stopProf, err := startPprof(ctx, *pprofAddr, stdout, logger)
		if err != nil {
			return err
		}
		defer stopProf()
	}
	var dir *server.DirView
	if *data != "" {
		dir = server.NewDirView(*data, nil)
		opt.Crawl = dir
		mapBytes := *mapsMB << 20
		if mapBytes == 0 {
			mapBytes = -1 // index.Options: none
		}
		searcher, err := openSearcher(store.DataDir(*data).Index(), index.Options{DocMapBytes: mapBytes}, logger)
		if err != nil {
			return err
		}
		defer searcher.Close()
		opt.Searcher = searcher
	}
	if rf.url != "" {
		rdb, err := rf.open(ctx)
		if err != nil {
			return err
		}
		defer rdb.Close()
		if err := checkCrawl(ctx, rdb, &rf); err != nil {
			return err
		}
		view := redisview.New(rdb, rf.crawl, *buckets, dir, nil)
		// The control endpoints write the crawl's control word: every node
		// applies it within a second (spider control, docs/distributed.md).
		opt.Crawl, opt.Control = view, view
	}
	if *data != "" && *preload == "wait" {
		preloadAnalyzer(logger, nil)
	}
	stop, err := startServer(ctx, *addr, opt, stdout)
	if err != nil {
		return err
	}
	if *data != "" && *preload == "background" {
		// The load may outlive the command: its log line is dropped once the
		// command has returned (the logger's writer belongs to the caller).
		var mu sync.Mutex
		running := true
		defer func() { mu.Lock(); running = false; mu.Unlock() }()
		go preloadAnalyzer(logger, func(log func()) {
			mu.Lock()
			defer mu.Unlock()
			if running {
				log()
			}
		})
	}
	<-ctx.Done()
	return stop()
}

// preloadAnalyzer loads the query analyser's Chinese dictionaries now:
// otherwise the first query with Chinese text waits for the load
// (seconds; 33 s on a busy 2-core machine), and so do the identical
// queries merged with it.
// guard, if not nil, runs the logging (or not).
func preloadAnalyzer(logger *slog.Logger, guard func(log func())) {
	a, err := analysis.Shared()
	if err == nil {
		err = a.Preload()
	}
	log := func() {
		if err != nil {
			logger.Warn("cannot preload the query analyser; Chinese queries are cut character by character", "err", err)
			return
		}
		logger.Info("query analyser loaded", "took", a.LoadTime().Round(time.Millisecond))
	}
	if guard != nil {
		guard(log)
		return
	}
	log()
}

// startPprof serves net/http/pprof on its own listener (never on the
// public one: profiles reveal internals and cost CPU) until ctx ends or
// stop is called.
func startPprof(ctx context.Context, addr string, stdout io.Writer, logger *slog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("cannot listen on --pprof %s (pick another address): %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelDebug)}
	fmt.Fprintf(stdout, "pprof on http://%s/debug/pprof/\n", ln.Addr())
	go hs.Serve(ln)
	sctx, cancel := context.WithCancel(ctx)
	go func() {
		<-sctx.Done()
		hs.Close()
	}()
	return cancel, nil
}

// usageError prints a usage mistake (main prints none for errUsage) and
// returns it wrapped in errUsage (exit status 2).
func usageError(stderr io.Writer, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	fmt.Fprintln(stderr, "spider:", msg)
	return fmt.Errorf("%w: %s", errUsage, msg)
}

// loadToken reads the control token from file, or else from SPIDER_TOKEN;
// "" when neither is set (control is then refused).
func loadToken(file string) (string, error) {
	if file == "" {
		return strings.TrimSpace(os.Getenv("SPIDER_TOKEN")), nil
	}
	fi, err := os.Stat(file)
	if err != nil {
		return "", fmt.Errorf("cannot read --token-file: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		// A secret others can read is no secret (ssh refuses such keys too).
		return "", fmt.Errorf("--token-file %s can be read by other users (mode %s): run chmod 600 %s", file, fi.Mode().Perm(), file)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("cannot read --token-file: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("--token-file %s is empty: write a token of at least %d characters into it (for example: openssl rand -hex 32 > %s)", file, server.MinTokenLen, file)
	}
	return tok, nil
}

// newServeRegistry is a metrics registry with the Go runtime and process
// collectors.
func newServeRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// startServer listens on addr and serves opt until ctx ends or stop is
// called; stop waits for the server to shut down.
func startServer(ctx context.Context, addr string, opt server.Options, stdout io.Writer) (stop func() error, err error) {
	srv, err := server.New(opt)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("cannot listen on %s (is another server using the port? pick another with --addr): %w", addr, err)
	}
	control := "control: off (set SPIDER_TOKEN or --token-file)"
	if opt.Token != "" {
		control = "control: bearer token"
	}
	if opt.Control == nil {
		control = "control: not available (the crawl is not in this process)"
	}
	fmt.Fprintf(stdout, "serving on http://%s/ — search /, dashboard /dashboard, API /api/openapi.json, /metrics; %s\n", ln.Addr(), control)
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(sctx, ln) }()
	return func() error {
		cancel()
		err := <-done
		if errors.Is(err, context.Canceled) {
			return nil
		}
		return err
	}, nil
}

// serveCrawl serves the dashboard, API (with control) and search of a
// crawl running in this process (spider crawl --addr). The returned stop
// marks the crawl finished and shuts the server down; call it before
// closing the engine. It is idempotent.
func serveCrawl(ctx context.Context, addr string, allowedHosts []string, eng *crawl.Engine, dataDir string, reg *prometheus.Registry, logger *slog.Logger, out io.Writer) (stop func(), err error) {
	token, err := loadToken("")
	if err != nil {
		return nil, err
	}
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	searcher, err := openSearcher(store.DataDir(dataDir).Index(), index.Options{}, logger)
	if err != nil {
		return nil, err
	}
	view := server.NewEngineView(eng, dataDir, nil)
	stopServer, err := startServer(ctx, addr, server.Options{Searcher: searcher, Crawl: view, Control: view, Token: token, Registry: reg, Logger: logger, AllowedHosts: allowedHosts}, out)
	if err != nil {
		searcher.Close()
		return nil, err
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			view.Finished()
			if err := stopServer(); err != nil {
				logger.Warn("cannot shut the HTTP server down", "err", err)
			}
			searcher.Close()
		})
	}, nil
}
