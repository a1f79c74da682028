package fault

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestFUSEStaleTail shows why the live-reader check leaves a file's NUL tail
// out (settled): a file appended through the slow lazyfs disk while another
// process reads it whole, again and again, is sometimes read with NULs
// where the bytes of a write in flight will be. It is a property of the
// kernel's FUSE page cache, not of spider, so it runs only on request
// (SPIDER_FUSE_STALE_TAIL=1, about a minute) and reports the count.
func TestFUSEStaleTail(t *testing.T) {
	if os.Getenv("SPIDER_FUSE_STALE_TAIL") != "1" {
		t.Skip("a demonstration of the kernel's behaviour: SPIDER_FUSE_STALE_TAIL=1 runs it")
	}
	backing, mnt := t.TempDir(), t.TempDir()
	lz, err := mountLazy(t, backing, mnt, "-slow", "PageIndex=20ms")
	if err != nil {
		t.Fatal(err)
	}
	defer lz.unmount()
	p := filepath.Join(mnt, "PageIndex")
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	done := make(chan error, 1)
	go func() {
		line := []byte(strings.Repeat("x", 77) + "\n") // an index line's length
		var off int64
		for end := time.Now().Add(8 * time.Second); time.Now().Before(end); off += int64(len(line)) {
			if _, err := f.WriteAt(line, off); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	stale, reads := 0, 0
	for {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d of %d whole-file reads during the appends had NULs", stale, reads)
			return
		default:
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		reads++
		if bytes.IndexByte(b, 0) >= 0 {
			stale++
		}
	}
}
