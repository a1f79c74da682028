package crawl_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nlnwa/gowarc/v3"

	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/frontier"
	"github.com/spider-crawler/spider/internal/revisit"
)

// warcRecord is one record as gowarc read it under strict validation.
type warcRecord struct {
	typ    string
	header *gowarc.WarcFields
	block  []byte
}

// gowarcRecords reads every record of the WARC files in dir with gowarc under
// strict validation (syntax, the WARC 1.1 fields, Content-Length, block and
// payload digests) and fails the test at the first error.
func gowarcRecords(t *testing.T, dir string) []warcRecord {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	if len(files) == 0 {
		t.Fatalf("no WARC file in %s", dir)
	}
	var out []warcRecord
	for _, path := range files {
		r, err := gowarc.NewWarcFileReader(path, 0, gowarc.WithStrictValidation())
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; ; i++ {
			rec, err := r.Next()
			if errors.Is(err, io.EOF) && rec.WarcRecord == nil {
				break
			}
			if err != nil || len(rec.Validation) > 0 {
				t.Fatalf("gowarc: record %d of %s: %v %v", i, path, err, rec.Validation)
			}
			wr := rec.WarcRecord
			if v, err := wr.ValidateDigest(); err != nil || len(v) > 0 {
				t.Fatalf("gowarc: record %d of %s: digest: %v %v", i, path, err, v)
			}
			raw, err := wr.Block().RawBytes()
			if err != nil {
				t.Fatal(err)
			}
			block, err := io.ReadAll(raw)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, warcRecord{typ: wr.Type().String(), header: wr.WarcHeader(), block: block})
			rec.Close()
		}
		r.Close()
	}
	return out
}

// TestWARCAsReceived crawls a loopback site with --warc and checks the
// records gowarc reads back: robots.txt archived (request and response), a
// gzip-encoded page stored as its gzip bytes with Content-Encoding: gzip
// (gunzipped: the page), a chunked page without Transfer-Encoding and with
// the stored length, an exact copy of a page under another URL written as
// an identical-payload-digest revisit naming the first, and every record
// naming its file's warcinfo record.
func TestWARCAsReceived(t *testing.T) {
	page := "<html><head><title>gz</title></head><body>" + strings.Repeat("as received ", 100) + "</body></html>"
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	io.WriteString(zw, page)
	zw.Close()
	copyPage := "<html><head><title>copy</title></head><body>" + strings.Repeat("the same bytes ", 40) + "</body></html>"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/robots.txt":
			w.Header().Set("Content-Type", "text/plain")
			io.WriteString(w, "User-agent: *\nDisallow: /private/\n")
		case "/gz":
			w.Header().Set("Content-Type", "text/html")
			w.Header().Set("Content-Encoding", "gzip")
			w.Header().Set("Content-Length", fmt.Sprint(gz.Len()))
			w.Write(gz.Bytes())
		case "/chunked":
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, page[:100])
			w.(http.Flusher).Flush()
			io.WriteString(w, page[100:])
		case "/a", "/b":
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, copyPage)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()

	cfg := crawl.NewConfig()
	cfg.Data = t.TempDir()
	cfg.Seeds = []string{srv.URL + "/gz"}
	cfg.WARC = true
	cfg.AllowPrivate = true
	cfg.Delay = 0
	cfg.Scope = "any"
	f, err := crawl.NewFetcher(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/gz", "/chunked", "/a", "/b"} {
		v, err := f.Visit(context.Background(), frontier.Request{URL: srv.URL + p, Key: strings.TrimPrefix(srv.URL, "http://")}, time.Now())
		if err != nil || v.Outcome != "200" {
			t.Fatalf("%s: outcome %q, %v", p, v.Outcome, err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	recs := gowarcRecords(t, filepath.Join(cfg.Data, "warc"))
	var types []string
	byURI := map[string]map[string]warcRecord{}
	for _, r := range recs {
		types = append(types, r.typ)
		uri := strings.TrimPrefix(r.header.Get(gowarc.WarcTargetURI), srv.URL)
		if byURI[uri] == nil {
			byURI[uri] = map[string]warcRecord{}
		}
		byURI[uri][r.typ] = r
	}
	want := "[warcinfo request response metadata request response metadata request response metadata request response metadata request revisit metadata]"
	if fmt.Sprint(types) != want {
		t.Fatalf("record types\n %v\nwant %s", types, want)
	}
	info := recs[0].header.Get(gowarc.WarcRecordID)
	for i, r := range recs[1:] {
		if r.header.Get(gowarc.WarcWarcinfoID) != info {
			t.Fatalf("record %d (%s) names warcinfo %q, want %q", i+1, r.typ, r.header.Get(gowarc.WarcWarcinfoID), info)
		}
	}

	robots := byURI["/robots.txt"]["response"]
	if _, ok := byURI["/robots.txt"]["request"]; !ok || !bytes.HasSuffix(robots.block, []byte("Disallow: /private/\n")) {
		t.Fatalf("robots.txt not archived with its request: %q", robots.block)
	}

	gzResp := byURI["/gz"]["response"].block
	head, payload, _ := bytes.Cut(gzResp, []byte("\r\n\r\n"))
	if !bytes.Contains(head, []byte("\r\nContent-Encoding: gzip\r\n")) || !bytes.Equal(payload, gz.Bytes()) {
		t.Fatalf("gzip page not stored as received:\n%s", head)
	}
	zr, err := gzip.NewReader(bytes.NewReader(payload))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := io.ReadAll(zr); err != nil || string(got) != page {
		t.Fatalf("gunzipped stored payload differs from the page (%v)", err)
	}

	head, payload, _ = bytes.Cut(byURI["/chunked"]["response"].block, []byte("\r\n\r\n"))
	if bytes.Contains(head, []byte("Transfer-Encoding")) || !bytes.Contains(head, []byte(fmt.Sprintf("\r\nContent-Length: %d", len(page)))) ||
		string(payload) != page {
		t.Fatalf("chunked page: header\n%s\npayload %d bytes", head, len(payload))
	}

	orig, rv := byURI["/a"]["response"], byURI["/b"]["revisit"]
	if rv.header.Get(gowarc.WarcProfile) != gowarc.ProfileIdenticalPayloadDigestV1_1 ||
		rv.header.Get(gowarc.WarcRefersTo) != orig.header.Get(gowarc.WarcRecordID) ||
		rv.header.Get(gowarc.WarcRefersToTargetURI) != srv.URL+"/a" ||
		rv.header.Get(gowarc.WarcPayloadDigest) != orig.header.Get(gowarc.WarcPayloadDigest) {
		t.Fatalf("copy's revisit %v, original %v", rv.header, orig.header)
	}
}

// TestWARCRevisitNotModified: a revisit whose schedule entry holds an ETag
// sends If-None-Match; the server's 304 is archived as a revisit record of
// the server-not-modified profile naming the URL and the capture the entry
// kept, beside the request record with the validator; a 304 to a request
// without validators stays a response record. gowarc validates the file.
func TestWARCRevisitNotModified(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/robots.txt":
			http.NotFound(w, r)
		case r.Header.Get("If-None-Match") == `"v1"` || r.URL.Path == "/lying":
			w.Header().Set("ETag", `"v1"`)
			w.WriteHeader(http.StatusNotModified)
		default:
			w.Header().Set("ETag", `"v1"`)
			io.WriteString(w, "<html><title>p</title>unchanged</html>")
		}
	}))
	defer srv.Close()
	cfg := crawl.NewConfig()
	cfg.Data = t.TempDir()
	cfg.Seeds = []string{srv.URL + "/p"}
	cfg.WARC = true
	cfg.AllowPrivate = true
	cfg.Delay = 0
	cfg.Scope = "any"
	f, err := crawl.NewFetcher(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	stored := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	entry := revisit.Entry{LastFetch: stored.Add(time.Hour), LastChange: stored, ETag: `"v1"`}
	sched, _ := entry.MarshalBinary()
	key := strings.TrimPrefix(srv.URL, "http://")
	for _, req := range []frontier.Request{
		{URL: srv.URL + "/p", Key: key, Schedule: string(sched)},
		{URL: srv.URL + "/lying", Key: key},
	} {
		if v, err := f.Visit(context.Background(), req, time.Now()); err != nil || v.Outcome != "304" {
			t.Fatalf("%s: outcome %q, %v", req.URL, v.Outcome, err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	recs := gowarcRecords(t, filepath.Join(cfg.Data, "warc"))
	var types []string
	for _, r := range recs {
		types = append(types, r.typ)
	}
	want := "[warcinfo request response metadata request revisit metadata request response metadata]" // robots.txt's 404 first
	if fmt.Sprint(types) != want {
		t.Fatalf("record types\n %v\nwant %s", types, want)
	}
	req, rv := recs[4], recs[5]
	if !bytes.Contains(req.block, []byte("\r\nIf-None-Match: \"v1\"\r\n")) {
		t.Fatalf("request record without the validator:\n%s", req.block)
	}
	if rv.header.Get(gowarc.WarcProfile) != gowarc.ProfileServerNotModifiedV1_1 ||
		rv.header.Get(gowarc.WarcRefersToTargetURI) != srv.URL+"/p" ||
		rv.header.Get(gowarc.WarcRefersToDate) != "2026-03-04T05:06:07Z" ||
		!bytes.HasPrefix(rv.block, []byte("HTTP/1.1 304 Not Modified\r\n")) {
		t.Fatalf("revisit %v\n%s", rv.header, rv.block)
	}
	if lying := recs[8]; lying.header.Get(gowarc.WarcTargetURI) != srv.URL+"/lying" {
		t.Fatalf("last response is %s", lying.header.Get(gowarc.WarcTargetURI))
	}
}
