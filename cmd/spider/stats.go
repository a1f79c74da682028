package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/spider-crawler/spider/internal/crawl"
)

func runStats(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("stats", "stats [--data DIR] [--json]", stderr)
	data := fs.String("data", "spider-data", "data directory of a crawl")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: stats takes no arguments, got %q", errUsage, fs.Args())
	}
	s, err := crawl.Stats(*data)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(s)
	}
	s.Print(stdout)
	return nil
}
