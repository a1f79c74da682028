package store

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

// jsonLine is the line records.jsonl held before encodeRecordLine:
// encoding/json's, HTML characters not escaped.
func jsonLine(rec Record) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	err := enc.Encode(rec)
	return buf.Bytes(), err
}

// checkEncodeEquivalence fails unless encodeRecordLine gives encoding/json's
// bytes (or both fail), and the line decodes back to rec.
func checkEncodeEquivalence(t *testing.T, rec Record) {
	t.Helper()
	want, werr := jsonLine(rec)
	got, err := encodeRecordLine([]byte("prefix"), &rec)
	if (err == nil) != (werr == nil) || err != nil && err.Error() != werr.Error() {
		t.Fatalf("record %+v: error %v; encoding/json %v", rec, err, werr)
	}
	if err != nil {
		return
	}
	if !bytes.HasPrefix(got, []byte("prefix")) {
		t.Fatalf("record %+v: dst not appended to: %q", rec, got)
	}
	if got = got[len("prefix"):]; !bytes.Equal(got, want) {
		t.Fatalf("record %+v:\n got %s\nwant %s", rec, got, want)
	}
}

// TestEncodeRecordLineMatchesEncodingJSON is the golden test of the records
// encoder: for full and empty records, every escape, invalid UTF-8, U+2028,
// HTML characters, extreme numbers, time zones and times RFC 3339 cannot
// hold, the line is byte for byte encoding/json's (fails on any difference
// in field order, omitempty, escaping or number and time formats).
func TestEncodeRecordLineMatchesEncodingJSON(t *testing.T) {
	east := time.FixedZone("east", 5*3600+30*60)
	recs := []Record{
		{},
		testRecord(0),
		testRecord(7),
		{URL: "http://a/", PageNo: -1, OutLinks: []string{}, FetchedAt: time.Date(2026, 11, 25, 10, 0, 0, 123456789, time.UTC)},
		{URL: "http://a/\"q\"\\\b\f\n\r\t\x00\x01\x1f\x7f<>&'", Title: "\u2028\u2029 ü 页 😀 \xff\xfe \xc3( \xed\xa0\x80", Error: "e\u00a0"},
		{Status: math.MinInt, Depth: math.MaxInt, Size: -1, PageNo: math.MinInt64, DurationMS: math.MaxInt64, Attempts: -3},
		{FetchedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, east), Attempts: 2, IP: "::1"},
		{FetchedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},                       // year too large: error
		{FetchedAt: time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)},                          // negative year: error
		{FetchedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("x", 24*3600+60))}, // zone hour 24: error
		{OutLinks: []string{"", "a\"b", strings.Repeat("x", 5000)}},
		{URL: "http://a/copy", DuplicateOf: "http://a/", Near: true},
		{URL: "http://a/copy", DuplicateOf: "http://a/<&>"},
		{Near: true},
	}
	for _, rec := range recs {
		checkEncodeEquivalence(t, rec)
	}
}

// TestRecordsAppendLine: Append writes encodeRecordLine's line, and a
// reopened file reads the records back (the encoder and the decoder's fast
// path agree).
func TestRecordsAppendLine(t *testing.T) {
	dir := t.TempDir()
	r := openRec(t, dir, Options{})
	var want []Record
	for i := range 50 {
		rec := testRecord(i)
		rec.OutLinks = append(rec.OutLinks, strings.Repeat("l", i*100))
		if i%3 == 1 { // a copy: exact (even i) or near (odd i)
			rec.DuplicateOf, rec.Near = testURL(i-1), i%2 == 1
		}
		if err := r.Append(rec); err != nil {
			t.Fatal(err)
		}
		want = append(want, rec)
	}
	got, _ := collect(t, r)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d records read; want %d", len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Fatalf("record %d read back as %+v; want %+v", i, got[i], want[i])
		}
	}
}

// FuzzEncodeRecord is a differential fuzz target: encodeRecordLine must
// write encoding/json's bytes for any strings, numbers and times.
func FuzzEncodeRecord(f *testing.F) {
	f.Add("http://a/", "ti\"tle\u2028", "link\xff", int64(200), int64(-1), int64(1764064800), int64(999999999), 0)
	f.Add("", "", "", int64(0), int64(0), int64(-62135596801), int64(0), 3600)
	f.Add("\x00\x1f\x7f", "<&>", "", int64(math.MaxInt64), int64(math.MinInt64), int64(253402300800), int64(1), -86399)
	f.Fuzz(func(t *testing.T, u, title, link string, status, pageNo, sec, nsec int64, zone int) {
		rec := Record{
			URL: u, FinalURL: link, Status: int(status), Outcome: title, Depth: int(pageNo),
			FetchedAt: time.Unix(sec, nsec).In(time.FixedZone("z", zone%(48*3600))), ContentType: u, Charset: link, Title: title,
			Size: int(status), PageNo: pageNo, DuplicateOf: link, Near: zone%2 == 0, Fingerprint: title, SimHash: u, Canonical: link,
			BodyCRC: title, Attempts: int(nsec), IP: u, DurationMS: sec, Error: title,
		}
		if link != "" {
			rec.OutLinks = []string{link, title, u}
		}
		checkEncodeEquivalence(t, rec)
	})
}
