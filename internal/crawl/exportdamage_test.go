package crawl

import (
	"bytes"
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/store"
	"github.com/spider-crawler/spider/internal/store/warc"
)

// TestExportWARCDamagedRecords: a record whose URL cannot be written as
// WARC is left out and counted (the export names spider fsck), a damaged
// IP address is dropped from its record only, a record without final_url
// is exported under the URL its page was stored for, and the rest is
// exported whole. Before, either aborted the whole export.
func TestExportWARCDamagedRecords(t *testing.T) {
	dir := t.TempDir()
	pages, err := store.OpenPageFiles(filepath.Join(dir, "pages"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := store.OpenRecords(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	add := func(rec store.Record, body string) {
		t.Helper()
		no, err := pages.Append(rec.PageURL(), at, []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		rec.PageNo, rec.Status, rec.Outcome, rec.FetchedAt, rec.ContentType = no, 200, "200", at, "text/html"
		rec.BodyCRC = store.BodyChecksum([]byte(body))
		if err := recs.Append(rec); err != nil {
			t.Fatal(err)
		}
	}
	add(store.Record{URL: "http://a.test/", FinalURL: "http://a.test/", IP: "192.0.2.1"}, "<html>a</html>")
	add(store.Record{URL: "http://a.test/ip", IP: "127.0\ufffd0.1"}, "<html>ip</html>")         // a flipped IP
	add(store.Record{URL: "a.test/relative"}, "<html>relative</html>")                          // a URL that lost its scheme
	add(store.Record{URL: "http://a.test/nofinal", IP: "192.0.2.1:80"}, "<html>nofinal</html>") // final_url lost
	if err := errors.Join(pages.Close(), recs.Close()); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err = Export(context.Background(), dir, "warc", &out)
	if err == nil || !strings.Contains(err.Error(), "left out 1 damaged") || !strings.Contains(err.Error(), "spider fsck") {
		t.Fatalf("export: %v, want it to leave out the one record and name spider fsck", err)
	}
	rd, err := warc.NewReader(&out)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for {
		r, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if r.Type() == "response" {
			got[r.Header.Get("WARC-Target-URI")] = r.Header.Get("WARC-IP-Address")
		}
	}
	want := map[string]string{"http://a.test/": "192.0.2.1", "http://a.test/ip": "", "http://a.test/nofinal": "192.0.2.1"}
	if len(got) != len(want) {
		t.Fatalf("exported responses %v, want %v", got, want)
	}
	for u, ip := range want {
		if g, ok := got[u]; !ok || g != ip {
			t.Errorf("response of %s: present %v, IP %q, want IP %q", u, ok, g, ip)
		}
	}
}

// TestExportWARCEveryPageDamaged: when no record's page can be read (the
// page data cut to nothing), the export writes an empty WARC and says how
// many records it left out, naming the pages, records.jsonl and spider
// fsck. Before, it failed with "cannot read the exported WARC: open
// …/export-00000.warc.gz: no such file or directory" (the fault suite's
// damaged-files case, a truncated PageData file).
func TestExportWARCEveryPageDamaged(t *testing.T) {
	dir := t.TempDir()
	pages, err := store.OpenPageFiles(filepath.Join(dir, "pages"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := store.OpenRecords(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	for _, u := range []string{"http://a.test/", "http://a.test/b"} {
		no, err := pages.Append(u, at, []byte("<html>"+u+"</html>"))
		if err != nil {
			t.Fatal(err)
		}
		rec := store.Record{URL: u, FinalURL: u, PageNo: no + 100, Status: 200, Outcome: "200", FetchedAt: at, ContentType: "text/html"}
		if err := recs.Append(rec); err != nil { // page numbers the store does not hold
			t.Fatal(err)
		}
	}
	if err := errors.Join(pages.Close(), recs.Close()); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err = Export(context.Background(), dir, "warc", &out)
	if err == nil || !strings.Contains(err.Error(), "left out 2 damaged") || !strings.Contains(err.Error(), "spider fsck") ||
		!strings.Contains(err.Error(), store.RecordsFileName) || strings.Contains(err.Error(), "cannot read the exported WARC") {
		t.Fatalf("export: %v, want it to leave out both records and name records.jsonl and spider fsck", err)
	}
	if out.Len() != 0 {
		t.Errorf("the export wrote %d bytes, want an empty WARC", out.Len())
	}
}
