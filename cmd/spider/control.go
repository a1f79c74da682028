package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spider-crawler/spider/internal/cluster"
)

const controlSynopsis = `control --redis URL --crawl NAME pause|resume|stop|seed URL...|priority TOPIC N
       control --addr HOST:PORT priority TOPIC N

Changes a distributed crawl while it runs (peer-to-peer nodes, a
master–worker master): pause (no new fetch starts; fetches in flight
finish), resume, stop (every node finishes its fetches in flight and exits
0; what is pending stays pending, so running the same commands again
resumes the crawl), seed URL... (the URLs are discovered as if found: the
crawl's rules apply, each goes to the node that owns its host). The command
is written to Redis at once and every node applies it within a second;
spider control then waits up to --wait for every live node to acknowledge
it and prints how many did, and how long it took. Exit 1 names the live
nodes that did not acknowledge in time; exit 2 for an unknown crawl.
A pause is kept for nodes that join later; a stop is undone by the next
run of any node.

priority TOPIC N changes a topic's priority (0 lowest … 9) while a
topic-focused crawl runs; TOPIC may be "(other)", the URLs of no topic.
With --redis/--crawl (a topics crawl on a cluster: spider master --topics)
it is recorded in Redis, the coordinator applies it at its next tick and
keeps it across restarts, and the command waits up to --wait for the
coordinator's status to show it. With --addr (a crawl serving its HTTP API:
spider crawl --topics --addr, or spider serve --redis) it calls PUT
/api/topics/TOPIC/priority with the token of --token-file or
$SPIDER_TOKEN; the crawl applies it from its next URL. Exit 2 for an
unknown topic (the crawl's topics are named), a priority out of range, a
crawl without topics or a refused token; 1 when the crawl has finished; 3
when Redis or the server cannot be reached.`

func runControl(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("control", controlSynopsis, stderr)
	var rf redisFlags
	rf.register(fs)
	wait := fs.Duration("wait", 5*time.Second, "how long to wait for every live node to acknowledge (range 100ms to 10m)")
	addr := fs.String("addr", "", "priority: the HTTP server (HOST:PORT) of a crawl run with --addr, instead of --redis")
	tokenFile := fs.String("token-file", "", "with --addr: file holding the control token (default: $SPIDER_TOKEN)")
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return fmt.Errorf("%w: say what to do: spider control --crawl NAME pause|resume|stop|seed URL...|priority TOPIC N", errUsage)
	}
	if *wait < 100*time.Millisecond || *wait > 10*time.Minute {
		return fmt.Errorf("%w: --wait %s is out of range: use 100ms to 10m", errUsage, *wait)
	}
	action, rest := fs.Arg(0), fs.Args()[1:]
	if *addr != "" && action != "priority" {
		return fmt.Errorf("%w: --addr serves priority only; pause, resume, stop and seeds of a crawl with --addr are on its dashboard and API (POST /api/crawl/pause ...)", errUsage)
	}
	if action == "priority" {
		topic, p, err := parsePriorityArgs(rest)
		if err != nil {
			return err
		}
		if *addr != "" {
			if fs.Changed("redis") || fs.Changed("crawl") {
				return fmt.Errorf("%w: give either --addr or --redis/--crawl, not both", errUsage)
			}
			return controlPriorityHTTP(ctx, *addr, *tokenFile, topic, p, *wait, stdout)
		}
		if !fs.Changed("crawl") {
			return fmt.Errorf("%w: name the crawl with --crawl NAME (spider crawls --redis URL lists them), or give --addr HOST:PORT of a crawl serving its API", errUsage)
		}
		return controlPriorityRedis(ctx, &rf, topic, p, *wait, stdout)
	}
	state := ""
	switch action {
	case "pause":
		state = cluster.ControlPaused
	case "resume":
		state = cluster.ControlRunning
	case "stop":
		state = cluster.ControlStopping
	case "seed":
		if len(rest) == 0 {
			return fmt.Errorf("%w: seed needs at least one URL: spider control --crawl NAME seed https://example.org/", errUsage)
		}
		for _, u := range rest {
			if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
				return fmt.Errorf("%w: seed %q is not an http(s) URL", errUsage, u)
			}
		}
	default:
		return fmt.Errorf("%w: unknown action %q: use pause, resume, stop, seed URL... or priority TOPIC N", errUsage, action)
	}
	if action != "seed" && len(rest) > 0 {
		return fmt.Errorf("%w: %s takes no arguments, got %q", errUsage, action, rest)
	}
	if !fs.Changed("crawl") {
		return fmt.Errorf("%w: name the crawl with --crawl NAME (spider crawls --redis URL lists them)", errUsage)
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
	keys, err := cluster.NewKeys(c.Name)
	if err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	ctl := cluster.NewControl(rdb, keys)
	live, err := ctl.Live(ctx)
	if err != nil {
		return rf.lost(err)
	}
	slices.Sort(live)
	start := time.Now()
	var cmd cluster.Command
	if action == "seed" {
		cmd, err = ctl.AddSeeds(ctx, rest)
	} else {
		cmd, err = ctl.Set(ctx, state)
	}
	if err != nil {
		return rf.lost(err)
	}
	wctx, cancel := context.WithTimeout(ctx, *wait)
	acked, missing, err := ctl.WaitAcks(wctx, cmd.Seq, live)
	cancel()
	took := time.Since(start)
	if err != nil {
		return rf.lost(err)
	}
	what := cmd.State
	if action == "seed" {
		what = fmt.Sprintf("%d URL(s) queued; %s", len(rest), cmd.State)
	}
	// The last ack's delay after the command on Redis server time: the
	// latency of the nodes, without this command's polling of the acks.
	last := ""
	if acks, _, err := ctl.Acks(ctx); err == nil && len(acked) > 0 {
		var ms int64
		for _, n := range acked {
			ms = max(ms, acks[n].AckedMS-cmd.AtMS)
		}
		last = fmt.Sprintf(" (the last %dms after the command, Redis time)", ms)
	}
	fmt.Fprintf(stdout, "crawl %q: %s (seq %d); %d of %d live node(s) acknowledged in %s%s\n",
		c.Name, what, cmd.Seq, len(acked), len(live), took.Round(time.Millisecond), last)
	if len(live) == 0 {
		fmt.Fprintf(stdout, "no node is running: the command waits in Redis for the next run (a stop is undone by it)\n")
	}
	if len(missing) > 0 {
		return fmt.Errorf("not acknowledged within %s by %d live node(s): %s (are they cut off from Redis? spider status --crawl %s shows them)",
			*wait, len(missing), strings.Join(missing, ", "), c.Name)
	}
	return nil
}
