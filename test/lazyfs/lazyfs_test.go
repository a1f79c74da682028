package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain serves a mount when started as the tests' file-system process
// (LAZYFS_SERVE="BACKING MNT STATS"): the file system must not run in the process that
// uses the mount, or a page fault on a mapped file can deadlock the Go runtime (the
// faulting thread cannot stop for the garbage collector, which stops the server).
func TestMain(m *testing.M) {
	if v := os.Getenv("LAZYFS_SERVE"); v != "" {
		f := strings.Fields(v)
		if err := run(f[0], f[1], f[2], map[string]time.Duration{"slow": 100 * time.Millisecond}); err != nil {
			fmt.Fprintln(os.Stderr, "lazyfs:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// server is a lazyfs serving a test from a child process.
type server struct {
	cmd   *exec.Cmd
	out   *bufio.Reader
	stats string
}

// mountT mounts a lazyfs (in a child process) for the test, or skips when FUSE cannot
// mount (not root, no /dev/fuse), failing instead with SPIDER_REQUIRE_FUSE=1.
func mountT(t *testing.T) (srv *server, backing, mnt string) {
	t.Helper()
	backing, mnt = t.TempDir(), t.TempDir()
	srv = &server{stats: filepath.Join(t.TempDir(), "stats.json")}
	srv.cmd = exec.Command(os.Args[0])
	srv.cmd.Env = append(os.Environ(), "LAZYFS_SERVE="+backing+" "+mnt+" "+srv.stats)
	var stderr bytes.Buffer
	srv.cmd.Stderr = &stderr
	stdout, err := srv.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.cmd.Process.Kill()
		srv.cmd.Wait()
		exec.Command("umount", "-l", mnt).Run()
	})
	srv.out = bufio.NewReader(stdout)
	if line, err := srv.out.ReadString('\n'); err != nil || line != "mounted\n" {
		srv.cmd.Wait()
		if os.Getenv("SPIDER_REQUIRE_FUSE") == "1" {
			t.Fatalf("SPIDER_REQUIRE_FUSE=1 but lazyfs did not mount: %q %v %s", line, err, stderr.String())
		}
		t.Skipf("cannot mount FUSE here (needs root and /dev/fuse): %s", stderr.String())
	}
	return srv, backing, mnt
}

// Crash crashes the file system (SIGUSR1) and returns its statistics.
func (s *server) Crash() Stats {
	var st Stats
	s.cmd.Process.Signal(syscall.SIGUSR1)
	if line, err := s.out.ReadString('\n'); err != nil || !strings.HasPrefix(line, "crashed:") {
		panic(fmt.Sprintf("lazyfs did not crash: %q %v", line, err))
	}
	b, err := os.ReadFile(s.stats)
	if err == nil {
		err = json.Unmarshal(b, &st)
	}
	if err != nil {
		panic(err)
	}
	return st
}

// Stop ends the file system cleanly (SIGTERM: every write applied, unmounted).
func (s *server) Stop() error {
	s.cmd.Process.Signal(syscall.SIGTERM)
	io.Copy(io.Discard, s.out)
	return s.cmd.Wait()
}

// TestCrashDropsUnsynced checks the contract: what an fsync covered survives a crash,
// everything written after it (appends, overwrites, truncations, new files' data) is
// dropped and counted, and readers saw every write before the crash, through read(2) and
// mmap(2).
func TestCrashDropsUnsynced(t *testing.T) {
	l, backing, mnt := mountT(t)
	p := filepath.Join(mnt, "f")
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	synced := bytes.Repeat([]byte("A"), 5000)
	if _, err := f.Write(synced); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(bytes.Repeat([]byte("B"), 3000)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("CCCCC"), 100); err != nil {
		t.Fatal(err)
	}
	// Read-your-writes, by read(2), stat(2) and a shared mapping (bbolt reads that way).
	if fi, err := os.Stat(p); err != nil || fi.Size() != 8000 {
		t.Fatalf("stat on the mount: %v, %v; want 8000 bytes", fi, err)
	}
	m, err := syscall.Mmap(int(f.Fd()), 0, 8000, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	if string(m[98:107]) != "AACCCCCAA" || m[7999] != 'B' {
		t.Errorf("mmap does not see the unsynced writes: %q … %q", m[98:107], m[7999])
	}
	if _, err := f.WriteAt([]byte("D"), 7999); err != nil {
		t.Fatal(err)
	}
	if m[7999] != 'D' {
		t.Errorf("mmap does not see a write made after mapping: %q", m[7999])
	}
	syscall.Munmap(m)
	f.Close()
	if err := os.WriteFile(filepath.Join(mnt, "new"), []byte("never synced"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(backing, "f")); err != nil || !bytes.Equal(b, synced) {
		t.Fatalf("before the crash the backing file holds %d bytes (%v), want the 5000 synced ones", len(b), err)
	}

	st := l.Crash()
	if st.FsyncsByFile["f"] != 1 || st.Fsyncs != 1 {
		t.Errorf("fsyncs counted: %d, by file %v; want 1, on f", st.Fsyncs, st.FsyncsByFile)
	}
	if want := int64(3000 + 5 + len("never synced")); st.DroppedBytes != want {
		t.Errorf("dropped %d bytes (%v), want %d", st.DroppedBytes, st.DroppedFiles, want)
	}
	if _, err := os.ReadFile(p); err == nil {
		t.Error("the mount still answers after the crash")
	}
	if b, _ := os.ReadFile(filepath.Join(backing, "f")); !bytes.Equal(b, synced) {
		t.Errorf("after the crash the backing file holds %d bytes, want the 5000 synced ones", len(b))
	}
	if fi, err := os.Stat(filepath.Join(backing, "new")); err != nil || fi.Size() != 0 {
		t.Errorf("the unsynced new file: %v, %v; want it empty (created, data lost)", fi, err)
	}
}

// TestTruncateIsLazy checks that a truncation is part of the unsynced data: undone by a
// crash, applied by fsync.
func TestTruncateIsLazy(t *testing.T) {
	l, backing, mnt := mountT(t)
	p := filepath.Join(mnt, "f")
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(bytes.Repeat([]byte("x"), 100))
	f.Sync()
	f.Truncate(10)
	if fi, _ := os.Stat(p); fi.Size() != 10 {
		t.Errorf("size on the mount after truncate: %d, want 10", fi.Size())
	}
	f.Close()
	g, _ := os.OpenFile(filepath.Join(mnt, "g"), os.O_RDWR|os.O_CREATE, 0o644)
	g.Write([]byte("0123456789"))
	g.Truncate(4)
	g.Sync()
	g.Close()
	l.Crash()
	if fi, _ := os.Stat(filepath.Join(backing, "f")); fi.Size() != 100 {
		t.Errorf("the unsynced truncate survived the crash: %d bytes, want 100", fi.Size())
	}
	if b, _ := os.ReadFile(filepath.Join(backing, "g")); string(b) != "0123" {
		t.Errorf("synced truncate: backing holds %q, want %q", b, "0123")
	}
}

// TestCleanExitSyncs checks the clean shutdown (SIGTERM): every write reaches the backing
// files.
func TestCleanExitSyncs(t *testing.T) {
	l, backing, mnt := mountT(t)
	if err := os.WriteFile(filepath.Join(mnt, "f"), []byte("kept"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := l.Stop(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(backing, "f")); string(b) != "kept" {
		t.Errorf("after a clean exit the backing file holds %q", b)
	}
}

// TestSlowWrite checks -slow: a write to a slow file takes at least the delay, and other
// files are not delayed.
func TestSlowWrite(t *testing.T) {
	_, _, mnt := mountT(t)
	for _, tc := range []struct {
		name      string
		min, most time.Duration
	}{{"slow", 100 * time.Millisecond, time.Hour}, {"fast", 0, 90 * time.Millisecond}} {
		start := time.Now()
		if err := os.WriteFile(filepath.Join(mnt, tc.name), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d < tc.min || d > tc.most {
			t.Errorf("writing %s took %s, want between %s and %s", tc.name, d, tc.min, tc.most)
		}
	}
}
