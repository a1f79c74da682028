package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"

	"github.com/spider-crawler/spider/internal/partition"
)

// memoryExperiment measures Redis memory per URL; see the package comment.
func memoryExperiment(ctx context.Context, b *bench, o options, out io.Writer) error {
	seeds := o.SSeeds
	if seeds == 0 {
		seeds = o.SHosts
	}
	w, err := startWeb(ctx, webSpec{Hosts: o.SHosts, Pages: o.SPages, Seeds: seeds}, filepath.Join(b.work, "memory-web"))
	if err != nil {
		return err
	}
	defer w.close()
	fmt.Fprintf(out, "## Redis memory per URL\n\n")
	fmt.Fprintf(out, "Web: websim seed 1, clean profile, no latency, %s hosts × %d pages, seeds: the index pages of %s hosts; "+
		"ground truth %s URLs. Redis is flushed before each run; used_memory (INFO memory) is read before, every "+
		"200 ms during the run (peak) and after every process exited. Two p2p nodes A=100, B=100, `--concurrency 16`; "+
		"master–worker with 2 workers × 16.\n\n",
		itoa(o.SHosts), o.SPages, itoa(seeds), itoa(len(w.truth.MustFetch)))
	two := []partition.Member{{ID: "A", Weight: 100}, {ID: "B", Weight: 100}}
	specs := []runSpec{
		{Name: "mem-p2p-exact", Topo: topoP2P, Members: two, Concurrency: 16},
		{Name: "mem-p2p-stopped", Topo: topoP2P, Members: two, Concurrency: 16, Extra: []string{"--max-pages", strconv.Itoa(o.MemMaxPages)}},
		{Name: "mem-p2p-bloom", Topo: topoP2P, Members: two, Concurrency: 16, Extra: []string{"--seen", "bloom"}},
		{Name: "mem-mw-exact", Topo: topoMW, Workers: 2, Concurrency: 16, Extra: []string{"--concurrency", "32"}},
	}
	t := newTable("l", "run", "URLs fetched", "seen (Σ buckets)", "pending left", "buckets with state",
		"used_memory before MiB", "peak MiB", "after MiB", "after − before, bytes per seen URL", "peak − before, bytes per fetched URL", "wall s")
	var errs []error
	var perSeen float64
	var notes []string
	for _, s := range specs {
		r := b.run(ctx, w, s)
		if r.Err != nil {
			errs = append(errs, fmt.Errorf("run %s: %w", s.Name, r.Err))
		}
		fetched := r.Fetched()
		grow := r.MemAfter - r.MemBefore
		perSeenCell := "–"
		if r.Seen > 0 {
			perSeenCell = fmt.Sprintf("%.0f", float64(grow)/float64(r.Seen))
		}
		t.add(s.Name, itoa(fetched), itoa(r.Seen), itoa(r.Pending), itoa(r.Buckets), mib(r.MemBefore), mib(r.MemPeak), mib(r.MemAfter),
			perSeenCell, fmt.Sprintf("%.0f", float64(r.MemPeak-r.MemBefore)/float64(max(fetched, 1))), secs(r.Wall))
		switch s.Name {
		case "mem-p2p-exact":
			if r.Seen > 0 && r.Pending == 0 {
				perSeen = float64(grow) / float64(r.Seen)
			}
		case "mem-p2p-stopped":
			if perSeen > 0 && r.Pending > 0 {
				extra := (float64(grow) - perSeen*float64(r.Seen)) / float64(r.Pending)
				notes = append(notes, fmt.Sprintf("- **Per pending (discovered, not yet fetched) URL**: the stopped crawl left %s "+
					"pending of %s seen; beyond %.0f bytes per seen URL it holds %.0f bytes per pending URL "+
					"((after − before − seen × per-seen) ÷ pending).", itoa(r.Pending), itoa(r.Seen), perSeen, extra))
			} else if r.Pending == 0 {
				notes = append(notes, "- The crawl stopped by --max-pages left no pending URL in Redis: no per-pending figure.")
			}
		case "mem-mw-exact":
			notes = append(notes, fmt.Sprintf("- **Master–worker**: the master's seen set and frontier are in its own data "+
				"directory (bbolt), not in Redis; Redis holds the queues (srq ≤ max-inflight tasks, nrq results) "+
				"and per-worker keys: %s MiB at the peak for %s URLs, %.0f bytes per fetched URL, %s MiB left after the crawl.",
				mib(r.MemPeak-r.MemBefore), itoa(fetched), float64(r.MemPeak-r.MemBefore)/float64(max(fetched, 1)), mib(grow)))
		}
		notes = append(notes, fmt.Sprintf("- %s: %s.", s.Name, checksLine(r)))
		if ctx.Err() != nil {
			break
		}
	}
	t.write(out)
	if len(notes) > 0 {
		fmt.Fprintf(out, "%s\n", joinLines(notes))
	}
	return errors.Join(errs...)
}

func joinLines(ls []string) string {
	s := ""
	for _, l := range ls {
		s += l + "\n"
	}
	return s
}
