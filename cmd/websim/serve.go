package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/spider-crawler/spider/internal/websim"
)

// runServe serves the web until ctx is done.
func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("websim serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg := websim.RegisterFlags(fs)
	accessLog := fs.String("access-log", "", "write every request as a JSON line to this file")
	resolveFile := fs.String("resolve-file", "", "write the HOST:PORT:ADDR entries to this file instead of stdout")
	seedCount := fs.Int("seed-count", 1, "number of seed URLs to print (host order)")
	verbose := fs.Bool("v", false, "log misrouted requests and server errors to stderr")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: websim serve [flags]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return flagError(err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("cannot use arguments %q: serve takes flags only", fs.Args())
	}
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelDebug
	}
	cfg.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	var logBuf *bufio.Writer
	if *accessLog != "" {
		f, err := os.Create(*accessLog)
		if err != nil {
			return fmt.Errorf("cannot create access log: %w", err)
		}
		defer f.Close()
		logBuf = bufio.NewWriterSize(f, 64<<10)
		cfg.LogWriter = logBuf
	}
	srv, err := websim.Start(ctx, *cfg)
	if err != nil {
		return fmt.Errorf("cannot start: %w", err)
	}
	entries := strings.Join(srv.Resolve(), "\n") + "\n"
	if *resolveFile != "" {
		if err := os.WriteFile(*resolveFile, []byte(entries), 0o644); err != nil {
			_ = srv.Close()
			return fmt.Errorf("cannot write resolve file: %w", err)
		}
	} else {
		fmt.Fprint(stdout, entries)
	}
	for _, u := range srv.SeedURLs(*seedCount) {
		fmt.Fprintln(stdout, u)
	}
	fmt.Fprintf(stderr, "websim: serving %d hosts (%s profile, features: %s) on %s\n",
		len(srv.Hosts()), srv.Config().Profile, featureList(srv.Features()), srv.Addr())
	<-ctx.Done()
	_ = srv.Close()
	if logBuf != nil {
		if err := logBuf.Flush(); err != nil {
			return fmt.Errorf("cannot write access log: %w", err)
		}
	}
	return nil
}

func featureList(f websim.Feature) string {
	if f == 0 {
		return "none"
	}
	return f.String()
}
