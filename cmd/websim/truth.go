package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"

	"github.com/spider-crawler/spider/internal/websim"
)

// runTruth computes the ground truth and writes it as JSON.
func runTruth(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("websim truth", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg := websim.RegisterFlags(fs)
	rules := websim.RegisterTruthFlags(fs)
	out := fs.String("out", "", "write the JSON to this file instead of stdout")
	seedCount := fs.Int("seed-count", 1, "without --seeds: use the index pages of this many hosts")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: websim truth [flags]   (give the web flags used with serve, and --port or --addr with its port)")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return flagError(err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("cannot use arguments %q: truth takes flags only", fs.Args())
	}
	if cfg.Port == 0 {
		if _, p, err := net.SplitHostPort(cfg.Addr); err == nil {
			cfg.Port, _ = strconv.Atoi(p)
		}
	}
	web, err := websim.New(*cfg)
	if err != nil {
		return fmt.Errorf("cannot build the web: %w", err)
	}
	if len(rules.Seeds) == 0 {
		rules.Seeds = web.SeedURLs(*seedCount)
	}
	t, err := web.Truth(*rules)
	if err != nil {
		return err
	}
	var w io.Writer = stdout
	if *out != "" {
		f, err := os.Create(*out)
		if err != nil {
			return fmt.Errorf("cannot create output: %w", err)
		}
		defer f.Close()
		w = f
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(t); err != nil {
		return fmt.Errorf("cannot write truth: %w", err)
	}
	return nil
}
