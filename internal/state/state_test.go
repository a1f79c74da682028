package state

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/frontier"
)

var ctx = context.Background()

func openTest(t testing.TB, dir string, opt Options) *Store {
	t.Helper()
	if opt.ExpectedURLs == 0 {
		opt.ExpectedURLs = 100_000
	}
	if opt.BatchDelay == 0 {
		opt.BatchDelay = 200 * time.Microsecond
	}
	s, err := Open(dir, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func reqs(urls ...string) []frontier.Request {
	out := make([]frontier.Request, len(urls))
	for i, u := range urls {
		out[i] = frontier.Request{URL: u, Key: "k:80", Depth: 1}
	}
	return out
}

func urlsOf(rs []frontier.Request) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.URL
	}
	return out
}

func TestMeta(t *testing.T) {
	s := openTest(t, t.TempDir(), Options{})
	if v, err := s.Meta(ctx, []byte("missing")); err != nil || v != nil {
		t.Fatalf("Meta(missing) = %q, %v", v, err)
	}
	for _, k := range []string{"", "_seen", "_x"} {
		if err := s.SetMeta(ctx, []byte(k), []byte("v")); err == nil {
			t.Errorf("SetMeta(%q) accepted a reserved key", k)
		}
		if _, err := s.Meta(ctx, []byte(k)); err == nil {
			t.Errorf("Meta(%q) accepted a reserved key", k)
		}
	}
	must(t, s.SetMeta(ctx, []byte("empty"), nil))
	if v, err := s.Meta(ctx, []byte("empty")); err != nil || v == nil || len(v) != 0 {
		t.Fatalf("Meta(empty) = %q, %v; want an empty non-nil value", v, err)
	}
}

func TestOpenLockedByAnotherProcess(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir, Options{})
	start := time.Now()
	_, err := Open(dir, Options{ExpectedURLs: 1000})
	if err == nil {
		t.Fatal("second Open of a locked directory succeeded")
	}
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("error %v does not wrap ErrLocked", err)
	}
	want := fmt.Sprintf("data directory is in use by another spider process (pid %d)", os.Getpid())
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not say %q", err, want)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("Open took %v to fail", d)
	}
	must(t, s.Close())
	if _, err := os.Stat(filepath.Join(dir, PIDFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("pid file left after Close")
	}
	s2 := openTest(t, dir, Options{})
	must(t, s2.Sync())
}

func TestOpenOptionsValidation(t *testing.T) {
	for _, opt := range []Options{{SeenMode: "fuzzy"}, {FPRate: 2}, {FPRate: -1}, {RecentSize: -1}, {RecentShare: -8}} {
		if s, err := Open(t.TempDir(), opt); err == nil {
			_ = s.Close()
			t.Errorf("Open accepted %+v", opt)
		}
	}
	bad := filepath.Join(t.TempDir(), "d")
	must(t, os.MkdirAll(bad, 0o755))
	must(t, os.WriteFile(filepath.Join(bad, DBFile), []byte("this is not a bbolt file, it is just text"), 0o600))
	if s, err := Open(bad, Options{}); err == nil {
		_ = s.Close()
		t.Error("Open accepted a damaged database file")
	}
}

// TestBackgroundSync checks that a store with SyncInterval fsyncs in the background: the
// loop's hook must report successful fsyncs of this store after a commit, without Close
// (it fails when the loop never starts or never fsyncs), and no hook call may start once
// Close returned (Close stops the loop).
func TestBackgroundSync(t *testing.T) {
	var closed, afterClose atomic.Bool
	ch := make(chan error, 64)
	var s *Store
	var mine atomic.Pointer[Store]
	hook := func(st *Store, err error) {
		if st != mine.Load() {
			return // another test's store
		}
		if closed.Load() {
			afterClose.Store(true)
		}
		select {
		case ch <- err:
		default:
		}
	}
	syncedHook.Store(&hook)
	defer syncedHook.Store(nil)
	s = openTest(t, t.TempDir(), Options{SyncInterval: 5 * time.Millisecond})
	mine.Store(s)
	if _, err := s.Discover(ctx, reqs("http://a/")); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(30 * time.Second) // bounds a loop that never runs; not a synchronisation
	for n := 0; n < 2; n++ {
		select {
		case err := <-ch:
			if err != nil {
				t.Fatalf("background fsync failed: %v", err)
			}
		case <-deadline:
			t.Fatalf("%d background fsyncs within 30 s of a commit with SyncInterval 5ms, want 2", n)
		}
	}
	must(t, s.Close())
	closed.Store(true)
	must(t, s.Close()) // idempotent
	if afterClose.Load() {
		t.Error("the background fsync loop ran after Close returned")
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// logBuffer is a concurrency-safe log sink for checking what Open reports.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestBloomSnapshot(t *testing.T) {
	open := func(t *testing.T, dir string, opt Options) (*Store, *logBuffer) {
		t.Helper()
		var logs logBuffer
		opt.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		return openTest(t, dir, opt), &logs
	}
	tests := []struct {
		name     string
		tamper   func(t *testing.T, dir string) // between Close and the second Open
		opt      Options
		wantFrom string
	}{
		{"clean stop", func(*testing.T, string) {}, Options{}, "bloom_from=snapshot"},
		{"damaged", func(t *testing.T, dir string) {
			p := filepath.Join(dir, SnapshotFile)
			b, err := os.ReadFile(p)
			must(t, err)
			b[len(b)/2] ^= 0xff
			must(t, os.WriteFile(p, b, 0o600))
		}, Options{}, `bloom_from="seen bucket"`},
		{"stale after more commits", func(t *testing.T, dir string) {
			// Keep the snapshot, then change the database behind it.
			p := filepath.Join(dir, SnapshotFile)
			old, err := os.ReadFile(p)
			must(t, err)
			s, _ := open(t, dir, Options{})
			if got, err := s.Discover(ctx, reqs("http://late/")); err != nil || len(got) != 1 {
				t.Fatalf("Discover late = %d, %v", len(got), err)
			}
			must(t, s.Close())
			must(t, os.WriteFile(p, old, 0o600))
		}, Options{}, `bloom_from="seen bucket"`},
		{"too full for a stricter rate", func(*testing.T, string) {}, Options{ExpectedURLs: 100_000, FPRate: 1e-12}, `bloom_from="seen bucket"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s, _ := open(t, dir, Options{ExpectedURLs: 2000, FPRate: 1e-3})
			var urls []string
			for i := 0; i < 1000; i++ {
				urls = append(urls, fmt.Sprintf("http://s/%d", i))
			}
			if _, err := s.Discover(ctx, reqs(urls...)); err != nil {
				t.Fatal(err)
			}
			must(t, s.Close())
			if _, err := os.Stat(filepath.Join(dir, SnapshotFile)); err != nil {
				t.Fatalf("Close wrote no snapshot: %v", err)
			}
			tt.tamper(t, dir)
			opt := tt.opt
			if opt.ExpectedURLs == 0 {
				opt = Options{ExpectedURLs: 2000, FPRate: 1e-3}
			}
			s, logs := open(t, dir, opt)
			if !strings.Contains(logs.String(), tt.wantFrom) {
				t.Fatalf("Open log %q lacks %s", logs.String(), tt.wantFrom)
			}
			if _, err := os.Stat(filepath.Join(dir, SnapshotFile)); !errors.Is(err, os.ErrNotExist) {
				t.Fatal("snapshot not removed after Open")
			}
			all := append(urls, "http://late/")
			got, err := s.Discover(ctx, reqs(all...))
			if err != nil {
				t.Fatal(err)
			}
			if tt.name == "stale after more commits" {
				if len(got) != 0 {
					t.Fatalf("stale snapshot: %v accepted again", urlsOf(got))
				}
			} else if len(got) != 1 || got[0].URL != "http://late/" {
				t.Fatalf("after reopen accepted %v, want only http://late/", urlsOf(got))
			}
		})
	}
}
