package fault

import (
	"context"
	"flag"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/index"
	"github.com/spider-crawler/spider/internal/rank"
	"github.com/spider-crawler/spider/internal/websim"
)

var longFlag = flag.Bool("long", false, "nightly run: at least 20 runs of every crash fault, 1 GiB bodies (also SPIDER_FAULT_LONG=1)")

// suiteConfig is set once by TestMain and read by every test.
type suiteConfig struct {
	bin    string // the spider binary
	long   bool
	seed   uint64 // SPIDER_FAULT_SEED, or the clock
	report string // SPIDER_FAULT_REPORT: JSON lines of Rows, rendered to REPORT.md at the end
}

var suite suiteConfig

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	suite.long = *longFlag || os.Getenv("SPIDER_FAULT_LONG") == "1"
	suite.report = os.Getenv("SPIDER_FAULT_REPORT")
	suite.seed = uint64(time.Now().UnixNano())
	if s := os.Getenv("SPIDER_FAULT_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			fmt.Fprintf(os.Stderr, "fault: cannot use SPIDER_FAULT_SEED=%q: want an unsigned integer\n", s)
			return 2
		}
		suite.seed = v
	}
	fmt.Fprintf(os.Stderr, "fault: seed %d (rerun with SPIDER_FAULT_SEED=%d), long=%v\n", suite.seed, suite.seed, suite.long)
	dir, err := os.MkdirTemp("", "spider-fault-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "fault:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	wd, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(os.Stderr, "fault:", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	suite.bin, err = Build(ctx, filepath.Join(wd, "..", ".."), dir)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "fault:", err)
		return 1
	}
	code := m.Run()
	if suite.report != "" {
		if rows, err := ReadRows(suite.report); err == nil {
			_ = os.WriteFile(suite.report+".md", []byte(Table(rows)), 0o644)
		}
	}
	return code
}

// runs returns how many runs a scenario makes: short in the default run, long nightly.
func runs(short, long int) int {
	if suite.long {
		return long
	}
	return short
}

// rngFor returns the scenario's random source: the suite seed mixed with the test name,
// so each scenario is reproducible on its own.
func rngFor(t *testing.T) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(t.Name()))
	return rand.New(rand.NewPCG(suite.seed, h.Sum64()))
}

// between returns a random duration in [lo, hi).
func between(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(rng.Int64N(int64(hi-lo)))
}

// report appends the row to the suite report and logs it. It fails the test when the row
// is not evidence of anything: no run, or a run without its fault (a kill point never
// reached, an outage never started), since such a run passes whatever the product does.
// A scenario that cannot run here (no tmpfs) records its row with reportSkip instead.
func report(t *testing.T, r Row) {
	t.Helper()
	if r.Runs == 0 {
		t.Errorf("%s: no run made: the scenario tested nothing", r.Fault)
	} else if r.Faults < r.Runs {
		t.Errorf("%s: %d faults injected in %d runs: every run must inject its fault, or it passes without testing recovery", r.Fault, r.Faults, r.Runs)
	}
	writeRow(t, r)
}

// reportSkip records that the scenario could not run here (why, in the row's note) and
// skips the test.
func reportSkip(t *testing.T, r Row, why error) {
	t.Helper()
	r.Note = "not run: " + why.Error()
	writeRow(t, r)
	t.Skip(why)
}

func writeRow(t *testing.T, r Row) {
	t.Helper()
	r.Seed = suite.seed
	t.Logf("result: %s", strings.TrimSpace(strings.SplitN(Table([]Row{r}), "\n", 3)[2]))
	if err := AppendRow(suite.report, r); err != nil {
		t.Error(err)
	}
}

// web is a synthetic web started for one test, its ground truth and a --resolve-file.
type web struct {
	srv     *websim.Server
	truth   *websim.Truth
	rules   websim.TruthRules
	resolve string
}

func startWeb(t *testing.T, cfg websim.Config, rules websim.TruthRules, seeds int) *web {
	t.Helper()
	srv, err := websim.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	rules.Seeds = srv.SeedURLs(seeds)
	truth, err := srv.Truth(rules)
	if err != nil {
		t.Fatal(err)
	}
	resolve := filepath.Join(t.TempDir(), "resolve.txt")
	if err := os.WriteFile(resolve, []byte(strings.Join(srv.Resolve(), "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	return &web{srv: srv, truth: truth, rules: rules, resolve: resolve}
}

// crawlFlags are the crawl settings the ground truth assumes.
func (w *web) crawlFlags(concurrency int) []string {
	return []string{"--resolve-file", w.resolve, "--allow-private", "--delay", "2ms", "--concurrency", strconv.Itoa(concurrency),
		"--scope", w.rules.Scope, "--max-depth", strconv.Itoa(w.rules.MaxDepth)}
}

// start starts the spider binary and registers its killing at the end of the test.
func start(t *testing.T, name string, args ...string) *Proc {
	t.Helper()
	p, err := StartProc(name, suite.bin, args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	return p
}

// spider runs the binary to completion and returns its stdout+stderr.
func spider(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(suite.bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("spider %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// checkCrawl checks the records of dirs against the ground truth and returns the lost
// URLs' count; it fails the test for lost URLs and corrupt lines.
func checkCrawl(t *testing.T, w *web, dirs ...string) int {
	t.Helper()
	recs, corrupt, err := Records(dirs...)
	if err != nil {
		t.Fatal(err)
	}
	if corrupt > 0 {
		t.Errorf("%d corrupt record lines", corrupt)
	}
	lost := Lost(w.truth, recs)
	for i, u := range lost {
		if i == 5 {
			t.Errorf("… and %d more", len(lost)-5)
			break
		}
		t.Errorf("lost: %s was never fetched", u)
	}
	return len(lost)
}

// snapshot is what a clean and a faulted crawl must agree on: the PageRank files and the
// results of a few searches.
type snapshot struct {
	pages, hosts map[string]float64
	searches     map[string]*index.Result
}

// takeSnapshot builds the index and the ranks of a finished single-node crawl with the
// CLI (spider index, spider rank, spider search).
func takeSnapshot(t *testing.T, data string) *snapshot {
	t.Helper()
	begin := time.Now()
	spider(t, "index", "--data", data)
	indexed := time.Now()
	spider(t, "rank", "--data", data, "--top", "0", "--log-level", "warn")
	ranked := time.Now()
	defer func() {
		t.Logf("snapshot: index %s, rank %s, 3 searches %s", indexed.Sub(begin).Round(time.Millisecond),
			ranked.Sub(indexed).Round(time.Millisecond), time.Since(ranked).Round(time.Millisecond))
	}()
	s := &snapshot{searches: map[string]*index.Result{}}
	var err error
	if s.pages, err = rank.ReadScores(filepath.Join(data, rank.PagesFile)); err != nil {
		t.Fatal(err)
	}
	if s.hosts, err = rank.ReadScores(filepath.Join(data, rank.HostsFile)); err != nil {
		t.Fatal(err)
	}
	// The searches run in this process (index.Open reads the same files spider search
	// does) because each spider search process would load the analyzer again.
	ix, err := index.Open(filepath.Join(data, index.DirName), index.Options{ReloadInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	for _, tp := range websim.Topics()[:3] {
		en, _ := websim.TopicWords(tp)
		q := en[0] + " OR " + en[1]
		res, err := ix.Search(context.Background(), index.Request{Query: q, Limit: 1000, RankWeight: -1})
		if err != nil {
			t.Fatalf("search %q in %s: %v", q, data, err)
		}
		if res.Total == 0 {
			t.Fatalf("search %q in %s found nothing: pick other words", q, data)
		}
		s.searches[q] = res
	}
	return s
}

// diff describes how s differs from clean ("" when equal): same URLs with the same
// ranks (to 1e-9) and the same search hits with the same scores (to 1e-6 relative).
func (s *snapshot) diff(clean *snapshot) string {
	var d []string
	cmp := func(what string, got, want map[string]float64) {
		if len(got) != len(want) {
			d = append(d, fmt.Sprintf("%s: %d entries, clean run %d", what, len(got), len(want)))
		}
		for k, v := range want {
			g, ok := got[k]
			if !ok {
				d = append(d, fmt.Sprintf("%s: %s missing", what, k))
			} else if math.Abs(g-v) > 1e-9 {
				d = append(d, fmt.Sprintf("%s: %s is %g, clean run %g", what, k, g, v))
			}
			if len(d) > 10 {
				return
			}
		}
	}
	cmp("page ranks", s.pages, clean.pages)
	cmp("host ranks", s.hosts, clean.hosts)
	for q, want := range clean.searches {
		got := s.searches[q]
		if got.Total != want.Total || len(got.Hits) != len(want.Hits) {
			d = append(d, fmt.Sprintf("search %q: %d results, clean run %d", q, got.Total, want.Total))
			continue
		}
		scores := map[string]float64{}
		for _, h := range got.Hits {
			scores[h.URL] = h.Score
		}
		for _, h := range want.Hits {
			g, ok := scores[h.URL]
			if !ok || math.Abs(g-h.Score) > 1e-6*math.Max(1, math.Abs(h.Score)) {
				d = append(d, fmt.Sprintf("search %q: %s scores %g, clean run %g (found %v)", q, h.URL, g, h.Score, ok))
				break
			}
		}
	}
	return strings.Join(d, "\n")
}
