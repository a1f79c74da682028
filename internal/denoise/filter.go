package denoise

import (
	"context"
	"fmt"
	"math"
	"net/url"
	"slices"
	"sort"

	"golang.org/x/sync/errgroup"

	"github.com/spider-crawler/spider/internal/urls"
)

// Defaults of Options.
const (
	DefaultClusterThreshold = 0.7
	DefaultNoiseThreshold   = 0.85
	DefaultDeviation        = 0.15
	DefaultMaxLeaders       = 256
)

// Reasons a URL is removed by the clustering pass.
const (
	// ReasonNoiseCluster: the URL belongs to a cluster whose mean noise
	// similarity reaches the noise threshold, and its own similarity does
	// not deviate below the others by more than Options.Deviation.
	ReasonNoiseCluster = "noise-cluster"
	// ReasonOutlier: the URL's noise similarity reaches the threshold while
	// the rest of its cluster is clean: it deviates from its cluster.
	ReasonOutlier = "outlier"
)

// Options tune the clustering pass. The zero value uses the defaults and the
// built-in samples only.
type Options struct {
	// ClusterThreshold is the similarity to a cluster's leader at which a
	// URL joins the cluster (single-pass clustering). Default 0.7.
	ClusterThreshold float64
	// NoiseThreshold is the similarity to a noise sample at which a URL (or
	// a cluster, by its mean) is noise. Default 0.85.
	NoiseThreshold float64
	// Deviation is how far below NoiseThreshold a member of a noise cluster
	// may score and still be removed with it; members scoring lower deviate
	// from their cluster and are kept. Default 0.15.
	Deviation float64
	// MaxLen caps the bytes of a skeleton compared. Default DefaultMaxLen.
	MaxLen int
	// MaxLeaders is how many of the most recent clusters of a block a URL is
	// compared with; older clusters stop taking members. Default 256.
	MaxLeaders int
	// Samples are added to BuiltinSamples.
	Samples []Sample
}

// Filter is the clustering noise filter of SPEC §2 S311–S314. It is
// read-only after NewFilter and safe for concurrent use.
type Filter struct {
	opt     Options
	samples [4][]Sample // by Kind
	whole   []*Pattern
}

// NewFilter validates opt and prepares the samples. Thresholds must be in
// (0, 1] (0 means the default); Deviation in [0, 1).
func NewFilter(opt Options) (*Filter, error) {
	def := func(v *float64, d float64, name string) error {
		if *v == 0 {
			*v = d
		}
		if !(*v > 0 && *v <= 1) {
			return fmt.Errorf("cannot use %s %v: want a number in (0, 1]", name, *v)
		}
		return nil
	}
	if err := def(&opt.ClusterThreshold, DefaultClusterThreshold, "cluster threshold"); err != nil {
		return nil, err
	}
	if err := def(&opt.NoiseThreshold, DefaultNoiseThreshold, "noise similarity threshold"); err != nil {
		return nil, err
	}
	if opt.Deviation == 0 {
		opt.Deviation = DefaultDeviation
	}
	if !(opt.Deviation >= 0 && opt.Deviation < 1) {
		return nil, fmt.Errorf("cannot use deviation %v: want a number in [0, 1)", opt.Deviation)
	}
	if opt.MaxLen <= 0 {
		opt.MaxLen = DefaultMaxLen
	}
	if opt.MaxLeaders <= 0 {
		opt.MaxLeaders = DefaultMaxLeaders
	}
	f := &Filter{opt: opt}
	for _, s := range append(BuiltinSamples(), opt.Samples...) {
		f.samples[s.Kind] = append(f.samples[s.Kind], s)
		if s.Kind == Whole {
			f.whole = append(f.whole, NewPattern(s.Text, opt.MaxLen))
		}
	}
	return f, nil
}

// Options returns the options with defaults applied.
func (f *Filter) Options() Options { return f.opt }

// Score returns the highest similarity of a skeleton to a noise sample and
// that sample's source text ("" when no sample shares anything). Whole
// samples are compared with the whole skeleton, the others with each path
// segment, path-parameter key or query key of their kind.
func (f *Filter) Score(skel string) (float64, string) {
	best, src := 0.0, ""
	for i, p := range f.whole {
		if s := p.Similarity(skel, f.opt.MaxLen); s > best {
			best, src = s, f.samples[Whole][i].Source
		}
	}
	components(skel, func(k Kind, text string) {
		for _, smp := range f.samples[k] {
			if s := Similarity(text, smp.Text, f.opt.MaxLen); s > best {
				best, src = s, smp.Source
			}
		}
	})
	return best, src
}

// BlockKey is the block of S311: the registrable domain of the URL's host
// ("" when the URL does not parse).
func BlockKey(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return ""
	}
	return urls.RegistrableDomain(u.Hostname())
}

// SplitBlocks is the map of S311: it groups URLs by BlockKey, keeping their
// order within each block.
func SplitBlocks(list []string) map[string][]string {
	out := map[string][]string{}
	for _, u := range list {
		k := BlockKey(u)
		out[k] = append(out[k], u)
	}
	return out
}

// Removal is a URL removed as noise.
type Removal struct {
	URL    string  `json:"url"`
	Reason string  `json:"reason"` // ReasonNoiseCluster or ReasonOutlier
	Score  float64 `json:"score"`  // similarity to the nearest noise sample
	Sample string  `json:"sample"` // that sample
}

// BlockResult is the clustering of one block (the output of one map).
type BlockResult struct {
	Block string `json:"block"`
	// Clean are the URLs kept, in input order.
	Clean []string `json:"clean"`
	// Removed are the noise URLs, in input order.
	Removed []Removal `json:"removed,omitempty"`
	// Clusters counts the clusters formed; NoiseClusters those whose mean
	// reached the noise threshold.
	Clusters      int `json:"clusters"`
	NoiseClusters int `json:"noise_clusters"`
}

// member is one distinct skeleton of a block.
type member struct {
	skel   string
	idx    []int // positions in the block's input
	score  float64
	sample string
}

type cluster struct {
	leader  *Pattern
	members []*member
}

// Block clusters one block's URLs (S312, single pass over the distinct
// skeletons: each joins the most similar of the recent cluster leaders if
// that similarity reaches ClusterThreshold, else leads a new cluster) and
// removes the noise (S313): a cluster whose URL-weighted mean noise score
// reaches NoiseThreshold is a noise cluster and loses the members scoring
// at least NoiseThreshold−Deviation; in any other cluster the members
// scoring at least NoiseThreshold are outliers and are removed. URLs that
// do not parse are kept (the fetcher rejects them later with a reason).
func (f *Filter) Block(block string, list []string) BlockResult {
	res := BlockResult{Block: block}
	bySkel := map[string]*member{}
	var order []*member
	for i, raw := range list {
		u, err := url.Parse(raw)
		skel := raw
		if err == nil {
			skel = Skeleton(u)
		}
		m := bySkel[skel]
		if m == nil {
			m = &member{skel: skel}
			m.score, m.sample = f.Score(skel)
			bySkel[skel] = m
			order = append(order, m)
		}
		m.idx = append(m.idx, i)
	}
	var clusters []*cluster
	for _, m := range order {
		best, bi := -1.0, -1
		for ci := max(0, len(clusters)-f.opt.MaxLeaders); ci < len(clusters); ci++ {
			if s := clusters[ci].leader.Similarity(m.skel, f.opt.MaxLen); s > best {
				best, bi = s, ci
			}
		}
		if bi >= 0 && best >= f.opt.ClusterThreshold {
			clusters[bi].members = append(clusters[bi].members, m)
			continue
		}
		clusters = append(clusters, &cluster{leader: NewPattern(m.skel, f.opt.MaxLen), members: []*member{m}})
	}
	removed := make([]string, len(list)) // reason by input position
	t := f.opt.NoiseThreshold
	for _, c := range clusters {
		var sum float64
		n := 0
		for _, m := range c.members {
			sum += m.score * float64(len(m.idx))
			n += len(m.idx)
		}
		noise := sum/float64(n) >= t-1e-12
		if noise {
			res.NoiseClusters++
		}
		for _, m := range c.members {
			reason := ""
			switch {
			case noise && m.score >= t-f.opt.Deviation-1e-12:
				reason = ReasonNoiseCluster
			case !noise && m.score >= t-1e-12:
				reason = ReasonOutlier
			}
			for _, i := range m.idx {
				removed[i] = reason
			}
		}
	}
	res.Clusters = len(clusters)
	for i, raw := range list {
		if removed[i] == "" {
			res.Clean = append(res.Clean, raw)
			continue
		}
		skel := raw
		if u, err := url.Parse(raw); err == nil {
			skel = Skeleton(u)
		}
		m := bySkel[skel]
		res.Removed = append(res.Removed, Removal{URL: raw, Reason: removed[i], Score: math.Round(m.score*1000) / 1000, Sample: m.sample})
	}
	return res
}

// Result is the merged clustering of many blocks (the reduce of S312/S313).
type Result struct {
	Clean         []string  `json:"clean"`
	Removed       []Removal `json:"removed,omitempty"`
	Blocks        int       `json:"blocks"`
	Clusters      int       `json:"clusters"`
	NoiseClusters int       `json:"noise_clusters"`
}

// Merge is the reduce: it concatenates block results in block-name order.
func Merge(results []BlockResult) Result {
	sorted := slices.Clone(results)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Block < sorted[j].Block })
	var r Result
	for _, b := range sorted {
		r.Blocks++
		r.Clusters += b.Clusters
		r.NoiseClusters += b.NoiseClusters
		r.Clean = append(r.Clean, b.Clean...)
		r.Removed = append(r.Removed, b.Removed...)
	}
	return r
}

// Run splits list into blocks, clusters them on up to workers goroutines
// (≤ 0: one) and merges the results. It returns ctx's error if cancelled.
func (f *Filter) Run(ctx context.Context, list []string, workers int) (Result, error) {
	blocks := SplitBlocks(list)
	names := make([]string, 0, len(blocks))
	for k := range blocks {
		names = append(names, k)
	}
	out := make([]BlockResult, len(names))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(workers, 1))
	for i, name := range names {
		g.Go(func() error {
			if err := gctx.Err(); err != nil {
				return err
			}
			out[i] = f.Block(name, blocks[name])
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return Result{}, err
	}
	return Merge(out), nil
}
