package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/spider-crawler/spider/internal/crawl"
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
