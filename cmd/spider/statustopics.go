package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spider-crawler/spider/internal/masterworker"
)

// printClusterTopics prints a topics crawl's coordinator status (spider
// status --redis --crawl NAME): the per-topic table of the single-node
// status (topics.Status.Print, as spider status --data prints it) and one
// row per crawl node with its load.
func printClusterTopics(w io.Writer, ts masterworker.TopicStatus) {
	fmt.Fprintf(w, "  coordinator (PQ-MCSA, as of %s):\n", ts.At.Format(time.RFC3339))
	ts.Status.Print(w)
	if len(ts.Nodes) == 0 {
		fmt.Fprintln(w, "crawl nodes: none has reported to the coordinator yet")
		return
	}
	fmt.Fprintf(w, "crawl nodes: %d\n", len(ts.Nodes))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  worker\tnode\talive\tin flight\tqueued\tpages/s\terrors\tfetched\tlogical nodes\tlast heartbeat")
	for _, n := range ts.Nodes {
		alive := "yes"
		if !n.Alive {
			alive = "no"
		}
		beat := "-"
		if !n.LastBeat.IsZero() {
			beat = n.LastBeat.Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%d\t%d\t%.1f\t%d\t%d\t%d\t%s\n", n.Worker, n.Node, alive, n.InFlight, n.Queued, n.PagesPerSec, n.Errors, n.Fetched, n.Buckets, beat)
	}
	tw.Flush()
}
