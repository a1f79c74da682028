package store

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDataDirNames: every method names the path the packages spelled out
// before DataDir (existing data directories must keep working), for an
// absolute, a relative and an empty directory.
func TestDataDirNames(t *testing.T) {
	for _, dir := range []string{"/srv/crawl", "spider-data", "a/b/", ""} {
		d := DataDir(dir)
		tests := []struct {
			name, got, want string
		}{
			{"Path", d.Path(), dir},
			{"Records", d.Records(), filepath.Join(dir, "records.jsonl")},
			{"Pages", d.Pages(), filepath.Join(dir, "pages")},
			{"State", d.State(), filepath.Join(dir, "state")},
			{"Index", d.Index(), filepath.Join(dir, "index")},
			{"WARC", d.WARC(), filepath.Join(dir, "warc")},
			{"Graph", d.Graph(), filepath.Join(dir, "graph")},
			{"Rank", d.Rank(), filepath.Join(dir, "rank")},
			{"Layered", d.Layered(), filepath.Join(dir, "layered")},
			{"Schedule", d.Schedule(), filepath.Join(dir, "schedule")},
			{"Topics", d.Topics(), filepath.Join(dir, "topics")},
			{"Spill", d.Spill(), filepath.Join(dir, "spill")},
			{"Lock", d.Lock(), filepath.Join(dir, "LOCK")},
			{"Join", d.Join("graph/pages.csr"), filepath.Join(dir, "graph/pages.csr")},
			{"Join2", d.Join("topics", "tcb"), filepath.Join(dir, "topics", "tcb")},
		}
		for _, tt := range tests {
			if tt.got != tt.want {
				t.Errorf("DataDir(%q).%s() = %q, want %q", dir, tt.name, tt.got, tt.want)
			}
		}
	}
}

// tailLine is one line a RecordsTail handed out.
type tailLine struct {
	line string
	end  int64
}

// readTail runs one Read and collects what it handed out.
func readTail(t *testing.T, tail *RecordsTail, limit int64) ([]tailLine, error) {
	t.Helper()
	var got []tailLine
	err := tail.Read(limit, func(line []byte, end int64) bool {
		got = append(got, tailLine{string(line), end})
		return true
	})
	return got, err
}

// TestRecordsTail: the tail hands out complete lines only (a torn last
// line waits for its newline), from any line's end, up to a limit, and
// reports a missing or shrunk file as its contract says.
func TestRecordsTail(t *testing.T) {
	long := strings.Repeat("x", 3<<20) // longer than the 1 MiB read buffer
	tests := []struct {
		name    string
		content string // records.jsonl; "-" for no file
		from    int64
		limit   int64
		want    []tailLine
		wantOff int64
		wantErr error
	}{
		{name: "no file", content: "-", limit: -1, wantErr: fs.ErrNotExist},
		{name: "empty", content: "", limit: -1},
		{name: "lines", content: "a\nbb\n", limit: -1, want: []tailLine{{"a", 2}, {"bb", 5}}, wantOff: 5},
		{name: "torn tail", content: "a\nbb\n{\"url\":\"h", limit: -1, want: []tailLine{{"a", 2}, {"bb", 5}}, wantOff: 5},
		{name: "only a torn line", content: `{"url":`, limit: -1},
		{name: "blank and bad lines as they are", content: "\n{x\n", limit: -1, want: []tailLine{{"", 1}, {"{x", 4}}, wantOff: 4},
		{name: "from a line's end", content: "a\nbb\nccc\n", from: 2, limit: -1, want: []tailLine{{"bb", 5}, {"ccc", 9}}, wantOff: 9},
		{name: "from the end", content: "a\nbb\n", from: 5, limit: -1, wantOff: 5},
		{name: "limit at a line's end", content: "a\nbb\nccc\n", limit: 5, want: []tailLine{{"a", 2}, {"bb", 5}}, wantOff: 5},
		{name: "limit inside a line", content: "a\nbb\nccc\n", limit: 4, want: []tailLine{{"a", 2}}, wantOff: 2},
		{name: "limit below from", content: "a\nbb\n", from: 2, limit: 1, wantOff: 2},
		{name: "limit past the end", content: "a\n", limit: 100, want: []tailLine{{"a", 2}}, wantOff: 2},
		{name: "long line", content: "a\n" + long + "\nb\n", limit: -1, want: []tailLine{{"a", 2}, {long, int64(3 + len(long))}, {"b", int64(5 + len(long))}}, wantOff: int64(5 + len(long))},
		{name: "shorter than from", content: "a\n", from: 5, limit: -1, wantOff: 5, wantErr: ErrRecordsShrank},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if tt.content != "-" {
				must(t, os.WriteFile(filepath.Join(dir, RecordsFileName), []byte(tt.content), FileMode))
			}
			before := dirDigest(t, dir)
			tail := NewRecordsTail(dir, tt.from)
			got, err := readTail(t, tail, tt.limit)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Read = %v, want an error wrapping %v", err, tt.wantErr)
				}
			} else if err != nil {
				t.Fatalf("Read = %v", err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("Read handed out %d lines, want %d", len(got), len(tt.want))
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("line %d = %.20q end %d, want %.20q end %d", i, got[i].line, got[i].end, tt.want[i].line, tt.want[i].end)
				}
			}
			if tail.Offset() != tt.wantOff {
				t.Errorf("Offset = %d, want %d", tail.Offset(), tt.wantOff)
			}
			sameDigest(t, "Read", before, dirDigest(t, dir))
		})
	}
}

// TestRecordsTailLive: a tail follows a crawl appending through Records,
// reading each record once, a half-written line only once its newline is
// there; it stops where fn says; a file that shrinks (a new crawl in the
// directory) is ErrRecordsShrank until the reader Resets.
func TestRecordsTailLive(t *testing.T) {
	dir := t.TempDir()
	r := openRec(t, dir, Options{})
	tail := NewRecordsTail(dir, 0)
	if got, err := readTail(t, tail, -1); err != nil || len(got) != 0 {
		t.Fatalf("Read of an empty file = %d lines, %v", len(got), err)
	}
	var want []string
	for round := range 3 {
		for i := range 4 {
			rec := testRecord(round*4 + i)
			must(t, r.Append(rec))
			want = append(want, rec.URL)
		}
		got, err := readTail(t, tail, -1)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 4 {
			t.Fatalf("round %d: %d lines, want the 4 appended", round, len(got))
		}
		for i, l := range got {
			rec, err := decodeRecordLine([]byte(l.line))
			if err != nil || rec.URL != want[round*4+i] {
				t.Errorf("round %d line %d = %v, %v; want %s", round, i, rec.URL, err, want[round*4+i])
			}
		}
		if tail.Offset() != r.Size() {
			t.Errorf("round %d: Offset %d, records end at %d", round, tail.Offset(), r.Size())
		}
	}
	must(t, r.Close())

	// A record being written: half a line, then the rest.
	path := filepath.Join(dir, RecordsFileName)
	line := `{"url":"http://half.example/","status":200,"outcome":"200","depth":0,"fetched_at":"2024-01-02T03:04:05Z","size":0,"page_no":-1,"duration_ms":1}` + "\n"
	appendFile(t, path, []byte(line[:20]))
	if got, err := readTail(t, tail, -1); err != nil || len(got) != 0 {
		t.Fatalf("Read of a half-written line = %d lines, %v; want none", len(got), err)
	}
	appendFile(t, path, []byte(line[20:]))
	got, err := readTail(t, tail, -1)
	if err != nil || len(got) != 1 || got[0].line+"\n" != line {
		t.Fatalf("Read once the line is whole = %v, %v; want it", got, err)
	}

	// fn stops the Read: the next one goes on after the last line handed out.
	appendFile(t, path, []byte("x\ny\n"))
	off := tail.Offset()
	must(t, tail.Read(-1, func(line []byte, end int64) bool { return false }))
	if tail.Offset() != off+2 {
		t.Errorf("Offset after a stopped Read = %d, want %d", tail.Offset(), off+2)
	}
	if got, _ := readTail(t, tail, -1); len(got) != 1 || got[0].line != "y" {
		t.Errorf("Read after a stopped Read = %v, want y", got)
	}

	// A new crawl in the directory: a shorter file.
	must(t, os.WriteFile(path, []byte("new\n"), FileMode))
	_, err = readTail(t, tail, -1)
	var se *ShrankError
	if !errors.As(err, &se) || !errors.Is(err, ErrRecordsShrank) || se.Size != 4 || se.Path != path {
		t.Fatalf("Read of a shrunk file = %v, want a *ShrankError of size 4 naming %s", err, path)
	}
	tail.Reset()
	if got, err := readTail(t, tail, -1); err != nil || len(got) != 1 || got[0].line != "new" {
		t.Errorf("Read after Reset = %v, %v; want the new file's line", got, err)
	}
}

// TestPageReader: the reader reads the complete pages of a crawl caught
// mid-append without changing a byte, checks bodies against records, and
// is empty (reads fail with ErrNotFound) where no pages were stored.
func TestPageReader(t *testing.T) {
	dir, pages, _ := liveStore(t)
	before := dirDigest(t, dir)
	pr, err := OpenPageReader(DataDir(dir).Pages())
	if err != nil {
		t.Fatal(err)
	}
	if pr.Count() != int64(pages) {
		t.Errorf("Count = %d, want %d (the torn page left out)", pr.Count(), pages)
	}
	tests := []struct {
		name    string
		rec     Record
		want    []byte
		wantErr error
	}{
		{"its page", Record{URL: testURL(1), FinalURL: testURL(1), PageNo: 1}, testBody(1, 40), nil},
		{"checksum", Record{URL: testURL(2), PageNo: 2, BodyCRC: BodyChecksum(testBody(2, 40))}, testBody(2, 40), nil},
		{"bad checksum", Record{URL: testURL(2), PageNo: 2, BodyCRC: "00000000"}, nil, ErrMismatch},
		{"another URL's page", Record{URL: testURL(3), PageNo: 1}, nil, ErrMismatch},
		{"no page", Record{URL: testURL(3), PageNo: -1}, nil, ErrNotFound},
		{"the torn page", Record{URL: "http://h5.example/p/5", PageNo: 5}, nil, ErrNotFound},
	}
	for _, tt := range tests {
		body, err := pr.ReadRecord(tt.rec)
		switch {
		case tt.wantErr != nil && !errors.Is(err, tt.wantErr):
			t.Errorf("%s: ReadRecord = %v, want %v", tt.name, err, tt.wantErr)
		case tt.wantErr == nil && (err != nil || !bytes.Equal(body, tt.want)):
			t.Errorf("%s: ReadRecord = %.20q, %v; want its body", tt.name, body, err)
		}
	}
	if body, err := pr.Read(0); err != nil || !bytes.Equal(body, testBody(0, 40)) {
		t.Errorf("Read(0) = %.20q, %v", body, err)
	}
	if _, err := pr.Read(int64(pages)); !errors.Is(err, ErrNotFound) {
		t.Errorf("Read(%d) = %v, want ErrNotFound", pages, err)
	}
	must(t, pr.Close())
	sameDigest(t, "PageReader", before, dirDigest(t, dir))

	for _, empty := range []string{filepath.Join(t.TempDir(), "pages"), t.TempDir()} {
		before := dirDigest(t, filepath.Dir(empty))
		pr, err := OpenPageReader(empty)
		if err != nil {
			t.Fatalf("OpenPageReader(%s) = %v, want an empty reader", empty, err)
		}
		if pr.Count() != 0 {
			t.Errorf("empty reader: Count = %d", pr.Count())
		}
		if _, err := pr.Read(0); !errors.Is(err, ErrNotFound) {
			t.Errorf("empty reader: Read = %v, want ErrNotFound", err)
		}
		if _, err := pr.ReadRecord(Record{URL: testURL(0), PageNo: 0}); !errors.Is(err, ErrNotFound) {
			t.Errorf("empty reader: ReadRecord = %v, want ErrNotFound", err)
		}
		must(t, pr.Close())
		sameDigest(t, "an empty PageReader", before, dirDigest(t, filepath.Dir(empty)))
	}
}
