package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/p2p"
)

// listFlag is a repeatable string flag.
type listFlag struct{ p *[]string }

func (l listFlag) String() string {
	if l.p == nil {
		return ""
	}
	return strings.Join(*l.p, ",")
}
func (l listFlag) Set(s string) error { *l.p = append(*l.p, s); return nil }

// durationFlag binds a crawl.Duration.
type durationFlag struct{ p *crawl.Duration }

func (d durationFlag) String() string {
	if d.p == nil {
		return "0s"
	}
	return time.Duration(*d.p).String()
}
func (d durationFlag) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("use a duration such as 500ms or 2s")
	}
	*d.p = crawl.Duration(v)
	return nil
}

// newFlagSet makes a flag set whose -h output goes to w with a heading.
func newFlagSet(name, synopsis string, w io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(w)
	fs.Usage = func() {
		fmt.Fprintf(w, "Usage: spider %s\n\nFlags:\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parseArgs parses args into fs with flags allowed anywhere on the line, as
// users of wget and curl expect: "spider crawl URL --max-depth 2" is
// "spider crawl --max-depth 2 URL". The arguments that are not flags (or
// a flag's value) keep their order in fs.Args(); everything after "--" is
// an argument even if it starts with "-". The flag package stops at the
// first argument, so parseArgs parses again after each one.
func parseArgs(fs *flag.FlagSet, args []string) error {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			positional = append(positional, rest...) // "--" ended the flags
			break
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
	// fs.Args() becomes the arguments: flags already set keep their values.
	return fs.Parse(append([]string{"--"}, positional...))
}

// wantsHelp reports whether args (a subcommand's) ask for its help before
// any "--": the help then goes to standard output.
func wantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help":
			return true
		}
	}
	return false
}

// findConfigFlag returns the value of --config/-config in args, before the
// flags are parsed (the file's values become the flags' defaults).
func findConfigFlag(args []string) string {
	for i, a := range args {
		for _, p := range []string{"--config=", "-config="} {
			if strings.HasPrefix(a, p) {
				return strings.TrimPrefix(a, p)
			}
		}
		if (a == "--config" || a == "-config") && i+1 < len(args) {
			return args[i+1]
		}
		if a == "--" {
			break
		}
	}
	return ""
}

func newLogger(w io.Writer, level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("unknown log level %q: use debug, info, warn or error", level)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l})), nil
}

// checkConfig validates a configuration built from the defaults, the
// --config file and the flags, before anything starts: a value out of its
// range is a usage error (exit 2) naming the flag and the range, on one
// line even when several flags are wrong.
func checkConfig(c *crawl.Config) error {
	if err := c.Validate(); err != nil {
		return fmt.Errorf("%w: %s", errUsage, strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	return nil
}

// localFlags binds the local-only settings (crawl.LocalFields but --topics):
// what concerns the machine a process runs on. spider crawl and master
// take them with the other crawl flags; spider worker takes only these,
// and never from Redis.
func localFlags(fs *flag.FlagSet, c *crawl.Config) {
	fs.StringVar(&c.Data, "data", c.Data, "data directory (state, pages, records, WARC); local only")
	fs.IntVar(&c.Concurrency, "concurrency", c.Concurrency, fmt.Sprintf("fetch workers (range 1 to %d); local only", crawl.MaxConcurrency))
	fs.Var(listFlag{&c.Resolve}, "resolve", "HOST:PORT:ADDR like curl's --resolve; HOST may be *.suffix (repeatable); local only")
	fs.StringVar(&c.ResolveFile, "resolve-file", c.ResolveFile, "file of --resolve entries, one per line; local only")
	fs.BoolVar(&c.AllowPrivate, "allow-private", c.AllowPrivate, "allow loopback, private and link-local targets (off: SSRF protection); local only, never taken from Redis")
	fs.Var(durationFlag{&c.ConnectTimeout}, "connect-timeout", "time-out to connect (range 1ns to 1h); local only")
	fs.Var(durationFlag{&c.FirstByteTimeout}, "first-byte-timeout", "time-out until response headers (range 1ns to 1h); local only")
	fs.Var(durationFlag{&c.Timeout}, "timeout", "time-out for a whole fetch (range 1ns to 1h); local only")
	fs.Int64Var(&c.MaxBodyBytes, "max-body-bytes", c.MaxBodyBytes, fmt.Sprintf("largest body kept, after decompression (range %d to %d, 1 GiB); local only", crawl.MinBodyBytes, crawl.MaxBodyLimit))
	fs.IntVar(&c.MemoryBudget, "memory-budget", c.MemoryBudget, fmt.Sprintf("URLs the frontier keeps in memory; the rest spill to disk (range %d to %d); local only", crawl.MinMemoryBudget, crawl.MaxMemoryBudget))
}

// splitHosts splits --allowed-hosts values at commas and checks each is a
// host name, *.suffix or IP literal (an optional :port is ignored by the
// server).
func splitHosts(vals []string) ([]string, error) {
	var out []string
	for _, v := range vals {
		for _, h := range strings.Split(v, ",") {
			h = strings.TrimSpace(h)
			if h == "" {
				continue
			}
			name := strings.TrimPrefix(h, "*.")
			ok := name != ""
			for _, r := range name {
				if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune(".-_:[]", r)) {
					ok = false
				}
			}
			if !ok {
				return nil, fmt.Errorf("--allowed-hosts %q is not a host name: give names such as search.example.org or *.example.org, separated by commas", h)
			}
			out = append(out, h)
		}
	}
	return out, nil
}

// checkPeerFlags range-checks a peer-to-peer node's --weight and --buckets.
func checkPeerFlags(weight, buckets int) error {
	if weight < 1 || weight > p2p.MaxWeight {
		return fmt.Errorf("%w: --weight %d is out of range: use 1 to %d virtual nodes", errUsage, weight, p2p.MaxWeight)
	}
	if buckets < 1 || buckets > p2p.MaxBuckets {
		return fmt.Errorf("%w: --buckets %d is out of range: use 1 to %d (the same on every node)", errUsage, buckets, p2p.MaxBuckets)
	}
	return nil
}
