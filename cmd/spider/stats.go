package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/server"
	"github.com/spider-crawler/spider/internal/topics"
)

func runStats(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("stats", "stats [--data DIR] [--json]", stderr)
	data := fs.String("data", "spider-data", "data directory of a crawl")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: stats takes no arguments, got %q", errUsage, fs.Args())
	}
	s, err := crawl.Stats(*data)
	if err != nil {
		return err
	}
	ts, terr := topics.ReadStatus(*data)
	if terr != nil && !errors.Is(terr, topics.ErrNoStatus) {
		return terr
	}
	if *asJSON {
		var tp *topics.Status
		if terr == nil {
			tp = &ts
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(server.NewCrawlStats(s, tp))
	}
	s.Print(stdout)
	if terr == nil {
		ts.Print(stdout)
	}
	return nil
}
