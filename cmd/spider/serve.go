package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/server"
)

const serveSynopsis = `serve (--data DIR | --redis URL) [--addr HOST:PORT] [flags]

Serves the search page (/), the crawl dashboard (/dashboard), the JSON API
(/api/…, described at /api/openapi.json), /metrics and /healthz.

--data DIR searches DIR/index (once spider index has built it) and shows the
crawl recorded in DIR/records.jsonl, live while a crawl writes it. --redis
URL shows a distributed crawl's nodes, buckets and queues. Control endpoints
(pause, resume, stop, add seeds) need the crawl in the same process: use
spider crawl --addr; they need the bearer token of --token-file or
SPIDER_TOKEN.`

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("serve", serveSynopsis, stderr)
	data := fs.String("data", "", "data directory of a crawl (its index is DIR/index)")
	addr := fs.String("addr", "127.0.0.1:8080", "address to listen on; :8080 listens on every interface")
	tokenFile := fs.String("token-file", "", "file holding the control endpoints' bearer token (default: $SPIDER_TOKEN)")
	pageSize := fs.Int("page-size", 10, "search hits per page")
	buckets := fs.Int("buckets", 4096, "with --redis, peer-to-peer crawls: the nodes' --buckets")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn, error")
	var rf redisFlags
	rf.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError(stderr, "unexpected argument %q: serve takes flags only", fs.Arg(0))
	}
	if *data == "" && rf.url == "" {
		fs.Usage()
		return usageError(stderr, "give --data DIR (a crawl's data directory) or --redis URL (a distributed crawl)")
	}
	if *data != "" {
		if fi, err := os.Stat(*data); err != nil || !fi.IsDir() {
			return fmt.Errorf("cannot serve %s: it is not a directory; crawl into it first (spider crawl --data %s URL)", *data, *data)
		}
	}
	logger, err := newLogger(stderr, *logLevel)
	if err != nil {
		return err
	}
	token, err := loadToken(*tokenFile)
	if err != nil {
		return err
	}
	opt := server.Options{Token: token, Registry: newServeRegistry(), Logger: logger, PageSize: *pageSize}
	var dir *server.DirView
	if *data != "" {
		dir = server.NewDirView(*data, nil)
		opt.Crawl = dir
		searcher, err := openSearcher(filepath.Join(*data, "index"), logger)
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
		opt.Crawl = server.NewRedisView(rdb, rf.crawl, *buckets, dir, nil)
	}
	stop, err := startServer(ctx, *addr, opt, stdout)
	if err != nil {
		return err
	}
	<-ctx.Done()
	return stop()
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
func serveCrawl(ctx context.Context, addr string, eng *crawl.Engine, dataDir string, reg *prometheus.Registry, logger *slog.Logger, out io.Writer) (stop func(), err error) {
	token, err := loadToken("")
	if err != nil {
		return nil, err
	}
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	searcher, err := openSearcher(filepath.Join(dataDir, "index"), logger)
	if err != nil {
		return nil, err
	}
	view := server.NewEngineView(eng, dataDir, nil)
	stopServer, err := startServer(ctx, addr, server.Options{Searcher: searcher, Crawl: view, Control: view, Token: token, Registry: reg, Logger: logger}, out)
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
