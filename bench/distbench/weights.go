package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"

	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/partition"
)

// weightsExperiment is the SPEC §3 experiment; see the package comment.
func weightsExperiment(ctx context.Context, b *bench, o options, out io.Writer) error {
	feats, err := webFeatures(o.Features)
	if err != nil {
		return err
	}
	seeds := o.Seeds
	if seeds == 0 {
		seeds = o.Hosts
	}
	w, err := startWeb(ctx, webSpec{Hosts: o.Hosts, Pages: o.Pages, Seeds: seeds, Features: feats,
		TroubleShare: o.Trouble, HangTime: o.HangTime}, filepath.Join(b.work, "weights-web"))
	if err != nil {
		return err
	}
	defer w.close()
	var scen [][]partition.Member
	for _, s := range o.Scenarios {
		ms, err := parseMembers(s)
		if err != nil {
			return err
		}
		scen = append(scen, ms)
	}

	// The web and its ground truth.
	hostURLs := map[string]int{}
	for _, u := range w.truth.MustFetch {
		hostURLs[hostOf(u)]++
	}
	var perHost []int
	for _, n := range hostURLs {
		perHost = append(perHost, n)
	}
	truthRows := map[string]int{}
	for _, f := range w.truth.Final {
		truthRows[crawl.Row(f)]++
	}
	fmt.Fprintf(out, "## design §3 weights experiment (peer-to-peer)\n\n")
	fmt.Fprintf(out, "Web: websim seed 1, %s hosts × %d pages, features `%s` on %s of the hosts (hang pages silent %s), "+
		"seeds: the index pages of %s hosts, scope any, no depth limit. Ground truth: **%s URLs on %s hosts**; "+
		"URLs per host min / median / mean / max: %s. Truth outcomes: %s.\n\n",
		itoa(o.Hosts), o.Pages, o.Features, pct(o.Trouble), o.HangTime, itoa(seeds), itoa(len(w.truth.MustFetch)),
		itoa(len(hostURLs)), distOf(perHost), rowString(truthRows))
	fmt.Fprintf(out, "Every node: `--weight W --buckets %d --concurrency %d --delay %s --timeout %s --first-byte-timeout %s %s` "+
		"(per-host 1); %d logical buckets; the nodes use `Ring.Balanced(M, 0)` over the live members.\n\n",
		b.buckets, o.WConcurrency, o.WDelay, o.FetchTimeout, o.FetchTimeout, strings.Join(o.NodeFlags, " "), b.buckets)

	// Deterministic: bucket shares of every member list.
	hostW := hostWeights(hostCount1(hostURLs), b.buckets)
	urlW := hostWeights(hostURLs, b.buckets)
	tables := make([][]string, len(scen))
	for i, ms := range scen {
		bal, err := bucketTable(ms, b.buckets, kindBalanced)
		if err != nil {
			return err
		}
		own, err := bucketTable(ms, b.buckets, kindOwners)
		if err != nil {
			return err
		}
		tables[i] = bal
		fmt.Fprintf(out, "### Buckets of %s (from the partition package; deterministic)\n\n", memberString(ms))
		t := newTable("lrr", "node", "weight", "weight share", "buckets Balanced(0)", "share", "dev.",
			"buckets Owners (plain ring)", "share", "dev.", "this web's hosts (Balanced)", "dev.", "this web's URLs (Balanced)", "dev.")
		rb := shares(ms, tableCounts(bal, nil))
		ro := shares(ms, tableCounts(own, nil))
		rh := shares(ms, tableCounts(bal, hostW))
		ru := shares(ms, tableCounts(bal, urlW))
		cb, co := tableCounts(bal, nil), tableCounts(own, nil)
		for j, m := range ms {
			t.add(m.ID, fmt.Sprint(m.Weight), pct2(rb[j].Expected), fmt.Sprint(cb[m.ID]), pct2(rb[j].Observed), signedPct(rb[j].Dev()),
				fmt.Sprint(co[m.ID]), pct2(ro[j].Observed), signedPct(ro[j].Dev()), pct2(rh[j].Observed), signedPct(rh[j].Dev()),
				pct2(ru[j].Observed), signedPct(ru[j].Dev()))
		}
		t.add("worst", "", "", "", "", "**"+pct(worstDev(rb))+"**", "", "", pct(worstDev(ro)), "", pct(worstDev(rh)), "", pct(worstDev(ru)))
		t.write(out)
	}
	fmt.Fprintf(out, "Columns \"this web's hosts/URLs\" weight each bucket by the ground truth's hosts (URLs) in it: the share a "+
		"node gets in a crawl of this web if no bucket changes hands during the crawl. With H hosts the host "+
		"granularity alone gives a relative spread of about √((1−p)/(H·p)) for a node of share p: for D (p = 40/470) "+
		"%s with the %s hosts of this web, 15%% with 1,000 hosts.\n\n",
		pct(math.Sqrt((1-40.0/470)/(float64(len(hostURLs))*40.0/470))), itoa(len(hostURLs)))

	// Deterministic: buckets moved by each change.
	fmt.Fprintf(out, "### Buckets that change hands (deterministic)\n\n")
	ct := newTable("lll", "change", "table", "moved (buckets)", "ideal", "dev.", "moved between surviving nodes", "moved (this web's URLs)", "ideal", "dev.")
	changes := [][2][]partition.Member{}
	for i := 1; i < len(scen); i++ {
		changes = append(changes, [2][]partition.Member{scen[0], scen[i]})
	}
	// The document's own sequence also goes from A, B, D to A, B, D, E.
	if len(scen) >= 2 {
		abde := append(append([]partition.Member(nil), scen[1]...), partition.Member{ID: "E", Weight: 300})
		if _, err := partition.NewRing(abde); err == nil {
			changes = append(changes, [2][]partition.Member{scen[1], abde})
		}
	}
	for _, ch := range changes {
		for _, kind := range []tableKind{kindBalanced, kindOwners} {
			a, err1 := bucketTable(ch[0], b.buckets, kind)
			c, err2 := bucketTable(ch[1], b.buckets, kind)
			if err := errors.Join(err1, err2); err != nil {
				return err
			}
			bk := compareTables(ch[0], ch[1], a, c, nil)
			uk := compareTables(ch[0], ch[1], a, c, urlW)
			ct.add(memberString(ch[0])+" → "+memberString(ch[1]), string(kind), pct2(bk.Moved), pct2(bk.Ideal), "**"+signedPct(bk.Dev())+"**",
				pct2(bk.Needless), pct2(uk.Moved), pct2(uk.Ideal), signedPct(uk.Dev()))
		}
	}
	ct.write(out)
	fmt.Fprintf(out, "Ideal = the total-variation distance between the weight shares before and after (the removed node's "+
		"share; the added node's share): the least any assignment that follows the weights must move. "+
		"\"Moved between surviving nodes\" should be 0 for a monotone table.\n\n")

	// The crawls.
	var runs []*runResult
	var errs []error
	for i, ms := range scen {
		label := strings.Join(ids(ms), "")
		res := b.run(ctx, w, runSpec{Name: "weights-" + label, Topo: topoP2P, Members: ms, Concurrency: o.WConcurrency,
			Delay: o.WDelay, Timeout: o.FetchTimeout, Extra: o.NodeFlags})
		runs = append(runs, res)
		if res.Err != nil {
			errs = append(errs, fmt.Errorf("run %s: %w", label, res.Err))
		}
		printWeightsRun(out, res, ms, tables[i], urlW, w)
		if ctx.Err() != nil {
			return errors.Join(append(errs, ctx.Err())...)
		}
	}
	// Observed moves: the URLs fetched by another node after the change.
	if len(runs) > 1 {
		fmt.Fprintf(out, "### URLs that changed hands between the crawls (observed)\n\n")
		mt := newTable("lrr", "change", "URLs fetched in both", "by another node", "fraction", "ideal", "dev.")
		for i := 1; i < len(runs); i++ {
			both, movedN := observedMoves(runs[0], runs[i])
			c := compareTables(scen[0], scen[i], tables[0], tables[i], nil)
			f := float64(movedN) / float64(max(both, 1))
			mt.add(memberString(scen[0])+" → "+memberString(scen[i]), itoa(both), itoa(movedN), pct2(f), pct2(c.Ideal), signedPct(f/c.Ideal-1))
		}
		mt.write(out)
	}
	fmt.Fprintf(out, "Command of one node (every node alike, with its own `--node-id`, `--weight`, `--data` and `--user-agent`):\n\n```\n%s\n```\n",
		commandLine(runs[0].Args, b.work))
	return errors.Join(errs...)
}

// hostCount1 maps every host to 1.
func hostCount1(m map[string]int) map[string]int {
	out := make(map[string]int, len(m))
	for h := range m {
		out[h] = 1
	}
	return out
}

// ids lists member IDs in order.
func ids(ms []partition.Member) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

// rowString formats outcome rows in the SPEC §3 order.
func rowString[T ~int | ~int64](rows map[string]T) string {
	var parts []string
	for _, r := range crawl.TableRows {
		if rows[r] > 0 {
			parts = append(parts, fmt.Sprintf("%s %s", r, itoa(rows[r])))
		}
	}
	for _, r := range sortedKeys(rows) {
		known := false
		for _, k := range crawl.TableRows {
			known = known || k == r
		}
		if !known && rows[r] > 0 {
			parts = append(parts, fmt.Sprintf("%s %s", r, itoa(rows[r])))
		}
	}
	return strings.Join(parts, ", ")
}

// printWeightsRun prints one crawl of the weights experiment.
func printWeightsRun(out io.Writer, r *runResult, ms []partition.Member, table []string, urlW []float64, w *web) {
	fmt.Fprintf(out, "### Crawl with %s\n\n", memberString(ms))
	hang := ""
	if r.Hung {
		hang = " — **the crawl did not end by itself: wall is to the last request**"
	}
	fmt.Fprintf(out, "Wall %s s (first start to last exit%s), %s pages requested (%.0f pages/s); Redis: %s commands (%.1f per page), "+
		"used_memory %s → %s MiB (peak %s).\n\n", secs(r.Wall), hang, itoa(r.Log.Pages), r.PagesPerSec(), itoa(r.Commands),
		float64(r.Commands)/float64(max(r.Log.Pages, 1)), mib(r.MemBefore), mib(r.MemAfter), mib(r.MemPeak))
	fmt.Fprintf(out, "Checks: %s.\n\n", checksLine(r))

	// URLs sent node → node.
	if r.Sent != nil {
		names := ids(ms)
		exp := weightShares(ms)
		t := newTable("l", append(append([]string{"sent by ↓ to →"}, names...), "to others", "observed split to others (predicted)")...)
		for _, from := range names {
			row := []string{from}
			others := int64(0)
			for _, to := range names {
				n := r.Sent[from][to]
				row = append(row, itoa(n))
				if to != from {
					others += n
				}
			}
			row = append(row, itoa(others))
			var split []string
			for _, to := range names {
				if to == from {
					continue
				}
				pred := exp[to] / (1 - exp[from])
				split = append(split, fmt.Sprintf("%s %s (%s)", to, pct(float64(r.Sent[from][to])/float64(max(others, 1))), pct(pred)))
			}
			row = append(row, strings.Join(split, ", "))
			t.add(row...)
		}
		fmt.Fprintf(out, "URLs each node sent to each other node (`p2p.SentTable`; the diagonal is URLs a node routed to its own inbox):\n\n")
		t.write(out)
	}

	// Shares of fetched pages.
	counts, logCounts, hosts := map[string]float64{}, map[string]float64{}, map[string]map[string]int{}
	for _, n := range r.Nodes {
		counts[n.Name] = float64(len(n.URLs))
		logCounts[n.Name] = float64(r.Log.ByAgent[n.Agent])
		hosts[n.Name] = map[string]int{}
		for u := range n.URLs {
			hosts[n.Name][hostOf(u)]++
		}
	}
	rows := shares(ms, counts)
	lrows := shares(ms, logCounts)
	pred := shares(ms, tableCounts(table, urlW))
	t := newTable("lrr", "node", "weight", "weight share", "URLs fetched (records)", "share", "dev. from weight",
		"requests (access log)", "share", "dev. from weight", "predicted by buckets × this web", "dev. from predicted", "CPU s", "exit s")
	for i, n := range r.Nodes {
		t.add(n.Name, fmt.Sprint(n.Weight), pct2(rows[i].Expected), itoa(len(n.URLs)), pct2(rows[i].Observed), signedPct(rows[i].Dev()),
			itoa(r.Log.ByAgent[n.Agent]), pct2(lrows[i].Observed), signedPct(lrows[i].Dev()), pct2(pred[i].Observed),
			signedPct(rows[i].Observed/pred[i].Observed-1), secs(n.Proc.CPU), secs(n.Proc.Wall))
	}
	t.add("worst", "", "", "", "", "**"+pct(worstDev(rows))+"**", "", "", pct(worstDev(lrows)), "", "", "", "")
	fmt.Fprintf(out, "Share of fetched pages against the weights:\n\n")
	t.write(out)

	// Outcomes per node.
	ot := newTable("l", append(append([]string{"result"}, ids(ms)...), "all", "truth")...)
	truthRows := map[string]int{}
	for _, f := range w.truth.Final {
		truthRows[crawl.Row(f)]++
	}
	for _, row := range append(append([]string(nil), crawl.TableRows...), "total") {
		cells := []string{row}
		var sum int64
		for _, n := range r.Nodes {
			var v int64
			if n.Summary != nil {
				if row == "total" {
					v = n.Summary.URLs
				} else {
					v = n.Summary.Rows[row]
				}
			}
			sum += v
			cells = append(cells, itoa(v))
		}
		tv := truthRows[row]
		if row == "total" {
			tv = len(w.truth.MustFetch)
		}
		cells = append(cells, itoa(sum), itoa(tv))
		ot.add(cells...)
	}
	fmt.Fprintf(out, "HTTP outcomes per node (`spider stats --data DIR`, rows of design §3):\n\n")
	ot.write(out)

	// Pages per host.
	owner := map[string]string{}
	split := 0
	ht := newTable("lrr", "node", "hosts", "pages per host min / median / mean / max")
	for _, n := range r.Nodes {
		var v []int
		for h, c := range hosts[n.Name] {
			v = append(v, c)
			if o, ok := owner[h]; ok && o != n.Name {
				split++
			}
			owner[h] = n.Name
		}
		ht.add(n.Name, itoa(len(hosts[n.Name])), distOf(v).String())
	}
	fmt.Fprintf(out, "Pages per host (hosts crawled by more than one node: %d):\n\n", split)
	ht.write(out)
}

// observedMoves compares two crawls of the same web: of the URLs both
// fetched, how many a different node fetched.
func observedMoves(a, b *runResult) (both, moved int) {
	ownerA := map[string]string{}
	for _, n := range a.Nodes {
		for u := range n.URLs {
			ownerA[u] = n.Name
		}
	}
	for _, n := range b.Nodes {
		for u := range n.URLs {
			o, ok := ownerA[u]
			if !ok {
				continue
			}
			both++
			if o != n.Name {
				moved++
			}
		}
	}
	return both, moved
}

// commandLine formats a process's arguments with the work directory as $W.
func commandLine(args []string, work string) string {
	var parts []string
	for _, a := range args {
		a = strings.ReplaceAll(a, work, "$W")
		if strings.ContainsAny(a, " ()") {
			a = "'" + a + "'"
		}
		parts = append(parts, a)
	}
	return "spider " + strings.Join(parts, " ")
}
