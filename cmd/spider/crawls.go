package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/redis/go-redis/v9"

	"github.com/spider-crawler/spider/internal/cluster"
	"github.com/spider-crawler/spider/internal/crawls"
)

// crawlsOutput is `spider crawls --json`.
type crawlsOutput struct {
	Crawls []crawls.Crawl `json:"crawls"`
}

func runCrawls(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("crawls", "crawls --redis URL [--json]", stderr)
	var rf redisFlags
	rf.register(fs)
	_ = fs.MarkHidden("crawl") // crawls lists them all
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: crawls takes no arguments, got %q", errUsage, fs.Args())
	}
	rdb, err := rf.open(ctx)
	if err != nil {
		return err
	}
	defer rdb.Close()
	list, err := crawls.List(ctx, rdb)
	if err != nil {
		return rf.lost(fmt.Errorf("cannot list the crawls: %w", err))
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(crawlsOutput{Crawls: list})
	}
	if len(list) == 0 {
		fmt.Fprintln(stdout, "no crawls on this Redis")
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "name\ttopology\tstate\tnodes\tURLs done\tkeys\tmemory (estimate)")
	for _, c := range list {
		done := "-"
		if c.URLsDone >= 0 {
			done = fmt.Sprint(c.URLsDone)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\n", c.Name, c.Topology, c.State, c.Nodes, done, keyCounts(c.Keys, c.Total), bytesText(c.MemoryBytes))
	}
	return tw.Flush()
}

// keyCounts is "8319 (master-worker 8000, rank 319)".
func keyCounts(by map[string]int64, total int64) string {
	if len(by) <= 1 {
		return fmt.Sprint(total)
	}
	kinds := make([]string, 0, len(by))
	for k := range by {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%s %d", k, by[k])
	}
	return fmt.Sprintf("%d (%s)", total, strings.Join(parts, ", "))
}

func bytesText(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// findCrawl returns the crawl named rf.crawl, or a usage error (exit 2)
// for a name no key carries, naming the crawls there are.
func findCrawl(ctx context.Context, rdb redis.UniversalClient, rf *redisFlags) (*crawls.Crawl, error) {
	c, err := crawls.Get(ctx, rdb, rf.crawl)
	switch {
	case err == nil:
		return c, nil
	case errors.Is(err, crawls.ErrNoCrawl), errors.Is(err, cluster.ErrBadName):
		return nil, fmt.Errorf("%w: %w", errUsage, err)
	}
	return nil, rf.lost(err)
}

// checkCrawl is findCrawl for the read-only commands that only need to
// know the crawl exists (cheaper than listing every crawl).
func checkCrawl(ctx context.Context, rdb redis.UniversalClient, rf *redisFlags) error {
	err := crawls.Check(ctx, rdb, rf.crawl)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, crawls.ErrNoCrawl), errors.Is(err, cluster.ErrBadName):
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	return rf.lost(err)
}

// lost marks an error met while talking to Redis after it answered the
// first ping (it went away, or refused a command): exit 3, and the text
// never holds the password.
func (r *redisFlags) lost(err error) error {
	return resourceError{errors.New(redactErr(err, r.url))}
}
