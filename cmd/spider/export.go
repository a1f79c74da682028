package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"

	"github.com/spider-crawler/spider/internal/crawl"
)

func runExport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("export", "export [--data DIR] [--format jsonl|warc] [--out FILE]", stderr)
	data := fs.String("data", "spider-data", "data directory of a crawl")
	format := fs.String("format", "jsonl", "jsonl (one record per URL) or warc (WARC 1.1, gzip members)")
	out := fs.String("out", "-", "output file; - is standard output")
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: export takes no arguments, got %q", errUsage, fs.Args())
	}
	// Refuse a directory without a crawl before creating the output file.
	if err := crawl.CheckCrawlDir(*data); err != nil {
		return fmt.Errorf("cannot export: %w", err)
	}
	w := stdout
	var f *os.File
	if *out != "-" {
		var err error
		if f, err = os.Create(*out); err != nil {
			return fmt.Errorf("cannot create output file: %w", err)
		}
		defer f.Close()
		w = f
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	if err := crawl.Export(ctx, *data, *format, bw); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("cannot write export: %w", err)
	}
	if f != nil {
		return f.Close()
	}
	return nil
}
