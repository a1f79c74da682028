package index

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/store"
)

// crawlDir writes a crawl's data directory as the fetcher does: each page
// body appended to the page files, then its record to records.jsonl.
type crawlDir struct {
	t     *testing.T
	dir   string
	pages *store.PageFiles
	recs  *store.Records
}

func newCrawlDir(t *testing.T) *crawlDir {
	dir := t.TempDir()
	pages, err := store.OpenPageFiles(filepath.Join(dir, "pages"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := store.OpenRecords(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := &crawlDir{t: t, dir: dir, pages: pages, recs: recs}
	t.Cleanup(func() { c.sync(); pages.Close(); recs.Close() })
	return c
}

func (c *crawlDir) sync() {
	if err := c.pages.Sync(); err != nil {
		c.t.Fatal(err)
	}
	if err := c.recs.Sync(); err != nil {
		c.t.Fatal(err)
	}
}

// page records a 200 answer with an HTML body.
func (c *crawlDir) page(url, title, text string, at time.Time) {
	c.t.Helper()
	body := []byte("<html><head><title>" + title + "</title></head><body><p>" + text + "</p></body></html>")
	no, err := c.pages.Append(url, at, body)
	if err != nil {
		c.t.Fatal(err)
	}
	c.append(store.Record{URL: url, Status: 200, Outcome: "200", FetchedAt: at, ContentType: "text/html", Charset: "utf-8",
		Title: title, PageNo: no, BodyCRC: store.BodyChecksum(body), Size: len(body)})
}

// answer records an answer without a stored body (a 304, a 404…) or, with
// status 0, an attempt that got none.
func (c *crawlDir) answer(url string, status int, outcome string, at time.Time) {
	c.t.Helper()
	c.append(store.Record{URL: url, Status: status, Outcome: outcome, FetchedAt: at, PageNo: -1})
}

func (c *crawlDir) append(r store.Record) {
	c.t.Helper()
	if err := c.recs.Append(r); err != nil {
		c.t.Fatal(err)
	}
}

func (c *crawlDir) build(opt BuildOptions) BuildStats {
	c.t.Helper()
	c.sync()
	st, err := Build(context.Background(), c.dir, opt)
	if err != nil {
		c.t.Fatal(err)
	}
	return st
}

// hits returns the hits of q by URL.
func hits(t *testing.T, ix *Index, q string) map[string]Hit {
	t.Helper()
	res, err := ix.Search(context.Background(), Request{Query: q, Limit: 100, RankWeight: 0})
	if err != nil {
		t.Fatalf("%q: %v", q, err)
	}
	out := map[string]Hit{}
	for _, h := range res.Hits {
		if _, dup := out[h.URL]; dup {
			t.Errorf("%q: %s hit twice", q, h.URL)
		}
		out[h.URL] = h
	}
	if res.Total != len(res.Hits) {
		t.Errorf("%q: total %d, %d hits", q, res.Total, len(res.Hits))
	}
	return out
}

func snippetText(h Hit) string {
	var b strings.Builder
	for _, f := range h.Snippet {
		b.WriteString(f.Text)
	}
	return b.String()
}

// TestIndexFollowsRevisits: a crawl, then revisits appended to the same
// records.jsonl (a changed page, a 304, a 404, a 410, a time-out, a 503, a
// sitemap's record), then an incremental build: the new text is found and
// the old is not (no stale snippet, no double hit), the 304'd and failed
// pages keep their version, the gone pages leave; a full rebuild and a
// merge into one segment agree; each hit shows its last fetch.
func TestIndexFollowsRevisits(t *testing.T) {
	c := newCrawlDir(t)
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	t1, t2 := t0.Add(24*time.Hour), t0.Add(48*time.Hour)
	const (
		changed  = "http://a.test/changed"
		same     = "http://a.test/same"
		gone404  = "http://a.test/gone404"
		gone410  = "http://a.test/gone410"
		timeout  = "http://a.test/timeout"
		down     = "http://a.test/down"
		late304  = "http://a.test/late304"
		sitemap  = "http://a.test/sitemap.xml"
		returned = "http://a.test/returned"
	)
	c.page(changed, "Orchard", "quince apple harvest", t0)
	c.page(same, "Stable", "granite boulder", t0)
	c.page(gone404, "Lost", "walrus tusk", t0)
	c.page(gone410, "Removed", "narwhal horn", t0)
	c.page(timeout, "Slow", "glacier melt", t0)
	c.page(down, "Down", "volcano ash", t0)
	c.answer(returned, 404, "404", t0)
	st := c.build(BuildOptions{})
	if st.Docs != 6 {
		t.Fatalf("first build: %+v", st)
	}

	// The revisits.
	c.page(changed, "Orchard", "quince pear harvest", t1)
	c.answer(same, 304, "304", t1)
	c.answer(gone404, 404, "404", t1)
	c.answer(gone410, 410, "410", t1)
	c.answer(timeout, 0, "timeout", t1)
	c.answer(down, 503, "503", t1)
	c.append(store.Record{URL: sitemap, Status: 200, Outcome: "sitemap", FetchedAt: t1, ContentType: "application/xml", PageNo: -1})
	c.page(returned, "Back", "phoenix feather", t1)
	// In one batch: a page fetched, then answered 304 later.
	c.page(late304, "Late", "tortoise shell", t1)
	c.answer(late304, 304, "304", t2)
	st = c.build(BuildOptions{})
	if st.Docs != 4 || st.Deleted != 2 {
		t.Errorf("incremental build: %d docs, %d deleted; want 4 (changed, returned, late304, and same again for its 304) and 2 (404, 410)", st.Docs, st.Deleted)
	}

	check := func(name string, ix *Index) {
		t.Run(name, func(t *testing.T) {
			if n := ix.Stats().Docs; n != 6 {
				t.Errorf("%d live documents, want 6 (two of the eight left)", n)
			}
			if h := hits(t, ix, "apple"); len(h) != 0 {
				t.Errorf("the changed page's old text is still found: %v", h)
			}
			h := hits(t, ix, "quince")
			if len(h) != 1 {
				t.Fatalf("quince: %v", h)
			}
			if s := snippetText(h[changed]); !strings.Contains(s, "pear") || strings.Contains(s, "apple") {
				t.Errorf("snippet %q: want the new text", s)
			}
			if got := h[changed].Fetched; !got.Equal(t1) {
				t.Errorf("changed page fetched %s, want %s", got, t1)
			}
			for q, want := range map[string]string{"granite": same, "glacier": timeout, "volcano": down, "phoenix": returned, "tortoise": late304} {
				if _, ok := hits(t, ix, q)[want]; !ok {
					t.Errorf("%q: %s is not found", q, want)
				}
			}
			for _, q := range []string{"walrus", "narwhal"} {
				if h := hits(t, ix, q); len(h) != 0 {
					t.Errorf("%q: a gone page is still found: %v", q, h)
				}
			}
			if got := hits(t, ix, "tortoise")[late304].Fetched; !got.Equal(t2) {
				t.Errorf("a page answered 304 after its fetch shows fetched %s, want the 304's %s", got, t2)
			}
			if got := hits(t, ix, "granite")[same].Fetched; !got.Equal(t1) {
				t.Errorf("a page answered 304 by a revisit indexed in a later run shows fetched %s, want the 304's %s", got, t1)
			}
			if got := hits(t, ix, "volcano")[down].Fetched; !got.Equal(t0) {
				t.Errorf("a page whose revisit failed shows fetched %s, want its copy's %s", got, t0)
			}
		})
	}
	ix := openIndex(t, filepath.Join(c.dir, DirName))
	check("incremental", ix)
	ix.Close()

	c.build(BuildOptions{ForceMerge: true})
	ix = openIndex(t, filepath.Join(c.dir, DirName))
	check("merged", ix)
	ix.Close()

	c.build(BuildOptions{Rebuild: true})
	ix = openIndex(t, filepath.Join(c.dir, DirName))
	check("rebuilt", ix)

	var urls []string
	if err := ReadPages(context.Background(), c.dir, func(p Page) error { urls = append(urls, p.URL); return nil }); err != nil {
		t.Fatal(err)
	}
	slices.Sort(urls)
	if want := []string{changed, down, late304, returned, same, timeout}; !slices.Equal(urls, want) {
		t.Errorf("ReadPages: %v, want %v", urls, want)
	}
}

// TestRecordSupersedes: which records replace the version the index holds.
func TestRecordSupersedes(t *testing.T) {
	for _, tc := range []struct {
		r    Record
		want bool
	}{
		{Record{Status: 200, Outcome: "200"}, true},
		{Record{Status: 200, Outcome: "200", ContentType: "application/pdf"}, true},
		{Record{Status: 301, Outcome: "301"}, true},
		{Record{Status: 404, Outcome: "404"}, true},
		{Record{Status: 410, Outcome: "410"}, true},
		{Record{Status: 403, Outcome: "403"}, true},
		{Record{Status: 304, Outcome: "304"}, false},
		{Record{Status: 429, Outcome: "429"}, false},
		{Record{Status: 503, Outcome: "503"}, false},
		{Record{Outcome: "timeout"}, false},
		{Record{Outcome: "robots"}, false},
		{Record{Status: 200, Outcome: "sitemap"}, false},
		{Record{Status: 404, Outcome: "no-sitemap"}, false},
		{Record{Status: 200, Outcome: "sitemap-failed"}, false},
	} {
		if got := tc.r.Supersedes(); got != tc.want {
			t.Errorf("%d %q: Supersedes %v, want %v", tc.r.Status, tc.r.Outcome, got, tc.want)
		}
	}
}

// TestFormat3Read: a segment of format 3 (before the last-fetched time) is
// read, its hits' fetch time unknown; a merge rewrites it as format 4.
func TestFormat3Read(t *testing.T) {
	c := newCrawlDir(t)
	at := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	c.page("http://a.test/one", "One", "marmot burrow", at)
	c.page("http://a.test/two", "Two", "marmot meadow", at)
	c.build(BuildOptions{})
	dir := filepath.Join(c.dir, DirName)
	m, _, err := readManifest(dir)
	if err != nil || len(m.Segments) != 1 {
		t.Fatalf("manifest %+v %v", m, err)
	}
	// A format 4 document entry is a format 3 one plus its fetch time at
	// the end, which a format 3 reader never reaches (entries are found by
	// offset): relabelled, the file is a format 3 segment.
	seg := filepath.Join(dir, m.Segments[0].Name)
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	binary.LittleEndian.PutUint32(b[8:], 3) // the header is not checksummed
	if err := os.WriteFile(seg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	ix := openIndex(t, dir)
	h := hits(t, ix, "marmot")
	if len(h) != 2 || !h["http://a.test/one"].Fetched.IsZero() {
		t.Fatalf("format 3: %+v", h)
	}
	ix.Close()
	c.page("http://a.test/three", "Three", "marmot valley", at)
	c.build(BuildOptions{ForceMerge: true})
	m, _, _ = readManifest(dir)
	b, err = os.ReadFile(filepath.Join(dir, m.Segments[0].Name))
	if err != nil || binary.LittleEndian.Uint32(b[8:]) != segVersion {
		t.Fatalf("merged segment: version %d, %v", binary.LittleEndian.Uint32(b[8:]), err)
	}
	h = hits(t, openIndex(t, dir), "marmot")
	if len(h) != 3 || !h["http://a.test/one"].Fetched.IsZero() || !h["http://a.test/three"].Fetched.Equal(at) {
		t.Errorf("merged: %+v", h)
	}
}
