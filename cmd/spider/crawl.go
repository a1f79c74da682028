package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/spider-crawler/spider/internal/crawl"
)

const crawlSynopsis = `crawl [flags] SEED_URL...

Crawls politely from the seed URLs, storing pages, records and crawl state
in --data. Killed or interrupted, the same command resumes where it stopped.
Flags override the --config file (YAML, keys are the flag names with _).`

// crawlFlags binds every crawl.Config field to a flag.
func crawlFlags(fs *flag.FlagSet, c *crawl.Config) {
	fs.StringVar(&c.Data, "data", c.Data, "data directory (state, pages, records, WARC)")
	fs.IntVar(&c.MaxDepth, "max-depth", c.MaxDepth, "largest link depth fetched; seeds are 0; -1 = unlimited")
	fs.BoolVar(&c.LooseDepth, "loose-depth", c.LooseDepth, "let depth levels overlap (faster with slow hosts; depth = where a page was first found)")
	fs.Int64Var(&c.MaxPages, "max-pages", c.MaxPages, "stop after this many URLs completed in total; 0 = no limit")
	fs.StringVar(&c.Scope, "scope", c.Scope, "stay inside: host, domain, seeds, regexp or any")
	fs.StringVar(&c.ScopeRegexp, "scope-regexp", c.ScopeRegexp, "URL pattern for --scope regexp")
	fs.IntVar(&c.Concurrency, "concurrency", c.Concurrency, "fetch workers")
	fs.IntVar(&c.PerHost, "per-host", c.PerHost, "most connections to one host at once")
	fs.Var(durationFlag{&c.Delay}, "delay", "smallest gap between requests to one host (robots.txt Crawl-delay can raise it)")
	fs.Var(durationFlag{&c.MaxCrawlDelay}, "max-crawl-delay", "cap on a robots.txt Crawl-delay")
	fs.BoolVar(&c.PerIP, "per-ip", c.PerIP, "apply politeness per server IP instead of per host name")
	fs.StringVar(&c.UserAgent, "user-agent", c.UserAgent, "User-Agent header; include a contact URL")
	fs.StringVar(&c.RobotsAgent, "robots-agent", c.RobotsAgent, "product token matched in robots.txt (default: from --user-agent)")
	fs.Var(listFlag{&c.Resolve}, "resolve", "HOST:PORT:ADDR like curl's --resolve; HOST may be *.suffix (repeatable)")
	fs.StringVar(&c.ResolveFile, "resolve-file", c.ResolveFile, "file of --resolve entries, one per line")
	fs.BoolVar(&c.AllowPrivate, "allow-private", c.AllowPrivate, "allow loopback, private and link-local targets (off: SSRF protection)")
	fs.Var(durationFlag{&c.ConnectTimeout}, "connect-timeout", "time-out to connect")
	fs.Var(durationFlag{&c.FirstByteTimeout}, "first-byte-timeout", "time-out until response headers")
	fs.Var(durationFlag{&c.Timeout}, "timeout", "time-out for a whole fetch")
	fs.Int64Var(&c.MaxBodyBytes, "max-body-bytes", c.MaxBodyBytes, "largest body kept (after decompression)")
	fs.IntVar(&c.MaxRedirects, "max-redirects", c.MaxRedirects, "longest redirect chain followed")
	fs.IntVar(&c.MaxRetries, "max-retries", c.MaxRetries, "retries after 5xx, 429, reset or refused")
	fs.Var(durationFlag{&c.RetryDelay}, "retry-delay", "first retry back-off (doubles each time)")
	fs.BoolVar(&c.FollowNofollow, "follow-nofollow", c.FollowNofollow, "also follow rel=nofollow links")
	fs.StringVar(&c.Seen, "seen", c.Seen, "URL-seen test: exact or bloom")
	fs.Uint64Var(&c.ExpectedURLs, "expected-urls", c.ExpectedURLs, "URLs the Bloom filter is sized for")
	fs.Float64Var(&c.FPRate, "fp-rate", c.FPRate, "Bloom filter false-positive rate")
	fs.IntVar(&c.MemoryBudget, "memory-budget", c.MemoryBudget, "URLs the frontier keeps in memory; the rest spill to disk")
	fs.BoolVar(&c.WARC, "warc", c.WARC, "also write WARC 1.1 files under DATA/warc")
	fs.BoolVar(&c.SortQuery, "sort-query", c.SortQuery, "sort query parameters when normalising URLs")
	fs.Var(listFlag{&c.DropParams}, "drop-param", "query parameter to remove, e.g. utm_* (repeatable)")
	fs.Var(listFlag{&c.DenySuffixes}, "deny-suffix", "path suffix not to fetch, replaces the default list (repeatable)")
	fs.Var(listFlag{&c.AllowHosts}, "allow-host", "only crawl these hosts, *.suffix allowed (repeatable)")
	fs.Var(listFlag{&c.DenyHosts}, "deny-host", "never crawl these hosts (repeatable)")
	fs.Float64Var(&c.MaxRate, "max-rate", c.MaxRate, fmt.Sprintf("requests/s over the whole crawl; 0 = per-host limits only; at most %d", crawl.HardMaxRate))
}

func runCrawl(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg := crawl.NewConfig()
	if path := findConfigFlag(args); path != "" {
		if err := crawl.LoadFile(path, &cfg); err != nil {
			return err
		}
		cfg.Defaults()
	}
	fs := newFlagSet("crawl", crawlSynopsis, stderr)
	fs.String("config", "", "YAML configuration file (flags override it)")
	crawlFlags(fs, &cfg)
	logLevel := fs.String("log-level", "warn", "log level: debug, info, warn, error")
	quiet := fs.Bool("quiet", false, "no progress line and no summary")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg.Seeds = append(cfg.Seeds, fs.Args()...)
	if len(cfg.Seeds) == 0 {
		fs.Usage()
		return fmt.Errorf("%w: give at least one seed URL", errUsage)
	}
	logger, err := newLogger(stderr, *logLevel)
	if err != nil {
		return err
	}
	eng, err := crawl.New(cfg, logger, prometheus.NewRegistry())
	if err != nil {
		return err
	}
	defer eng.Close()

	showProgress := !*quiet && isTerminal(stderr)
	done := make(chan struct{})
	if showProgress {
		go progressLoop(eng, stderr, done)
	}
	runErr := eng.Run(ctx)
	close(done)
	if showProgress {
		fmt.Fprint(stderr, "\r\033[K")
	}
	p := eng.Progress()
	if cerr := eng.Close(); cerr != nil && runErr == nil {
		runErr = cerr
	}
	if runErr != nil {
		return runErr
	}
	if *quiet {
		return nil
	}
	rate := float64(p.Fetched) / max(p.Elapsed.Seconds(), 1e-9)
	fmt.Fprintf(stdout, "crawled %d URLs in %s (%.1f/s) into %s\n", p.Fetched, p.Elapsed.Round(time.Millisecond), rate, cfg.Data)
	s, err := crawl.Stats(cfg.Data)
	if err != nil {
		return err
	}
	s.Print(stdout)
	return nil
}

// progressLoop redraws one status line until done is closed.
func progressLoop(eng *crawl.Engine, w io.Writer, done <-chan struct{}) {
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	var last int64
	lastT := time.Now()
	for {
		select {
		case <-done:
			return
		case now := <-t.C:
			p := eng.Progress()
			rate := float64(p.Fetched-last) / now.Sub(lastT).Seconds()
			last, lastT = p.Fetched, now
			fmt.Fprintf(w, "\r\033[Kpages %d  %.0f/s  queued %d  in flight %d  hosts %d  errors %d  %s",
				p.Fetched, rate, p.Queued, p.InFlight, p.Hosts, p.Errors, p.Elapsed.Round(time.Second))
		}
	}
}

// isTerminal reports whether w is a character device (a terminal), so that
// progress lines stay out of pipes and files.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
