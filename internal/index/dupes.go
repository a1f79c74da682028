package index

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/spider-crawler/spider/internal/dedup"
)

// Duplicate clusters: one result per cluster.
//
// A cluster is a page and the pages that stand for the same content: exact
// duplicates (the same text fingerprint), near-duplicates (a SimHash within
// the distance, dedup.Clusters: a page joins the first page before it that
// it is near) and pages whose canonical URL names it. "Before" is by URL
// length, then URL: the order depends only on the pages, not on when or at
// what depth the crawl fetched them (a crawl resumed after a crash, or
// interleaved otherwise, makes the same clusters as one that never
// stopped), and the page that stands for its copies is the shortest URL
// (/ before /?q=1 and /index.html, an article before its /print/ view and
// its session-id variants). Link depth is not part of the order: with
// overlapping depth levels (the default) a record keeps the depth its page
// was fetched at, which depends on timing (test/fault's kill -9 rows saw
// a site's / fold into its copy when a resumed crawl reached / by a longer
// path first). Build
// computes the clusters over every indexable page of the crawl (the last
// record of each URL) after each run and writes them to ClustersFile in the
// index directory; Search keeps the best-ranked hit of each cluster (the
// cluster's own page when it matches too) and reports the number of other
// pages in Hit.Similar. The members stay in the segments (a query may match
// a member's different words); they are never shown beside their cluster.
//
// A page's canonical URL (store.Record.Canonical) folds it into the page of
// that URL only when that page is indexable (fetched with 200) and names no
// other canonical URL itself: a canonical link to a 404, to a page not
// fetched, or into a loop or chain leaves the page standing for itself.
//
// Memory at build time: about 10 table entries per indexable page (the
// SimIndex of distance 3), some 400 bytes per page.

// ClustersFile is the name of the duplicate clusters file in the index
// directory: a header line, then one line per page that is not its
// cluster's own page: "member<TAB>root<TAB>kind" (kind exact, near or
// canonical), URLs as recorded.
const ClustersFile = "CLUSTERS"

const clustersHeader = "spider-clusters 1"

// DefaultNearDupDistance is the SimHash distance Build uses when
// BuildOptions gives none (the crawl's default, --near-dup-distance).
const DefaultNearDupDistance = 3

// maxCollapseExtra bounds the extra candidates a search ranks so that
// collapsing clusters still fills a page of hits: one per cluster member,
// at most this many.
const maxCollapseExtra = 10_000

// Cluster kinds.
const (
	ClusterExact     = "exact"
	ClusterNear      = "near"
	ClusterCanonical = "canonical"
)

// ClusterMember is one page folded into another.
type ClusterMember struct {
	URL, Root, Kind string
}

// ComputeClusters reads dataDir's records and returns the pages that are
// folded into another page's cluster, in cluster order, with near-duplicates
// found within SimHash distance k (0: exact duplicates and canonical URLs
// only).
func ComputeClusters(ctx context.Context, dataDir string, k int) ([]ClusterMember, error) {
	if k < 0 || k > dedup.MaxNearDistance {
		return nil, fmt.Errorf("cannot cluster duplicates: distance %d is outside 0 to %d", k, dedup.MaxNearDistance)
	}
	var latest latestRecords
	if _, err := ScanRecords(dataDir, 0, -1, func(rec Record, _ int64) bool {
		latest.add(rec)
		return ctx.Err() == nil
	}); err != nil {
		return nil, err
	}
	recs := latest.recs
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var pages []clusterPage
	for _, r := range recs {
		if c := clusterPageOf(r); c != nil {
			pages = append(pages, *c)
		}
	}
	return clustersOf(pages, k)
}

// clusterPage is what the clusters need of an indexable page's last
// record: the distributed build's mappers send it to the writer
// (packetItem.dup), so that both builds compute the same clusters.
type clusterPage struct {
	url, final, canonical string
	depth                 int    // carried in the distributed build's packets; not part of the cluster order
	fp, sim               uint64 // 0: none
}

// clusterPageOf is r's cluster page, or nil when r is not indexable.
func clusterPageOf(r Record) *clusterPage {
	if !r.Indexable() {
		return nil
	}
	c := &clusterPage{url: r.URL, final: r.FinalURL, canonical: r.Canonical, depth: r.Depth}
	c.fp, _ = strconv.ParseUint(r.Fingerprint, 16, 64)
	c.sim, _ = strconv.ParseUint(r.SimHash, 16, 64)
	return c
}

// clustersOf is ComputeClusters over the crawl's indexable pages (the last
// record of each URL), given in any order.
func clustersOf(pages []clusterPage, k int) ([]ClusterMember, error) {
	if k < 0 || k > dedup.MaxNearDistance {
		return nil, fmt.Errorf("cannot cluster duplicates: distance %d is outside 0 to %d", k, dedup.MaxNearDistance)
	}
	// The pages in cluster order, and where each URL (and final URL) is
	// among them. URLs are unique, so the order is total.
	slices.SortFunc(pages, func(a, b clusterPage) int {
		return cmp.Or(cmp.Compare(len(a.url), len(b.url)), strings.Compare(a.url, b.url))
	})
	at := map[string]int{}
	for i, p := range pages {
		at[p.url] = i
	}
	for i, p := range pages {
		if p.final != "" {
			if _, ok := at[p.final]; !ok {
				at[p.final] = i
			}
		}
	}
	fps := make([]uint64, len(pages))
	sims := make([]uint64, len(pages))
	for i, p := range pages {
		fps[i], sims[i] = p.fp, p.sim
	}
	root, near, err := dedup.Clusters(fps, sims, k)
	if err != nil {
		return nil, err
	}
	// canon(i) is the page i's canonical URL folds it into, or i.
	canon := func(i int) int {
		c := pages[i].canonical
		if c == "" || c == pages[i].url {
			return i
		}
		j, ok := at[c]
		if !ok || j == i {
			return i // not fetched, not 200, not HTML: the page stands alone
		}
		if cc := pages[j].canonical; cc != "" && cc != pages[j].url && cc != c {
			return i // a chain or a loop
		}
		return j
	}
	var out []ClusterMember
	for i := range pages {
		c := canon(i)
		f := canon(root[c])
		if f == i {
			continue
		}
		kind := ClusterExact
		switch {
		case c != i:
			kind = ClusterCanonical
		case near[i]:
			kind = ClusterNear
		}
		out = append(out, ClusterMember{URL: pages[i].url, Root: pages[f].url, Kind: kind})
	}
	return out, nil
}

// writeClusters computes dataDir's clusters and replaces the index
// directory's ClustersFile with them (a temporary file renamed over it).
func writeClusters(ctx context.Context, dataDir, indexDir string, k int) (int, error) {
	ms, err := ComputeClusters(ctx, dataDir, k)
	if err != nil {
		return 0, err
	}
	return len(ms), writeClusterFile(indexDir, k, ms)
}

// writeClusterFile replaces the index directory's ClustersFile with ms,
// found at distance k (a temporary file synced and renamed over it).
func writeClusterFile(indexDir string, k int, ms []ClusterMember) error {
	tmp, err := os.CreateTemp(indexDir, ClustersFile+".tmp*")
	if err != nil {
		return fmt.Errorf("cannot write the duplicate clusters: %w", err)
	}
	defer os.Remove(tmp.Name())
	bw := bufio.NewWriter(tmp)
	fmt.Fprintf(bw, "%s k=%d\n", clustersHeader, k)
	for _, m := range ms {
		if strings.ContainsAny(m.URL+m.Root, "\t\n") {
			continue // normalised URLs never hold them; a hostile record might
		}
		fmt.Fprintf(bw, "%s\t%s\t%s\n", m.URL, m.Root, m.Kind)
	}
	if err := bw.Flush(); err != nil {
		tmp.Close()
		return fmt.Errorf("cannot write the duplicate clusters: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("cannot write the duplicate clusters: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("cannot write the duplicate clusters: %w", err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(indexDir, ClustersFile)); err != nil {
		return fmt.Errorf("cannot write the duplicate clusters: %w", err)
	}
	return nil
}

// clusterSet is a loaded ClustersFile, keyed by URL hash (urlHash, the
// segments' document identity).
type clusterSet struct {
	root map[uint64]uint64 // member → its cluster's page
	size map[uint64]int    // cluster page → number of members
}

// readClusters loads indexDir's ClustersFile; a missing file is an empty
// set (an index built before clusters existed).
func readClusters(indexDir string) (*clusterSet, error) {
	f, err := os.Open(filepath.Join(indexDir, ClustersFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read the duplicate clusters: %w", err)
	}
	defer f.Close()
	cs := &clusterSet{root: map[uint64]uint64{}, size: map[uint64]int{}}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	first := true
	for sc.Scan() {
		line := sc.Text()
		if first {
			first = false
			if !strings.HasPrefix(line, clustersHeader) {
				return nil, fmt.Errorf("cannot read the duplicate clusters: %s does not start with %q: run spider index again: %w", f.Name(), clustersHeader, ErrCorrupt)
			}
			continue
		}
		member, rest, ok := strings.Cut(line, "\t")
		root, _, ok2 := strings.Cut(rest, "\t")
		if !ok || !ok2 {
			continue
		}
		m, r := urlHash(member), urlHash(root)
		if _, dup := cs.root[m]; dup || m == r {
			continue
		}
		cs.root[m] = r
		cs.size[r]++
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("cannot read the duplicate clusters: %w", err)
	}
	return cs, nil
}

// clusterCache keeps the loaded clusters of an Index, reloaded when the
// file changes.
type clusterCache struct {
	mu    sync.Mutex
	stamp fileStamp
	set   *clusterSet
	err   error
}

// get returns the clusters of dir, reading the file again when its stamp
// changed. A file that cannot be read gives its error once (the caller
// logs it), then no clusters until it changes: search goes on without
// collapsing.
func (c *clusterCache) get(dir string) (*clusterSet, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := stampOf(filepath.Join(dir, ClustersFile))
	if st == c.stamp && (c.set != nil || c.err != nil || st == (fileStamp{})) {
		return c.set, nil // an error was reported when the file was read
	}
	c.stamp = st
	c.set, c.err = readClusters(dir)
	return c.set, c.err
}

// members is the number of pages folded into others (0 for a nil set).
func (cs *clusterSet) members() int {
	if cs == nil {
		return 0
	}
	return len(cs.root)
}

// collapse keeps, of the candidates all (best first), the first of each
// cluster — replaced by the cluster's own page when that is among the
// candidates too — and returns them with the number of other pages in each
// kept hit's cluster. hash gives a candidate's URL hash.
func (cs *clusterSet) collapse(all []scored, hash func(scored) uint64) ([]scored, []int) {
	similar := make([]int, 0, len(all))
	if cs == nil || len(cs.root) == 0 {
		return all, make([]int, len(all))
	}
	out := all[:0:0]
	slot := map[uint64]int{} // cluster page → index in out
	for _, c := range all {
		h := hash(c)
		r, member := cs.root[h]
		if !member {
			r = h
		}
		if i, ok := slot[r]; ok {
			if !member { // the cluster's own page ranks lower: it takes the slot
				out[i] = c
			}
			continue
		}
		slot[r] = len(out)
		out = append(out, c)
		similar = append(similar, cs.size[r])
	}
	return out, similar
}
