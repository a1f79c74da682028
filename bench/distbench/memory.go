package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spider-crawler/spider/internal/partition"
	"github.com/spider-crawler/spider/internal/rstate"
)

// memRun is one crawl of the memory experiment: a group (topology, seen
// mode, buckets) and a kind: "seeds" (--max-depth 0: only the seeds are
// seen), "full" (the whole web) or "stopped" (--max-pages: URLs left
// pending in Redis).
type memRun struct {
	group, kind string
	spec        runSpec
}

// memFit is Redis memory modelled as fixed + perSeen·seen + perPending·pending.
type memFit struct {
	Fixed, PerSeen, PerPending float64
	HasSeen, HasPending        bool
}

// fitMemory computes the model from the growth (after − before) and sizes
// of a group's runs: perSeen from full and seeds (both with nothing
// pending), fixed from full, perPending from stopped.
func fitMemory(runs map[string]*runResult) memFit {
	var f memFit
	full, seeds, stopped := runs["full"], runs["seeds"], runs["stopped"]
	grow := func(r *runResult) float64 { return float64(r.MemAfter - r.MemBefore - r.CallBytes) }
	if full != nil && seeds != nil && full.Pending == 0 && seeds.Pending == 0 && full.Seen > seeds.Seen {
		f.PerSeen = (grow(full) - grow(seeds)) / float64(full.Seen-seeds.Seen)
		f.Fixed = grow(full) - f.PerSeen*float64(full.Seen)
		f.HasSeen = true
	}
	if f.HasSeen && stopped != nil && stopped.Pending > 0 {
		f.PerPending = (grow(stopped) - f.Fixed - f.PerSeen*float64(stopped.Seen)) / float64(stopped.Pending)
		f.HasPending = true
	}
	return f
}

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
	stop := strconv.Itoa(o.MemMaxPages)
	fmt.Fprintf(out, "## Redis memory per URL\n\n")
	fmt.Fprintf(out, "Web: websim seed 1, clean profile, no latency, %s hosts × %d pages, seeds: the index pages of %s hosts; "+
		"ground truth %s URLs. Redis is flushed before each run; used_memory (INFO memory) is read before, every "+
		"200 ms during the run (peak) and after every process exited. Peer-to-peer: two nodes A=100, B=100, "+
		"`--concurrency 16`; master–worker: 2 workers × 16 (master `--concurrency 32`). Each group runs three "+
		"crawls: **seeds** (`--max-depth 0`: only the %s seeds are seen), **full** (the whole web) and **stopped** "+
		"(`--max-pages %s`: the rest of what was discovered stays pending in Redis). Memory is fitted as "+
		"fixed + a·seen + b·pending (seen counts every accepted URL, pending ones included), after leaving out the "+
		"reply keys (`:call:*`, kept %s after each accepting script call, so they vanish by themselves): a from "+
		"full − seeds, fixed from full, b from stopped. A completed URL holds its seen entry, its page's content "+
		"fingerprint and counters; a pending one its seen entry and its queued request.\n\n",
		itoa(o.SHosts), o.SPages, itoa(seeds), itoa(len(w.truth.MustFetch)), itoa(seeds), stop, rstate.ReplyTTL)
	two := []partition.Member{{ID: "A", Weight: 100}, {ID: "B", Weight: 100}}
	few := 32
	p2p := func(name string, buckets int, extra ...string) runSpec {
		return runSpec{Name: name, Topo: topoP2P, Members: two, Concurrency: 16, Buckets: buckets, Extra: extra}
	}
	mw := func(name string, extra ...string) runSpec {
		return runSpec{Name: name, Topo: topoMW, Workers: 2, Concurrency: 16, Extra: append([]string{"--concurrency", "32"}, extra...)}
	}
	groups := []struct{ name, note string }{
		{"p2p exact, 32 buckets", "hashes of > 128 entries (hashtable encoding), as in a large crawl"},
		{"p2p exact, 4096 buckets", fmt.Sprintf("the default --buckets: about %.1f URLs per bucket here (listpack encoding)",
			float64(len(w.truth.MustFetch))/float64(partition.DefaultBuckets))},
		{"p2p bloom, 4096 buckets", "--seen bloom with the default --expected-urls 10M and --fp-rate 1e-6"},
		{"mw exact", "--seen exact on the master"},
		{"mw bloom", "the master's default: a Bloom filter in Redis sized by --expected-urls 10M, --fp-rate 1e-6"},
	}
	runs := []memRun{
		{groups[0].name, "seeds", p2p("mem-p2p32-seeds", few, "--max-depth", "0")},
		{groups[0].name, "full", p2p("mem-p2p32-full", few)},
		{groups[0].name, "stopped", p2p("mem-p2p32-stopped", few, "--max-pages", stop)},
		{groups[1].name, "seeds", p2p("mem-p2p-seeds", 0, "--max-depth", "0")},
		{groups[1].name, "full", p2p("mem-p2p-full", 0)},
		{groups[2].name, "full", p2p("mem-p2p-bloom-full", 0, "--seen", "bloom")},
		{groups[3].name, "seeds", mw("mem-mw-exact-seeds", "--seen", "exact", "--max-depth", "0")},
		{groups[3].name, "full", mw("mem-mw-exact-full", "--seen", "exact")},
		{groups[3].name, "stopped", mw("mem-mw-exact-stopped", "--seen", "exact", "--max-pages", stop)},
		{groups[4].name, "seeds", mw("mem-mw-bloom-seeds", "--max-depth", "0")},
		{groups[4].name, "full", mw("mem-mw-bloom-full")},
		{groups[4].name, "stopped", mw("mem-mw-bloom-stopped", "--max-pages", stop)},
	}
	t := newTable("ll", "group", "run", "URLs fetched", "seen", "pending left", "buckets with state",
		"used_memory before MiB", "peak MiB", "after MiB", "reply keys (MiB)", "(after − before − replies) ÷ seen, bytes", "wall s")
	results := map[string]map[string]*runResult{}
	var errs []error
	var notes []string
	for _, mr := range runs {
		r := b.run(ctx, w, mr.spec)
		if r.Err != nil {
			errs = append(errs, fmt.Errorf("run %s: %w", mr.spec.Name, r.Err))
		}
		if results[mr.group] == nil {
			results[mr.group] = map[string]*runResult{}
		}
		results[mr.group][mr.kind] = r
		per := "–"
		if r.Seen > 0 {
			per = fmt.Sprintf("%.0f", float64(r.MemAfter-r.MemBefore-r.CallBytes)/float64(r.Seen))
		}
		t.add(mr.group, mr.kind, itoa(r.Fetched()), itoa(r.Seen), itoa(r.Pending), itoa(r.Buckets), mib(r.MemBefore), mib(r.MemPeak),
			mib(r.MemAfter), fmt.Sprintf("%s (%s)", itoa(r.CallKeys), mib(r.CallBytes)), per, secs(r.Wall))
		if r.Err != nil || r.Log.Coverage() < 1 && mr.kind == "full" || r.Log.Duplicates+r.CrossDup > 0 || len(r.LogNotes) > 0 {
			notes = append(notes, fmt.Sprintf("- %s: %s.", mr.spec.Name, checksLine(r)))
		}
		if ctx.Err() != nil {
			break
		}
	}
	t.write(out)
	ft := newTable("lr", "group", "fixed MiB", "a: bytes per completed URL", "b: pending minus completed", "a + b: bytes per pending URL", "note")
	for _, g := range groups {
		f := fitMemory(results[g.name])
		cell := func(ok bool, v float64) string {
			if !ok {
				return "–"
			}
			return fmt.Sprintf("%.0f", v)
		}
		fixed := "–"
		if f.HasSeen {
			fixed = fmt.Sprintf("%.2f", f.Fixed/(1<<20))
		} else if r := results[g.name]["full"]; r != nil {
			fixed = "≤ " + mib(r.MemAfter-r.MemBefore)
		}
		ft.add(g.name, fixed, cell(f.HasSeen, f.PerSeen), cell(f.HasPending, f.PerPending), cell(f.HasPending, f.PerSeen+f.PerPending), g.note)
	}
	fmt.Fprintf(out, "Fitted:\n\n")
	ft.write(out)
	if len(notes) > 0 {
		fmt.Fprintf(out, "Runs with something to report:\n\n%s\n", strings.Join(notes, "\n"))
	} else {
		fmt.Fprintf(out, "Every run: coverage 1 for the full crawls, no repeated request, no URL recorded twice, nothing logged at WARN or ERROR.\n\n")
	}
	return errors.Join(errs...)
}
