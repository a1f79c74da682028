package fault

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/websim"
)

// mountTmpfs mounts a tmpfs of size bytes on dir and unmounts it when the test ends. It
// returns an error when mounting is not allowed (not root, no CAP_SYS_ADMIN).
func mountTmpfs(t *testing.T, dir string, size int64) error {
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+strconv.FormatInt(size, 10), "tmpfs", dir).CombinedOutput()
	if err != nil {
		return &mountError{err: err, out: strings.TrimSpace(string(out))}
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("cannot unmount %s: %v %s", dir, err, out)
		}
	})
	return nil
}

// usedBytes returns the bytes in use on the file system of dir (statfs).
func usedBytes(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, fmt.Errorf("cannot read the usage of %s: %w", dir, err)
	}
	return int64(st.Blocks-st.Bfree) * st.Bsize, nil
}

type mountError struct {
	err error
	out string
}

func (e *mountError) Error() string { return "cannot mount a tmpfs: " + e.err.Error() + ": " + e.out }

// TestDiskFull runs a single-node crawl whose data directory is a tmpfs half the size the
// crawl needs. The crawl must stop with a clear error (no space left on device) and leave
// a state that `spider stats` reads without corrupt records; once the tmpfs is grown
// (mount -o remount,size=…, as an operator freeing space), the same command must resume
// and finish with every ground-truth URL, and index and PageRank equal to a clean run's.
func TestDiskFull(t *testing.T) {
	t.Parallel()
	const concurrency = 4
	w := startWeb(t, websim.Config{Seed: 23, Hosts: 8, PagesPerHost: 40, Latency: 2 * time.Millisecond, ChineseShare: -1},
		websim.TruthRules{MaxDepth: 4, Scope: websim.ScopeAny}, 2)
	args := func(data string) []string {
		// --expected-urls sizes the seen-set's Bloom file for this small crawl (36 MB by
		// default), so that page bodies and WARC records are most of what is written.
		return append(append([]string{"crawl", "--data", data, "--quiet", "--warc", "--expected-urls", "20000"},
			w.crawlFlags(concurrency)...), w.rules.Seeds...)
	}
	row := Row{Fault: "disk full (tmpfs filled half-way through the page writes)", URLs: len(w.truth.MustFetch), Equal: "yes"}
	// The clean run also goes to a tmpfs, to measure what the crawl takes there.
	cleanMnt := t.TempDir()
	if err := mountTmpfs(t, cleanMnt, 512<<20); err != nil {
		reportSkip(t, row, err)
	}
	cleanData := filepath.Join(cleanMnt, "data")
	if err := start(t, "clean crawl", args(cleanData)...).Wait(3 * time.Minute); err != nil {
		t.Fatal(err)
	}
	used, err := usedBytes(cleanMnt)
	if err != nil {
		t.Fatal(err)
	}
	pages, err := DirSize(filepath.Join(cleanData, "pages"))
	if err != nil {
		t.Fatal(err)
	}
	warcs, err := DirSize(filepath.Join(cleanData, "warc"))
	if err != nil {
		t.Fatal(err)
	}
	clean := takeSnapshot(t, cleanData)
	// Room for everything but half the page bodies and WARC records: the disk fills up in
	// the middle of the crawl, not at start-up.
	need := used
	t.Logf("clean run on tmpfs: %d bytes in use, pages %d, WARC %d", used, pages, warcs)
	size := used - (pages+warcs)/2
	mnt := t.TempDir()
	if err := mountTmpfs(t, mnt, size); err != nil {
		t.Fatal(err)
	}
	w.srv.Log().Reset()
	data := filepath.Join(mnt, "data")
	p := start(t, "crawl", args(data)...)
	err = p.Wait(3 * time.Minute)
	full := time.Now()
	if err == nil {
		t.Fatalf("the crawl finished in %d bytes although the clean run needed %d", size, need)
	}
	out := p.Output()
	t.Logf("crawl on a full disk (%d of %d bytes): exit %d, %s", size, need, p.ExitCode(), strings.TrimSpace(tail(out, 600)))
	if !strings.Contains(out, "no space left on device") {
		t.Errorf("the error does not say the disk is full:\n%s", out)
	}
	if strings.Contains(out, "panic") {
		t.Errorf("the crawl panicked on a full disk:\n%s", out)
	}
	if code := p.ExitCode(); code != 1 {
		t.Errorf("exit status %d on a full disk, want 1", code)
	}
	// The state must be readable as it is, before any space comes back.
	stats := spider(t, "stats", "--data", data)
	if strings.Contains(stats, "unreadable") {
		t.Errorf("corrupt records after the disk filled up:\n%s", stats)
	}
	if out, err := exec.Command("mount", "-o", "remount,size="+strconv.FormatInt(need*8+64<<20, 10), mnt).CombinedOutput(); err != nil {
		t.Fatalf("cannot grow the tmpfs: %v %s", err, out)
	}
	back := time.Now()
	if err := start(t, "crawl", args(data)...).Wait(3 * time.Minute); err != nil {
		t.Fatalf("the crawl does not resume once space is back: %v", err)
	}
	row.Runs, row.Faults = 1, 1
	row.Lost = checkCrawl(t, w, data)
	extra, _ := Repeats(w.srv.Log())
	row.Repeats, row.Bound = extra, concurrency
	if extra > concurrency {
		t.Errorf("%d repeated requests after the disk filled up; the in-flight bound is %d", extra, concurrency)
	}
	if d, ok := FirstRequestAfter(w.srv.Log(), back); ok {
		row.Recovery([]time.Duration{d})
	}
	if d := takeSnapshot(t, data).diff(clean); d != "" {
		row.Equal = "no"
		t.Errorf("index or PageRank differ from the clean run:\n%s", d)
	}
	row.Note = "crawl --warc; full " + back.Sub(full).Round(time.Millisecond).String() + " before space returned; recovery = space back → next request"
	report(t, row)
}
