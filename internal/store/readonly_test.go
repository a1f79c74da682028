package store

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// dirDigest hashes every file under dir (names, sizes, modes and bytes), so
// a test can prove that an operation changed nothing.
func dirDigest(t testing.TB, dir string) map[string]string {
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
			out[rel] = "dir " + info.Mode().String()
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		out[rel] = fmt.Sprintf("%s %x", info.Mode(), sha256.Sum256(b))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameDigest(t testing.TB, what string, before, after map[string]string) {
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

// liveStore writes pages and records as a crawl does and then leaves the
// torn tail of a crawl caught mid-append: the next page's body without its
// index line, half of that index line, and half of a record line.
func liveStore(t *testing.T) (dir string, pages, recs int) {
	t.Helper()
	dir = t.TempDir()
	p := openPF(t, filepath.Join(dir, "pages"), Options{DataFileSize: 100})
	r := openRec(t, dir, Options{})
	for i := range 5 {
		no, err := p.Append(testURL(i), t0.Add(time.Duration(i)*time.Second), testBody(i, 40))
		if err != nil {
			t.Fatal(err)
		}
		rec := testRecord(i)
		rec.FinalURL, rec.PageNo = testURL(i), no
		if err := r.Append(rec); err != nil {
			t.Fatal(err)
		}
	}
	must(t, p.Close())
	must(t, r.Close())
	appendFile(t, filepath.Join(dir, "pages", DataFileName(2)), testBody(9, 30))
	appendFile(t, filepath.Join(dir, "pages", IndexFileName), []byte("5 30 24 25 http://h5.exa"))
	appendFile(t, filepath.Join(dir, RecordsFileName), []byte(`{"url":"http://h5.example/p/5","sta`))
	return dir, 5, 5
}

func appendFile(t testing.TB, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestReadOnlyLeavesTornTail: the read-only stores read every complete
// page and record of a crawl caught mid-append, change no byte of any file
// (the writable open would cut the tail: that is what destroyed the page a
// running crawl was appending), and refuse to write.
func TestReadOnlyLeavesTornTail(t *testing.T) {
	dir, nPages, nRecs := liveStore(t)
	before := dirDigest(t, dir)

	p, err := OpenPageFiles(filepath.Join(dir, "pages"), Options{ReadOnly: true, DataFileSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	if p.Count() != int64(nPages) {
		t.Errorf("read-only Count = %d, want %d complete pages", p.Count(), nPages)
	}
	for i := range nPages {
		checkPage(t, p, int64(i), testURL(i), testBody(i, 40))
	}
	n := 0
	must(t, p.Iterate(func(Page) error { n++; return nil }))
	if n != nPages {
		t.Errorf("Iterate visited %d pages, want %d", n, nPages)
	}
	if _, err := p.Append("http://x/", t0, []byte("x")); !errors.Is(err, ErrReadOnly) {
		t.Errorf("Append on a read-only store: %v, want ErrReadOnly", err)
	}
	if err := p.Sync(); !errors.Is(err, ErrReadOnly) {
		t.Errorf("Sync on a read-only store: %v, want ErrReadOnly", err)
	}
	if _, err := p.SkipTo(100); !errors.Is(err, ErrReadOnly) {
		t.Errorf("SkipTo on a read-only store: %v, want ErrReadOnly", err)
	}
	must(t, p.Close())

	r, err := OpenRecords(dir, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	got, skipped := collect(t, r)
	if len(got) != nRecs || skipped != 0 {
		t.Errorf("read-only records: %d read, %d skipped; want %d and 0 (the partial last line is not read)", len(got), skipped, nRecs)
	}
	if err := r.Append(testRecord(7)); !errors.Is(err, ErrReadOnly) {
		t.Errorf("Append on read-only records: %v, want ErrReadOnly", err)
	}
	must(t, r.Close())
	sameDigest(t, "read-only open", before, dirDigest(t, dir))

	// The writable open is the one that repairs.
	w := openPF(t, filepath.Join(dir, "pages"), Options{DataFileSize: 100})
	must(t, w.Close())
	if after := dirDigest(t, dir); after[filepath.Join("pages", IndexFileName)] == before[filepath.Join("pages", IndexFileName)] {
		t.Error("the writable open did not cut the torn index tail (the test's torn tail is not torn)")
	}
}

// TestReadOnlyCreatesNothing: a directory that holds no crawl is an error
// naming the path, and neither the directory nor any file is created.
func TestReadOnlyCreatesNothing(t *testing.T) {
	parent := t.TempDir()
	typo := filepath.Join(parent, "TYPO")
	if _, err := OpenPageFiles(filepath.Join(typo, "pages"), Options{ReadOnly: true}); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), typo) {
		t.Errorf("OpenPageFiles(ReadOnly) on a missing directory: %v, want fs.ErrNotExist naming %s", err, typo)
	}
	if _, err := OpenRecords(typo, Options{ReadOnly: true}); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), typo) {
		t.Errorf("OpenRecords(ReadOnly) on a missing directory: %v, want fs.ErrNotExist naming %s", err, typo)
	}
	empty := filepath.Join(parent, "empty")
	must(t, os.Mkdir(empty, 0o700))
	if _, err := OpenRecords(empty, Options{ReadOnly: true}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("OpenRecords(ReadOnly) without records.jsonl: %v, want fs.ErrNotExist", err)
	}
	if _, err := OpenPageFiles(empty, Options{ReadOnly: true}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("OpenPageFiles(ReadOnly) without PageIndex: %v, want fs.ErrNotExist", err)
	}
	entries, _ := os.ReadDir(parent)
	if len(entries) != 1 {
		t.Errorf("read-only opens created %d entries in %s, want only the test's own directory", len(entries)-1, parent)
	}
	if es, _ := os.ReadDir(empty); len(es) != 0 {
		t.Errorf("read-only opens created %d files in an empty directory", len(es))
	}
}

// TestReadOnlyOnReadOnlyDirectory: the read-only stores work on files and
// a directory the user cannot write (stats and export used to fail there).
func TestReadOnlyOnReadOnlyDirectory(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes anywhere: the permission cannot be tested")
	}
	dir, nPages, nRecs := liveStore(t)
	for _, p := range []string{filepath.Join(dir, "pages"), dir} {
		must(t, os.Chmod(p, 0o500))
	}
	t.Cleanup(func() {
		os.Chmod(dir, 0o700)
		os.Chmod(filepath.Join(dir, "pages"), 0o700)
	})
	p, err := OpenPageFiles(filepath.Join(dir, "pages"), Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.Count() != int64(nPages) {
		t.Errorf("Count = %d, want %d", p.Count(), nPages)
	}
	r, err := OpenRecords(dir, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got, _ := collect(t, r); len(got) != nRecs {
		t.Errorf("%d records, want %d", len(got), nRecs)
	}
}

// TestSkipToAndReadRecord: after pages were lost, SkipTo continues the
// numbering after the highest number issued, so a new page never takes an
// old record's number; ReadRecord refuses a page stored for another URL or
// a lost page's placeholder (ErrMismatch), and gives the right one.
func TestSkipToAndReadRecord(t *testing.T) {
	dir := t.TempDir()
	p := openPF(t, dir, Options{})
	var recs []Record
	for i := range 6 {
		no, err := p.Append(testURL(i), t0.Add(time.Duration(i)*time.Second), testBody(i, 50))
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, Record{URL: testURL(i), FinalURL: testURL(i), PageNo: no})
	}
	must(t, p.Close())
	// Lose the last three pages' bytes: the open cuts their index lines.
	truncateFile(t, filepath.Join(dir, DataFileName(0)), 3*50+10)
	p = openPF(t, dir, Options{})
	defer p.Close()
	if p.Count() != 3 {
		t.Fatalf("Count after the loss = %d, want 3", p.Count())
	}
	lost, err := p.SkipTo(6)
	if err != nil || lost != 3 {
		t.Fatalf("SkipTo(6) = %d, %v; want 3 placeholders", lost, err)
	}
	if again, err := p.SkipTo(4); again != 0 || err != nil {
		t.Errorf("SkipTo below Count = %d, %v; want nothing done", again, err)
	}
	no, err := p.Append("http://new.example/", t0, []byte("new body"))
	if err != nil || no != 6 {
		t.Fatalf("Append after SkipTo = %d, %v; want page 6", no, err)
	}
	tests := []struct {
		rec     Record
		wantErr error
	}{
		{recs[0], nil},
		{recs[2], nil},
		{recs[3], ErrMismatch}, // lost: a placeholder
		{recs[5], ErrMismatch},
		{Record{URL: "http://other.example/", PageNo: 1}, ErrMismatch},
		{Record{URL: "http://a/", FinalURL: "http://new.example/", PageNo: 6}, nil},
		{Record{URL: "http://new.example/", PageNo: -1}, ErrNotFound},
		{Record{URL: "http://new.example/", PageNo: 7}, ErrNotFound},
	}
	for _, tt := range tests {
		pg, err := p.ReadRecord(tt.rec)
		if tt.wantErr != nil {
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("ReadRecord(%s, page %d) = %q, %v; want %v", tt.rec.URL, tt.rec.PageNo, pg.URL, err, tt.wantErr)
			}
			continue
		}
		if err != nil || pg.URL != tt.rec.PageURL() {
			t.Errorf("ReadRecord(%s, page %d) = %q, %v; want its own page", tt.rec.URL, tt.rec.PageNo, pg.URL, err)
		}
	}
	// The placeholders survive a reopen, so numbering stays continued.
	must(t, p.Close())
	p2 := openPF(t, dir, Options{ReadOnly: true})
	defer p2.Close()
	if p2.Count() != 7 {
		t.Errorf("Count after reopen = %d, want 7", p2.Count())
	}
}

// TestLockDir: a second lock on the directory fails with ErrLocked and an
// error naming the holder's pid and command, changes nothing, and works
// once the first is released; Locked sees the lock without creating
// anything.
func TestLockDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if Locked(dir) {
		t.Fatal("Locked on a missing directory")
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Locked created %s", dir)
	}
	l, err := LockDir(dir, "spider crawl", 0)
	if err != nil {
		t.Fatal(err)
	}
	if !Locked(dir) {
		t.Error("Locked = false while the lock is held")
	}
	before := dirDigest(t, dir)
	start := time.Now()
	_, err = LockDir(dir, "spider export", 100*time.Millisecond)
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("second LockDir: %v, want ErrLocked", err)
	}
	for _, want := range []string{dir, "spider crawl", "pid " + strconv.Itoa(os.Getpid())} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("lock error %q does not name %q", err, want)
		}
	}
	if el := time.Since(start); el < 100*time.Millisecond {
		t.Errorf("second LockDir gave up after %v, before its wait of 100ms", el)
	}
	sameDigest(t, "a refused LockDir", before, dirDigest(t, dir))
	must(t, l.Unlock())
	must(t, l.Unlock()) // idempotent
	if Locked(dir) {
		t.Error("Locked = true after Unlock")
	}
	l2, err := LockDir(dir, "spider crawl", 0)
	if err != nil {
		t.Fatalf("LockDir after Unlock: %v", err)
	}
	must(t, l2.Unlock())
}

// TestFileModes: everything the stores create is private to the user:
// files 0600, directories 0700.
func TestFileModes(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no Unix modes")
	}
	dir := filepath.Join(t.TempDir(), "data")
	l, err := LockDir(dir, "test", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	p := openPF(t, filepath.Join(dir, "pages"), Options{DataFileSize: 10})
	for i := range 3 {
		if _, err := p.Append(testURL(i), t0, testBody(i, 8)); err != nil {
			t.Fatal(err)
		}
	}
	must(t, p.Close())
	r := openRec(t, dir, Options{})
	must(t, r.Append(testRecord(1)))
	must(t, r.Close())
	for path, mode := range dirDigest(t, dir) {
		want := "-rw-------"
		if strings.HasPrefix(mode, "dir") {
			want = "dir drwx------"
			if mode != want {
				t.Errorf("%s: %s, want %s", path, mode, want)
			}
			continue
		}
		if !strings.HasPrefix(mode, want) {
			t.Errorf("%s: mode %s, want %s", path, strings.Fields(mode)[0], want)
		}
	}
}

// TestReadOnlyOpensNoFileForWriting: every file descriptor the read-only
// stores hold on a crawl's files is open for reading only (checked in
// /proc/self/fdinfo, so that it holds even for root, whom a read-only
// directory does not stop).
func TestReadOnlyOpensNoFileForWriting(t *testing.T) {
	if _, err := os.Stat("/proc/self/fdinfo"); err != nil {
		t.Skip("no /proc/self/fdinfo")
	}
	dir, _, _ := liveStore(t)
	p, err := OpenPageFiles(filepath.Join(dir, "pages"), Options{ReadOnly: true, DataFileSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	r, err := OpenRecords(dir, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	held := 0
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err != nil || !strings.HasPrefix(target, real+string(filepath.Separator)) {
			continue
		}
		info, err := os.ReadFile(filepath.Join("/proc/self/fdinfo", fd.Name()))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(info), "\n") {
			v, ok := strings.CutPrefix(line, "flags:")
			if !ok {
				continue
			}
			flags, err := strconv.ParseUint(strings.TrimSpace(v), 8, 64)
			if err != nil {
				t.Fatalf("fdinfo flags %q: %v", v, err)
			}
			held++
			if flags&uint64(os.O_RDONLY|os.O_WRONLY|os.O_RDWR) != uint64(os.O_RDONLY) {
				t.Errorf("%s is open with flags %o, not read-only", target, flags)
			}
		}
	}
	if held < 2 {
		t.Fatalf("found %d descriptors on the store's files, want the index, a data file and the records", held)
	}
}

// TestReadRecordChecksum: a body damaged on disk fails its record's
// checksum (ErrMismatch, naming spider fsck); a record without a checksum
// (written before it existed) is read unchecked.
func TestReadRecordChecksum(t *testing.T) {
	dir := t.TempDir()
	p, err := OpenPageFiles(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	body := []byte("<html>the body as fetched</html>")
	no, err := p.Append("http://a.test/", time.Unix(1, 0), body)
	if err != nil {
		t.Fatal(err)
	}
	rec := Record{URL: "http://a.test/", PageNo: no, BodyCRC: BodyChecksum(body)}
	if pg, err := p.ReadRecord(rec); err != nil || string(pg.Body) != string(body) {
		t.Fatalf("intact page: %v", err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, DataFileName(0))
	b, err := os.ReadFile(data)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-3] ^= 0x10
	if err := os.WriteFile(data, b, 0o600); err != nil {
		t.Fatal(err)
	}
	p, err = OpenPageFiles(dir, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	_, err = p.ReadRecord(rec)
	if !errors.Is(err, ErrMismatch) || !strings.Contains(err.Error(), "spider fsck") {
		t.Fatalf("flipped body: %v, want ErrMismatch naming spider fsck", err)
	}
	rec.BodyCRC = ""
	if _, err := p.ReadRecord(rec); err != nil {
		t.Fatalf("record without a checksum: %v", err)
	}
}
