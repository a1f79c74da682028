package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/spider-crawler/spider/internal/websim"
)

// runDump writes the web as static files for a real web server (nginx's
// gzip_static): bench/static.sh.
func runDump(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("websim dump", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg := websim.RegisterFlags(fs)
	out := fs.String("out", "", "directory to write (must be empty or absent)")
	first := fs.Int("first-addr", 11, "host i is served on 127.0.0.(first-addr+i)")
	port := fs.Int("serve-port", 8081, "the port the static server listens on (written in the pages' absolute URLs)")
	toc := fs.Bool("toc", true, "add a documentation-like table of contents of its host to every page")
	disallow := fs.String("disallow", "/s/1/a/", "robots.txt Disallow path of every host (empty: the web's own robots.txt)")
	gz := fs.Bool("gzip", true, "write FILE.gz beside every file (gzip_static)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: websim dump --out DIR [web flags]   (the web as static files, one directory per host, manifest.json)")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return flagError(err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("cannot use arguments %q: dump takes flags only", fs.Args())
	}
	if *out == "" {
		return usageError{fmt.Errorf("cannot dump without --out DIR: give the directory to write")}
	}
	cfg.Port = *port
	web, err := websim.New(*cfg)
	if err != nil {
		return fmt.Errorf("cannot build the web: %w", err)
	}
	origins, err := websim.LoopbackOrigins(len(web.Hosts()), *first, *port)
	if err != nil {
		return err
	}
	m, err := web.DumpTo(ctx, *out, websim.DumpOptions{Origins: origins, TOC: *toc, Disallow: *disallow, Gzip: *gz})
	if err != nil {
		return err
	}
	pages := 0
	for _, h := range m.Hosts {
		pages += len(h.Pages)
	}
	fmt.Fprintf(stdout, "wrote %d hosts, %d allowed HTML pages (%.1f KB each on average, %.1f KB gzipped), %d files to %s\n",
		len(m.Hosts), pages, float64(m.HTMLBytes)/float64(max(pages, 1))/1024, float64(m.GzipBytes)/float64(max(m.Files, 1))/1024, m.Files, *out)
	return nil
}
