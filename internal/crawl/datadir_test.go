package crawl_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/graph"
	"github.com/spider-crawler/spider/internal/state"
	"github.com/spider-crawler/spider/internal/store"
	"github.com/spider-crawler/spider/internal/websim"
	bolt "go.etcd.io/bbolt"
)

// digest hashes every file under dir (mode and bytes) and lists every
// directory, so a test can prove that an operation changed nothing.
func digest(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		info, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			out[rel] = info.Mode().String()
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		out[rel] = fmt.Sprintf("%s %d %x", info.Mode(), len(b), sha256.Sum256(b))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameFiles(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s changed %s: %q → %q", what, k, v, after[k])
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			t.Errorf("%s created %s", what, k)
		}
	}
}

// TestSecondProcessOnRunningCrawl: while a crawl runs (paused, so that its
// own files hold still, with the torn tail of a page being appended), a
// second crawl on the same directory is refused with the lock error before
// it touches anything, and the readers (stats, both exports, the link
// graph) read it without changing a byte. The second crawl used to open the
// page store first, whose open "repaired" the tail by truncating it under
// the running crawl. The crawl then finishes and matches the truth.
func TestSecondProcessOnRunningCrawl(t *testing.T) {
	srv := startWeb(t, websim.Config{Seed: 31, Hosts: 4, PagesPerHost: 40})
	rules := websim.TruthRules{Seeds: srv.SeedURLs(2), MaxDepth: 4, Scope: websim.ScopeAny}
	cfg := crawlConfig(t, srv, rules)
	cfg.Concurrency = 4
	cfg.Delay = crawl.Duration(20 * time.Millisecond)
	eng, err := crawl.New(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- eng.Run(ctx) }()
	waitFor(t, "first pages", time.Minute, func() bool { return eng.Progress().Fetched >= 10 })
	if err := eng.Pause(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "fetches in flight to finish", 30*time.Second, func() bool { return eng.Progress().InFlight == 0 })

	// A page caught mid-append: its body, half its index line, half a record.
	pagesDir := filepath.Join(cfg.Data, "pages")
	index := filepath.Join(pagesDir, store.IndexFileName)
	records := filepath.Join(cfg.Data, store.RecordsFileName)
	sizes := map[string]int64{}
	for _, p := range []string{index, filepath.Join(pagesDir, store.DataFileName(0)), records} {
		info, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		sizes[p] = info.Size()
	}
	appendTo(t, filepath.Join(pagesDir, store.DataFileName(0)), "<html>a page being written</html>")
	appendTo(t, index, "999 34 20 25 http://being.writ")
	appendTo(t, records, `{"url":"http://being.written/","sta`)

	before := digest(t, cfg.Data)
	second, err := crawl.New(cfg, nil, nil)
	if err == nil {
		second.Close()
		t.Fatal("a second crawl opened the directory of a running crawl")
	}
	if !errors.Is(err, store.ErrLocked) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Errorf("second crawl: %v; want store.ErrLocked naming the running crawl's pid", err)
	}
	sameFiles(t, "a refused second crawl", before, digest(t, cfg.Data))

	if _, err := crawl.Stats(cfg.Data); err != nil {
		t.Errorf("stats on a running crawl: %v", err)
	}
	for _, format := range []string{"jsonl", "warc"} {
		if err := crawl.Export(ctx, cfg.Data, format, io.Discard); err != nil {
			t.Errorf("export --format %s on a running crawl: %v", format, err)
		}
	}
	if _, err := graph.Build(ctx, cfg.Data, nil); err != nil {
		t.Errorf("graph build on a running crawl: %v", err)
	}
	sameFiles(t, "readers", before, digest(t, cfg.Data))

	// Take the fake tail away again and let the crawl finish.
	for p, size := range sizes {
		if err := os.Truncate(p, size); err != nil {
			t.Fatal(err)
		}
	}
	if err := eng.Resume(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-runErr:
		if err != nil {
			t.Fatalf("crawl: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("crawl did not finish")
	}
	if err := eng.Close(); err != nil {
		t.Fatal(err)
	}
	truth, err := srv.Truth(rules)
	if err != nil {
		t.Fatal(err)
	}
	checkTruth(t, srv, cfg.Data, truth)
	checkPagesMatchRecords(t, cfg.Data)

	// Once the crawl is closed the directory is free again.
	again, err := crawl.New(cfg, nil, nil)
	if err != nil {
		t.Fatalf("crawl after the first one closed: %v", err)
	}
	again.Close()
}

func appendTo(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// checkPagesMatchRecords checks every record line (not only each URL's
// last) against the page files: the page a record points at was stored for
// that record's URL, or it is a lost page's placeholder (or missing). It
// returns how many records point at a page that was lost.
func checkPagesMatchRecords(t *testing.T, dir string) (lost int) {
	t.Helper()
	pages, err := store.OpenPageFiles(filepath.Join(dir, "pages"), store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer pages.Close()
	rs, err := store.OpenRecords(dir, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	wrong := 0
	_, err = rs.Iterate(func(r store.Record) error {
		if r.PageNo < 0 {
			return nil
		}
		pg, err := pages.Read(r.PageNo)
		switch {
		case errors.Is(err, store.ErrNotFound) || err == nil && pg.URL == store.LostURL:
			lost++
		case err != nil:
			return err
		case pg.URL != r.PageURL():
			if wrong++; wrong <= 5 {
				t.Errorf("the record of %s points at page %d, stored for %s", r.URL, r.PageNo, pg.URL)
			}
		default:
			if _, err := pages.ReadRecord(r); err != nil {
				t.Errorf("ReadRecord(%s): %v", r.URL, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if wrong > 0 {
		t.Errorf("%d records point at another URL's body", wrong)
	}
	return lost
}

// smallCrawl runs a crawl to its end (or to maxPages) and returns its
// configuration.
func smallCrawl(t *testing.T, srv *websim.Server, rules websim.TruthRules, maxPages int64) crawl.Config {
	t.Helper()
	cfg := crawlConfig(t, srv, rules)
	cfg.MaxPages = maxPages
	runCrawl(t, cfg)
	return cfg
}

// TestPageNumbersNeverReused: a crawl stopped half-way loses the tail of its
// page data (a truncated PageData000000) and is resumed. New pages must
// take numbers after every number issued before: 41 old records used to
// point at other URLs' bodies, and search showed another page's title.
func TestPageNumbersNeverReused(t *testing.T) {
	srv := startWeb(t, websim.Config{Seed: 32, Hosts: 4, PagesPerHost: 40})
	rules := websim.TruthRules{Seeds: srv.SeedURLs(2), MaxDepth: 4, Scope: websim.ScopeAny}
	cfg := smallCrawl(t, srv, rules, 40)
	data0 := filepath.Join(cfg.Data, "pages", store.DataFileName(0))
	info, err := os.Stat(data0)
	if err != nil {
		t.Fatal(err)
	}
	pf, err := store.OpenPageFiles(filepath.Join(cfg.Data, "pages"), store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	issued := pf.Count()
	pf.Close()
	if issued < 20 {
		t.Fatalf("the first run stored %d pages; the test needs 20 or more", issued)
	}
	if err := os.Truncate(data0, info.Size()/2); err != nil {
		t.Fatal(err)
	}

	cfg.MaxPages = 0
	runCrawl(t, cfg)

	pf, err = store.OpenPageFiles(filepath.Join(cfg.Data, "pages"), store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	newPages := 0
	if err := pf.Iterate(func(p store.Page) error {
		if p.No < issued && p.URL != store.LostURL && p.Crawled.Before(time.Unix(1, 0)) {
			t.Errorf("page %d is a placeholder under %s", p.No, p.URL)
		}
		if p.No >= issued {
			newPages++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if newPages == 0 {
		t.Fatal("the resumed crawl stored no page: the test proves nothing")
	}
	if lost := checkPagesMatchRecords(t, cfg.Data); lost == 0 {
		t.Error("no record points at a lost page: the truncation lost nothing, the test proves nothing")
	}
	// Readers leave lost pages out and say so, never show another body.
	err = crawl.Export(context.Background(), cfg.Data, "warc", io.Discard)
	if err == nil || !errors.Is(err, store.ErrMismatch) || !strings.Contains(err.Error(), "spider fsck --data "+cfg.Data) {
		t.Errorf("WARC export with lost pages: %v; want the lost records reported (ErrMismatch) with spider fsck", err)
	}
}

// copyDir copies a data directory (regular files only).
func copyDir(t *testing.T, from string) string {
	t.Helper()
	to := t.TempDir()
	err := filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o700)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
	return to
}

// TestDamagedDataDirectory: a crawl refuses to resume from damaged state or
// records with an error naming the file and spider fsck, never a panic and
// never a silent restart (an empty state.db used to start the crawl again,
// fetching every URL twice; a truncated records.jsonl silently lost
// records of URLs the state called done). Nothing is changed.
func TestDamagedDataDirectory(t *testing.T) {
	srv := startWeb(t, websim.Config{Seed: 33, Hosts: 3, PagesPerHost: 20})
	rules := websim.TruthRules{Seeds: srv.SeedURLs(1), MaxDepth: 3, Scope: websim.ScopeAny}
	tmpl := smallCrawl(t, srv, rules, 0)
	stateFile := filepath.Join("state", state.DBFile)
	tests := []struct {
		name   string
		damage func(t *testing.T, dir string)
		want   error
		names  string // the file the error must name
	}{
		{"empty state.db", func(t *testing.T, dir string) {
			must(t, os.Truncate(filepath.Join(dir, stateFile), 0))
		}, crawl.ErrInconsistent, stateFile},
		{"missing state", func(t *testing.T, dir string) {
			must(t, os.RemoveAll(filepath.Join(dir, "state")))
		}, crawl.ErrInconsistent, stateFile},
		{"truncated state.db", func(t *testing.T, dir string) {
			info, err := os.Stat(filepath.Join(dir, stateFile))
			must(t, err)
			must(t, os.Truncate(filepath.Join(dir, stateFile), info.Size()/2))
		}, state.ErrDamaged, stateFile},
		{"truncated records.jsonl", func(t *testing.T, dir string) {
			info, err := os.Stat(filepath.Join(dir, store.RecordsFileName))
			must(t, err)
			must(t, os.Truncate(filepath.Join(dir, store.RecordsFileName), info.Size()*2/3))
		}, crawl.ErrInconsistent, store.RecordsFileName},
		{"truncated records.jsonl of a state without RecordsEnd", func(t *testing.T, dir string) {
			db, err := bolt.Open(filepath.Join(dir, stateFile), 0o600, nil)
			must(t, err)
			must(t, db.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte("meta")).Delete([]byte("_recordsend")) }))
			must(t, db.Close())
			path := filepath.Join(dir, store.RecordsFileName)
			b, err := os.ReadFile(path)
			must(t, err)
			cut := strings.Index(string(b[len(b)/3:]), "\n") + len(b)/3 + 1 // a line boundary: nothing torn
			must(t, os.Truncate(path, int64(cut)))
		}, crawl.ErrInconsistent, store.RecordsFileName},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tmpl
			cfg.Data = copyDir(t, tmpl.Data)
			tt.damage(t, cfg.Data)
			before := digest(t, cfg.Data)
			eng, err := crawl.New(cfg, nil, nil)
			if err == nil {
				eng.Close()
				t.Fatal("the crawl opened a damaged data directory")
			}
			if !errors.Is(err, tt.want) {
				t.Errorf("crawl.New: %v; want %v", err, tt.want)
			}
			for _, want := range []string{tt.names, "spider fsck --data " + cfg.Data} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name %q", err, want)
				}
			}
			after := digest(t, cfg.Data)
			delete(after, store.LockFileName) // the lock file is the one file a refused crawl may leave
			delete(before, store.LockFileName)
			sameFiles(t, "a refused crawl", before, after)
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
