package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/spider-crawler/spider/internal/crawl"
)

// listFlag is a repeatable string flag: each --name VALUE appends.
type listFlag struct{ p *[]string }

func (l listFlag) String() string {
	if l.p == nil {
		return ""
	}
	return strings.Join(*l.p, ",")
}
func (l listFlag) Set(s string) error { *l.p = append(*l.p, s); return nil }

// Type names the value in help ("--resolve string") and completion.
func (l listFlag) Type() string { return "string" }

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

// Type names the value in help ("--delay duration") and completion.
func (d durationFlag) Type() string { return "duration" }

// flagSink receives the flag set a run function defines: flagsOf passes
// one as the run function's stderr (see newFlagSet).
type flagSink interface {
	io.Writer
	takeFlags(fs *pflag.FlagSet, synopsis string)
}

// newFlagSet makes a command's flag set (pflag, GNU style: --flag value,
// --flag=value). Its -h/--help output, written to w, is the grouped help
// of help.go: the synopsis, the flags by group, the examples. If w is a
// flagSink it is handed the set, so that the cobra command tree knows every
// command's flags without a second definition of them (flagsOf).
func newFlagSet(name, synopsis string, w io.Writer) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(w)
	fs.Usage = func() { writeHelp(w, name, synopsis, fs) }
	if s, ok := w.(flagSink); ok {
		s.takeFlags(fs, synopsis)
	}
	return fs
}

// parseArgs parses args into fs with flags allowed anywhere on the line, as
// users of wget and curl expect: "spider crawl URL --max-depth 2" is
// "spider crawl --max-depth 2 URL" (pflag's interspersed parsing). The
// arguments that are not flags (or a flag's value) keep their order in
// fs.Args(); everything after "--" is an argument even if it starts with
// "-". Old single-dash long flags ("-max-depth 2", "-data=DIR"), which
// the Go flag package accepted and scripts may still use, are rewritten to
// their two-dash form first (normaliseArgs). A flag the command does not
// have, a missing value or an unparseable one is a usage error (exit 2)
// on one line naming the flag, its valid range and "spider CMD -h", and so
// is a value outside the flag's flagRanges entry (ranges.go);
// -h/--help returns pflag.ErrHelp after printing the help.
func parseArgs(fs *pflag.FlagSet, args []string) error {
	err := fs.Parse(normaliseArgs(fs, args))
	if err == nil {
		return checkRanges(fs)
	}
	if errors.Is(err, pflag.ErrHelp) {
		return err
	}
	return parseError(fs, err)
}

// normaliseArgs rewrites "-name" and "-name=value" to "--name…" when name
// is a long flag of fs (more than one letter), and "-help" to "--help";
// anything else (one-letter flags such as -h, negative numbers, values,
// unknown names, everything after "--") is left as it is. A non-boolean
// flag's separate value is never rewritten, so "--user-agent -data" keeps
// its value.
func normaliseArgs(fs *pflag.FlagSet, args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			out = append(out, args[i:]...)
			break
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		var f *pflag.Flag
		switch {
		case strings.HasPrefix(a, "--"):
			f = fs.Lookup(name)
		case strings.HasPrefix(a, "-") && len(name) > 1:
			if f = fs.Lookup(name); f != nil || name == "help" {
				a = "-" + a
			}
		}
		out = append(out, a)
		if f != nil && !hasValue && f.NoOptDefVal == "" && i+1 < len(args) {
			i++ // the flag's value, whatever it looks like
			out = append(out, args[i])
		}
	}
	return out
}

// parseError turns pflag's error into a one-line usage error that names
// the flag, what it takes (its range, from its help text) and where to read
// more.
func parseError(fs *pflag.FlagSet, err error) error {
	more := fmt.Sprintf("see spider %s -h", fs.Name())
	var (
		notExist *pflag.NotExistError
		noValue  *pflag.ValueRequiredError
		invalid  *pflag.InvalidValueError
	)
	switch {
	case errors.As(err, &invalid):
		f := invalid.GetFlag()
		return fmt.Errorf("%w: cannot use --%s %q: give %s; %s", errUsage, f.Name, invalid.GetValue(), flagTakes(fs, f), more)
	case errors.As(err, &noValue):
		f := noValue.GetFlag()
		return fmt.Errorf("%w: --%s needs a value: give %s; %s", errUsage, f.Name, flagTakes(fs, f), more)
	case errors.As(err, &notExist):
		name := notExist.GetSpecifiedName()
		if s := notExist.GetSpecifiedShortnames(); s != "" {
			name = s
		}
		dashes := "--"
		if notExist.GetSpecifiedShortnames() != "" {
			dashes = "-"
		}
		if near := nearestFlag(fs, name); near != "" {
			return fmt.Errorf("%w: unknown flag %s%s: did you mean --%s? %s for its flags", errUsage, dashes, name, near, more)
		}
		return fmt.Errorf("%w: unknown flag %s%s: spider %s has no such flag; %s for its flags", errUsage, dashes, name, fs.Name(), more)
	}
	return fmt.Errorf("%w: %v; %s", errUsage, err, more)
}

// nearestFlag is the flag of fs whose name is closest to name (at most two
// edits away, as a typo), or "".
func nearestFlag(fs *pflag.FlagSet, name string) string {
	best, bestD := "", 3
	fs.VisitAll(func(f *pflag.Flag) {
		if d := editDistance(name, f.Name); d < bestD {
			best, bestD = f.Name, d
		}
	})
	return best
}

// editDistance is the Damerau–Levenshtein distance (adjacent transpositions
// count as one edit) between a and b.
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// flagTakes says what a flag takes: its kind of value, and the range its
// help text states ("range …", "at most …", "at least …") or its
// flagRanges entry, if any.
func flagTakes(fs *pflag.FlagSet, f *pflag.Flag) string {
	kind := map[string]string{
		"int": "an integer", "int64": "an integer", "uint64": "a whole number", "uint": "a whole number",
		"float64": "a number", "duration": "a duration such as 500ms or 2s", "bool": "true or false",
	}[f.Value.Type()]
	if kind == "" {
		kind = "a " + f.Value.Type()
	}
	if m := flagRangeRE.FindString(f.Usage); m != "" {
		kind += " (" + m + ")"
	} else if r, ok := rangeOf(fs, f); ok {
		kind += " (" + r.helpText(f) + ")"
	}
	return kind
}

// flagRangeRE finds the range a flag's help text states.
var flagRangeRE = regexp.MustCompile(`(range:? [^);]*|at most [^);,]*|at least [^);,]*)`)

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
func localFlags(fs *pflag.FlagSet, c *crawl.Config) {
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
