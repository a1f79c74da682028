package layered

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"text/tabwriter"
	"time"
)

// RoundReport is what one round did (SPEC §2 S500/S600 bookkeeping). It is
// saved in DATA/layered/round-NNN/report.json and, for all rounds, in
// DATA/layered/report.json.
type RoundReport struct {
	Round int `json:"round"` // = the depth of the round's pages
	// URLsIn counts the round's input URLs; Redirects the redirect targets
	// fetched in extra passes of the same depth; Passes the passes run.
	URLsIn    int `json:"urls_in"`
	Redirects int `json:"redirects"`
	Passes    int `json:"passes"`
	// Fetched counts fetch outcomes; Pages the bodies stored; Outcomes the
	// fetches by outcome.
	Fetched  int            `json:"fetched"`
	Pages    int            `json:"pages"`
	Outcomes map[string]int `json:"outcomes,omitempty"`
	// Links counts the followable links found (one per page and target);
	// NoiseDOM those removed by the DOM pass (S301/S302).
	Links    int `json:"links"`
	NoiseDOM int `json:"noise_dom"`
	// Candidates counts the distinct URLs clustered; Blocks, Clusters and
	// NoiseClusters describe the clustering (S311/S312); NoiseCluster and
	// NoiseOutlier count the link occurrences removed as members of noise
	// clusters and as outliers (S313).
	Candidates    int `json:"candidates"`
	Blocks        int `json:"blocks"`
	Clusters      int `json:"clusters"`
	NoiseClusters int `json:"noise_clusters"`
	NoiseCluster  int `json:"noise_cluster"`
	NoiseOutlier  int `json:"noise_outlier"`
	// DupVisit, DupCache and DupStore count the link occurrences dropped as
	// duplicates by the visit list, the cache list and the stored URL set
	// (S402/S403); New the URLs stored as the next round's input.
	DupVisit int `json:"dup_visit"`
	DupCache int `json:"dup_cache"`
	DupStore int `json:"dup_store"`
	New      int `json:"new"`
	// Evicted counts cache-list evictions so far.
	Evicted int64 `json:"evicted"`
	// Elapsed is the round's wall time; JSON "elapsed_ms" (milliseconds,
	// the style of every JSON spider writes). Files written before that
	// had "elapsed_ns", which is still read.
	Elapsed time.Duration `json:"-"`
}

// roundReportFields is RoundReport without its JSON methods.
type roundReportFields RoundReport

// MarshalJSON writes the report with Elapsed as "elapsed_ms".
func (r RoundReport) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		roundReportFields
		ElapsedMS float64 `json:"elapsed_ms"`
	}{roundReportFields(r), float64(r.Elapsed.Microseconds()) / 1000})
}

// UnmarshalJSON reads a report with "elapsed_ms", or "elapsed_ns" (files
// written before the JSON style of issue 20).
func (r *RoundReport) UnmarshalJSON(b []byte) error {
	v := struct {
		*roundReportFields
		ElapsedMS *float64 `json:"elapsed_ms"`
		ElapsedNS *int64   `json:"elapsed_ns"`
	}{roundReportFields: (*roundReportFields)(r)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	switch {
	case v.ElapsedMS != nil:
		r.Elapsed = time.Duration(*v.ElapsedMS * float64(time.Millisecond))
	case v.ElapsedNS != nil:
		r.Elapsed = time.Duration(*v.ElapsedNS)
	}
	return nil
}

// Print writes the reports as a table, then the totals.
func Print(w io.Writer, reports []RoundReport) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "round\tin\tredirects\tfetched\tpages\tlinks\tnoise-dom\tnoise-cluster\toutliers\tdup-visit\tdup-cache\tdup-store\tnew\ttime\t")
	var t RoundReport
	for _, r := range reports {
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t\n", r.Round, r.URLsIn, r.Redirects, r.Fetched, r.Pages,
			r.Links, r.NoiseDOM, r.NoiseCluster, r.NoiseOutlier, r.DupVisit, r.DupCache, r.DupStore, r.New, r.Elapsed.Round(time.Millisecond))
		t.URLsIn += r.URLsIn
		t.Redirects += r.Redirects
		t.Fetched += r.Fetched
		t.Pages += r.Pages
		t.Links += r.Links
		t.NoiseDOM += r.NoiseDOM
		t.NoiseCluster += r.NoiseCluster
		t.NoiseOutlier += r.NoiseOutlier
		t.DupVisit += r.DupVisit
		t.DupCache += r.DupCache
		t.DupStore += r.DupStore
		t.New += r.New
		t.Elapsed += r.Elapsed
	}
	fmt.Fprintf(tw, "all\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t\n", t.URLsIn, t.Redirects, t.Fetched, t.Pages,
		t.Links, t.NoiseDOM, t.NoiseCluster, t.NoiseOutlier, t.DupVisit, t.DupCache, t.DupStore, t.New, t.Elapsed.Round(time.Millisecond))
	tw.Flush()
	out := map[string]int{}
	for _, r := range reports {
		for k, v := range r.Outcomes {
			out[k] += v
		}
	}
	if len(out) > 0 {
		fmt.Fprint(w, "outcomes:")
		for _, k := range slices.Sorted(maps.Keys(out)) {
			fmt.Fprintf(w, " %s=%d", k, out[k])
		}
		fmt.Fprintln(w)
	}
}
