// Command bare is the floor of the crawler benchmarks: a bare "fetch and
// extract links" loop with no frontier, no robots.txt and no politeness —
// N goroutines, a channel of URLs, a mutex-guarded map for de-duplication,
// net/http with keep-alive and the golang.org/x/net/html tokenizer. It does
// the job `spider crawl` does (same links, suffixes and depth limit) and
// prints one JSON line:
//
//	{"crawler":"bare","pages":N,"errors":N,"seconds":S}
//
// Usage:
//
//	bare [--resolve-file F] [--max-depth D] [--parallelism N] SEED_URL...
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "bare:", err)
		}
		os.Exit(2)
	}
}

// defaultSuffixes are websim.DefaultSuffixes and spider's default deny list.
const defaultSuffixes = ".png,.jpg,.jpeg,.gif,.css,.js,.pdf,.zip,.ico,.svg,.woff,.mp4"

// report is the JSON line printed at the end.
type report struct {
	Crawler string  `json:"crawler"`
	Pages   int64   `json:"pages"`
	Errors  int64   `json:"errors"`
	Seconds float64 `json:"seconds"`
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	resolveFile := fs.String("resolve-file", "", "file of curl-style HOST:PORT:ADDR lines")
	maxDepth := fs.Int("max-depth", 5, "largest link depth fetched; seeds are 0; -1 = unlimited")
	par := fs.Int("parallelism", 32, "fetch goroutines")
	suffixes := fs.String("suffixes", defaultSuffixes, "comma-separated path suffixes not fetched")
	ua := fs.String("user-agent", "spider/0.1 (+https://github.com/spider-crawler/spider)", "User-Agent header")
	timeout := fs.Duration("timeout", 60*time.Second, "time-out of one request")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: bare [flags] SEED_URL...")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return errors.New("cannot crawl without a seed URL: give at least one")
	}
	if *par < 1 {
		return fmt.Errorf("cannot use --parallelism %d: want at least 1", *par)
	}
	resolve, err := readResolveFile(*resolveFile)
	if err != nil {
		return err
	}
	var sfx []string
	for s := range strings.SplitSeq(*suffixes, ",") {
		if s = strings.ToLower(strings.TrimSpace(s)); s != "" {
			sfx = append(sfx, s)
		}
	}
	c := newCrawler(options{
		Seeds: fs.Args(), MaxDepth: *maxDepth, Parallelism: *par, Resolve: resolve,
		Suffixes: sfx, UserAgent: *ua, Timeout: *timeout, MaxBody: 10 << 20,
	})
	start := time.Now()
	res, err := c.run(ctx)
	if err != nil {
		return err
	}
	return json.NewEncoder(stdout).Encode(report{
		Crawler: "bare", Pages: res.Pages, Errors: res.Errors, Seconds: time.Since(start).Seconds(),
	})
}
