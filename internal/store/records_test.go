package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

func testRecord(i int) Record {
	return Record{
		URL:         testURL(i),
		FinalURL:    testURL(i) + "/final",
		Status:      200,
		Outcome:     "200",
		Depth:       i % 3,
		FetchedAt:   t0.Add(time.Duration(i) * time.Millisecond),
		ContentType: "text/html",
		Charset:     "gbk",
		Title:       fmt.Sprintf("页面 <%d> & \"quoted\"\nline", i),
		OutLinks:    []string{testURL(i + 1), testURL(i + 2)},
		Size:        1000 + i,
		PageNo:      int64(i),
		BodyCRC:     BodyChecksum([]byte(testURL(i))),
		DuplicateOf: "",
		Fingerprint: "9e3779b97f4a7c15",
		SimHash:     "f0e1d2c3b4a59687",
		Canonical:   testURL(i) + "/canonical",
		IP:          "192.0.2.1",
		DurationMS:  int64(i),
		Error:       "",
	}
}

func openRec(t testing.TB, dir string, opt Options) *Records {
	t.Helper()
	r, err := OpenRecords(dir, opt)
	if err != nil {
		t.Fatalf("OpenRecords: %v", err)
	}
	return r
}

func collect(t testing.TB, r *Records) ([]Record, int) {
	t.Helper()
	var out []Record
	skipped, err := r.Iterate(func(rec Record) error {
		out = append(out, rec)
		return nil
	})
	if err != nil {
		t.Fatalf("Iterate: %v", err)
	}
	return out, skipped
}

func TestRecordJSONFieldNames(t *testing.T) {
	rec := Record{URL: "http://a/", FinalURL: "http://a/b", Status: 301, Outcome: "301", Depth: 2,
		FetchedAt: t0, ContentType: "text/html", Charset: "utf-8", Title: "<T>", OutLinks: []string{"http://c/"},
		Size: 10, PageNo: -1, DuplicateOf: "http://d/", Near: true, IP: "::1", DurationMS: 7, Error: "boom"}
	dir := t.TempDir()
	r := openRec(t, dir, Options{})
	if err := r.Append(rec); err != nil {
		t.Fatal(err)
	}
	r.Close()
	got, _ := os.ReadFile(filepath.Join(dir, RecordsFileName))
	const want = `{"url":"http://a/","final_url":"http://a/b","status":301,"outcome":"301","depth":2,` +
		`"fetched_at":"2012-03-30T08:31:34Z","content_type":"text/html","charset":"utf-8","title":"<T>",` +
		`"out_links":["http://c/"],"size":10,"page_no":-1,"duplicate_of":"http://d/","near":true,"ip":"::1","duration_ms":7,"error":"boom"}` + "\n"
	if string(got) != want {
		t.Fatalf("records.jsonl:\n got %s\nwant %s", got, want)
	}
	// page_no 0 is a real page number and must not be dropped.
	b, _ := json.Marshal(Record{PageNo: 0})
	if !bytes.Contains(b, []byte(`"page_no":0`)) {
		t.Fatalf("page_no 0 omitted: %s", b)
	}
}

func TestRecordsRoundTrip(t *testing.T) {
	dir := t.TempDir()
	r := openRec(t, dir, Options{})
	var want []Record
	for i := range 50 {
		rec := testRecord(i)
		if i%10 == 0 {
			rec.PageNo, rec.Error, rec.Status, rec.OutLinks = -1, "timeout", 0, nil
		}
		want = append(want, rec)
		if err := r.Append(rec); err != nil {
			t.Fatal(err)
		}
	}
	got, skipped := collect(t, r)
	if skipped != 0 || !reflect.DeepEqual(got, want) {
		t.Fatalf("before reopen: skipped %d, equal %v", skipped, reflect.DeepEqual(got, want))
	}
	if err := r.Sync(); err != nil {
		t.Fatal(err)
	}
	r.Close()
	r = openRec(t, dir, Options{})
	defer r.Close()
	got, skipped = collect(t, r)
	if skipped != 0 || !reflect.DeepEqual(got, want) {
		t.Fatalf("after reopen: skipped %d, %d records", skipped, len(got))
	}
	stop := errors.New("stop")
	n := 0
	if _, err := r.Iterate(func(Record) error { n++; return stop }); err != stop || n != 1 {
		t.Fatalf("Iterate returned %v after %d calls, want fn's error after 1", err, n)
	}
}

func TestRecordsTornTail(t *testing.T) {
	tmpl := t.TempDir()
	r := openRec(t, tmpl, Options{})
	for i := range 3 {
		r.Append(testRecord(i))
	}
	r.Close()
	data, _ := os.ReadFile(filepath.Join(tmpl, RecordsFileName))
	lineStart := bytes.LastIndexByte(data[:len(data)-1], '\n') + 1
	for off := lineStart; off < len(data); off++ {
		dir := copyDir(t, tmpl)
		truncateFile(t, filepath.Join(dir, RecordsFileName), int64(off))
		var log bytes.Buffer
		r, err := OpenRecords(dir, Options{Logger: slog.New(slog.NewTextHandler(&log, nil))})
		if err != nil {
			t.Fatalf("cut at %d: open: %v", off, err)
		}
		got, skipped := collect(t, r)
		if len(got) != 2 || skipped != 0 || !reflect.DeepEqual(got[1], testRecord(1)) {
			t.Fatalf("cut at %d: %d records, %d skipped", off, len(got), skipped)
		}
		if (off > lineStart) != strings.Contains(log.String(), "cut partial last line") {
			t.Fatalf("cut at %d: log %q", off, log.String())
		}
		if err := r.Append(testRecord(2)); err != nil {
			t.Fatal(err)
		}
		r.Close()
		r = openRec(t, dir, Options{})
		got, skipped = collect(t, r)
		r.Close()
		if len(got) != 3 || skipped != 0 || !reflect.DeepEqual(got[2], testRecord(2)) {
			t.Fatalf("cut at %d: after append %d records, %d skipped", off, len(got), skipped)
		}
	}
}

func TestRecordsSkipCorruptLines(t *testing.T) {
	tests := []struct {
		name        string
		bad         []string
		wantLogged  int
		wantSummary bool
	}{
		{"a few", []string{"{garbage\n", "null\n", "\n", "\x00\x00\x00\n", `{"status":"not a number"}` + "\n"}, 5, false},
		{"many", strings.Split(strings.Repeat("]\n", 25), "\n")[:25], 10, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			var content bytes.Buffer
			enc := json.NewEncoder(&content)
			for i, b := range tt.bad {
				enc.Encode(testRecord(i))
				b = strings.TrimSuffix(b, "\n") + "\n"
				content.WriteString(b)
			}
			enc.Encode(testRecord(len(tt.bad)))
			os.WriteFile(filepath.Join(dir, RecordsFileName), content.Bytes(), 0o644)
			var log bytes.Buffer
			r := openRec(t, dir, Options{Logger: slog.New(slog.NewTextHandler(&log, nil))})
			defer r.Close()
			got, skipped := collect(t, r)
			if skipped != len(tt.bad) || len(got) != len(tt.bad)+1 {
				t.Fatalf("got %d records, skipped %d; want %d and %d", len(got), skipped, len(tt.bad)+1, len(tt.bad))
			}
			for i, rec := range got {
				if !reflect.DeepEqual(rec, testRecord(i)) {
					t.Fatalf("record %d = %+v", i, rec)
				}
			}
			if n := strings.Count(log.String(), "skipped corrupt line\""); n != tt.wantLogged {
				t.Fatalf("logged %d corrupt lines one by one, want %d:\n%s", n, tt.wantLogged, log.String())
			}
			if strings.Contains(log.String(), "skipped corrupt lines") != tt.wantSummary {
				t.Fatalf("summary logged = %v, want %v", !tt.wantSummary, tt.wantSummary)
			}
			if !strings.Contains(log.String(), "line=2 ") {
				t.Fatalf("log does not name line 2: %s", log.String())
			}
		})
	}
}

func TestRecordsLongLine(t *testing.T) {
	dir := t.TempDir()
	r := openRec(t, dir, Options{})
	defer r.Close()
	rec := testRecord(1)
	for i := range 40000 { // about 2 MiB, more than the read buffer
		rec.OutLinks = append(rec.OutLinks, fmt.Sprintf("http://long.example/%d/path", i))
	}
	r.Append(testRecord(0))
	r.Append(rec)
	r.Append(testRecord(2))
	got, skipped := collect(t, r)
	if skipped != 0 || len(got) != 3 || !reflect.DeepEqual(got[1], rec) {
		t.Fatalf("got %d records, skipped %d", len(got), skipped)
	}
}

func TestRecordsConcurrent(t *testing.T) {
	dir := t.TempDir()
	r := openRec(t, dir, Options{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for k := range 100 {
				if err := r.Append(testRecord(w*100 + k)); err != nil {
					t.Errorf("Append: %v", err)
				}
			}
		})
	}
	wg.Go(func() {
		for range 5 {
			if _, err := r.Iterate(func(Record) error { return nil }); err != nil {
				t.Errorf("Iterate: %v", err)
			}
			r.Sync()
		}
	})
	wg.Wait()
	r.Close()
	r = openRec(t, dir, Options{})
	defer r.Close()
	got, skipped := collect(t, r)
	seen := map[string]bool{}
	for _, rec := range got {
		seen[rec.URL] = true
	}
	if skipped != 0 || len(got) != 400 || len(seen) != 400 {
		t.Fatalf("%d records, %d distinct, %d skipped", len(got), len(seen), skipped)
	}
}

func TestRecordsClosed(t *testing.T) {
	r := openRec(t, t.TempDir(), Options{})
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
	if err := r.Append(Record{}); !errors.Is(err, ErrClosed) {
		t.Errorf("Append = %v", err)
	}
	if _, err := r.Iterate(func(Record) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Errorf("Iterate = %v", err)
	}
	if err := r.Sync(); !errors.Is(err, ErrClosed) {
		t.Errorf("Sync = %v", err)
	}
}

// FuzzRecordsFile opens arbitrary file contents: opening never fails,
// iteration never fails, and every complete valid line is returned.
func FuzzRecordsFile(f *testing.F) {
	good, _ := json.Marshal(testRecord(1))
	f.Add(append(good, '\n'))
	f.Add([]byte("{garbage\n" + string(good) + "\n{\"url\":"))
	f.Add([]byte("null\n\n\n"))
	f.Add([]byte(`{"url":"x","page_no":-1}` + "\n" + `[1,2]` + "\n"))
	f.Fuzz(func(t *testing.T, content []byte) {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, RecordsFileName), content, 0o644)
		r, err := OpenRecords(dir, Options{})
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		defer r.Close()
		complete := content[:bytes.LastIndexByte(content, '\n')+1]
		lines := bytes.Count(complete, []byte{'\n'})
		got, skipped := collect(t, r)
		if len(got)+skipped != lines {
			t.Fatalf("%d records + %d skipped, file has %d complete lines", len(got), skipped, lines)
		}
		if err := r.Append(testRecord(2)); err != nil {
			t.Fatal(err)
		}
		got2, _ := collect(t, r)
		if len(got2) != len(got)+1 || !reflect.DeepEqual(got2[len(got)], testRecord(2)) {
			t.Fatalf("appended record not read back")
		}
	})
}

func BenchmarkRecordsAppend(b *testing.B) {
	r := openRec(b, b.TempDir(), Options{})
	defer r.Close()
	rec := testRecord(1)
	line, _ := json.Marshal(rec)
	b.SetBytes(int64(len(line) + 1))
	b.ReportAllocs()
	for b.Loop() {
		if err := r.Append(rec); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRecordsIterate(b *testing.B) {
	dir := b.TempDir()
	r := openRec(b, dir, Options{})
	defer r.Close()
	for i := range 10000 {
		r.Append(testRecord(i))
	}
	info, _ := os.Stat(filepath.Join(dir, RecordsFileName))
	b.SetBytes(info.Size())
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Iterate(func(Record) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}

func TestDecodeRecordLineMatchesEncodingJSON(t *testing.T) {
	full, _ := json.Marshal(testRecord(3))
	tests := []struct {
		name string
		line string
		fast bool // the fast path must take it
	}{
		{"as written", string(full) + "\n", true},
		{"empty object", "{}\n", true},
		{"white space", " { \"url\" : \"a\" , \"status\" : -0 , \"out_links\" : [ ] } \r\n", true},
		{"escapes", `{"title":"a\"b\\c\/d\b\f\n\r\t\u00e9\ud83d\ude00\u0000"}` + "\n", true},
		{"escaped key", `{"u\u0072l":"x"}` + "\n", true},
		{"duplicate key", `{"url":"a","url":"b","out_links":["x","y"],"out_links":["z"]}` + "\n", true},
		{"utf-8", `{"title":"页面 ünïcode"}` + "\n", true},
		{"upper-case key", `{"URL":"x"}` + "\n", false},
		{"unknown key", `{"url":"x","extra":1}` + "\n", false},
		{"null value", `{"url":null}` + "\n", false},
		{"null links", `{"out_links":null}` + "\n", false},
		{"lone surrogate", `{"title":"\ud83d"}` + "\n", false},
		{"invalid utf-8", "{\"title\":\"\xff\"}\n", false},
		{"fraction", `{"status":2.0}` + "\n", false},
		{"exponent", `{"status":2e2}` + "\n", false},
		{"big number", `{"page_no":9223372036854775807}` + "\n", false},
		{"leading zero", `{"status":02}` + "\n", false},
		{"string number", `{"status":"200"}` + "\n", false},
		{"bad time", `{"fetched_at":"yesterday"}` + "\n", false},
		{"trailing garbage", `{"url":"x"}x` + "\n", false},
		{"unterminated", `{"url":"x"` + "\n", false},
		{"control char", "{\"url\":\"a\tb\"}\n", false},
		{"null", "null\n", false},
		{"duplicate_of and near", `{"url":"x","duplicate_of":"http://o/","near":true}` + "\n", true},
		{"near false", `{"near" : false}` + "\n", true},
		{"near null", `{"near":null}` + "\n", false},
		{"near as a number", `{"near":1}` + "\n", false},
		{"near as a string", `{"near":"true"}` + "\n", false},
		{"near truncated", `{"near":tru}` + "\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var fast Record
			if got := fastDecodeRecord([]byte(tt.line), &fast); got != tt.fast {
				t.Fatalf("fast path took it = %v, want %v", got, tt.fast)
			}
			checkDecodeEquivalence(t, []byte(tt.line))
		})
	}
}

// checkDecodeEquivalence asserts decodeRecordLine agrees with json.Unmarshal.
func checkDecodeEquivalence(t *testing.T, line []byte) {
	t.Helper()
	got, err := decodeRecordLine(line)
	var want Record
	werr := json.Unmarshal(line, &want)
	if werr == nil && isJSONNull(line) {
		werr = errors.New("null")
	}
	if (err == nil) != (werr == nil) {
		t.Fatalf("decode %q: err %v, encoding/json err %v", line, err, werr)
	}
	if err == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("decode %q:\n got %+v\nwant %+v", line, got, want)
	}
}

// FuzzDecodeRecord is a differential fuzz target: the fast record decoder
// must agree with encoding/json on every input.
func FuzzDecodeRecord(f *testing.F) {
	full, _ := json.Marshal(testRecord(3))
	f.Add(append(full, '\n'))
	f.Add([]byte(`{"title":"a\"b\\c\/d\b\f\n\r\t\u00e9\ud83d\ude00\u0000","status":-0,"out_links":[]}`))
	f.Add([]byte(`{"url":"a","url":"b","out_links":["x","y"],"out_links":["z"]}`))
	f.Add([]byte(`{"fetched_at":"2012-03-30T08:31:34.5+08:00","page_no":-1}`))
	f.Add([]byte(`{"URL":null,"status":2e2}`))
	f.Add([]byte(`{"duplicate_of":"http://o/","near":true,"near":false}`))
	f.Add([]byte(`{"near":null,"duplicate_of":"\u00e9"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		checkDecodeEquivalence(t, line)
	})
}

// TestValidOutcome: the outcome check fsck applies to every record line.
func TestValidOutcome(t *testing.T) {
	for _, c := range []struct {
		outcome string
		want    bool
	}{
		{"200", true},
		{"304", true},
		{"robots", true},
		{"too-many-redirects", true},
		{"sitemap", true},
		{"h00", false}, // "200" with its first byte xor 0x5a
		{"2j0", false},
		{"099", false},
		{"600", false},
		{"2000", false},
		{"+20", false},
		{"Robots", false},
		{"rob(ts", false},
	} {
		if got := validOutcome(c.outcome); got != c.want {
			t.Errorf("validOutcome(%q) = %v, want %v", c.outcome, got, c.want)
		}
	}
}
