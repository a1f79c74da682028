// Command colly is the Colly v2 peer of the crawler benchmarks: it does the
// job `spider crawl` does with Colly's own machinery — colly.Async, one
// LimitRule{DomainGlob: "*", Parallelism: N}, robots.txt obeyed
// (IgnoreRobotsTxt=false) under the same User-Agent as spider (its product
// token "spider" selects the same robots.txt groups), Colly's own de-dup —
// following a/area/link href (rel=nofollow skipped), iframe/frame src and
// meta refresh URLs, skipping the same path suffixes, down to the same depth.
// It prints one JSON line:
//
//	{"crawler":"colly","pages":N,"errors":N,"seconds":S}
//
// This module is separate from spider's so that Colly never enters spider's
// go.mod.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gocolly/colly/v2"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "colly:", err)
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

// options configure one Colly crawl.
type options struct {
	Seeds       []string
	MaxDepth    int               // spider's convention: seeds are 0; negative: no limit
	Parallelism int               // LimitRule parallelism over all domains
	PerSeedHost int               // > 0: a LimitRule of this parallelism per seed host (host:port), before the "*" rule
	Delay       time.Duration     // LimitRule delay
	Resolve     map[string]string // "host:port" → "addr:port" to dial instead
	Suffixes    []string          // lower-case path suffixes not fetched
	UserAgent   string
	Timeout     time.Duration
	Progress    time.Duration // > 0: print a progressLine to ProgressOut this often
	ProgressOut io.Writer
}

// progressLine is printed every options.Progress: pages done and URLs
// discovered (Visit calls Colly accepted: new, in depth, allowed).
type progressLine struct {
	Progress   bool    `json:"progress"`
	Pages      int64   `json:"pages"`
	Discovered int64   `json:"discovered"`
	Seconds    float64 `json:"seconds"`
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("colly", flag.ContinueOnError)
	fs.SetOutput(stderr)
	resolveFile := fs.String("resolve-file", "", "file of curl-style HOST:PORT:ADDR lines")
	maxDepth := fs.Int("max-depth", 5, "largest link depth fetched; seeds are 0; -1 = unlimited")
	par := fs.Int("parallelism", 32, "requests in flight (Colly LimitRule over all domains)")
	delay := fs.Duration("delay", 0, "Colly LimitRule delay after each request")
	suffixes := fs.String("suffixes", defaultSuffixes, "comma-separated path suffixes not fetched")
	ua := fs.String("user-agent", "spider/0.1 (+https://github.com/spider-crawler/spider)", "User-Agent header (its product token selects the robots.txt group)")
	timeout := fs.Duration("timeout", 60*time.Second, "time-out of one request")
	progress := fs.Duration("progress", 0, "print a JSON progress line on stderr this often (0: never)")
	perSeedHost := fs.Int("per-seed-host", 0, "requests in flight per seed host (a LimitRule per seed host:port; 0: only --parallelism over all)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: colly [flags] SEED_URL...")
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
	start := time.Now()
	res, err := crawl(ctx, options{
		Seeds: fs.Args(), MaxDepth: *maxDepth, Parallelism: *par, PerSeedHost: *perSeedHost, Delay: *delay,
		Resolve: resolve, Suffixes: sfx, UserAgent: *ua, Timeout: *timeout,
		Progress: *progress, ProgressOut: stderr,
	})
	if err != nil {
		return err
	}
	res.Seconds = time.Since(start).Seconds()
	return json.NewEncoder(stdout).Encode(res)
}

// crawl runs one Colly crawl to its end (or ctx's) and counts what it did:
// Pages are requests that completed (any answer or network error), Errors
// those that Colly reported through OnError.
func crawl(ctx context.Context, opt options) (report, error) {
	var pages, errs, discovered atomic.Int64
	if opt.Progress > 0 && opt.ProgressOut != nil {
		start := time.Now()
		enc := json.NewEncoder(opt.ProgressOut)
		print := func() {
			_ = enc.Encode(progressLine{Progress: true, Pages: pages.Load(), Discovered: discovered.Load(),
				Seconds: time.Since(start).Seconds()})
		}
		t := time.NewTicker(opt.Progress)
		done, stopped := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(stopped)
			for {
				select {
				case <-done:
					return
				case <-t.C:
					print()
				}
			}
		}()
		defer func() { // a last line with the final counts
			t.Stop()
			close(done)
			<-stopped
			print()
		}()
	}
	depth := 0 // Colly: 0 means unlimited
	if opt.MaxDepth >= 0 {
		depth = opt.MaxDepth + 1 // Colly's seeds have depth 1
	}
	c := colly.NewCollector(
		colly.UserAgent(opt.UserAgent),
		colly.MaxDepth(depth),
		colly.Async(true),
		colly.StdlibContext(ctx),
	)
	c.IgnoreRobotsTxt = false
	if opt.PerSeedHost > 0 {
		seen := map[string]bool{}
		for _, s := range opt.Seeds {
			u, err := url.Parse(s)
			if err != nil || seen[u.Host] {
				continue
			}
			seen[u.Host] = true
			if err := c.Limit(&colly.LimitRule{DomainGlob: u.Host, Parallelism: opt.PerSeedHost, Delay: opt.Delay}); err != nil {
				return report{}, fmt.Errorf("cannot set Colly's limit rule for %s: %w", u.Host, err)
			}
		}
	}
	if err := c.Limit(&colly.LimitRule{DomainGlob: "*", Parallelism: opt.Parallelism, Delay: opt.Delay}); err != nil {
		return report{}, fmt.Errorf("cannot set Colly's limit rule: %w", err)
	}
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	c.WithTransport(&http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if to, ok := opt.Resolve[strings.ToLower(addr)]; ok {
				addr = to
			}
			return dialer.DialContext(ctx, network, addr)
		},
		MaxIdleConns:        1024,
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     90 * time.Second,
	})
	c.SetRequestTimeout(opt.Timeout)

	visit := func(r *colly.Request, ref string) {
		abs := r.AbsoluteURL(strings.TrimSpace(ref))
		if abs == "" {
			return
		}
		u, err := url.Parse(abs)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
			return
		}
		u.Fragment, u.RawFragment = "", "" // one page, one visit
		p := strings.ToLower(u.Path)
		for _, s := range opt.Suffixes {
			if strings.HasSuffix(p, s) {
				return
			}
		}
		if r.Visit(u.String()) == nil { // else already visited, too deep, robots: skipped
			discovered.Add(1)
		}
	}
	c.OnHTML("a[href], area[href], link[href], iframe[src], frame[src], meta[http-equiv][content]", func(e *colly.HTMLElement) {
		switch e.Name {
		case "iframe", "frame":
			visit(e.Request, e.Attr("src"))
		case "meta":
			if strings.EqualFold(strings.TrimSpace(e.Attr("http-equiv")), "refresh") {
				if ref, ok := refreshURL(e.Attr("content")); ok {
					visit(e.Request, ref)
				}
			}
		default:
			if !hasToken(e.Attr("rel"), "nofollow") {
				visit(e.Request, e.Attr("href"))
			}
		}
	})
	c.OnResponse(func(*colly.Response) { pages.Add(1) })
	c.OnError(func(*colly.Response, error) { pages.Add(1); errs.Add(1) })

	for _, s := range opt.Seeds {
		// A seed robots.txt disallows is skipped, as spider does; with
		// Async, an earlier seed's page may already have queued a later seed.
		var already *colly.AlreadyVisitedError
		err := c.Visit(s)
		if err != nil && !errors.Is(err, colly.ErrRobotsTxtBlocked) && !errors.As(err, &already) {
			return report{}, fmt.Errorf("cannot visit seed %q: %w", s, err)
		}
		if err == nil {
			discovered.Add(1)
		}
	}
	c.Wait()
	return report{Crawler: "colly", Pages: pages.Load(), Errors: errs.Load()}, nil
}

// refreshURL returns the URL of a meta refresh content ("5; url=/next").
func refreshURL(content string) (string, bool) {
	_, rest, ok := strings.Cut(content, ";")
	if !ok {
		_, rest, ok = strings.Cut(content, ",")
	}
	if !ok {
		return "", false
	}
	rest = strings.TrimSpace(rest)
	if len(rest) < 4 || !strings.EqualFold(rest[:3], "url") {
		return "", false
	}
	rest, ok = strings.CutPrefix(strings.TrimSpace(rest[3:]), "=")
	if !ok {
		return "", false
	}
	rest = strings.Trim(strings.TrimSpace(rest), `"'`)
	return rest, rest != ""
}

// hasToken reports whether the space-separated list s contains tok
// (case-insensitive).
func hasToken(s, tok string) bool {
	for f := range strings.FieldsSeq(s) {
		if strings.EqualFold(f, tok) {
			return true
		}
	}
	return false
}

// readResolveFile reads curl-style HOST:PORT:ADDR lines (blank lines and #
// comments skipped) into a map from "host:port" to "addr:port"; "" gives an
// empty map.
func readResolveFile(path string) (map[string]string, error) {
	m := make(map[string]string)
	if path == "" {
		return m, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot open resolve file: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		host, rest, ok1 := strings.Cut(line, ":")
		port, addr, ok2 := strings.Cut(rest, ":")
		addr = strings.TrimSuffix(strings.TrimPrefix(addr, "["), "]")
		if !ok1 || !ok2 || host == "" || port == "" || net.ParseIP(addr) == nil {
			return nil, fmt.Errorf("cannot use resolve line %d %q: want HOST:PORT:ADDR", n, line)
		}
		m[net.JoinHostPort(strings.ToLower(host), port)] = net.JoinHostPort(addr, port)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("cannot read resolve file: %w", err)
	}
	return m, nil
}
