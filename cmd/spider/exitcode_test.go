package main

import (
	"strings"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/store"
)

// TestExitCodeResource: a resource problem (the data directory locked by
// another process, Redis unreachable) exits 3, usage errors 2, as main.go's
// table says.
func TestExitCodeResource(t *testing.T) {
	dir := t.TempDir()
	lock, err := store.LockDir(dir, "test holder", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Unlock()
	code, _, errOut := runCLI(t, "crawl", "--data", dir, "--max-depth", "0", "http://127.0.0.1:1/")
	if code != 3 || !strings.Contains(errOut, "test holder") {
		t.Errorf("crawl on a locked directory: exit %d, want 3; stderr %q", code, errOut)
	}
	start := time.Now()
	code, _, errOut = runCLI(t, "status", "--redis", "redis://127.0.0.1:1/0", "--crawl", "x")
	if code != 3 || !strings.Contains(errOut, "cannot reach Redis") {
		t.Errorf("status with Redis unreachable: exit %d, want 3; stderr %q (after %v)", code, errOut, time.Since(start))
	}
	if code, _, _ := runCLI(t, "crawl", "--concurrency", "0", "http://127.0.0.1:1/"); code != 2 {
		t.Errorf("bad flag: exit %d, want 2", code)
	}
}
