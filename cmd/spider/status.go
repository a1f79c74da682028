package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/spider-crawler/spider/internal/masterworker"
)

func runStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("status", "status --redis URL [--crawl NAME] [--json]", stderr)
	var rf redisFlags
	rf.register(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	rdb, err := rf.open(ctx)
	if err != nil {
		return err
	}
	defer rdb.Close()
	st, err := masterworker.ReadStatus(ctx, rdb, rf.crawl)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(st)
	}
	state := "running"
	if st.Done {
		state = "done"
	}
	m := st.Master
	rate := 0.0
	if ms := m["elapsed_ms"]; ms > 0 {
		rate = float64(m["fetched"]) / (float64(ms) / 1000)
	}
	fmt.Fprintf(stdout, "crawl %q (master–worker): %s\n", st.Crawl, state)
	fmt.Fprintf(stdout, "  master: %d URLs done (%.1f/s over %s), %d queued, %d in flight, %d hosts, %d errors\n",
		m["fetched"], rate, (time.Duration(m["elapsed_ms"]) * time.Millisecond).Round(time.Second), m["queued"], m["in_flight"], m["hosts"], m["errors"])
	fmt.Fprintf(stdout, "  tasks: handed %d, results %d, stale %d, re-queued from dead workers %d\n", m["handed"], m["results"], m["stale"], m["requeued"])
	fmt.Fprintf(stdout, "  queues: srq %d, nrq %d, free work numbers (trq) %d\n", st.SRQ, st.NRQ, st.FreeTRQ)
	fmt.Fprintf(stdout, "  workers: %d\n", len(st.Workers))
	for _, w := range st.Workers {
		fmt.Fprintf(stdout, "    #%d  last heartbeat %s ago, %d tasks in hand\n", w.ID, w.LastBeat, w.InFlight)
	}
	return nil
}
