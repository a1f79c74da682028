package warc

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// readFile reads every record of a WARC file with the package's Reader.
func readFile(t *testing.T, path string) []readRecord {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := readAll(t, data)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return recs
}

// checkWarcinfoIDs fails unless every record of the file after its
// warcinfo record names that record in WARC-Warcinfo-ID.
func checkWarcinfoIDs(t *testing.T, path string, recs []readRecord) {
	t.Helper()
	if len(recs) == 0 || recs[0].Header.Get("WARC-Type") != "warcinfo" {
		t.Fatalf("%s does not start with a warcinfo record", path)
	}
	info := recs[0].Header.Get("WARC-Record-ID")
	if recs[0].Header.Get("WARC-Warcinfo-ID") != "" {
		t.Fatalf("%s: the warcinfo record names a warcinfo record", path)
	}
	for i, r := range recs[1:] {
		if got := r.Header.Get("WARC-Warcinfo-ID"); got != info {
			t.Fatalf("%s: record %d (%s) has WARC-Warcinfo-ID %q, want the file's warcinfo %q", path, i+1, r.Header.Get("WARC-Type"), got, info)
		}
	}
}

// TestWarcinfoIDs: every record names its own file's warcinfo record, also
// when files roll over under concurrent writers (an exchange compressed for
// one file and written to the next is re-encoded).
func TestWarcinfoIDs(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWriter(dir, "c", Options{FileSize: 6000})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 15 {
				if err := w.WriteExchange(context.Background(), testExchange(g*100+i)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "c-*.warc.gz"))
	if len(files) < 3 {
		t.Fatalf("%d files, want several", len(files))
	}
	infos := map[string]bool{}
	n := 0
	for _, f := range files {
		recs := readFile(t, f)
		checkWarcinfoIDs(t, f, recs)
		id := recs[0].Header.Get("WARC-Record-ID")
		if infos[id] {
			t.Fatalf("two files share the warcinfo id %s", id)
		}
		infos[id] = true
		n += len(recs) - 1
		gowarcValid(t, f, len(recs))
	}
	if n != 4*15*3 {
		t.Fatalf("%d records, want %d", n, 4*15*3)
	}
}

// TestEncodedPayloadAsReceived: a gzip-encoded answer is stored as the gzip
// bytes with its Content-Encoding: gzip, the payload digest is theirs, and
// gunzipping the stored payload gives the page; a chunked one loses only
// its Transfer-Encoding.
func TestEncodedPayloadAsReceived(t *testing.T) {
	page := []byte("<html><title>compressed</title>" + strings.Repeat("words ", 200) + "</html>")
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(page)
	zw.Close()
	dir := t.TempDir()
	ex := testExchange(1)
	ex.RawResponseHeader = []byte("HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\n\r\n")
	ex.Body = gz.Bytes()
	writeExchanges(t, dir, Options{}, ex)
	path := filepath.Join(dir, "crawl-00000.warc.gz")
	gowarcValid(t, path, 4)
	resp := readFile(t, path)[2]
	head := headOf(resp.Body)
	want := fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n", gz.Len())
	if head != want {
		t.Fatalf("stored header\n got %q\nwant %q", head, want)
	}
	stored := payloadOf(resp.Body)
	if !bytes.Equal(stored, gz.Bytes()) || resp.Header.Get("WARC-Payload-Digest") != sha1b32(gz.Bytes()) {
		t.Fatal("the stored payload is not the gzip bytes as received, or its digest is not theirs")
	}
	zr, err := gzip.NewReader(bytes.NewReader(stored))
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(zr)
	if err != nil || !bytes.Equal(got, page) {
		t.Fatalf("gunzipped payload differs from the page (%v)", err)
	}
}

// TestRevisitServerNotModified: a 304 to a conditional request is a revisit
// record (server-not-modified) with the 304's header as its block, naming
// the earlier capture; gowarc validates it.
func TestRevisitServerNotModified(t *testing.T) {
	dir := t.TempDir()
	ex := testExchange(2)
	ex.RequestHeader.Set("If-None-Match", `"v1"`)
	ex.Status = 304
	ex.RawResponseHeader = []byte("HTTP/1.1 304 Not Modified\r\nETag: \"v1\"\r\n\r\n")
	ex.Body = nil
	earlier := fetched.Add(-48 * time.Hour)
	ex.Revisit = &Revisit{Profile: ProfileServerNotModified, RefersToDate: earlier}
	writeExchanges(t, dir, Options{}, ex)
	path := filepath.Join(dir, "crawl-00000.warc.gz")
	types := gowarcValid(t, path, 4)
	if fmt.Sprint(types) != "[warcinfo request revisit metadata]" {
		t.Fatalf("record types %v", types)
	}
	recs := readFile(t, path)
	checkWarcinfoIDs(t, path, recs)
	rv := recs[2].Header
	if rv.Get("WARC-Profile") != "http://netpreserve.org/warc/1.1/revisit/server-not-modified" ||
		rv.Get("WARC-Refers-To-Target-URI") != ex.URL || rv.Get("WARC-Refers-To-Date") != "2012-03-28T08:31:34Z" ||
		rv.Get("WARC-Refers-To") != "" || rv.Get("WARC-Payload-Digest") != "" || rv.Get("WARC-Truncated") != "" {
		t.Fatalf("revisit header: %v", rv)
	}
	if string(recs[2].Body) != string(ex.RawResponseHeader) {
		t.Fatalf("revisit block %q, want the 304's header", recs[2].Body)
	}
	if !bytes.Contains(recs[1].Body, []byte("If-None-Match: \"v1\"\r\n")) {
		t.Fatalf("request record lacks the conditional header:\n%s", recs[1].Body)
	}
}

// TestRevisitIdenticalPayload: with Dedup, a 2xx payload identical to one
// stored earlier is a revisit (identical-payload-digest) naming the
// original's record, URL and date, with the response header kept and no
// payload; different payloads, a truncated one, and a Writer without Dedup
// store in full.
func TestRevisitIdenticalPayload(t *testing.T) {
	dir := t.TempDir()
	a, b, c := testExchange(1), testExchange(2), testExchange(3)
	b.Body = a.Body // b: a copy of a's payload under another URL
	d := testExchange(4)
	d.Body, d.Truncated = a.Body, true // cut: not known to be the same
	writeExchanges(t, dir, Options{Dedup: 16}, a, b, c, d)
	path := filepath.Join(dir, "crawl-00000.warc.gz")
	types := gowarcValid(t, path, 13)
	want := "[warcinfo request response metadata request revisit metadata request response metadata request response metadata]"
	if fmt.Sprint(types) != want {
		t.Fatalf("record types %v, want %s", types, want)
	}
	recs := readFile(t, path)
	checkWarcinfoIDs(t, path, recs)
	orig, rv := recs[2].Header, recs[5].Header
	if rv.Get("WARC-Profile") != "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest" ||
		rv.Get("WARC-Refers-To") != orig.Get("WARC-Record-ID") || rv.Get("WARC-Refers-To-Target-URI") != a.URL ||
		rv.Get("WARC-Refers-To-Date") != orig.Get("WARC-Date") || rv.Get("WARC-Target-URI") != b.URL ||
		rv.Get("WARC-Payload-Digest") != orig.Get("WARC-Payload-Digest") || rv.Get("WARC-Truncated") != "length" {
		t.Fatalf("revisit header %v\noriginal %v", rv, orig)
	}
	if headOf(recs[5].Body) != headOf(recs[2].Body) || len(payloadOf(recs[5].Body)) != 0 {
		t.Fatalf("revisit block %q: want the response header and no payload", recs[5].Body)
	}

	// Without Dedup every payload is stored.
	dir = t.TempDir()
	writeExchanges(t, dir, Options{}, a, b)
	if types := gowarcValid(t, filepath.Join(dir, "crawl-00000.warc.gz"), 7); types[5] != "response" {
		t.Fatalf("without Dedup: %v", types)
	}
}

// TestDedupMemoBounded: the memo forgets the least recently used digests
// beyond its size, and keeps one still hit.
func TestDedupMemoBounded(t *testing.T) {
	m := newDigestMemo(4) // two generations of 2
	for i := range 6 {
		m.add(fmt.Sprint(i), original{id: fmt.Sprint(i)})
		if i == 3 { // 0 is in the older generation now: a hit keeps it
			if _, ok := m.get("0"); !ok {
				t.Fatal("0 forgotten too early")
			}
		}
		if n := len(m.cur) + len(m.prev); n > 4 {
			t.Fatalf("memo holds %d digests, more than its 4", n)
		}
	}
	for _, d := range []string{"1", "2", "3"} { // misses first: a hit moves entries
		if _, ok := m.get(d); ok {
			t.Errorf("digest %s still remembered", d)
		}
	}
	for _, d := range []string{"0", "4", "5"} {
		if o, ok := m.get(d); !ok || o.id != d {
			t.Errorf("digest %s forgotten (%v)", d, o)
		}
	}
}

func TestRevisitRejects(t *testing.T) {
	w, err := NewWriter(t.TempDir(), "x", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for name, rv := range map[string]*Revisit{
		"no profile":                  {},
		"unknown profile":             {Profile: "http://example.org/profile"},
		"identical without a digest":  {Profile: ProfileIdenticalPayloadDigest},
		"target with white space":     {Profile: ProfileServerNotModified, RefersToURI: "http://a/b c"},
		"refers-to that is not an id": {Profile: ProfileServerNotModified, RefersTo: "not an id"},
	} {
		ex := testExchange(1)
		ex.Revisit = rv
		if err := w.WriteExchange(context.Background(), ex); !errors.Is(err, ErrBadExchange) {
			t.Errorf("%s: %v, want ErrBadExchange", name, err)
		}
	}
	if err := w.WriteExchange(context.Background(), testExchange(2)); err != nil {
		t.Fatalf("writer unusable after refused revisits: %v", err)
	}
	ex := testExchange(3)
	ex.Status = 304
	ex.Body = nil
	ex.RawResponseHeader = []byte("HTTP/1.1 304 Not Modified\r\n\r\n")
	ex.Revisit = &Revisit{Profile: ProfileServerNotModified, RefersToURI: "http://www.seu.edu.cn/old"}
	if err := w.WriteExchange(context.Background(), ex); err != nil {
		t.Fatal(err)
	}
}

// FuzzResponseHead drives the hand-written response header handling
// (splitHead, consistent) with arbitrary raw headers: it never panics, and
// a header it accepts comes out as HTTP/… lines ending in CRLF, without
// Transfer-Encoding, and, when the body is complete and may have a length,
// with at most one Content-Length, equal to the stored body's length (and
// present when a Transfer-Encoding was dropped), and its record passes
// gowarc's strict validation.
func FuzzResponseHead(f *testing.F) {
	f.Add([]byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Encoding: gzip\r\n\r\n"), 200, false, 5)
	f.Add([]byte("HTTP/1.0 404 Not Found\nX-Long: a\n  b\nContent-Length: 3\nContent-Length: 3\n\n"), 404, false, 3)
	f.Add([]byte("HTTP/1.1 304 Not Modified\r\nContent-Length: 99\r\n\r\n"), 304, false, 0)
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Length: 999\r\n\r\n"), 200, true, 10)
	f.Add([]byte("garbage"), 200, false, 1)
	f.Fuzz(func(t *testing.T, raw []byte, status int, truncated bool, n int) {
		if n < 0 || n > 4096 {
			return
		}
		ex := testExchange(1)
		ex.RawResponseHeader, ex.Status, ex.Truncated, ex.Body = raw, status, truncated, bytes.Repeat([]byte("b"), n)
		head, err := responseHead(&ex)
		if err != nil {
			return
		}
		if !bytes.HasPrefix(head, []byte("HTTP/")) || !bytes.HasSuffix(head, []byte("\r\n\r\n")) {
			t.Fatalf("header %q", head)
		}
		lines := strings.Split(strings.TrimSuffix(string(head), "\r\n\r\n"), "\r\n")
		lengths := 0
		for _, l := range lines[1:] {
			name, value, ok := strings.Cut(l, ":")
			if !ok || l[0] == ' ' || l[0] == '\t' { // not a field (kept as is), a continuation
				continue
			}
			switch strings.ToLower(strings.TrimSpace(name)) {
			case "transfer-encoding":
				t.Fatalf("Transfer-Encoding kept: %q", head)
			case "content-length":
				lengths++
				if mayHaveLength(&ex) && strings.TrimSpace(value) != fmt.Sprint(n) {
					t.Fatalf("Content-Length %q for %d stored bytes: %q", value, n, head)
				}
			}
		}
		chunked := teField.Match(raw)
		if mayHaveLength(&ex) && (lengths > 1 || (chunked && lengths != 1)) {
			t.Fatalf("%d Content-Length fields: %q", lengths, head)
		}
		dir := t.TempDir()
		w, err := NewWriter(dir, "fuzz", Options{})
		if err != nil {
			t.Fatal(err)
		}
		err = w.WriteExchange(context.Background(), ex)
		if cerr := w.Close(); cerr != nil {
			t.Fatal(cerr)
		}
		if errors.Is(err, ErrBadExchange) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, err := gowarcCheck(filepath.Join(dir, FileName("fuzz", 0))); err != nil {
			t.Fatalf("header %q: %v", raw, err)
		}
	})
}

// teField matches a Transfer-Encoding field line of a raw header.
var teField = regexp.MustCompile(`(?im)^transfer-encoding[ \t]*:`)

// mayHaveLength: the stored header must give the stored body's length.
func mayHaveLength(ex *Exchange) bool {
	return !ex.Truncated && ex.Status/100 != 1 && ex.Status != 204 && ex.Status != 304
}
