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
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spider-crawler/spider/internal/cluster"
	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/masterworker"
	"github.com/spider-crawler/spider/internal/p2p"
	"github.com/spider-crawler/spider/internal/server"
	"github.com/spider-crawler/spider/internal/server/redisview"
	"github.com/spider-crawler/spider/internal/topics"
)

func runStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("status", "status --redis URL [--crawl NAME] [--json] | status --data DIR [--json]", stderr)
	var rf redisFlags
	rf.register(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	buckets := fs.Int("buckets", 4096, "peer-to-peer crawls: the nodes' --buckets")
	data := fs.String("data", "", "a local crawl's data directory: show its topic scheduler (crawls run with --topics) and its revisit schedule (scheduled, due now, next due, failed awaiting retry); live while it runs")
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if *data != "" {
		if err := crawl.CheckCrawlDir(*data); err != nil {
			return fmt.Errorf("cannot show the status: %w", err)
		}
		return printDataStatus(*data, *asJSON, stdout)
	}
	rdb, err := rf.open(ctx)
	if err != nil {
		return err
	}
	defer rdb.Close()
	if err := checkCrawl(ctx, rdb, &rf); err != nil {
		return err
	}
	rep, err := cluster.ReadReports(ctx, rdb, rf.crawl)
	if err != nil {
		return rf.lost(err)
	}
	st, err := masterworker.ReadStatus(ctx, rdb, rf.crawl)
	if err != nil {
		return err
	}
	if src := redisview.ReportSource(rep); src == server.SourceLayered || src == server.SourceProtocol {
		return printReportStatus(rep, src, *asJSON, stdout)
	}
	if st.Master["epoch"] == 0 && len(st.Workers) == 0 {
		// No master ever ran this crawl: it is peer-to-peer (or not started).
		return printPeerStatus(ctx, rdb, rf.crawl, *buckets, rep, *asJSON, stdout)
	}
	ts, isTopics, err := masterworker.ReadTopicStatus(ctx, rdb, rf.crawl)
	if err != nil {
		return err
	}
	now := time.Now()
	sc, hasSched, err := masterworker.ReadSchedule(ctx, rdb, rf.crawl, now)
	if err != nil {
		return rf.lost(err)
	}
	var sched *server.Schedule
	if hasSched {
		sched = server.NewSchedule(sc, now)
	}
	if *asJSON {
		out := redisview.MasterWorkerStatus(st)
		out.Report = reportOut(rep)
		if isTopics {
			out.Topics = &ts
		}
		out.Schedule = sched
		return writeJSON(stdout, out)
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
	printReport(stdout, rep)
	fmt.Fprintf(stdout, "  master: %d URLs done (%.1f/s over %s), %d queued, %d in flight, %d hosts, %d errors\n",
		m["fetched"], rate, (time.Duration(m["elapsed_ms"]) * time.Millisecond).Round(time.Second), m["queued"], m["in_flight"], m["hosts"], m["errors"])
	fmt.Fprintf(stdout, "  tasks: handed %d, results %d, stale %d, re-queued from dead workers %d", m["handed"], m["results"], m["stale"], m["requeued"])
	if isTopics {
		fmt.Fprintf(stdout, ", taken back from leaving nodes %d", m["returned"])
	}
	fmt.Fprintln(stdout)
	fmt.Fprintf(stdout, "  queues: srq %d, nrq %d, free work numbers (trq) %d\n", st.SRQ, st.NRQ, st.FreeTRQ)
	fmt.Fprintf(stdout, "  workers: %d\n", len(st.Workers))
	for _, w := range st.Workers {
		if isTopics {
			fmt.Fprintf(stdout, "    #%d  last heartbeat %s ago, %d tasks in hand, %d queued for it\n", w.ID, w.LastBeat, w.InFlight, w.Queued)
			continue
		}
		fmt.Fprintf(stdout, "    #%d  last heartbeat %s ago, %d tasks in hand\n", w.ID, w.LastBeat, w.InFlight)
	}
	if isTopics {
		printClusterTopics(stdout, ts)
	}
	printSchedule(stdout, sched, now)
	return nil
}

func printPeerStatus(ctx context.Context, rdb redis.UniversalClient, crawlName string, buckets int, rep *cluster.Report, asJSON bool, stdout io.Writer) error {
	st, err := p2p.ReadStatus(ctx, rdb, crawlName, buckets)
	if err != nil {
		return err
	}
	now := time.Now()
	sc, hasSched, err := p2p.ReadSchedule(ctx, rdb, crawlName, buckets, now)
	if err != nil {
		return err
	}
	var sched *server.Schedule
	if hasSched {
		sched = server.NewSchedule(sc, now)
	}
	if asJSON {
		out := redisview.PeerStatus(st)
		out.Report = reportOut(rep)
		out.Schedule = sched
		return writeJSON(stdout, out)
	}
	live := 0
	for _, n := range st.Nodes {
		if !n.Left {
			live++
		}
	}
	state := "running"
	if st.Done {
		state = "done"
	} else if live == 0 {
		state = "no live nodes"
	}
	fmt.Fprintf(stdout, "crawl %q (peer-to-peer): %s, member epoch %d\n", st.Crawl, state, st.Epoch)
	printReport(stdout, rep)
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  node\tweight\tbuckets\tpages/s\tfetched\tqueued\tinbox\tidle")
	var total int64
	for _, n := range st.Nodes {
		id := n.ID
		if n.Left {
			id += " (left)"
		}
		total += n.Fetched
		fmt.Fprintf(tw, "  %s\t%d\t%d\t%.1f\t%d\t%d\t%d\t%v\n", id, n.Weight, n.Buckets, n.PagesPerSec, n.Fetched, n.Queue, n.Inbox, n.Idle)
	}
	tw.Flush()
	fmt.Fprintf(stdout, "  %d URLs done by all nodes\n", total)
	if live > 1 {
		fmt.Fprintf(stdout, "load spread (largest deviation from the weight's share): fetched %.1f%%, queued %.1f%%\n",
			100*st.Spread.FetchedMaxDev, 100*st.Spread.QueueMaxDev)
	}
	nodes := p2p.Nodes(st.Sent)
	if len(nodes) > 0 {
		fmt.Fprintln(stdout, "URLs sent (row: from, column: to):")
		tw = tabwriter.NewWriter(stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprint(tw, "\t")
		for _, n := range nodes {
			fmt.Fprintf(tw, "%s\t", n)
		}
		fmt.Fprintln(tw)
		for _, from := range nodes {
			fmt.Fprintf(tw, "%s\t", from)
			for _, to := range nodes {
				fmt.Fprintf(tw, "%d\t", st.Sent[from][to])
			}
			fmt.Fprintln(tw)
		}
		tw.Flush()
	}
	printSchedule(stdout, sched, now)
	return nil
}

// printDataStatus shows the local crawl in dataDir: its topic scheduler
// (a crawl run with --topics; its status file is rewritten on every daemon
// tick while the crawl runs) and its revisit schedule (read from the state,
// or while a crawl runs from the figures it rewrites every 2 s). A crawl
// with neither is an error wrapping topics.ErrNoStatus.
func printDataStatus(dataDir string, asJSON bool, stdout io.Writer) error {
	ts, err := topics.ReadStatus(dataDir)
	hasTopics := err == nil
	if err != nil && !errors.Is(err, topics.ErrNoStatus) {
		return err
	}
	now := time.Now()
	snap, hasSched, serr := crawl.ReadSchedule(dataDir, now)
	if serr != nil {
		return fmt.Errorf("cannot show the status: %w", serr)
	}
	if !hasTopics && !hasSched {
		return fmt.Errorf("%w, and it has no revisit schedule (no --revisit fixed|adaptive and no failed URL to retry)", err)
	}
	var sched *server.Schedule
	if hasSched {
		sched = server.NewSchedule(snap.ScheduleCounts, snap.At)
	}
	if asJSON {
		if !hasSched {
			return writeJSON(stdout, ts) // as before the schedule: TopicsStatus
		}
		out := server.DataStatus{Schedule: sched}
		if hasTopics {
			out.Status = &ts
		}
		return writeJSON(stdout, out)
	}
	if hasTopics {
		ts.Print(stdout)
	}
	printSchedule(stdout, sched, now)
	return nil
}

// printSchedule writes a crawl's revisit schedule for a person at now;
// nothing when the crawl has none (s nil).
func printSchedule(w io.Writer, s *server.Schedule, now time.Time) {
	if s == nil {
		return
	}
	asOf := ""
	if age := now.Sub(s.At); age >= time.Second {
		asOf = fmt.Sprintf(" (as of %s ago)", age.Round(time.Second))
	}
	fmt.Fprintf(w, "revisit schedule%s: %s scheduled, %d due now", asOf, urlCount(s.Scheduled), s.Overdue)
	if !s.NextDue.IsZero() && s.NextDue.After(now) {
		fmt.Fprintf(w, ", next due %s", whenAt(s.NextDue, now))
	} else if !s.NextDue.IsZero() {
		fmt.Fprintf(w, ", the earliest due since %s", whenAt(s.NextDue, now))
	}
	fmt.Fprintln(w)
	if s.Failed > 0 {
		fmt.Fprintf(w, "  failed, waiting for a retry on their class's back-off: %s (spider crawl --retry-failed retries them now)\n", urlCount(s.Failed))
	}
	if r := s.Run; r != nil {
		fmt.Fprintf(w, "  this run: %d revisits (not modified, 304: %d; changed: %d; unchanged: %d), %d retries of failed URLs, %d brought forward by a sitemap's lastmod\n",
			r.Revisits, r.NotModified, r.Changed, r.Unchanged, r.Retried, r.Hinted)
	}
}

// urlCount is "1 URL" or "n URLs".
func urlCount(n int64) string {
	if n == 1 {
		return "1 URL"
	}
	return fmt.Sprintf("%d URLs", n)
}

// whenAt writes t for a person at now: "15:04:05 UTC (in 1m30s)" or
// "(1m30s ago)", with the date when it is not today.
func whenAt(t, now time.Time) string {
	t, now = t.UTC(), now.UTC()
	layout := "15:04:05 UTC"
	if t.YearDay() != now.YearDay() || t.Year() != now.Year() {
		layout = "2006-01-02 15:04:05 UTC"
	}
	if d := t.Sub(now); d > 0 {
		return fmt.Sprintf("%s (in %s)", t.Format(layout), d.Round(time.Second))
	}
	return fmt.Sprintf("%s (%s ago)", t.Format(layout), now.Sub(t).Round(time.Second))
}

// writeJSON prints v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// reportOut is the crawl-wide report of status --json; nil when no node
// reported.
func reportOut(rep *cluster.Report) *server.CrawlReport {
	if len(rep.Nodes) == 0 {
		return nil
	}
	return redisview.NewCrawlReport(rep)
}

// printReportStatus prints a crawl whose topology keeps no status of its
// own in Redis beyond the crawl-wide report (layered, §0): the report, and
// with --json a ClusterStatus whose nodes come from it.
func printReportStatus(rep *cluster.Report, source string, asJSON bool, stdout io.Writer) error {
	if asJSON {
		out := server.ClusterStatus{Crawl: rep.Crawl, Source: source, Done: rep.State == cluster.ReportDone, Queue: &server.Queue{},
			Nodes: make([]server.Node, 0, len(rep.Nodes)), Report: reportOut(rep)}
		for _, n := range rep.Nodes {
			out.Queue.Queued += n.Detail["queued"]
			out.Queue.InFlight += n.Detail["in_flight"]
			state := n.State
			if n.Stale {
				state = "lost"
			}
			node := server.Node{ID: n.Node, Role: n.Role, State: state, Fetched: redisview.NodeFetched(n), Queue: n.Detail["queued"], InFlight: n.Detail["in_flight"], Idle: n.Final}
			if !n.Final && !n.Stale {
				node.PagesPerSec = n.PagesPerSec
			}
			out.Nodes = append(out.Nodes, node)
		}
		return writeJSON(stdout, out)
	}
	fmt.Fprintf(stdout, "crawl %q (%s): %s\n", rep.Crawl, source, rep.State)
	printReport(stdout, rep)
	return nil
}

// printReport prints the crawl-wide report every topology keeps (see
// cluster.ReadReports): the state, the totals by result row, outcomes,
// bytes and rate, and one row per node, final or live.
func printReport(w io.Writer, rep *cluster.Report) {
	if len(rep.Nodes) == 0 {
		fmt.Fprintln(w, "  report: no node has reported yet")
		return
	}
	final := "live"
	if rep.Final() {
		final = "final"
	}
	fmt.Fprintf(w, "  report (%s): %s, %d URLs done, %d bytes stored, %.1f pages/s\n", final, rep.State, rep.Totals.Pages, rep.Totals.Bytes, rep.PagesPerSec)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "  result\tURLs\t\n")
	for _, row := range crawl.TableRows {
		fmt.Fprintf(tw, "  %s\t%d\t\n", row, rep.Totals.Rows[row])
	}
	fmt.Fprintf(tw, "  total\t%d\t\n", rep.Totals.Pages)
	tw.Flush()
	outs := make([]string, 0, len(rep.Totals.Outcomes))
	for o, n := range rep.Totals.Outcomes {
		outs = append(outs, fmt.Sprintf("%s=%d", o, n))
	}
	sort.Strings(outs)
	fmt.Fprintf(w, "  outcomes: %s\n", strings.Join(outs, " "))
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  node\trole\tstate\tURLs\tbytes\tpages/s\tfigures\tupdated\tdetail")
	for _, n := range rep.Nodes {
		state, figures := n.State, "live"
		switch {
		case n.Final:
			figures = "final"
		case n.Stale:
			state, figures = "lost", "last seen"
		}
		ago := time.Duration(rep.NowMS-n.UpdatedMS) * time.Millisecond
		detail := make([]string, 0, len(n.Detail))
		for k, v := range n.Detail {
			detail = append(detail, fmt.Sprintf("%s=%d", k, v))
		}
		sort.Strings(detail)
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%d\t%.1f\t%s\t%s ago\t%s\n", n.Node, n.Role, state, n.Pages, n.Bytes, n.PagesPerSec, figures, ago.Round(100*time.Millisecond), strings.Join(detail, " "))
	}
	tw.Flush()
}
