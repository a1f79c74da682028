// Package fsck checks a crawl data directory for damage and repairs it
// (`spider fsck --data DIR [--repair]`).
//
// # What is checked
//
//	state/state.db   (embedded crawls; a distributed crawl's node directory
//	                 has no state/ and skips these checks)
//	                 its meta pages and size agree, every page reachable
//	                 from the meta page is sound (walked with bounds-checked
//	                 reads before bbolt maps the file), bbolt opens it
//	                 read-only, every bucket decodes, bbolt's tx.Check
//	                 passes, the stored counts match the buckets, the
//	                 outcome counters add up to the seen URLs less the
//	                 pending ones (plus the revisits taken); every revisit
//	                 record decodes, the due index and the failed marks
//	                 agree with the records
//	pages/           PageIndex lines well formed and in sequence, every
//	                 page's bytes inside its PageData file, nothing after
//	                 the last indexed page
//	records.jsonl    every line parses, no torn last line; a record's page
//	                 exists and carries the record's URL; every record's URL
//	                 is known to the state; every URL the state completed
//	                 has a record; the file is not shorter than the state's
//	                 records high-water mark (state.Store.RecordsEnd)
//	index/           MANIFEST parses; every live segment exists, has its
//	                 recorded size and passes its CRC-32C checks
//	graph/*.csr      version, kind and CRCs (graph.ReadFile)
//	rank/*.tsv       every line parses (rank.ReadScores)
//
// Page bodies carry no checksum in the SPEC's page-file format, so a bit
// flipped inside a body is not detected.
//
// # What repair does
//
// Repair keeps the consistent part of every file and makes the state agree
// with what was kept, so that the next `spider crawl --data DIR` fetches
// again whatever was lost and nothing points at another URL's body:
//
//   - the page files are cut after the last consistent page;
//   - records.jsonl keeps its valid lines whose page (if any) survived with
//     the record's URL and whose URL the state knows;
//   - the state is rewritten (state.Rebuild) when a URL it counts as
//     completed lost its record: a lost URL known by name (from the
//     records and the out-links of the kept ones, the page index or the
//     fingerprint owners) is
//     queued again at its depth, a lost URL known only by its hash is
//     forgotten (it is accepted again when a page linking to it is fetched,
//     and those pages are either kept, so the URL is known by name, or lost
//     in turn); the counters are recomputed from the kept records;
//   - a state that cannot be read (or is missing next to records) is moved
//     to state.db.damaged and rebuilt from records.jsonl alone: every
//     recorded URL is completed, except those with an out-link never
//     recorded: these are queued again, so that fetching them discovers
//     their links through the crawl's own filters and depth limit (which
//     the data directory does not store); the pages at the edge of the
//     crawl are fetched twice;
//   - a state rebuilt from a readable one keeps its revisit schedule: a
//     damaged revisit record loses the URL's schedule (validators, change
//     history); the URL gets a fresh record due at once when a kept
//     record names it (it is fetched again and scheduled anew), else it
//     stays completed and is no longer revisited; the due index and the
//     failed marks are rebuilt from the records; a state rebuilt from
//     records.jsonl alone has no schedule (a continuous crawl schedules
//     each URL again when it is fetched);
//   - a damaged index, or one built from records that repair rewrote, is
//     reset (the next `spider index` indexes every record again); damaged
//     graph and rank files are removed (`spider rank` rebuilds them).
//
// Repair is idempotent: a check after a repair finds nothing. It holds the
// data directory's lock (store.LockDir) throughout; a check refuses a
// directory a crawl holds. Every step leaves files a later repair can
// finish from: page files and records are only cut or replaced whole
// (write, fsync, rename), and the state is rebuilt last, into a new file
// renamed over the old one.
package fsck

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spider-crawler/spider/internal/dedup"
	"github.com/spider-crawler/spider/internal/frontier"
	"github.com/spider-crawler/spider/internal/graph"
	"github.com/spider-crawler/spider/internal/index"
	"github.com/spider-crawler/spider/internal/rank"
	"github.com/spider-crawler/spider/internal/state"
	"github.com/spider-crawler/spider/internal/store"
	"github.com/spider-crawler/spider/internal/urls"
)

// Paths inside a data directory, relative to it (the findings name files
// so; store.DataDir names them inside a directory).
const (
	StateDir   = store.StateDirName
	PagesDir   = store.PagesDirName
	DamagedExt = ".damaged"
)

// ErrNotDataDir is wrapped when the directory holds no crawl.
var ErrNotDataDir = errors.New("not a spider data directory")

// Finding is one problem found in one file.
type Finding struct {
	File   string `json:"file"`             // path relative to the data directory
	Offset int64  `json:"offset,omitempty"` // byte offset, when it applies (-1: whole file)
	What   string `json:"what"`
}

func (f Finding) String() string {
	if f.Offset > 0 {
		return fmt.Sprintf("%s (offset %d): %s", f.File, f.Offset, f.What)
	}
	return f.File + ": " + f.What
}

// Report is what Run found and, with Options.Repair, did.
type Report struct {
	Dir      string    `json:"dir"`
	Findings []Finding `json:"findings"`
	// Counts of what the directory holds (as checked, before any repair).
	Pages     int   `json:"pages"`
	Records   int   `json:"records"`
	Pending   int   `json:"pending"`
	Completed int64 `json:"completed"`
	Segments  int   `json:"segments"`

	Repaired bool     `json:"repaired"`
	Actions  []string `json:"actions,omitempty"` // what repair changed, one line each
	// Requeued are the URLs repair queued again: their record or page was
	// lost; the next crawl fetches them.
	Requeued []string `json:"requeued,omitempty"`
	// Dropped are the URLs whose every record repair removed (most are
	// also in Requeued; the others are fetched again when rediscovered).
	Dropped []string `json:"dropped,omitempty"`
	// Forgotten counts completed URLs known only by their hash, removed
	// from the seen set so that they are accepted again when rediscovered.
	Forgotten int `json:"forgotten,omitempty"`
}

// Clean reports whether nothing was found.
func (r *Report) Clean() bool { return len(r.Findings) == 0 }

// Options configures Run.
type Options struct {
	// Repair fixes what was found (see the package documentation).
	Repair bool
	// LockTimeout is how long to wait for a process holding the data
	// directory. Default 1 s.
	LockTimeout time.Duration
	// Logger receives progress. Nil discards.
	Logger *slog.Logger
	// Location is the page index's time zone (store.Options.Location).
	Location *time.Location
}

// recLine is what the repair needs of one records.jsonl line; the rest
// (out-links) is read again from the file when needed, so memory follows
// the number of records, not their size.
type recLine struct {
	n       int64 // bytes
	ok      bool  // a valid record
	url     string
	outcome string
	depth   int32
	status  int32
	pageNo  int64
	fp      uint64
	sim     uint64 // the page's near-duplicate SimHash (store.Record.SimHash); 0: none
}

// checked is everything the check read, for the repair.
type checked struct {
	dir       string
	in        *state.Inspection // nil: no state, or damaged
	stateBad  bool              // state.db exists but cannot be read
	stateGone bool              // state.db does not exist
	stateLost bool              // state/ exists without state.db: rebuild it
	pages     *store.PageCheck
	lines     []recLine // every line of records.jsonl, compact
	size      int64     // records.jsonl's size
	keep      []bool    // per record line: survives repair
	indexBad  bool      // index must be reset
	badFiles  []string
	completed map[dedup.Key]state.SeenInfo
	recorded  map[dedup.Key]int // key → index of its last kept record line
	droppedRL map[string]bool   // URLs of dropped record lines
	// unknown are the keys of kept records whose URL the damaged state
	// does not know (see check): the rebuilt state completes them.
	unknown []dedup.Key
	// unconfirmed are the record lines among them whose URL their page does
	// not name: confirmUnknown looks for it in other records' out-links.
	unconfirmed []int
	// recordsShort: records.jsonl is shorter than the state's RecordsEnd.
	recordsShort bool
	// recordsSize is the size of records.jsonl after repair.
	recordsSize int64
	// data holds the page data files opened (read-only) by bodyMismatch;
	// body is its reused buffer.
	data map[int]*os.File
	body []byte
}

// bodyMismatch says why the body of record r's page (which pageMismatch
// found in the consistent pages) fails the record's checksum, or "": the
// page-file format has no checksum, so a bit flipped inside a body is
// found only through the record's (store.Record.BodyCRC; older records
// have none and are not checked). The error is for a file that cannot be
// read.
func (c *checked) bodyMismatch(r store.Record) (string, error) {
	if r.PageNo < 0 || r.BodyCRC == "" {
		return "", nil
	}
	pg := c.pages.Pages[r.PageNo]
	f := c.data[pg.File]
	if f == nil {
		var err error
		if f, err = os.Open(filepath.Join(store.DataDir(c.dir).Pages(), store.DataFileName(pg.File))); err != nil {
			return "", fmt.Errorf("cannot check page %d: %w", r.PageNo, err)
		}
		if c.data == nil {
			c.data = map[int]*os.File{}
		}
		c.data[pg.File] = f
	}
	if int64(cap(c.body)) < pg.Size {
		c.body = make([]byte, pg.Size)
	}
	body := c.body[:pg.Size]
	if _, err := f.ReadAt(body, pg.Offset); err != nil {
		return "", fmt.Errorf("cannot check page %d in %s: %w", r.PageNo, f.Name(), err)
	}
	if got := store.BodyChecksum(body); got != r.BodyCRC {
		return fmt.Sprintf("fails its record's checksum (%s, recorded %s): the body was damaged on disk", got, r.BodyCRC), nil
	}
	return "", nil
}

// closeData closes the files bodyMismatch opened.
func (c *checked) closeData() {
	for _, f := range c.data {
		f.Close()
	}
	c.data = nil
}

// Run checks the data directory dir and, with opt.Repair, repairs it. The
// error is for what stops the check itself: dir is not a data directory
// (ErrNotDataDir), a process holds it (wraps both state.ErrLocked and
// store.ErrLocked), an I/O failure. Damage is reported in Report.Findings.
// Repair holds the data directory's lock (store.LockDir) from before the
// check to its end; a check refuses a directory a crawl holds.
func Run(ctx context.Context, dir string, opt Options) (*Report, error) {
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if opt.LockTimeout <= 0 {
		opt.LockTimeout = time.Second
	}
	if err := isDataDir(dir); err != nil {
		return nil, err
	}
	if opt.Repair {
		// The crawl's lock, held from before the check to the end of the
		// repair, so that nothing changes in between.
		l, err := store.LockDir(dir, "spider fsck --repair", opt.LockTimeout)
		if err != nil {
			return nil, fmt.Errorf("cannot repair %s: %w (%w)", dir, err, state.ErrLocked)
		}
		defer l.Unlock()
	} else if store.Locked(dir) {
		return nil, fmt.Errorf("cannot check %s: a spider process holds it (%s); stop it first, or check a copy: %w (%w)",
			dir, store.LockFileName, store.ErrLocked, state.ErrLocked)
	}
	rep := &Report{Dir: dir}
	c, err := check(ctx, dir, opt, rep)
	if err != nil {
		return nil, err
	}
	if !opt.Repair || rep.Clean() {
		return rep, nil
	}
	if err := repair(ctx, c, opt, rep); err != nil {
		return rep, err
	}
	rep.Repaired = true
	return rep, nil
}

// isDataDir checks that dir exists and holds a crawl.
func isDataDir(dir string) error {
	info, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("cannot check %s: %w: %w", dir, err, ErrNotDataDir)
	}
	if !info.IsDir() {
		return fmt.Errorf("cannot check %s: it is not a directory: %w", dir, ErrNotDataDir)
	}
	for _, p := range []string{StateDir, PagesDir, store.RecordsFileName} {
		if _, err := os.Stat(store.DataDir(dir).Join(p)); err == nil {
			return nil
		}
	}
	return fmt.Errorf("cannot check %s: it holds no %s, %s/ or %s/ (give the --data directory of a crawl): %w",
		dir, store.RecordsFileName, StateDir, PagesDir, ErrNotDataDir)
}

func (c *checked) add(rep *Report, file string, off int64, format string, args ...any) {
	rep.Findings = append(rep.Findings, Finding{File: file, Offset: off, What: fmt.Sprintf(format, args...)})
}

// check reads every part of the directory and fills rep.Findings.
func check(ctx context.Context, dir string, opt Options, rep *Report) (*checked, error) {
	c := &checked{dir: dir, recorded: map[dedup.Key]int{}, droppedRL: map[string]bool{}}
	stateFile := filepath.Join(StateDir, state.DBFile)

	// State.
	in, err := state.Inspect(store.DataDir(dir).State(), opt.LockTimeout)
	switch {
	case err == nil:
		c.in = in
		rep.Pending, rep.Completed = len(in.Pending), in.Completed()
		for _, p := range in.Problems {
			c.add(rep, stateFile, -1, "%s", p)
		}
	case errors.Is(err, state.ErrLocked):
		return nil, err
	case errors.Is(err, fs.ErrNotExist):
		c.stateGone = true
	case errors.Is(err, state.ErrDamaged):
		c.stateBad = true
		c.add(rep, stateFile, -1, "%v", err)
	default:
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	// Page files.
	c.pages, err = store.CheckPageFiles(store.DataDir(dir).Pages(), opt.Location)
	if err != nil {
		return nil, err
	}
	rep.Pages = len(c.pages.Pages)
	for _, p := range c.pages.Problems {
		c.add(rep, filepath.Join(PagesDir, p.File), p.Offset, "%s", p.What)
	}

	// Records.
	outcomes := map[string]string{} // interned outcome classes
	err = store.EachRecordLine(dir, func(i int, l store.RecordLine) error {
		c.lines = append(c.lines, recLine{n: l.Len})
		c.keep = append(c.keep, false)
		c.size = l.Offset + l.Len
		if l.Err != nil {
			what := "line does not parse: " + l.Err.Error()
			if l.Torn {
				what = "torn last line: " + l.Err.Error()
			}
			c.add(rep, store.RecordsFileName, l.Offset, "%s", what)
			return nil
		}
		rep.Records++
		r := l.Rec
		oc, ok := outcomes[r.Outcome]
		if !ok {
			oc = r.Outcome
			outcomes[oc] = oc
		}
		fp, _ := strconv.ParseUint(r.Fingerprint, 16, 64)
		sim, _ := strconv.ParseUint(r.SimHash, 16, 64)
		c.lines[i] = recLine{n: l.Len, ok: true, url: r.URL, outcome: oc, depth: int32(r.Depth), status: int32(r.Status), pageNo: r.PageNo, fp: fp, sim: sim}
		if why := c.pageMismatch(r); why != "" {
			c.add(rep, store.RecordsFileName, l.Offset, "record of %s %s", r.URL, why)
			c.droppedRL[r.URL] = true
			return nil
		}
		why, berr := c.bodyMismatch(r)
		if berr != nil {
			return berr
		}
		if why != "" {
			pg := c.pages.Pages[r.PageNo]
			c.add(rep, filepath.Join(PagesDir, store.DataFileName(pg.File)), pg.Offset, "page %d (%s) %s", r.PageNo, r.URL, why)
			c.droppedRL[r.URL] = true
			return nil
		}
		key := dedup.KeyOf(r.URL)
		if c.in != nil {
			if _, ok := c.in.Seen[key]; !ok {
				if l.Offset+l.Len > c.in.RecordsEnd {
					c.add(rep, store.RecordsFileName, l.Offset, "record of %s, a URL the state does not know (the state is older than the records)", r.URL)
					c.droppedRL[r.URL] = true
					return nil
				}
				// A URL is seen in the state before it is fetched, and the
				// state committed records up to RecordsEnd: a record before
				// that mark whose URL the state does not know is damage,
				// not a newer record. Either the state lost the key (a
				// damaged key: keep the record, the rebuilt state completes
				// its URL) or the record's URL was damaged (drop it). The
				// URL is trusted when a witness names it: its page (the page
				// index names the page's URL, which pageMismatch compared with
				// final_url) or another record's out-link (confirmUnknown).
				c.unknown = append(c.unknown, key)
				if r.PageNo < 0 || c.pages.Pages[r.PageNo].URL != r.URL { // the page vouches for final_url only
					c.unconfirmed = append(c.unconfirmed, i)
				} else {
					c.add(rep, stateFile, -1, "does not know %s, whose record ends before the state's records mark (byte %d): the state is damaged", r.URL, c.in.RecordsEnd)
				}
			}
		}
		c.keep[i] = true
		c.recorded[key] = i
		return nil
	})
	c.closeData()
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if err := c.confirmUnknown(rep, stateFile); err != nil {
		return nil, err
	}
	if c.in != nil {
		if size := c.size; size < c.in.RecordsEnd {
			c.add(rep, store.RecordsFileName, size, "is %d bytes, but the state completed URLs whose records end at byte %d: records were lost", size, c.in.RecordsEnd)
			c.recordsShort = true
		}
	}
	if len(c.lines) > 0 && c.stateGone {
		// A directory without state/ is a distributed crawl's node (its
		// state is in Redis); state/ without its file lost it.
		if _, err := os.Stat(store.DataDir(dir).State()); err == nil {
			c.add(rep, stateFile, -1, "is missing while %s holds %d records", store.RecordsFileName, len(c.lines))
			c.stateLost = true
		}
	}
	if c.in != nil {
		c.completed = c.in.CompletedKeys()
		lost := 0
		for k := range c.completed {
			if _, ok := c.recorded[k]; !ok {
				lost++
			}
		}
		if lost > 0 {
			c.add(rep, store.RecordsFileName, -1, "%d URLs the state counts as completed have no valid record (lost records or pages)", lost)
		}
	}

	// Index, graph, rank.
	idxDir := store.DataDir(dir).Index()
	damaged, exists, err := index.Verify(idxDir)
	switch {
	case err != nil:
		c.indexBad = true
		c.add(rep, filepath.Join(index.DirName, index.ManifestFile), -1, "%v", err)
	case !exists:
		if ents, err := os.ReadDir(idxDir); err == nil {
			n := 0
			for _, e := range ents {
				if strings.HasSuffix(e.Name(), ".seg") {
					n++
				}
			}
			if n > 0 {
				c.indexBad = true
				c.add(rep, filepath.Join(index.DirName, index.ManifestFile), -1, "is missing while %s/ holds %d segment files", index.DirName, n)
			}
		}
	default:
		for _, d := range damaged {
			c.indexBad = true
			c.add(rep, filepath.Join(index.DirName, d.Name), -1, "%v", d.Err)
		}
		if segs, err := os.ReadDir(idxDir); err == nil {
			for _, e := range segs {
				if strings.HasSuffix(e.Name(), ".seg") {
					rep.Segments++
				}
			}
		}
	}
	for _, f := range []string{graph.PagesFile, graph.HostsFile} {
		if _, _, err := graph.ReadFile(store.DataDir(dir).Join(f)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			c.badFiles = append(c.badFiles, f)
			c.add(rep, f, -1, "%v", err)
		}
	}
	for _, f := range []string{rank.PagesFile, rank.HostsFile} {
		if _, err := rank.ReadScores(store.DataDir(dir).Join(f)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			c.badFiles = append(c.badFiles, f)
			c.add(rep, f, -1, "%v", err)
		}
	}
	return c, nil
}

// confirmUnknown decides the records whose URL neither the state nor their
// page names (c.unconfirmed): a URL another kept record links to (or a
// stored page names) is one the crawl really found, so the state lost its
// key and the record stays; a URL nothing else names is a damaged record's
// (a flipped byte in its URL) and the record is dropped. (A seed named
// nowhere else is dropped too; the next crawl's seeds bring it back.)
func (c *checked) confirmUnknown(rep *Report, stateFile string) error {
	if len(c.unconfirmed) == 0 {
		return nil
	}
	want := map[dedup.Key]bool{}
	for _, i := range c.unconfirmed {
		want[dedup.KeyOf(c.lines[i].url)] = true
	}
	named := map[dedup.Key]bool{}
	err := store.EachRecordLine(c.dir, func(i int, l store.RecordLine) error {
		if l.Err != nil || i >= len(c.keep) || !c.keep[i] {
			return nil
		}
		for _, o := range l.Rec.OutLinks {
			if k := dedup.KeyOf(o); want[k] && o != l.Rec.URL {
				named[k] = true
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for _, p := range c.pages.Pages {
		if k := dedup.KeyOf(p.URL); want[k] {
			named[k] = true
		}
	}
	unknown := c.unknown[:0]
	for _, k := range c.unknown {
		if !want[k] || named[k] {
			unknown = append(unknown, k)
		}
	}
	c.unknown = unknown
	for _, i := range c.unconfirmed {
		u := c.lines[i].url
		k := dedup.KeyOf(u)
		if named[k] {
			c.add(rep, stateFile, -1, "does not know %s, whose record ends before the state's records mark (byte %d): the state is damaged", u, c.in.RecordsEnd)
			continue
		}
		c.add(rep, store.RecordsFileName, -1, "record of %s, a URL neither the state nor any other record knows: the record is damaged", u)
		c.keep[i] = false
		c.droppedRL[u] = true
		if c.recorded[k] == i {
			delete(c.recorded, k)
			for j := i - 1; j >= 0; j-- { // an earlier kept record of the URL
				if c.keep[j] && c.lines[j].url == u {
					c.recorded[k] = j
					break
				}
			}
		}
	}
	return nil
}

// pageMismatch says why record r does not match the consistent pages, or "".
func (c *checked) pageMismatch(r store.Record) string {
	if r.PageNo < 0 {
		return ""
	}
	if r.PageNo >= int64(len(c.pages.Pages)) {
		return fmt.Sprintf("points at page %d, which the page files do not hold (they hold %d consistent pages)", r.PageNo, len(c.pages.Pages))
	}
	want := r.FinalURL
	if want == "" {
		want = r.URL
	}
	if got := c.pages.Pages[r.PageNo].URL; got != want {
		return fmt.Sprintf("points at page %d, which holds %s", r.PageNo, got)
	}
	return ""
}

// repair fixes what check found, in an order that a crash between two
// steps leaves repairable by running repair again: records and pages first
// (only cut), the state last (rebuilt from what was kept).
func repair(ctx context.Context, c *checked, opt Options, rep *Report) error {
	act := func(format string, args ...any) {
		s := fmt.Sprintf(format, args...)
		rep.Actions = append(rep.Actions, s)
		opt.Logger.Info("fsck: " + s)
	}
	// Plan the state first: that reads records.jsonl as check saw it.
	plan, err := planState(c, rep)
	if err != nil {
		return err
	}
	// Page files: cut to the consistent prefix.
	if len(c.pages.Problems) > 0 {
		if err := store.TruncatePageFiles(store.DataDir(c.dir).Pages(), c.pages, int64(len(c.pages.Pages))); err != nil {
			return err
		}
		act("cut the page files after page %d (%d pages kept)", len(c.pages.Pages)-1, len(c.pages.Pages))
	}
	// Records: keep the valid, matching ones.
	dropped := 0
	for i := range c.lines {
		if !c.keep[i] {
			dropped++
		}
	}
	if dropped > 0 {
		if _, err := store.RewriteRecords(c.dir, func(i int) bool { return i < len(c.keep) && c.keep[i] }); err != nil {
			return err
		}
		act("removed %d line(s) from %s", dropped, store.RecordsFileName)
		c.indexBad = true // the index's checkpoint is an offset into the old file
	}
	for i, l := range c.lines {
		if c.keep[i] {
			c.recordsSize += l.n
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	// State.
	if err := repairState(c, plan, rep, act); err != nil {
		return err
	}
	// Index, graph, rank.
	if _, err := os.Stat(store.DataDir(c.dir).Index()); c.indexBad && err == nil {
		if err := index.ResetDir(store.DataDir(c.dir).Index()); err != nil {
			return err
		}
		act("reset the search index (run spider index --data %s to rebuild it)", c.dir)
	}
	for _, f := range c.badFiles {
		if err := os.Remove(store.DataDir(c.dir).Join(f)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("cannot remove damaged %s: %w", f, err)
		}
		act("removed damaged %s (spider rank --data %s rebuilds it)", f, c.dir)
	}
	for u := range c.droppedRL {
		if _, kept := c.recorded[dedup.KeyOf(u)]; !kept { // an older record of a URL with a good one is no loss
			rep.Dropped = append(rep.Dropped, u)
		}
	}
	sort.Strings(rep.Dropped)
	return nil
}

// repairState rebuilds the state when it is damaged, missing next to
// records, or counts completed URLs that lost their record.
// planState decides what the rebuilt state holds (nil: keep the state as
// it is). It reads records.jsonl again, so it runs before repair changes
// any file.
func planState(c *checked, rep *Report) (*state.RebuildSpec, error) {
	var spec state.RebuildSpec
	switch {
	case c.in != nil:
		lostKnown, lostTotal, stale, err := c.lostURLs()
		if err != nil {
			return nil, err
		}
		// Records the repair removes shorten records.jsonl even when their
		// URLs keep an earlier record (none is lost): the state's records
		// mark must then come down to the new size, which a rebuild does.
		if lostTotal == 0 && len(c.in.Problems) == 0 && !stale && !c.recordsShort && len(c.unknown) == 0 && !c.dropsRecords() {
			return nil, nil
		}
		spec = c.specFromState(lostKnown)
		rep.Forgotten = lostTotal - len(lostKnown)
		for _, r := range lostKnown {
			rep.Requeued = append(rep.Requeued, r.URL)
		}
	case c.stateBad || c.stateLost:
		var err error
		if spec, err = c.specFromRecords(); err != nil {
			return nil, err
		}
		for _, r := range spec.Pending {
			rep.Requeued = append(rep.Requeued, r.URL)
		}
	default:
		return nil, nil
	}
	return &spec, nil
}

// dropsRecords reports whether the repair removes any line of
// records.jsonl.
func (c *checked) dropsRecords() bool {
	for i := range c.lines {
		if !c.keep[i] {
			return true
		}
	}
	return false
}

// nearDistance is the near-duplicate distance the rebuilt state's tables
// are filed with: spider crawl's default --near-dup-distance.
const nearDistance = 3

// repairState writes the state planned by planState, after the page files
// and records were cut.
func repairState(c *checked, spec *state.RebuildSpec, rep *Report, act func(string, ...any)) error {
	if spec == nil {
		return nil
	}
	stateDir := store.DataDir(c.dir).State()
	path := filepath.Join(stateDir, state.DBFile)
	// Page numbers are never issued twice: the next crawl skips the
	// numbers of pages cut here (store.PageFiles.SkipTo), so a copy of an
	// old record elsewhere can never name another URL's page.
	spec.PageNext, spec.RecordsEnd = int64(len(c.pages.Pages)), c.recordsSize
	if c.in != nil && c.in.PageNext > spec.PageNext {
		spec.PageNext = c.in.PageNext
	}
	// The near-duplicate tables are refiled from the records' SimHashes at
	// the crawl's default distance (the distance a crawl used is not kept
	// apart from the tables the rebuild replaces).
	spec.NearDistance = nearDistance
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return fmt.Errorf("cannot create %s: %w", stateDir, err)
	}
	tmp := path + ".rebuild"
	os.Remove(tmp)
	if err := state.Rebuild(tmp, *spec); err != nil {
		return err
	}
	if c.stateBad {
		if err := os.Rename(path, path+DamagedExt); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("cannot keep the damaged state: %w", err)
		}
		act("moved the damaged state to %s", filepath.Join(StateDir, state.DBFile+DamagedExt))
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("cannot replace the state: %w", err)
	}
	// The Bloom snapshot describes the old file.
	if err := os.Remove(filepath.Join(stateDir, state.SnapshotFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("cannot remove the stale %s: %w", state.SnapshotFile, err)
	}
	if d, err := os.Open(stateDir); err == nil {
		d.Sync()
		d.Close()
	}
	act("rebuilt the crawl state: %d URLs completed, %d pending (%d queued again)", len(spec.Completed), len(spec.Pending), len(rep.Requeued))
	return nil
}

// lostURLs returns the completed URLs without a kept record that are known
// by name (as requests at their seen depth), how many completed URLs lost
// their record in all, and whether the state holds other staleness worth a
// rebuild (counters that do not match the kept records).
func (c *checked) lostURLs() (known []frontier.Request, total int, stale bool, err error) {
	lost := map[dedup.Key]bool{}
	for k := range c.completed {
		if _, ok := c.recorded[k]; !ok {
			lost[k] = true
		}
	}
	total = len(lost)
	names, err := c.knownNames(lost)
	if err != nil {
		return nil, 0, false, err
	}
	for k, info := range c.completed {
		if !lost[k] {
			continue
		}
		u, ok := names[k]
		if !ok {
			continue
		}
		known = append(known, request(u.url, depthOf(info, u.depth), u.redirects))
	}
	sort.Slice(known, func(i, j int) bool {
		if known[i].Depth != known[j].Depth {
			return known[i].Depth < known[j].Depth
		}
		return known[i].URL < known[j].URL
	})
	counts := map[string]int64{}
	for k := range c.completed {
		if i, ok := c.recorded[k]; ok {
			counts[c.lines[i].outcome]++
		}
	}
	if c.in.Taken > 0 {
		// Revisits count every completion of a URL, the records' last
		// outcomes once per URL: a counter below its kept records is stale.
		for class, n := range counts {
			if n > c.in.Counters[class] {
				stale = true
			}
		}
		return known, total, stale, nil
	}
	for class, n := range c.in.Counters {
		if n != counts[class] {
			stale = true
		}
	}
	for class, n := range counts {
		if n != c.in.Counters[class] {
			stale = true
		}
	}
	return known, total, stale, nil
}

type name struct {
	url       string
	depth     int // depth implied by where the name was found; -1: unknown
	redirects int
}

// knownNames maps the keys of want to URLs, for every URL named anywhere
// the repair can read: records (kept or not) and the out-links of the kept
// ones, the page index (kept and cut pages) and the fingerprint owners.
// Only keys in want are kept, so memory follows the lost URLs, not the
// crawl.
func (c *checked) knownNames(want map[dedup.Key]bool) (map[dedup.Key]name, error) {
	names := map[dedup.Key]name{}
	if len(want) == 0 {
		return names, nil
	}
	put := func(u string, depth, redirects int) {
		k := dedup.KeyOf(u)
		if !want[k] {
			return
		}
		if n, ok := names[k]; ok && (n.depth >= 0 && (depth < 0 || n.depth <= depth)) {
			return
		}
		names[k] = name{u, depth, redirects}
	}
	err := store.EachRecordLine(c.dir, func(i int, l store.RecordLine) error {
		if l.Err != nil || i >= len(c.keep) {
			return nil
		}
		r := l.Rec
		put(r.URL, r.Depth, 0)
		if !c.keep[i] {
			return nil
		}
		redirect := r.Status >= 300 && r.Status < 400
		for _, o := range r.OutLinks {
			if redirect {
				put(o, r.Depth, 1)
			} else {
				put(o, r.Depth+1, 0)
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, p := range c.pages.Pages {
		put(p.URL, -1, 0)
	}
	for _, u := range c.pages.Dropped {
		put(u, -1, 0)
	}
	if c.in != nil {
		for _, u := range c.in.FP {
			put(u, -1, 0)
		}
	}
	return names, nil
}

func depthOf(info state.SeenInfo, fallback int) int {
	if info.HasDepth {
		return info.Depth
	}
	return max(fallback, 0)
}

// request builds a queued request as the crawl does (politeness key
// host:port, priority = depth).
func request(raw string, depth, redirects int) frontier.Request {
	key := ""
	if u, err := url.Parse(raw); err == nil {
		key = urls.HostPort(u)
	}
	return frontier.Request{URL: raw, Key: key, Depth: depth, Priority: depth, Redirects: redirects}
}

// completedURL is the rebuilt state's entry for the URL of kept record i.
func (c *checked) completedURL(i int, depth int) state.CompletedURL {
	r := c.lines[i]
	class := r.outcome
	if class == "" {
		class = strconv.Itoa(int(r.status))
	}
	return state.CompletedURL{URL: r.url, Depth: depth, Class: class, Stored: r.pageNo >= 0, Fingerprint: r.fp, SimHash: r.sim}
}

// specFromState is the state as it was, with the lost known URLs queued
// again, the lost unknown ones forgotten and the counters recomputed from
// the kept records.
func (c *checked) specFromState(lost []frontier.Request) state.RebuildSpec {
	spec := state.RebuildSpec{Created: c.in.Created, FP: c.in.FP, UserMeta: c.in.UserMeta, Pages: c.in.MetaPages, Revisits: c.in.Revisits}
	spec.Pending = append(spec.Pending, c.in.Pending...)
	spec.Pending = append(spec.Pending, lost...)
	keys := make([]dedup.Key, 0, len(c.completed)+len(c.unknown))
	for k := range c.completed {
		if _, ok := c.recorded[k]; ok {
			keys = append(keys, k)
		}
	}
	for _, k := range c.unknown { // kept records the damaged state lost
		if _, done := c.completed[k]; !done {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return c.recorded[keys[i]] < c.recorded[keys[j]] })
	keys = slices.Compact(keys)
	for _, k := range keys {
		i := c.recorded[k]
		spec.Completed = append(spec.Completed, c.completedURL(i, depthOf(c.completed[k], int(c.lines[i].depth))))
	}
	// A damaged revisit record of a URL the kept records name: a fresh
	// record, due at once, so the URL is fetched again and scheduled anew
	// (its validators and change history are lost).
	now := time.Now()
	for _, k := range c.in.DamagedRevisits {
		i, ok := c.recorded[k]
		if _, done := c.completed[k]; !ok || !done {
			continue
		}
		spec.Revisits = append(spec.Revisits, state.Revisit{Request: request(c.lines[i].url, depthOf(c.completed[k], int(c.lines[i].depth)), 0), Due: now})
	}
	return spec
}

// specFromRecords is a state rebuilt from the kept records alone. The
// crawl's filters are not stored, so the out-links of a record cannot be
// queued as the crawl would have (some were out of scope, nofollow or of a
// filtered type; the depth limit is not stored either). Instead, a
// recorded page with an out-link never recorded is queued again itself:
// fetching it again discovers its links through the crawl's own filters.
// The other recorded URLs are completed. The price is fetching again the
// pages at the edge of the crawl (the deepest level of a finished one).
func (c *checked) specFromRecords() (state.RebuildSpec, error) {
	spec := state.RebuildSpec{}
	last := make(map[int]bool, len(c.recorded)) // the kept record of each URL
	for _, i := range c.recorded {
		last[i] = true
	}
	err := store.EachRecordLine(c.dir, func(i int, l store.RecordLine) error {
		if !last[i] || l.Err != nil {
			return nil
		}
		r := l.Rec
		again := false
		for _, o := range r.OutLinks {
			if _, done := c.recorded[dedup.KeyOf(o)]; done {
				continue
			}
			if u, err := url.Parse(o); err == nil && (u.Scheme == "http" || u.Scheme == "https") {
				again = true
				break
			}
		}
		if again {
			spec.Pending = append(spec.Pending, request(r.URL, r.Depth, 0))
		} else {
			spec.Completed = append(spec.Completed, c.completedURL(i, r.Depth))
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return spec, err
	}
	sort.SliceStable(spec.Pending, func(i, j int) bool { return spec.Pending[i].Depth < spec.Pending[j].Depth })
	return spec, nil
}
