package fsck_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/dedup"
	"github.com/spider-crawler/spider/internal/fsck"
	"github.com/spider-crawler/spider/internal/graph"
	"github.com/spider-crawler/spider/internal/index"
	"github.com/spider-crawler/spider/internal/rank"
	"github.com/spider-crawler/spider/internal/state"
	"github.com/spider-crawler/spider/internal/store"
	"github.com/spider-crawler/spider/internal/websim"

	bolt "go.etcd.io/bbolt"
)

// golden is a crawl of a small synthetic web, with its index, graph and
// rank files (dir), and what every URL ended as in a clean, complete crawl
// of the same web (recs, bodies). With partial, dir holds a crawl stopped
// half-way (pending URLs left), which a resumed crawl must complete.
type golden struct {
	srv    *websim.Server
	rules  websim.TruthRules
	dir    string
	recs   map[string]store.Record // last record of every URL
	bodies map[string]string       // URL → page body
}

func newGolden(t *testing.T, srv *websim.Server, partial bool) *golden {
	t.Helper()
	g := &golden{srv: srv, rules: websim.TruthRules{Seeds: srv.SeedURLs(1), MaxDepth: 3, Scope: websim.ScopeAny}, dir: t.TempDir()}
	runCrawl(t, g.config(g.dir))
	g.recs, g.bodies = contents(t, g.dir)
	if len(g.recs) < 20 {
		t.Fatalf("the golden crawl recorded %d URLs; the test web is too small", len(g.recs))
	}
	if partial {
		g.dir = t.TempDir()
		cfg := g.config(g.dir)
		cfg.MaxPages = int64(len(g.recs) / 2)
		runCrawl(t, cfg)
	}
	ctx := context.Background()
	if _, err := index.Build(ctx, g.dir, index.BuildOptions{Workers: 1, BatchRecords: 10}); err != nil {
		t.Fatal(err)
	}
	set, _, err := graph.Load(ctx, g.dir, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{rank.PagesFile, rank.HostsFile} {
		scores := map[string]float64{"h1.example": 0.5, "h2.example": 0.25}
		if f == rank.PagesFile {
			for i, name := range set.Pages.Names {
				scores[name] = 1 / float64(i+1)
			}
		}
		if err := rank.WriteScores(filepath.Join(g.dir, f), scores); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := fsck.Run(ctx, g.dir, fsck.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Clean() {
		t.Fatalf("fsck of a clean crawl found %v", rep.Findings)
	}
	if partial && rep.Pending == 0 {
		t.Fatalf("the partial crawl left nothing pending: %+v", rep)
	}
	return g
}

func (g *golden) config(dir string) crawl.Config {
	c := crawl.NewConfig()
	c.Data = dir
	c.Seeds = g.rules.Seeds
	c.MaxDepth = g.rules.MaxDepth
	c.Scope = g.rules.Scope
	c.Resolve = g.srv.Resolve()
	c.AllowPrivate = true
	c.Delay = 0
	c.Concurrency = 8
	c.RetryDelay = crawl.Duration(50 * time.Millisecond)
	c.Timeout = crawl.Duration(3 * time.Second)
	c.FirstByteTimeout = crawl.Duration(2 * time.Second)
	return c
}

func runCrawl(t *testing.T, cfg crawl.Config) {
	t.Helper()
	eng, err := crawl.New(cfg, nil, nil)
	if err != nil {
		t.Fatalf("cannot start the crawl: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := eng.Run(ctx); err != nil {
		eng.Close()
		t.Fatalf("crawl failed: %v", err)
	}
	if err := eng.Close(); err != nil {
		t.Fatal(err)
	}
}

// contents reads the last record of every URL and the body its record
// points at; a record pointing at a page of another URL fails the test.
func contents(t *testing.T, dir string) (map[string]store.Record, map[string]string) {
	t.Helper()
	lines, err := store.ScanRecords(dir)
	if err != nil {
		t.Fatal(err)
	}
	recs := map[string]store.Record{}
	for _, l := range lines {
		if l.Err != nil {
			t.Fatalf("records.jsonl offset %d: %v", l.Offset, l.Err)
		}
		recs[l.Rec.URL] = l.Rec
	}
	pages, err := store.OpenPageFiles(filepath.Join(dir, "pages"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer pages.Close()
	bodies := map[string]string{}
	for u, r := range recs {
		if r.PageNo < 0 {
			continue
		}
		p, err := pages.Read(r.PageNo)
		if err != nil {
			t.Fatalf("record of %s: page %d: %v", u, r.PageNo, err)
		}
		// The page a record points at is stored under the URL the record
		// names for it (Record.PageURL: its final URL, or its URL when the
		// final URL is not recorded, e.g. a flip in records.jsonl turned the
		// "final_url" key into another that JSON decoding ignores; the
		// record still points at its own URL's page).
		if p.URL != r.PageURL() {
			t.Errorf("record of %s points at page %d, which holds %s (final URL in the record: %q)", u, r.PageNo, p.URL, r.FinalURL)
		}
		bodies[u] = string(p.Body)
	}
	return recs, bodies
}

func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o700)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		in, err := os.Open(path)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(to)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
	if err != nil {
		t.Fatal(err)
	}
}

// damage is one way of damaging one file.
type damage struct {
	name string
	do   func(path string) error
	// sure: fsck must report this damage. Bit flips may hit bytes no check
	// covers (a page body, a title, a time stamp, free space in state.db).
	sure bool
}

func truncateAt(frac float64) damage {
	return damage{name: fmt.Sprintf("truncate-%.2f", frac), sure: true, do: func(path string) error {
		info, err := os.Stat(path)
		if err != nil {
			return err
		}
		return os.Truncate(path, int64(float64(info.Size())*frac))
	}}
}

var (
	cutLastByte = damage{name: "cut-last-byte", sure: true, do: func(path string) error {
		info, err := os.Stat(path)
		if err != nil {
			return err
		}
		return os.Truncate(path, info.Size()-1)
	}}
	remove = damage{name: "delete", sure: true, do: os.Remove}
)

func flipAt(frac float64) damage {
	return damage{name: fmt.Sprintf("flip-%.2f", frac), do: func(path string) error {
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		i := int(float64(len(b)) * frac)
		b[i] ^= 0x5a
		return os.WriteFile(path, b, 0o600)
	}}
}

// flipKeyOf flips a bit in every copy of u's seen key (dedup.Key's 16
// bytes) in the state file.
func flipKeyOf(u string) damage {
	return damage{name: "flip-key-of-a-recorded-url", do: func(path string) error {
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		kb := dedup.KeyOf(u).AppendBinary(nil)
		n := 0
		for i := bytes.Index(b, kb); i >= 0; {
			b[i+15] ^= 0x01
			n++
			j := bytes.Index(b[i+16:], kb)
			if j < 0 {
				break
			}
			i += 16 + j
		}
		if n == 0 {
			return fmt.Errorf("the key of %s is not in %s", u, path)
		}
		return os.WriteFile(path, b, 0o600)
	}}
}

// flipSimDistance flips the distance byte of a near-duplicate log entry in
// the state file (3 becomes 89, as a random flip did in a CI run: the state
// then failed to open after fsck had called it clean), in every copy of the
// entry of the first of sims (hex SimHashes) found there.
func flipSimDistance(sims []string) damage {
	return damage{name: "flip-simhash-log-distance", do: func(path string) error {
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, hx := range sims {
			h, err := strconv.ParseUint(hx, 16, 64)
			if err != nil {
				return err
			}
			hb := binary.BigEndian.AppendUint64(nil, h)
			n := 0 // every copy: bbolt may keep stale copies of a page
			for off := 0; ; {
				i := bytes.Index(b[off:], hb)
				if i < 0 {
					break
				}
				if i += off; i > 0 && b[i-1] == 3 {
					b[i-1] ^= 0x5a
					n++
				}
				off = i + len(hb)
			}
			if n > 0 {
				return os.WriteFile(path, b, 0o600)
			}
		}
		return fmt.Errorf("no simhash log entry of distance 3 in %s", path)
	}}
}

// flipRecordURL flips a byte of u's record's "url" field in records.jsonl
// (not its "final_url", not its out-links elsewhere), so the record names a
// URL nothing else does.
func flipRecordURL(u string) damage {
	return damage{name: "flip-url-" + strconv.FormatUint(dedup.KeyOf(u).H1%1000, 10), do: func(path string) error {
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		field := []byte(`"url":"` + u + `"`)
		i := bytes.Index(b, field)
		if i < 0 {
			return fmt.Errorf("no record of %s in %s", u, path)
		}
		b[i+len(field)-2] ^= 0x04 // the URL's last byte, still printable
		return os.WriteFile(path, b, 0o600)
	}}
}

// flipRecordKey flips a byte of the key of u's record's field key (as the
// random flip-0.10 did once to an "outcome" key in a CI run): the line stays
// valid JSON, and the field is gone from the decoded record.
func flipRecordKey(u, key string) damage {
	return damage{name: "flip-key-" + key, do: func(path string) error {
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		at := bytes.Index(b, []byte(`"url":"`+u+`"`))
		if at < 0 {
			return fmt.Errorf("no record of %s in %s", u, path)
		}
		i := bytes.Index(b[at:], []byte(`"`+key+`":`))
		if i < 0 {
			return fmt.Errorf("the record of %s has no %q", u, key)
		}
		b[at+i+2] ^= 0x5a // the key's second letter
		return os.WriteFile(path, b, 0o600)
	}}
}

// flipOutcomeValue flips the first byte of u's record's outcome with 0x5a,
// as the random flip-0.10 did once in a CI run ("200" became "h00"): the line
// stays valid JSON and names an outcome no crawl writes.
func flipOutcomeValue(u string) damage {
	return damage{name: "flip-outcome-value", do: func(path string) error {
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		at := bytes.Index(b, []byte(`"url":"`+u+`"`))
		if at < 0 {
			return fmt.Errorf("no record of %s in %s", u, path)
		}
		key := []byte(`"outcome":"`)
		i := bytes.Index(b[at:], key)
		if i < 0 {
			return fmt.Errorf("the record of %s has no outcome", u)
		}
		b[at+i+len(key)] ^= 0x5a
		return os.WriteFile(path, b, 0o600)
	}}
}

// TestDamageRepairResume damages each file of a crawl's data directory in
// each way, then checks that fsck reports the file (when the damage is one
// a check can see), that fsck --repair succeeds and a second fsck is
// clean, and that a resumed crawl ends with every URL of the clean crawl
// recorded with the same outcome and its own body: nothing lost, nothing
// pointing at another URL's page.
// sure marks a damage that fsck must always report.
func sure(d damage) damage {
	d.sure = true
	return d
}

func TestDamageRepairResume(t *testing.T) {
	if testing.Short() {
		t.Skip("crawls many times")
	}
	srv, err := websim.Start(context.Background(), websim.Config{Seed: 11, Hosts: 4, PagesPerHost: 12})
	if err != nil {
		t.Fatalf("cannot start websim: %v", err)
	}
	t.Cleanup(func() { srv.Close() })
	for _, partial := range []bool{false, true} {
		t.Run(map[bool]string{false: "complete", true: "partial"}[partial], func(t *testing.T) {
			newGolden(t, srv, partial).damageTable(t)
		})
	}
}

func (g *golden) damageTable(t *testing.T) {
	idxSeg := ""
	if ents, err := os.ReadDir(filepath.Join(g.dir, index.DirName)); err == nil {
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), ".seg") {
				idxSeg = filepath.Join(index.DirName, e.Name())
				break
			}
		}
	}
	if idxSeg == "" {
		t.Fatal("the golden index has no segment")
	}
	all := []damage{truncateAt(0), truncateAt(0.33), truncateAt(0.67), cutLastByte, remove, flipAt(0.1), flipAt(0.5), flipAt(0.9)}
	files := []struct {
		path    string
		damages []damage
	}{
		{"state/state.db", all},
		{"pages/PageIndex", all},
		// Every byte of a data file is some page's body, and records
		// keep a checksum of it: a flip there is always found.
		{"pages/PageData000000", []damage{truncateAt(0), truncateAt(0.33), truncateAt(0.67), cutLastByte, remove, sure(flipAt(0.1)), sure(flipAt(0.5)), sure(flipAt(0.9))}},
		{"records.jsonl", all},
		{idxSeg, all},
		{"index/MANIFEST", []damage{truncateAt(0), truncateAt(0.5), remove}},
		{graph.PagesFile, []damage{truncateAt(0.5), flipAt(0.5)}},
		{rank.PagesFile, []damage{truncateAt(0.5), cutLastByte}},
	}
	// A flipped bit in a seen key of the state: the state no longer knows a
	// URL whose record is valid (found once by a random flip). The record
	// must be kept and its URL completed, not dropped as "newer than the
	// state" and lost.
	here, _ := contents(t, g.dir) // the records of this (complete or partial) crawl
	keyed := make([]string, 0, len(here))
	for u, r := range here {
		if r.Status == 200 {
			keyed = append(keyed, u)
		}
	}
	sort.Strings(keyed)
	// And the other way round: a flipped byte in a record's "url" field (its
	// "final_url", which the page index confirms, intact) makes a URL nothing
	// else names (found once by a random flip): the record must be dropped,
	// not taken for one whose key the state lost.
	var sims []string // the SimHashes the crawl filed, as records name them
	for _, u := range keyed {
		if h := here[u].SimHash; h != "" {
			sims = append(sims, h)
		}
	}
	if len(sims) == 0 {
		t.Fatal("no record of the crawl carries a SimHash")
	}
	files = append(files, struct {
		path    string
		damages []damage
	}{"state/state.db", []damage{sure(flipKeyOf(keyed[len(keyed)/2])), sure(flipSimDistance(sims))}},
		struct {
			path    string
			damages []damage
		}{"records.jsonl", []damage{sure(flipRecordURL(keyed[0])), sure(flipRecordURL(keyed[len(keyed)-1])),
			sure(flipRecordKey(keyed[len(keyed)/3], "outcome")), sure(flipRecordKey(keyed[len(keyed)/4], "url")),
			sure(flipRecordKey(keyed[len(keyed)/5], "fetched_at")), sure(flipOutcomeValue(keyed[len(keyed)/6]))}})
	for _, f := range files {
		for _, d := range f.damages {
			t.Run(strings.ReplaceAll(f.path, "/", "_")+"/"+d.name, func(t *testing.T) {
				// Each case damages its own copy of the golden directory and
				// reads g only, and the web is stateless (clean profile): the
				// cases run two at a time (-parallel, GOMAXPROCS by default),
				// overlapping one's fsync and loopback waits with the other's
				// work. The golden directory (the parent's TempDir) and the web
				// outlive them: a parent's cleanup waits for its parallel
				// subtests.
				t.Parallel()
				dir := t.TempDir()
				copyDir(t, g.dir, dir)
				if err := d.do(filepath.Join(dir, f.path)); err != nil {
					t.Fatal(err)
				}
				g.checkRepair(t, dir, f.path, d)
			})
		}
	}
}

// checkRepair runs fsck, fsck --repair, fsck again, a resumed crawl, and
// compares the result with the clean crawl.
func (g *golden) checkRepair(t *testing.T, dir, file string, d damage) {
	t.Helper()
	ctx := context.Background()
	rep, err := fsck.Run(ctx, dir, fsck.Options{})
	if err != nil {
		t.Fatalf("fsck: %v", err)
	}
	named := false
	for _, f := range rep.Findings {
		if f.File == file || (file == "index/MANIFEST" && strings.HasPrefix(f.File, "index/")) ||
			(strings.HasPrefix(file, "pages/") && strings.HasPrefix(f.File, "pages/")) {
			named = true
		}
	}
	// bbolt grows its file ahead of the pages it uses: a cut into the free
	// tail is no damage (Inspect walked every page that is used).
	freeTail := file == "state/state.db" && d.name != "truncate-0.00" && d.name != "delete"
	if d.sure && !named && !freeTail {
		t.Errorf("fsck did not report %s; findings: %v", file, rep.Findings)
	}
	rep, err = fsck.Run(ctx, dir, fsck.Options{Repair: true})
	if err != nil {
		t.Fatalf("fsck --repair: %v", err)
	}
	rep2, err := fsck.Run(ctx, dir, fsck.Options{})
	if err != nil {
		t.Fatalf("fsck after repair: %v", err)
	}
	if !rep2.Clean() {
		t.Fatalf("fsck after repair still finds %v (repair did %v)", rep2.Findings, rep.Actions)
	}
	runCrawl(t, g.config(dir))
	recs, bodies := contents(t, dir)
	var missing, wrong []string
	for u, want := range g.recs {
		got, ok := recs[u]
		switch {
		case !ok:
			missing = append(missing, u)
		case got.Outcome != want.Outcome:
			wrong = append(wrong, fmt.Sprintf("%s: outcome %s, clean crawl %s", u, got.Outcome, want.Outcome))
		case bodies[u] != g.bodies[u]: // a flipped body is found through its record's checksum
			wrong = append(wrong, u+": body differs from the clean crawl's")
		}
	}
	var extra []string
	for u := range recs {
		if _, ok := g.recs[u]; !ok {
			extra = append(extra, u)
		}
	}
	show := func(what string, l []string) {
		if len(l) > 0 {
			sort.Strings(l)
			t.Errorf("%s (%d): %s (repair: %v; requeued %d, forgotten %d)", what, len(l), strings.Join(l[:min(len(l), 8)], ", "), rep.Actions, len(rep.Requeued), rep.Forgotten)
		}
	}
	show("URLs of the clean crawl missing after repair and resume", missing)
	show("URLs with another outcome or body", wrong)
	show("URLs the clean crawl did not record", extra)
	if _, err := index.Build(ctx, dir, index.BuildOptions{Workers: 1}); err != nil {
		t.Errorf("spider index after repair: %v", err)
	}
	if _, _, err := graph.Load(ctx, dir, false, nil); err != nil {
		t.Errorf("graph after repair: %v", err)
	}
	rep3, err := fsck.Run(ctx, dir, fsck.Options{})
	if err != nil || !rep3.Clean() {
		t.Errorf("fsck after the resumed crawl: %v %v", err, rep3.Findings)
	}
}

// TestRefusesRunningCrawl: fsck fails with state.ErrLocked while a
// process holds the state, and changes nothing.
func TestRefusesLockedState(t *testing.T) {
	dir := t.TempDir()
	st, err := state.Open(filepath.Join(dir, "state"), state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_, err = fsck.Run(context.Background(), dir, fsck.Options{LockTimeout: 100 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), state.ErrLocked.Error()) {
		t.Fatalf("fsck of a held directory: got %v, want %v", err, state.ErrLocked)
	}
}

func TestNotADataDir(t *testing.T) {
	_, err := fsck.Run(context.Background(), t.TempDir(), fsck.Options{})
	if err == nil || !strings.Contains(err.Error(), fsck.ErrNotDataDir.Error()) {
		t.Fatalf("got %v, want %v", err, fsck.ErrNotDataDir)
	}
}

// TestManyFlips flips one byte at many places of each file of a half-done
// crawl: fsck never fails or panics, --repair always succeeds, and a
// second fsck is always clean.
func TestManyFlips(t *testing.T) {
	t.Parallel() // own web and directories; after the sequential tests, two at a time
	if testing.Short() {
		t.Skip("many fsck runs")
	}
	srv, err := websim.Start(context.Background(), websim.Config{Seed: 12, Hosts: 3, PagesPerHost: 12})
	if err != nil {
		t.Fatalf("cannot start websim: %v", err)
	}
	t.Cleanup(func() { srv.Close() })
	g := newGolden(t, srv, true)
	ctx := context.Background()
	for _, file := range []string{"state/state.db", "pages/PageIndex", "records.jsonl", graph.PagesFile, rank.PagesFile, "index/MANIFEST"} {
		info, err := os.Stat(filepath.Join(g.dir, file))
		if err != nil {
			t.Fatal(err)
		}
		for k := range 24 {
			frac := (float64(k) + 0.5) / 24
			dir := t.TempDir()
			copyDir(t, g.dir, dir)
			if err := flipAt(frac).do(filepath.Join(dir, file)); err != nil {
				t.Fatal(err)
			}
			what := fmt.Sprintf("%s byte %d of %d", file, int(float64(info.Size())*frac), info.Size())
			if _, err := fsck.Run(ctx, dir, fsck.Options{}); err != nil {
				t.Errorf("%s: fsck: %v", what, err)
				continue
			}
			rep, err := fsck.Run(ctx, dir, fsck.Options{Repair: true})
			if err != nil {
				t.Errorf("%s: fsck --repair: %v", what, err)
				continue
			}
			if rep2, err := fsck.Run(ctx, dir, fsck.Options{}); err != nil || !rep2.Clean() {
				t.Errorf("%s: fsck after repair: %v %v (repair: %v)", what, err, rep2.Findings, rep.Actions)
			}
		}
	}
}

// TestNodeDirWithoutState: a distributed crawl's node directory has page
// files and records but no state/ (its state is in Redis): fsck checks
// what is there and does not take the missing state for damage; a record
// pointing at another URL's page is still found.
func TestNodeDirWithoutState(t *testing.T) {
	t.Parallel() // own web and directories; after the sequential tests, two at a time
	srv, err := websim.Start(context.Background(), websim.Config{Seed: 13, Hosts: 2, PagesPerHost: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	g := &golden{srv: srv, rules: websim.TruthRules{Seeds: srv.SeedURLs(1), MaxDepth: 2, Scope: websim.ScopeAny}, dir: t.TempDir()}
	runCrawl(t, g.config(g.dir))
	if err := os.RemoveAll(filepath.Join(g.dir, "state")); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rep, err := fsck.Run(ctx, g.dir, fsck.Options{})
	if err != nil || !rep.Clean() {
		t.Fatalf("node directory: %v %v", err, rep.Findings)
	}
	if err := os.Truncate(filepath.Join(g.dir, "pages", store.IndexFileName), 0); err != nil {
		t.Fatal(err)
	}
	rep, err = fsck.Run(ctx, g.dir, fsck.Options{Repair: true})
	if err != nil || rep.Clean() {
		t.Fatalf("node directory with a cut page index: %v %v", err, rep.Findings)
	}
	if _, err := os.Stat(filepath.Join(g.dir, "state")); err == nil {
		t.Error("repair created a state in a node directory")
	}
	if rep, err := fsck.Run(ctx, g.dir, fsck.Options{}); err != nil || !rep.Clean() {
		t.Errorf("after repair: %v %v", err, rep.Findings)
	}
}

// TestDamagedStateWithoutRecords: a damaged state next to no records is
// rebuilt empty (the damaged file kept), and the directory checks clean.
func TestDamagedStateWithoutRecords(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "state"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "state", state.DBFile), []byte("not a database"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rep, err := fsck.Run(ctx, dir, fsck.Options{Repair: true})
	if err != nil || rep.Clean() || !rep.Repaired {
		t.Fatalf("repair: %v %+v", err, rep)
	}
	if _, err := os.Stat(filepath.Join(dir, "state", state.DBFile+fsck.DamagedExt)); err != nil {
		t.Errorf("the damaged state was not kept: %v", err)
	}
	if rep, err := fsck.Run(ctx, dir, fsck.Options{}); err != nil || !rep.Clean() {
		t.Errorf("after repair: %v %v", err, rep.Findings)
	}
}

// TestRepairRefilesNearDuplicates: a state rebuilt by the repair files the
// records' SimHashes in its near-duplicate tables again (state.db's simhash
// log), so the resumed crawl still finds near-duplicates of pages fetched
// before the damage.
func TestRepairRefilesNearDuplicates(t *testing.T) {
	t.Parallel() // own web and directories; after the sequential tests, two at a time
	srv, err := websim.Start(context.Background(), websim.Config{Seed: 11, Hosts: 2, PagesPerHost: 12})
	if err != nil {
		t.Fatalf("cannot start websim: %v", err)
	}
	t.Cleanup(func() { srv.Close() })
	g := newGolden(t, srv, false)
	withSim := 0
	for _, r := range g.recs {
		if r.SimHash != "" {
			withSim++
		}
	}
	if withSim == 0 {
		t.Fatal("no record of the crawl carries a SimHash")
	}
	filed := func(dir string) int {
		db, err := bolt.Open(filepath.Join(dir, "state", state.DBFile), 0o600, &bolt.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		n := 0
		db.View(func(tx *bolt.Tx) error {
			if b := tx.Bucket([]byte("simhash")); b != nil {
				n = b.Stats().KeyN
			}
			return nil
		})
		return n
	}
	want := filed(g.dir)
	if want == 0 {
		t.Fatal("the clean crawl filed no page in its near-duplicate tables")
	}
	// A flipped seen key makes the repair rebuild the state from the old one
	// (every completed URL stays completed): its tables must hold what the
	// crawl's held. (A state rebuilt from the records alone queues most pages
	// again, and the crawl files them when it fetches them.)
	for _, damage := range []string{"flip-key"} {
		t.Run(damage, func(t *testing.T) {
			dir := t.TempDir()
			copyDir(t, g.dir, dir)
			keyed := []string{}
			for u, r := range g.recs {
				if r.Status == 200 {
					keyed = append(keyed, u)
				}
			}
			sort.Strings(keyed)
			if err := flipKeyOf(keyed[0]).do(filepath.Join(dir, "state", state.DBFile)); err != nil {
				t.Fatal(err)
			}
			rep, err := fsck.Run(context.Background(), dir, fsck.Options{Repair: true})
			if err != nil {
				t.Fatal(err)
			}
			if got := filed(dir); got != want {
				t.Errorf("the rebuilt state filed %d pages in its near-duplicate tables, the crawl's state %d (repair: %v)", got, want, rep.Actions)
			}
		})
	}
}
