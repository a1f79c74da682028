package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spider-crawler/spider/internal/partition"
)

// scalingExperiment is the SPEC §1 table made latency-bound; see the
// package comment.
func scalingExperiment(ctx context.Context, b *bench, o options, out io.Writer) error {
	seeds := o.SSeeds
	if seeds == 0 {
		seeds = o.SHosts
	}
	w, err := startWeb(ctx, webSpec{Hosts: o.SHosts, Pages: o.SPages, Seeds: seeds, Latency: o.Latency},
		filepath.Join(b.work, "scaling-web"))
	if err != nil {
		return err
	}
	defer w.close()
	fmt.Fprintf(out, "## design §1 table: pages/s by number of workers, latency-bound\n\n")
	fmt.Fprintf(out, "Web: websim seed 1, clean profile, %s hosts × %d pages, **%s latency** before every answer, seeds: "+
		"the index pages of %s hosts, scope any, no depth limit. Ground truth: %s URLs on %s hosts. Every worker and "+
		"every node runs `--concurrency %d`, `--delay %s`, per-host 1. The master gets `--concurrency` = workers × %d "+
		"(so its default `--max-inflight`, 4 × concurrency, never caps the workers). One process fetching with "+
		"concurrency c cannot exceed c / latency = %.0f pages/s.\n\n",
		itoa(o.SHosts), o.SPages, o.Latency, itoa(seeds), itoa(len(w.truth.MustFetch)), itoa(w.hostCount()),
		o.SConcurrency, o.SDelay, o.SConcurrency, float64(o.SConcurrency)/o.Latency.Seconds())

	var specs []runSpec
	for _, n := range o.WorkerCounts {
		specs = append(specs, runSpec{Name: "scale-mw-" + strconv.Itoa(n), Topo: topoMW, Workers: n,
			Concurrency: o.SConcurrency, Delay: o.SDelay})
	}
	for _, n := range o.PeerCounts {
		var ms []partition.Member
		for i := 1; i <= n; i++ {
			ms = append(ms, partition.Member{ID: "P" + strconv.Itoa(i), Weight: 100})
		}
		specs = append(specs, runSpec{Name: "scale-p2p-" + strconv.Itoa(n), Topo: topoP2P, Members: ms,
			Concurrency: o.SConcurrency, Delay: o.SDelay})
	}
	t := newTable("lr", "topology", "processes", "pages", "wall s", "pages/s", "speed-up", "efficiency",
		"active pages/s", "start-up s", "wind-down s", "robots.txt", "Redis cmds/page", "Redis CPU ms/page", "spider CPU ms/page", "coverage", "repeats", "busiest commands per page")
	base := map[topology]float64{}
	var errs []error
	var notes []string
	var cmds []string
	for _, s := range specs {
		// The master of n workers schedules for all of them.
		if s.Topo == topoMW {
			s.Extra = []string{"--concurrency", strconv.Itoa(s.Workers * s.Concurrency)}
		}
		r := b.run(ctx, w, s)
		if r.Err != nil {
			errs = append(errs, fmt.Errorf("run %s: %w", s.Name, r.Err))
		}
		n := len(r.Nodes)
		rate := r.PagesPerSec()
		if n == 1 || base[s.Topo] == 0 {
			base[s.Topo] = rate / float64(n)
		}
		speed := rate / base[s.Topo]
		eff := speed / float64(n)
		topo := "master–worker"
		if s.Topo == topoP2P {
			topo = "peer-to-peer"
		}
		wall := secs(r.Wall)
		if r.Hung {
			wall += " (hang: to the last request)"
		}
		pages := r.Log.Pages
		t.add(topo, strconv.Itoa(n), itoa(pages), wall, fmt.Sprintf("%.1f", rate), fmt.Sprintf("%.2f", speed),
			"**"+pct(eff)+"**", fmt.Sprintf("%.1f", r.ActivePerSec()),
			secs(r.Log.First.Sub(r.Start)), secs(r.Start.Add(r.Wall).Sub(r.Log.Last)), itoa(r.Log.Robots),
			fmt.Sprintf("%.1f", float64(r.Commands)/float64(max(pages, 1))),
			fmt.Sprintf("%.3f", ms(r.RedisCPU)/float64(max(pages, 1))), fmt.Sprintf("%.3f", ms(r.CrawlCPU())/float64(max(pages, 1))),
			fmt.Sprintf("%.4f", r.Log.Coverage()), strconv.Itoa(r.Log.Duplicates+r.CrossDup), topCmds(r.TopCmds, pages, 4))
		notes = append(notes, fmt.Sprintf("- %s × %d: %s.", topo, n, checksLine(r)))
		if len(cmds) == 0 && s.Topo == topoMW {
			cmds = append(cmds, commandLine(strings.Fields(r.MWArgs[0]), b.work), commandLine(strings.Fields(r.MWArgs[1]), b.work))
		}
		if len(cmds) < 3 && s.Topo == topoP2P {
			cmds = append(cmds, commandLine(r.Args, b.work))
		}
		if ctx.Err() != nil {
			break
		}
	}
	t.write(out)
	fmt.Fprintf(out, "Pages = requests other than robots.txt in websim's access log; wall = first process start to last "+
		"exit (start-up, ring/lease settling and the end-of-crawl detection included); active pages/s = pages over "+
		"the access log's first-to-last request window; start-up = first process start to the first request; "+
		"wind-down = end of the last request to the last exit. Speed-up = pages/s ÷ the 1-process pages/s of the same "+
		"topology; efficiency = speed-up ÷ processes (the goal: ≥ 90%% at 4). The document: 5.385, 10.992, 14.118, "+
		"17.079 pages/s (79%% at 4). Redis commands: INFO commandstats over the run (the benchmark's own INFO calls "+
		"left out). CPU ms/page: every spider process (master included) ÷ pages.\n\n")
	fmt.Fprintf(out, "Checks per run:\n\n%s\n\n", strings.Join(notes, "\n"))
	fmt.Fprintf(out, "Commands (master, one worker; one p2p node):\n\n```\n%s\n```\n", strings.Join(cmds, "\n"))
	return errors.Join(errs...)
}

// ms is a duration in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
