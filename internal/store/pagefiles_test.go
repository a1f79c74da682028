package store

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

var t0 = time.Date(2012, time.March, 30, 8, 31, 34, 0, time.UTC)

// testURL and testBody give page i a recognisable URL and body.
func testURL(i int) string { return fmt.Sprintf("http://h%d.example/p/%d", i%7, i) }

func testBody(i, size int) []byte {
	b := make([]byte, size)
	for k := range b {
		b[k] = byte('a' + (i+k)%26)
	}
	return b
}

func openPF(t testing.TB, dir string, opt Options) *PageFiles {
	t.Helper()
	p, err := OpenPageFiles(dir, opt)
	if err != nil {
		t.Fatalf("OpenPageFiles: %v", err)
	}
	return p
}

func checkPage(t testing.TB, p *PageFiles, no int64, url string, body []byte) {
	t.Helper()
	pg, err := p.Read(no)
	if err != nil {
		t.Fatalf("Read(%d): %v", no, err)
	}
	if pg.No != no || pg.URL != url || !bytes.Equal(pg.Body, body) || !pg.Crawled.Equal(t0.Add(time.Duration(no)*time.Second)) {
		t.Fatalf("Read(%d) = {%d %q %v %d bytes}, want {%d %q %v %d bytes}", no, pg.No, pg.URL, pg.Crawled, len(pg.Body),
			no, url, t0.Add(time.Duration(no)*time.Second), len(body))
	}
}

func TestPageFilesRoundTrip(t *testing.T) {
	sizes := []int{60, 60, 10, 200, 0, 1, 99, 100, 0, 37}
	tests := []struct {
		name      string
		cap       int64
		wantFiles int
	}{
		{"default cap", 0, 1},
		{"cap 100", 100, 6},   // [60] [60 10] [200 0] [1 99] [100 0] [37]
		{"cap 1 byte", 1, 8},  // every non-empty page in a file of its own
		{"cap 1000", 1000, 1}, // all in one
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			p := openPF(t, dir, Options{DataFileSize: tt.cap})
			for i, n := range sizes {
				no, err := p.Append(testURL(i), t0.Add(time.Duration(i)*time.Second), testBody(i, n))
				if err != nil || no != int64(i) {
					t.Fatalf("Append %d = %d, %v", i, no, err)
				}
			}
			check := func(p *PageFiles) {
				t.Helper()
				if p.Count() != int64(len(sizes)) {
					t.Fatalf("Count = %d, want %d", p.Count(), len(sizes))
				}
				for i, n := range sizes {
					checkPage(t, p, int64(i), testURL(i), testBody(i, n))
				}
				var seen int
				err := p.Iterate(func(pg Page) error {
					if pg.No != int64(seen) || pg.URL != testURL(seen) || !bytes.Equal(pg.Body, testBody(seen, sizes[seen])) {
						t.Fatalf("Iterate page %d = %d %q", seen, pg.No, pg.URL)
					}
					seen++
					return nil
				})
				if err != nil || seen != len(sizes) {
					t.Fatalf("Iterate saw %d pages, err %v", seen, err)
				}
			}
			check(p)
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
			var log bytes.Buffer
			p = openPF(t, dir, Options{DataFileSize: tt.cap, Logger: slog.New(slog.NewTextHandler(&log, nil))})
			defer p.Close()
			check(p)
			if log.Len() > 0 {
				t.Fatalf("clean reopen logged %s", log.String())
			}
			for k := range tt.wantFiles {
				if _, err := os.Stat(filepath.Join(dir, DataFileName(k))); err != nil {
					t.Fatalf("data file %d: %v", k, err)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, DataFileName(tt.wantFiles))); err == nil {
				t.Fatalf("more than %d data files", tt.wantFiles)
			}
		})
	}
}

// The files hold exactly what SPEC §3 says: bodies back to back and one
// document-format line per page.
func TestPageFilesOnDiskFormat(t *testing.T) {
	dir := t.TempDir()
	p := openPF(t, dir, Options{DataFileSize: 10})
	for i, body := range []string{"hello", "world", "0123456789ab"} {
		if _, err := p.Append(fmt.Sprintf("http://x/%d", i), t0.Add(time.Duration(i)*time.Second), []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		IndexFileName: "0 5 11 25 http://x/0 Fri Mar 30 08:31:34 2012\n" +
			"1 5 11 25 http://x/1 Fri Mar 30 08:31:35 2012\n" +
			"2 12 11 25 http://x/2 Fri Mar 30 08:31:36 2012\n",
		"PageData000000": "helloworld",
		"PageData000001": "0123456789ab",
	}
	for name, w := range want {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || string(got) != w {
			t.Fatalf("%s = %q, %v; want %q", name, got, err, w)
		}
	}
}

func TestPageFilesReopenWithOtherCap(t *testing.T) {
	dir := t.TempDir()
	p := openPF(t, dir, Options{DataFileSize: 50})
	for i := range 6 {
		if _, err := p.Append(testURL(i), t0.Add(time.Duration(i)*time.Second), testBody(i, 30)); err != nil {
			t.Fatal(err)
		}
	}
	p.Close()
	p = openPF(t, dir, Options{DataFileSize: 1000})
	for i := 6; i < 12; i++ {
		if _, err := p.Append(testURL(i), t0.Add(time.Duration(i)*time.Second), testBody(i, 30)); err != nil {
			t.Fatal(err)
		}
	}
	p.Close()
	p = openPF(t, dir, Options{DataFileSize: 7})
	defer p.Close()
	for i := range 12 {
		checkPage(t, p, int64(i), testURL(i), testBody(i, 30))
	}
}

func TestPageFilesErrors(t *testing.T) {
	dir := t.TempDir()
	p := openPF(t, dir, Options{})
	for _, u := range []string{"", "http://a/\nb", "http://a/\r"} {
		if _, err := p.Append(u, t0, nil); !errors.Is(err, ErrBadURL) {
			t.Errorf("Append(%q) = %v, want ErrBadURL", u, err)
		}
	}
	if _, err := p.Append("http://a/", t0, []byte("x")); err != nil {
		t.Fatal(err)
	}
	for _, no := range []int64{-1, 1, 100} {
		if _, err := p.Read(no); !errors.Is(err, ErrNotFound) {
			t.Errorf("Read(%d) = %v, want ErrNotFound", no, err)
		}
	}
	stop := errors.New("stop")
	if err := p.Iterate(func(Page) error { return stop }); err != stop {
		t.Errorf("Iterate returned %v, want fn's error", err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
	if _, err := p.Append("http://a/", t0, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Append after Close = %v", err)
	}
	if _, err := p.Read(0); !errors.Is(err, ErrClosed) {
		t.Errorf("Read after Close = %v", err)
	}
	if err := p.Iterate(func(Page) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Errorf("Iterate after Close = %v", err)
	}
	if err := p.Sync(); !errors.Is(err, ErrClosed) {
		t.Errorf("Sync after Close = %v", err)
	}
	if _, err := OpenPageFiles(t.TempDir(), Options{DataFileSize: -1}); err == nil {
		t.Error("negative DataFileSize accepted")
	}
}

func TestPageFilesConcurrent(t *testing.T) {
	dir := t.TempDir()
	p := openPF(t, dir, Options{DataFileSize: 4096})
	const writers, each = 4, 150
	var wg sync.WaitGroup
	var mu sync.Mutex
	urlOf := map[int64]string{}
	for w := range writers {
		wg.Go(func() {
			for k := range each {
				id := w*each + k
				url := testURL(id)
				no, err := p.Append(url, t0, testBody(id, id%300))
				if err != nil {
					t.Errorf("Append: %v", err)
					return
				}
				mu.Lock()
				urlOf[no] = url
				mu.Unlock()
			}
		})
	}
	for range 2 {
		wg.Go(func() {
			for range 300 {
				n := p.Count()
				if n == 0 {
					continue
				}
				pg, err := p.Read(rand.Int64N(n))
				if err != nil {
					t.Errorf("Read: %v", err)
					return
				}
				id, _ := strconv.Atoi(pg.URL[strings.LastIndexByte(pg.URL, '/')+1:])
				if !bytes.Equal(pg.Body, testBody(id, id%300)) {
					t.Errorf("page %d: body does not match %s", pg.No, pg.URL)
				}
			}
		})
	}
	wg.Go(func() {
		for range 3 {
			if err := p.Sync(); err != nil {
				t.Errorf("Sync: %v", err)
			}
			if err := p.Iterate(func(Page) error { return nil }); err != nil {
				t.Errorf("Iterate: %v", err)
			}
		}
	})
	wg.Wait()
	if p.Count() != writers*each {
		t.Fatalf("Count = %d", p.Count())
	}
	p.Close()
	p = openPF(t, dir, Options{DataFileSize: 4096})
	defer p.Close()
	err := p.Iterate(func(pg Page) error {
		if urlOf[pg.No] != pg.URL {
			return fmt.Errorf("page %d is %q, Append returned it for %q", pg.No, pg.URL, urlOf[pg.No])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// copyDir copies the regular files of src into a new temporary directory.
func copyDir(t testing.TB, src string) string {
	t.Helper()
	dst := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

func truncateFile(t testing.TB, path string, size int64) {
	t.Helper()
	if err := os.Truncate(path, size); err != nil {
		t.Fatal(err)
	}
}

// A crash can leave page bytes without an index line, a partial index line,
// or an index line whose bytes are missing. Every cut point of the last entry
// must reopen without error, with the page before it intact, and accept new
// pages.
func TestPageFilesTornTail(t *testing.T) {
	tests := []struct {
		name  string
		cap   int64
		sizes []int
	}{
		{"same data file", 1000, []int{50, 60, 70}},
		{"last page starts a new data file", 100, []int{50, 40, 70}},
		{"empty last page", 1000, []int{50, 20, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel() // bound by fsync latency, not CPU
			tmpl := t.TempDir()
			p := openPF(t, tmpl, Options{DataFileSize: tt.cap})
			for i, n := range tt.sizes {
				if _, err := p.Append(testURL(i), t0.Add(time.Duration(i)*time.Second), testBody(i, n)); err != nil {
					t.Fatal(err)
				}
			}
			p.Close()
			last := len(tt.sizes) - 1
			index, _ := os.ReadFile(filepath.Join(tmpl, IndexFileName))
			lineStart := int64(bytes.LastIndexByte(index[:len(index)-1], '\n') + 1)
			lastFile := filepath.Join(tmpl, DataFileName(p.dataNo))
			info, _ := os.Stat(lastFile)
			dataEnd := info.Size()
			dataStart := dataEnd - int64(tt.sizes[last])
			lastName := DataFileName(p.dataNo)

			type cut struct {
				desc   string
				mutate func(dir string)
			}
			var cuts []cut
			for off := lineStart; off < int64(len(index)); off++ {
				desc := fmt.Sprintf("index cut at %d", off)
				if off == lineStart && dataStart == dataEnd {
					desc = "nothing to cut: empty page without index line"
				}
				cuts = append(cuts, cut{desc, func(dir string) {
					truncateFile(t, filepath.Join(dir, IndexFileName), off)
				}})
			}
			for off := dataStart; off <= dataEnd; off++ {
				desc := fmt.Sprintf("no index line, data cut at %d", off)
				if off == dataStart {
					desc = "nothing to cut: page neither indexed nor written"
				}
				cuts = append(cuts, cut{desc, func(dir string) {
					truncateFile(t, filepath.Join(dir, IndexFileName), lineStart)
					truncateFile(t, filepath.Join(dir, lastName), off)
				}})
			}
			for off := dataStart; off < dataEnd; off++ {
				cuts = append(cuts, cut{fmt.Sprintf("index line whose data is cut at %d", off), func(dir string) {
					truncateFile(t, filepath.Join(dir, lastName), off)
				}})
			}
			if dataStart == 0 && dataEnd > 0 {
				cuts = append(cuts, cut{"index line whose data file is gone", func(dir string) {
					os.Remove(filepath.Join(dir, lastName))
				}})
			}
			for _, c := range cuts {
				dir := copyDir(t, tmpl)
				c.mutate(dir)
				var log bytes.Buffer
				p, err := OpenPageFiles(dir, Options{DataFileSize: tt.cap, Logger: slog.New(slog.NewTextHandler(&log, nil))})
				if err != nil {
					t.Fatalf("%s: open: %v", c.desc, err)
				}
				if p.Count() != int64(last) {
					t.Fatalf("%s: Count = %d, want %d", c.desc, p.Count(), last)
				}
				checkPage(t, p, int64(last-1), testURL(last-1), testBody(last-1, tt.sizes[last-1]))
				if nothing := strings.HasPrefix(c.desc, "nothing to cut"); nothing == strings.Contains(log.String(), "level=WARN") {
					t.Fatalf("%s: logged %q", c.desc, log.String())
				}
				// The store accepts the page again and keeps it.
				if _, err := p.Append(testURL(last), t0.Add(time.Duration(last)*time.Second), testBody(last, tt.sizes[last])); err != nil {
					t.Fatalf("%s: Append after recovery: %v", c.desc, err)
				}
				p.Close()
				log.Reset()
				p, err = OpenPageFiles(dir, Options{DataFileSize: tt.cap, Logger: slog.New(slog.NewTextHandler(&log, nil))})
				if err != nil {
					t.Fatalf("%s: reopen: %v", c.desc, err)
				}
				for i, n := range tt.sizes {
					checkPage(t, p, int64(i), testURL(i), testBody(i, n))
				}
				if log.Len() > 0 {
					t.Fatalf("%s: clean reopen logged %s", c.desc, log.String())
				}
				p.Close()
			}
		})
	}
}

func TestPageFilesCorruptMiddleLine(t *testing.T) {
	tmpl := t.TempDir()
	p := openPF(t, tmpl, Options{})
	for i := range 5 {
		if _, err := p.Append(testURL(i), t0.Add(time.Duration(i)*time.Second), testBody(i, 20)); err != nil {
			t.Fatal(err)
		}
	}
	p.Close()
	index, _ := os.ReadFile(filepath.Join(tmpl, IndexFileName))
	lines := strings.SplitAfter(string(index), "\n")
	tests := []struct {
		name   string
		line   string
		wantAt int // pages kept with TruncateCorrupt
	}{
		{"garbage", "garbage\n", 2},
		{"wrong page number", strings.Replace(lines[2], "2 ", "9 ", 1), 2},
		{"size field damaged", strings.Replace(lines[2], " 20 ", " 2x ", 1), 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := copyDir(t, tmpl)
			mod := append(append(append([]string{}, lines[:2]...), tt.line), lines[3:]...)
			os.WriteFile(filepath.Join(dir, IndexFileName), []byte(strings.Join(mod, "")), 0o644)
			if _, err := OpenPageFiles(dir, Options{}); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "line 3") {
				t.Fatalf("open = %v, want ErrCorrupt naming line 3", err)
			}
			var log bytes.Buffer
			p, err := OpenPageFiles(dir, Options{TruncateCorrupt: true, Logger: slog.New(slog.NewTextHandler(&log, nil))})
			if err != nil {
				t.Fatalf("open with TruncateCorrupt: %v", err)
			}
			defer p.Close()
			if p.Count() != int64(tt.wantAt) || !strings.Contains(log.String(), "lines=3") {
				t.Fatalf("Count = %d (want %d), log %s", p.Count(), tt.wantAt, log.String())
			}
			info, _ := os.Stat(filepath.Join(dir, DataFileName(0)))
			if info.Size() != int64(20*tt.wantAt) {
				t.Fatalf("data file holds %d bytes, want %d", info.Size(), 20*tt.wantAt)
			}
		})
	}
}

func TestPageFilesRefusesInconsistentDirectory(t *testing.T) {
	tmpl := t.TempDir()
	p := openPF(t, tmpl, Options{DataFileSize: 10})
	for i := range 3 {
		p.Append(testURL(i), t0, testBody(i, 10))
	}
	p.Close()
	tests := []struct {
		name   string
		mutate func(dir string)
	}{
		{"index missing", func(dir string) { os.Remove(filepath.Join(dir, IndexFileName)) }},
		{"data file missing from the sequence", func(dir string) { os.Remove(filepath.Join(dir, DataFileName(1))) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := copyDir(t, tmpl)
			tt.mutate(dir)
			if _, err := OpenPageFiles(dir, Options{}); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("open = %v, want ErrCorrupt", err)
			}
		})
	}
}

// TestKillHelper is the child process of TestPageFilesAndRecordsSurviveKill:
// it appends pages and records forever and prints each number once both
// Appends returned.
func TestKillHelper(t *testing.T) {
	dir := os.Getenv("STORE_KILL_HELPER_DIR")
	if dir == "" {
		t.Skip("helper process only")
	}
	p, err := OpenPageFiles(dir, Options{DataFileSize: 64 << 10})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	r, err := OpenRecords(dir, Options{})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	for i := 0; i < 1_000_000; i++ {
		no, err := p.Append(testURL(i), t0.Add(time.Duration(i)*time.Second), testBody(i, 1000+i%5000))
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		if err := r.Append(Record{URL: testURL(i), PageNo: no, Status: 200}); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		os.Stdout.WriteString(strconv.Itoa(i) + "\n")
	}
	os.Exit(0)
}

// SIGKILL right after Append returned must lose nothing.
func TestPageFilesAndRecordsSurviveKill(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a process")
	}
	for round := range 3 {
		dir := t.TempDir()
		cmd := exec.Command(os.Args[0], "-test.run=^TestKillHelper$", "-test.count=1")
		cmd.Env = append(os.Environ(), "STORE_KILL_HELPER_DIR="+dir)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(out)
		acked := -1
		target := 200 + round*150
		for sc.Scan() {
			n, err := strconv.Atoi(sc.Text())
			if err != nil {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("helper said %q", sc.Text())
			}
			acked = n
			if acked >= target {
				break
			}
		}
		cmd.Process.Kill() // SIGKILL
		cmd.Wait()
		if acked < target {
			t.Fatalf("helper stopped after %d pages", acked)
		}

		p := openPF(t, dir, Options{DataFileSize: 64 << 10})
		if p.Count() < int64(acked+1) {
			t.Fatalf("round %d: %d pages after kill, %d were acknowledged", round, p.Count(), acked+1)
		}
		for i := 0; i <= acked; i++ {
			checkPage(t, p, int64(i), testURL(i), testBody(i, 1000+i%5000))
		}
		p.Close()
		r, err := OpenRecords(dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		skipped, err := r.Iterate(func(rec Record) error {
			if rec.URL != testURL(n) || rec.PageNo != int64(n) {
				return fmt.Errorf("record %d is %+v", n, rec)
			}
			n++
			return nil
		})
		r.Close()
		if err != nil || skipped != 0 || n < acked+1 {
			t.Fatalf("round %d: %d records (skipped %d, err %v), %d acknowledged", round, n, skipped, err, acked+1)
		}
	}
}

// FuzzOpenPageFiles feeds arbitrary index contents and data file lengths to
// recovery: opening with TruncateCorrupt must succeed or fail cleanly, and
// an opened store must read back every page it reports.
func FuzzOpenPageFiles(f *testing.F) {
	f.Add([]byte("0 5 11 25 http://x/0 Fri Mar 30 08:31:34 2012\n1 5 11 25 http://x/1 Fri Mar 30 08:31:35 2012\n"), uint16(10), uint16(0))
	f.Add([]byte("0 5 11 25 http://x/0 Fri Mar 30 08:31:34 2012\n1 5 11 25 http://x/1 Fri Mar 30 08:31"), uint16(7), uint16(3))
	f.Add([]byte("0 5 11 25 http://x/0 Fri Mar 30 08:31:34 2012\n0 0 1"), uint16(5), uint16(5))
	f.Add([]byte("garbage\n0 5 11 25 http://x/0 Fri Mar 30 08:31:34 2012\n"), uint16(5), uint16(0))
	f.Add([]byte(""), uint16(0), uint16(9))
	f.Fuzz(func(t *testing.T, index []byte, len0, len1 uint16) {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, IndexFileName), index, 0o644)
		os.WriteFile(filepath.Join(dir, DataFileName(0)), testBody(0, int(len0%4096)), 0o644)
		if len1 > 0 {
			os.WriteFile(filepath.Join(dir, DataFileName(1)), testBody(1, int(len1%4096)), 0o644)
		}
		p, err := OpenPageFiles(dir, Options{TruncateCorrupt: true})
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("open: %v", err)
			}
			return
		}
		defer p.Close()
		n := p.Count()
		for no := range n {
			if _, err := p.Read(no); err != nil {
				t.Fatalf("Read(%d) of %d: %v", no, n, err)
			}
		}
		if _, err := p.Append("http://new/", t0, []byte("new page")); err != nil {
			t.Fatalf("Append: %v", err)
		}
		pg, err := p.Read(n)
		if err != nil || string(pg.Body) != "new page" {
			t.Fatalf("Read(new) = %q, %v", pg.Body, err)
		}
	})
}

func BenchmarkPageFilesAppend(b *testing.B) {
	for _, size := range []int{4 << 10, 64 << 10} {
		b.Run(strconv.Itoa(size>>10)+"KiB", func(b *testing.B) {
			p := openPF(b, b.TempDir(), Options{})
			defer p.Close()
			body := testBody(1, size)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.Append("http://bench.example/some/path?q=1", t0, body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkPageFilesIterate(b *testing.B) {
	p := openPF(b, b.TempDir(), Options{})
	defer p.Close()
	body := testBody(1, 16<<10)
	for range 1000 {
		p.Append("http://bench.example/some/path?q=1", t0, body)
	}
	b.SetBytes(int64(1000 * len(body)))
	for b.Loop() {
		if err := p.Iterate(func(Page) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}
