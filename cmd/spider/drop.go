package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/spider-crawler/spider/internal/crawls"
)

const dropSynopsis = `drop --redis URL --crawl NAME [--force] [--after DURATION] [--json]

Removes every Redis key of a finished crawl (all topologies: master–worker,
peer-to-peer, layered, the §0 protocol, and the rank and index jobs run
over Redis) and prints how many keys of each kind it removed. A crawl with
a live node (a fresh heartbeat or lease) is refused, and so is one whose
topology keeps no heartbeats spider reads (§0, rank, index: spider cannot
tell whether it runs), unless --force. With --after 24h the keys are not deleted but given
that time to live, so Redis removes them then. The crawl's data directories
are not touched.`

// dropOutput is `spider drop --json`.
type dropOutput struct {
	Crawl string `json:"crawl"`
	// Action is "deleted" or "expire" (with --after).
	Action  string           `json:"action"`
	AfterMS int64            `json:"after_ms,omitempty"`
	Keys    map[string]int64 `json:"keys"`
	Total   int64            `json:"keys_total"`
}

func runDrop(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("drop", dropSynopsis, stderr)
	var rf redisFlags
	rf.register(fs)
	force := fs.Bool("force", false, "drop even a crawl with live nodes, or one whose liveness spider cannot tell")
	after := fs.Duration("after", 0, "do not delete now: give every key of the crawl this time to live (e.g. 24h)")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: drop takes no arguments, got %q: name the crawl with --crawl NAME", errUsage, fs.Args())
	}
	if !fs.Changed("crawl") {
		return fmt.Errorf("%w: name the crawl to drop with --crawl NAME (spider crawls --redis URL lists them)", errUsage)
	}
	if *after < 0 {
		return fmt.Errorf("%w: --after must be positive, got %s", errUsage, *after)
	}
	rdb, err := rf.open(ctx)
	if err != nil {
		return err
	}
	defer rdb.Close()
	c, err := findCrawl(ctx, rdb, &rf)
	if err != nil {
		return err
	}
	if !*force {
		switch c.State {
		case crawls.StateRunning:
			return fmt.Errorf("%w: crawl %q is running (%d live nodes); stop it first, or pass --force to drop it anyway", errUsage, c.Name, c.Nodes)
		case crawls.StateUnknown:
			return fmt.Errorf("%w: crawl %q is a %s crawl, which keeps no heartbeats spider reads, so spider cannot tell whether it still runs; pass --force once it has stopped", errUsage, c.Name, c.Topology)
		}
	}
	out := dropOutput{Crawl: c.Name, Action: "deleted"}
	var r crawls.Removed
	if *after > 0 {
		out.Action, out.AfterMS = "expire", after.Milliseconds()
		r, err = crawls.Expire(ctx, rdb, c.Name, *after)
	} else {
		r, err = crawls.Drop(ctx, rdb, c.Name)
	}
	if err != nil {
		verb := "removed"
		if *after > 0 {
			verb = "given a time to live"
		}
		return rf.lost(fmt.Errorf("cannot finish dropping crawl %q: %d of its %d keys %s before the error; run the same command again to finish: %w", c.Name, r.Total, c.Total, verb, err))
	}
	out.Keys, out.Total = r.Keys, r.Total
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	kinds := make([]string, 0, len(r.Keys))
	for k := range r.Keys {
		if r.Keys[k] > 0 {
			kinds = append(kinds, k)
		}
	}
	sort.Strings(kinds)
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%s %d", k, r.Keys[k])
	}
	detail := ""
	if len(parts) > 0 {
		detail = " (" + strings.Join(parts, ", ") + ")"
	}
	if *after > 0 {
		fmt.Fprintf(stdout, "crawl %q: %d keys%s expire in %s\n", c.Name, r.Total, detail, after.Round(time.Second))
		return nil
	}
	fmt.Fprintf(stdout, "crawl %q dropped: %d keys removed%s\n", c.Name, r.Total, detail)
	return nil
}
