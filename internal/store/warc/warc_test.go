package warc

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha1"
	"encoding/base32"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

var fetched = time.Date(2012, time.March, 30, 8, 31, 34, 0, time.UTC)

func testExchange(i int) Exchange {
	body := []byte(fmt.Sprintf("<html><title>page %d</title>%s</html>", i, strings.Repeat("x", i*37%500)))
	return Exchange{
		URL:    fmt.Sprintf("http://www.seu.edu.cn/news/%d.html?id=%d", i, i),
		Method: "GET",
		RequestHeader: http.Header{
			"User-Agent":      {"spider/1.0 (+http://example.org/bot)"},
			"Accept-Encoding": {"gzip, br"},
			"Accept":          {"text/html"},
		},
		Status:         200,
		ResponseHeader: http.Header{"Content-Type": {"text/html; charset=utf-8"}, "Server": {"test"}},
		Body:           body,
		IP:             "192.0.2.7",
		Fetched:        fetched.Add(time.Duration(i) * time.Second),
		Duration:       time.Duration(100+i) * time.Millisecond,
		OutLinks:       []string{fmt.Sprintf("http://www.seu.edu.cn/news/%d.html", i+1), "http://other.example/"},
	}
}

// readAll reads every record of r, checking each body to its end.
type readRecord struct {
	Header Header
	Body   []byte
}

func readAll(t testing.TB, data []byte) ([]readRecord, error) {
	t.Helper()
	r, err := NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	var out []readRecord
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		body, err := io.ReadAll(rec.Body)
		if err != nil {
			return out, err
		}
		if int64(len(body)) != rec.ContentLength {
			t.Fatalf("body %d bytes, Content-Length %d", len(body), rec.ContentLength)
		}
		out = append(out, readRecord{rec.Header, body})
	}
}

func sha1b32(b []byte) string {
	s := sha1.Sum(b)
	return "sha1:" + base32.StdEncoding.EncodeToString(s[:])
}

var (
	uuidRE = regexp.MustCompile(`^<urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}>$`)
	dateRE = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$`)
)

func writeExchanges(t testing.TB, dir string, opt Options, exs ...Exchange) {
	t.Helper()
	w, err := NewWriter(dir, "crawl", opt)
	if err != nil {
		t.Fatal(err)
	}
	for _, ex := range exs {
		if err := w.WriteExchange(context.Background(), ex); err != nil {
			t.Fatalf("WriteExchange: %v", err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestWriteExchangeRecords(t *testing.T) {
	dir := t.TempDir()
	ex := testExchange(3)
	writeExchanges(t, dir, Options{Info: []Field{{"operator", "test"}}}, ex)
	data, err := os.ReadFile(filepath.Join(dir, "crawl-00000.warc.gz"))
	if err != nil {
		t.Fatal(err)
	}
	recs, err := readAll(t, data)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 4 {
		t.Fatalf("%d records, want warcinfo + 3", len(recs))
	}
	ids := map[string]bool{}
	for i, want := range []string{"warcinfo", "request", "response", "metadata"} {
		h := recs[i].Header
		if h.Get("WARC-Type") != want {
			t.Fatalf("record %d is %q, want %q", i, h.Get("WARC-Type"), want)
		}
		id := h.Get("WARC-Record-ID")
		if !uuidRE.MatchString(id) || ids[id] {
			t.Fatalf("record %d id %q malformed or repeated", i, id)
		}
		ids[id] = true
		if !dateRE.MatchString(h.Get("WARC-Date")) {
			t.Fatalf("record %d WARC-Date %q", i, h.Get("WARC-Date"))
		}
		if h.Get("WARC-Block-Digest") != sha1b32(recs[i].Body) {
			t.Fatalf("record %d block digest %q", i, h.Get("WARC-Block-Digest"))
		}
		if i > 0 {
			if h.Get("WARC-Target-URI") != ex.URL || h.Get("WARC-IP-Address") != "192.0.2.7" || h.Get("WARC-Date") != "2012-03-30T08:31:37Z" {
				t.Fatalf("record %d: target %q ip %q date %q", i, h.Get("WARC-Target-URI"), h.Get("WARC-IP-Address"), h.Get("WARC-Date"))
			}
		}
	}
	info, req, resp, meta := recs[0], recs[1], recs[2], recs[3]
	if info.Header.Get("WARC-Filename") != "crawl-00000.warc.gz" || info.Header.Get("Content-Type") != "application/warc-fields" ||
		!bytes.Contains(info.Body, []byte("format: WARC File Format 1.1\r\n")) || !bytes.Contains(info.Body, []byte("operator: test\r\n")) ||
		!bytes.Contains(info.Body, []byte("software: spider\r\n")) {
		t.Fatalf("warcinfo: %v\n%s", info.Header, info.Body)
	}
	respID := resp.Header.Get("WARC-Record-ID")
	if req.Header.Get("WARC-Concurrent-To") != respID || meta.Header.Get("WARC-Concurrent-To") != respID {
		t.Fatal("request and metadata are not concurrent to the response")
	}

	if req.Header.Get("Content-Type") != "application/http;msgtype=request" {
		t.Fatalf("request Content-Type %q", req.Header.Get("Content-Type"))
	}
	hr, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(req.Body)))
	if err != nil {
		t.Fatalf("request block does not parse: %v\n%s", err, req.Body)
	}
	if hr.Method != "GET" || hr.RequestURI != "/news/3.html?id=3" || hr.Host != "www.seu.edu.cn" ||
		hr.UserAgent() != ex.RequestHeader.Get("User-Agent") || hr.Header.Get("Accept-Encoding") != "gzip, br" {
		t.Fatalf("request block:\n%s", req.Body)
	}
	if !bytes.HasPrefix(req.Body, []byte("GET /news/3.html?id=3 HTTP/1.1\r\nHost: www.seu.edu.cn\r\nUser-Agent: ")) {
		t.Fatalf("request block does not start with request line, Host, User-Agent:\n%s", req.Body)
	}

	if resp.Header.Get("Content-Type") != "application/http;msgtype=response" {
		t.Fatalf("response Content-Type %q", resp.Header.Get("Content-Type"))
	}
	hresp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(resp.Body)), nil)
	if err != nil {
		t.Fatalf("response block does not parse: %v", err)
	}
	payload, _ := io.ReadAll(hresp.Body)
	if hresp.StatusCode != 200 || hresp.Header.Get("Server") != "test" || !bytes.Equal(payload, ex.Body) {
		t.Fatalf("response block:\n%s", resp.Body)
	}
	if resp.Header.Get("WARC-Payload-Digest") != sha1b32(ex.Body) {
		t.Fatalf("payload digest %q", resp.Header.Get("WARC-Payload-Digest"))
	}
	if got := payloadOf(resp.Body); !bytes.Equal(got, ex.Body) {
		t.Fatalf("payload after the header block differs")
	}

	if meta.Header.Get("Content-Type") != "application/warc-fields" {
		t.Fatalf("metadata Content-Type %q", meta.Header.Get("Content-Type"))
	}
	wantMeta := "fetchTimeMs: 103\r\nip: 192.0.2.7\r\noutlink: http://www.seu.edu.cn/news/4.html\r\noutlink: http://other.example/\r\n"
	if string(meta.Body) != wantMeta {
		t.Fatalf("metadata block %q, want %q", meta.Body, wantMeta)
	}
}

// payloadOf returns what follows the HTTP header block.
func payloadOf(block []byte) []byte {
	_, after, _ := bytes.Cut(block, []byte("\r\n\r\n"))
	return after
}

// headOf returns the HTTP header block including its final CRLF CRLF.
func headOf(block []byte) string {
	i := bytes.Index(block, []byte("\r\n\r\n"))
	return string(block[:i+4])
}

func TestResponseHeaderConsistency(t *testing.T) {
	body := []byte("hello, encoded world")
	tests := []struct {
		name      string
		modify    func(ex *Exchange)
		wantHead  string
		truncated bool
	}{
		{"raw header kept verbatim", func(ex *Exchange) {
			ex.RawResponseHeader = []byte("HTTP/1.1 200 OK\r\nServer: x\r\ncontent-length: 20\r\nX-Odd:  spaced \r\n\r\n")
		}, "HTTP/1.1 200 OK\r\nServer: x\r\ncontent-length: 20\r\nX-Odd:  spaced \r\n\r\n", false},
		{"chunked coding dropped, the stored length set", func(ex *Exchange) {
			ex.RawResponseHeader = []byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nServer: x\r\n\r\n")
		}, "HTTP/1.1 200 OK\r\nServer: x\r\nContent-Length: 20\r\n\r\n", false},
		{"encoded body stored as received", func(ex *Exchange) {
			ex.RawResponseHeader = []byte("HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 20\r\nVary: Accept-Encoding\r\n\r\n")
		}, "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 20\r\nVary: Accept-Encoding\r\n\r\n", false},
		{"chunked and encoded: the coding stays", func(ex *Exchange) {
			ex.RawResponseHeader = []byte("HTTP/1.1 200 OK\r\nContent-Encoding: br\r\nTransfer-Encoding: chunked\r\n\r\n")
		}, "HTTP/1.1 200 OK\r\nContent-Encoding: br\r\nContent-Length: 20\r\n\r\n", false},
		{"truncated keeps the server length", func(ex *Exchange) {
			ex.Truncated = true
			ex.RawResponseHeader = []byte("HTTP/1.1 200 OK\r\nContent-Length: 999999\r\n\r\n")
		}, "HTTP/1.1 200 OK\r\nContent-Length: 999999\r\n\r\n", true},
		{"bare LF lines and a continuation", func(ex *Exchange) {
			ex.RawResponseHeader = []byte("HTTP/1.0 404 Not Found\nX-Long: a\n  b\nContent-Length: 3\n\n")
		}, "HTTP/1.0 404 Not Found\r\nX-Long: a\r\n  b\r\nContent-Length: 20\r\n\r\n", false},
		{"synthesised from Status and ResponseHeader", func(ex *Exchange) {
			ex.Status = 404
			ex.Proto = "HTTP/2.0"
			ex.ResponseHeader = http.Header{"Content-Type": {"text/plain"}, "Set-Cookie": {"a=1", "b=2"}, "X-Bad": {"a\r\nInjected: yes"}}
		}, "HTTP/2.0 404 Not Found\r\nContent-Type: text/plain\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\nX-Bad: a  Injected: yes\r\n\r\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			ex := testExchange(1)
			ex.Body = body
			ex.ResponseHeader = nil
			tt.modify(&ex)
			writeExchanges(t, dir, Options{}, ex)
			data, _ := os.ReadFile(filepath.Join(dir, "crawl-00000.warc.gz"))
			recs, err := readAll(t, data)
			if err != nil {
				t.Fatal(err)
			}
			resp := recs[2]
			if got := headOf(resp.Body); got != tt.wantHead {
				t.Fatalf("header block\n got %q\nwant %q", got, tt.wantHead)
			}
			if !bytes.Equal(payloadOf(resp.Body), body) || resp.Header.Get("WARC-Payload-Digest") != sha1b32(body) {
				t.Fatal("payload or its digest differs")
			}
			if (resp.Header.Get("WARC-Truncated") == "length") != tt.truncated {
				t.Fatalf("WARC-Truncated = %q", resp.Header.Get("WARC-Truncated"))
			}
			if !tt.truncated {
				hresp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(resp.Body)), nil)
				if err != nil {
					t.Fatal(err)
				}
				got, err := io.ReadAll(hresp.Body)
				if err != nil || !bytes.Equal(got, body) {
					t.Fatalf("net/http reads body %q, %v", got, err)
				}
			}
		})
	}
}

func TestWriteExchangeRejects(t *testing.T) {
	w, err := NewWriter(t.TempDir(), "x", Options{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		modify func(ex *Exchange)
	}{
		{"relative url", func(ex *Exchange) { ex.URL = "/a/b" }},
		{"url with space", func(ex *Exchange) { ex.URL = "http://a/b c" }},
		{"url with newline", func(ex *Exchange) { ex.URL = "http://a/b\r\nWARC-Type: x" }},
		{"bad ip", func(ex *Exchange) { ex.IP = "not-an-ip" }},
		{"raw header not http", func(ex *Exchange) { ex.RawResponseHeader = []byte("garbage\r\n\r\n") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ex := testExchange(1)
			tt.modify(&ex)
			if err := w.WriteExchange(context.Background(), ex); err == nil {
				t.Fatal("accepted")
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := w.WriteExchange(ctx, testExchange(1)); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled ctx: %v", err)
	}
	ex := testExchange(1)
	ex.IP = "[2001:db8::1]:443"
	if err := w.WriteExchange(context.Background(), ex); err != nil {
		t.Fatalf("ip with port: %v", err)
	}
	w.Close()
	if err := w.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := w.WriteExchange(context.Background(), testExchange(1)); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
	if err := w.Sync(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Sync after Close: %v", err)
	}
	for _, p := range []string{"", "a/b"} {
		if _, err := NewWriter(t.TempDir(), p, Options{}); err == nil {
			t.Errorf("prefix %q accepted", p)
		}
	}
	if _, err := NewWriter(t.TempDir(), "x", Options{FileSize: -1}); err == nil {
		t.Error("negative FileSize accepted")
	}
	if _, err := NewWriter(t.TempDir(), "x", Options{Info: []Field{{"a", "b\nc"}}}); err == nil {
		t.Error("multi-line info accepted")
	}
}

func TestWriterRollsFilesAndContinuesNumbering(t *testing.T) {
	dir := t.TempDir()
	var exs []Exchange
	for i := range 12 {
		exs = append(exs, testExchange(i))
	}
	writeExchanges(t, dir, Options{FileSize: 3000}, exs[:6]...)
	writeExchanges(t, dir, Options{FileSize: 3000}, exs[6:]...)
	files, _ := filepath.Glob(filepath.Join(dir, "crawl-*.warc.gz"))
	if len(files) < 4 {
		t.Fatalf("%d files, want several", len(files))
	}
	var uris []string
	for i, f := range files {
		if filepath.Base(f) != FileName("crawl", i) {
			t.Fatalf("file %d is %s", i, filepath.Base(f))
		}
		data, _ := os.ReadFile(f)
		recs, err := readAll(t, data)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if recs[0].Header.Get("WARC-Type") != "warcinfo" || recs[0].Header.Get("WARC-Filename") != filepath.Base(f) {
			t.Fatalf("%s does not start with its warcinfo", f)
		}
		if (len(recs)-1)%3 != 0 || len(recs) < 4 {
			t.Fatalf("%s: %d records: exchanges split across files", f, len(recs))
		}
		for _, r := range recs {
			if r.Header.Get("WARC-Type") == "response" {
				uris = append(uris, r.Header.Get("WARC-Target-URI"))
			}
		}
		gzipT(t, f)
		gowarcValid(t, f, len(recs))
	}
	if len(uris) != 12 {
		t.Fatalf("%d responses, want 12", len(uris))
	}
	for i, u := range uris {
		if u != exs[i].URL {
			t.Fatalf("response %d is %s", i, u)
		}
	}
}

// gzipT runs `gzip -t` on a file (an independent gzip reader).
func gzipT(t *testing.T, path string) {
	t.Helper()
	gz, err := exec.LookPath("gzip")
	if err != nil {
		t.Fatal("gzip is not on PATH: install it (apt-get install gzip); the files are checked with gzip -t")
	}
	if out, err := exec.Command(gz, "-t", path).CombinedOutput(); err != nil {
		t.Fatalf("gzip -t %s: %v\n%s", path, err, out)
	}
}

func TestWriterConcurrent(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWriter(dir, "c", Options{FileSize: 20000})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for k := range 40 {
				if err := w.WriteExchange(context.Background(), testExchange(g*40+k)); err != nil {
					t.Errorf("WriteExchange: %v", err)
				}
			}
		})
	}
	wg.Go(func() {
		for range 5 {
			if err := w.Sync(); err != nil {
				t.Errorf("Sync: %v", err)
			}
		}
	})
	wg.Wait()
	w.Close()
	files, _ := filepath.Glob(filepath.Join(dir, "c-*.warc.gz"))
	seen := map[string]bool{}
	for _, f := range files {
		data, _ := os.ReadFile(f)
		recs, err := readAll(t, data)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		gowarcValid(t, f, len(recs))
		for i := 1; i < len(recs); i += 3 {
			req, resp, meta := recs[i], recs[i+1], recs[i+2]
			id := resp.Header.Get("WARC-Record-ID")
			if req.Header.Get("WARC-Concurrent-To") != id || meta.Header.Get("WARC-Concurrent-To") != id ||
				req.Header.Get("WARC-Target-URI") != resp.Header.Get("WARC-Target-URI") {
				t.Fatalf("%s: exchange records interleaved at record %d", f, i)
			}
			seen[resp.Header.Get("WARC-Target-URI")] = true
		}
	}
	if len(seen) != 160 {
		t.Fatalf("%d distinct responses, want 160", len(seen))
	}
}

// memberEnds returns the offset after each gzip member of data.
func memberEnds(t *testing.T, data []byte) []int {
	t.Helper()
	br := bytes.NewReader(data)
	var ends []int
	z, err := gzip.NewReader(br)
	if err != nil {
		t.Fatal(err)
	}
	for {
		z.Multistream(false)
		if _, err := io.Copy(io.Discard, z); err != nil {
			t.Fatal(err)
		}
		ends = append(ends, len(data)-br.Len())
		if br.Len() == 0 {
			return ends
		}
		if err := z.Reset(br); err != nil {
			t.Fatal(err)
		}
	}
}

// A crash mid-write leaves a torn last member: the reader returns every
// complete record and then ErrTruncated, never a bad record or a panic.
func TestReaderDetectsTornTail(t *testing.T) {
	dir := t.TempDir()
	writeExchanges(t, dir, Options{}, testExchange(1), testExchange(2), testExchange(3))
	data, _ := os.ReadFile(filepath.Join(dir, "crawl-00000.warc.gz"))
	ends := memberEnds(t, data)
	if len(ends) != 10 {
		t.Fatalf("%d members, want 10", len(ends))
	}
	isEnd := map[int]int{0: 0} // offset -> records complete before it
	for i, e := range ends {
		isEnd[e] = i + 1
	}
	start := ends[len(ends)-4] // the last exchange
	for cut := start; cut < len(data); cut++ {
		recs, err := readAll(t, data[:cut])
		if n, ok := isEnd[cut]; ok {
			if err != nil || len(recs) != n {
				t.Fatalf("cut at member end %d: %d records, %v", cut, len(recs), err)
			}
			continue
		}
		if !errors.Is(err, ErrTruncated) {
			t.Fatalf("cut at %d: err %v, want ErrTruncated", cut, err)
		}
		if len(recs) < 7 {
			t.Fatalf("cut at %d: only %d complete records before the torn one", cut, len(recs))
		}
		for _, r := range recs {
			if r.Header.Get("WARC-Block-Digest") != sha1b32(r.Body) {
				t.Fatalf("cut at %d: a damaged record was returned", cut)
			}
		}
	}
	// The same for an uncompressed WARC.
	var plain bytes.Buffer
	z, _ := gzip.NewReader(bytes.NewReader(data))
	io.Copy(&plain, z)
	p := plain.Bytes()
	for cut := bytes.LastIndex(p, []byte("WARC/1.1\r\n")) + 1; cut < len(p); cut++ {
		_, err := readAll(t, p[:cut])
		if !errors.Is(err, ErrTruncated) {
			t.Fatalf("plain cut at %d of %d: err %v, want ErrTruncated", cut, len(p), err)
		}
	}
}

const plainRecord = "WARC/1.0\r\nWARC-Type: resource\r\nWARC-Record-ID: <urn:uuid:1>\r\nWARC-Long: a\r\n b\r\n" +
	"Content-Length: 5\r\n\r\nhello\r\n\r\n"

func TestReaderPlainAndMalformed(t *testing.T) {
	recs, err := readAll(t, []byte(plainRecord+"\r\n"+plainRecord))
	if err != nil || len(recs) != 2 || string(recs[0].Body) != "hello" || recs[0].Header.Get("warc-long") != "a b" {
		t.Fatalf("plain: %d records, %v", len(recs), err)
	}
	hexDigest := fmt.Sprintf("%x", sha1.Sum([]byte("hello")))
	withHex := strings.Replace(plainRecord, "Content-Length", "WARC-Block-Digest: sha1:"+hexDigest+"\r\nContent-Length", 1)
	if _, err := readAll(t, []byte(withHex)); err != nil {
		t.Fatalf("hex digest: %v", err)
	}
	if recs, err := readAll(t, nil); err != nil || len(recs) != 0 {
		t.Fatalf("empty input: %d records, %v", len(recs), err)
	}

	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(plainRecord))
	zw.Close()
	badCRC := bytes.Clone(gz.Bytes())
	badCRC[len(badCRC)-6] ^= 0xff

	tests := []struct {
		name  string
		input string
		want  error
	}{
		{"not warc", "HTTP/1.1 200 OK\r\n\r\n", ErrMalformed},
		{"no content length", strings.Replace(plainRecord, "Content-Length: 5", "X: 5", 1), ErrMalformed},
		{"negative content length", strings.Replace(plainRecord, "Content-Length: 5", "Content-Length: -5", 1), ErrMalformed},
		{"content length too short", strings.Replace(plainRecord, "Content-Length: 5", "Content-Length: 4", 1), ErrMalformed},
		{"content length too long", strings.Replace(plainRecord, "Content-Length: 5", "Content-Length: 500", 1), ErrTruncated},
		{"field without colon", strings.Replace(plainRecord, "WARC-Type: resource", "WARC-Type resource", 1), ErrMalformed},
		{"leading continuation", strings.Replace(plainRecord, "WARC/1.0\r\n", "WARC/1.0\r\n x\r\n", 1), ErrMalformed},
		{"digest mismatch", strings.Replace(plainRecord, "Content-Length", "WARC-Block-Digest: "+sha1b32([]byte("other"))+"\r\nContent-Length", 1), ErrDigestMismatch},
		{"bad digest", strings.Replace(plainRecord, "Content-Length", "WARC-Block-Digest: sha1:!!\r\nContent-Length", 1), ErrMalformed},
		{"huge line", "WARC/1.0\r\nX: " + strings.Repeat("a", 70000) + "\r\n", ErrMalformed},
		{"header cut", plainRecord[:40], ErrTruncated},
		{"version line cut", "WARC/1", ErrTruncated},
		{"gzip crc", string(badCRC), ErrMalformed},
		{"gzip cut", string(gz.Bytes()[:gz.Len()-3]), ErrTruncated},
		{"garbage after gzip member", gz.String() + "garbage after the last member", ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := readAll(t, []byte(tt.input))
			if !errors.Is(err, tt.want) {
				t.Fatalf("err %v, want %v", err, tt.want)
			}
		})
	}
}

// Next skips what the caller did not read, checking it all the same.
func TestReaderNextSkipsUnreadBody(t *testing.T) {
	bad := strings.Replace(plainRecord, "Content-Length", "WARC-Block-Digest: "+sha1b32([]byte("other"))+"\r\nContent-Length", 1)
	r, err := NewReader(strings.NewReader(plainRecord + plainRecord + bad + plainRecord))
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := r.Next(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.Next(); !errors.Is(err, ErrDigestMismatch) {
		t.Fatalf("Next after an unread bad record = %v", err)
	}
	if _, err := r.Next(); !errors.Is(err, ErrDigestMismatch) {
		t.Fatalf("errors are not sticky: %v", err)
	}
}

func FuzzWARCReader(f *testing.F) {
	dir := f.TempDir()
	writeExchanges(f, dir, Options{}, testExchange(1), testExchange(2))
	data, _ := os.ReadFile(filepath.Join(dir, "crawl-00000.warc.gz"))
	f.Add(data)
	f.Add(data[:len(data)-20])
	var plain bytes.Buffer
	z, _ := gzip.NewReader(bytes.NewReader(data))
	io.Copy(&plain, z)
	f.Add(plain.Bytes()[:2000])
	f.Add([]byte(plainRecord))
	f.Add([]byte("WARC/1.1\r\nContent-Length: 99999999999\r\n\r\nx"))
	f.Add([]byte("WARC/1.1\r\n\tfold\r\n\r\n"))
	f.Add([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff})
	f.Fuzz(func(t *testing.T, in []byte) {
		r, err := NewReader(bytes.NewReader(in))
		if err != nil {
			return
		}
		for range 1000 {
			rec, err := r.Next()
			if err != nil {
				return
			}
			if rec.ContentLength < 0 {
				t.Fatalf("negative Content-Length %d", rec.ContentLength)
			}
			n, err := io.Copy(io.Discard, rec.Body)
			if err == nil && n != rec.ContentLength {
				t.Fatalf("body %d bytes without error, Content-Length %d", n, rec.ContentLength)
			}
		}
	})
}

func BenchmarkWriteExchange(b *testing.B) {
	w, err := NewWriter(b.TempDir(), "bench", Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	ex := testExchange(1)
	ex.Body = bytes.Repeat([]byte("<p>some fairly ordinary html text 0123456789</p>\n"), 16<<10/50)
	b.SetBytes(int64(len(ex.Body)))
	b.ReportAllocs()
	for b.Loop() {
		if err := w.WriteExchange(context.Background(), ex); err != nil {
			b.Fatal(err)
		}
	}
}
