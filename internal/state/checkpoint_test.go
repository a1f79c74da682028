package state

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/frontier"
	bolt "go.etcd.io/bbolt"
)

// TestCheckpointHoldsCommitsOff: while Options.Checkpoint runs (the crawl
// fsyncing its page files and records), no commit may complete, and the
// state is fsynced only after it returned; Sync and Close are checkpoints.
// A commit landing inside the checkpoint would complete a URL whose record
// was appended after the records were fsynced, and the state's fsync would
// make that completion durable without the record.
func TestCheckpointHoldsCommitsOff(t *testing.T) {
	var (
		ckpts       atomic.Int64
		duringCkpt  atomic.Int64
		commitsDone atomic.Int64
		store       atomic.Pointer[Store]
	)
	txid := func(s *Store) int {
		var id int
		_ = s.db.View(func(tx *bolt.Tx) error { id = tx.ID(); return nil })
		return id
	}
	ckpt := func() error {
		ckpts.Add(1)
		s := store.Load()
		if s == nil {
			return nil
		}
		before := txid(s)
		time.Sleep(30 * time.Millisecond) // a slow fsync; time is the subject
		if after := txid(s); after != before {
			duringCkpt.Add(int64(after - before))
		}
		return nil
	}
	s := openTest(t, t.TempDir(), Options{Checkpoint: ckpt, SyncInterval: 5 * time.Millisecond})
	store.Store(s)
	if _, err := s.Discover(ctx, reqs("http://seed/")); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				news, err := s.Discover(ctx, reqs(fmt.Sprintf("http://h%d/%d", w, i)))
				if err != nil {
					t.Error(err)
					return
				}
				for _, r := range news {
					if _, err := s.Complete(ctx, r, Outcome{Class: "200"}, nil); err != nil {
						t.Error(err)
						return
					}
				}
				commitsDone.Add(1)
			}
		}()
	}
	deadline := time.Now().Add(20 * time.Second) // bounds a loop that never checkpoints
	for ckpts.Load() < 5 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	must(t, s.Sync())
	close(stop)
	wg.Wait()
	if ckpts.Load() < 5 {
		t.Fatalf("%d checkpoints in 20 s with SyncInterval 5ms, want 5 or more", ckpts.Load())
	}
	if commitsDone.Load() == 0 {
		t.Fatal("no commit ran: the test proves nothing")
	}
	if n := duringCkpt.Load(); n > 0 {
		t.Errorf("%d commits completed while the checkpoint was fsyncing the crawl's files", n)
	}
	must(t, s.Close())

	var closing atomic.Int64
	quiet := openTest(t, t.TempDir(), Options{SyncInterval: -1, Checkpoint: func() error { closing.Add(1); return nil }})
	must(t, quiet.Close())
	if closing.Load() != 1 {
		t.Errorf("Close ran %d checkpoints, want 1", closing.Load())
	}
}

// TestCheckpointErrorStopsSync: a checkpoint whose files could not be made
// durable reports it and does not fsync the state.
func TestCheckpointErrorStopsSync(t *testing.T) {
	boom := errors.New("disk gone")
	s := openTest(t, t.TempDir(), Options{Checkpoint: func() error { return boom }, SyncInterval: -1})
	if err := s.Sync(); !errors.Is(err, boom) {
		t.Errorf("Sync with a failing checkpoint: %v, want it wrapped", err)
	}
	if err := s.Close(); !errors.Is(err, boom) {
		t.Errorf("Close with a failing checkpoint: %v, want it wrapped", err)
	}
}

// TestSyncCommitsCheckpointsBeforeComplete: with SyncCommits, the files are
// made durable before each completion's (fsynced) commit.
func TestSyncCommitsCheckpointsBeforeComplete(t *testing.T) {
	var calls atomic.Int64
	var s *Store
	s = openTest(t, t.TempDir(), Options{SyncCommits: true, Checkpoint: func() error {
		calls.Add(1)
		return nil
	}})
	news, err := s.Discover(ctx, reqs("http://a/", "http://b/"))
	if err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 0 {
		t.Errorf("Discover checkpointed %d times; it completes nothing", calls.Load())
	}
	for i, r := range news {
		if _, err := s.Complete(ctx, r, Outcome{Class: "200"}, nil); err != nil {
			t.Fatal(err)
		}
		if got := calls.Load(); got != int64(i+1) {
			t.Errorf("after %d completions: %d checkpoints, want %d", i+1, got, i+1)
		}
	}
	failing := openTest(t, t.TempDir(), Options{SyncCommits: true, Checkpoint: func() error { return errors.New("no space") }})
	news, err = failing.Discover(ctx, reqs("http://a/"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := failing.Complete(ctx, news[0], Outcome{Class: "200"}, nil); err == nil {
		t.Error("Complete committed although its files could not be made durable")
	}
	if failing.PendingCount() != 1 {
		t.Errorf("pending = %d after a refused completion, want 1", failing.PendingCount())
	}
}

// TestMarksKeepTheLargest: PageNext and RecordsEnd keep the largest value
// any completion gave, across reopening; a completion of a URL that is not
// pending changes nothing.
func TestMarksKeepTheLargest(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir, Options{})
	news, err := s.Discover(ctx, reqs("http://a/", "http://b/", "http://c/"))
	if err != nil {
		t.Fatal(err)
	}
	marks := []Outcome{
		{Class: "200", PageNext: 5, RecordsEnd: 300},
		{Class: "200", PageNext: 3, RecordsEnd: 100}, // completed later, appended earlier
		{Class: "404"}, // no page, record unknown
	}
	for i, r := range news {
		if _, err := s.Complete(ctx, r, marks[i], nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Complete(ctx, news[0], Outcome{Class: "200", PageNext: 99, RecordsEnd: 999}, nil); err != nil {
		t.Fatal(err)
	}
	check := func(s *Store, when string) {
		t.Helper()
		if s.PageNext() != 5 || s.RecordsEnd() != 300 {
			t.Errorf("%s: PageNext %d, RecordsEnd %d; want 5 and 300", when, s.PageNext(), s.RecordsEnd())
		}
	}
	check(s, "open")
	must(t, s.Close())
	s = openTest(t, dir, Options{})
	check(s, "reopened")
	must(t, s.Close())
}

// TestDamagedStateFile: a truncated or overwritten state.db is an error
// naming the file and spider fsck that wraps ErrDamaged, never a panic (a
// truncated file used to fault inside bbolt); a missing or empty file is
// a new state (the crawl checks for records beside it).
func TestDamagedStateFile(t *testing.T) {
	tmpl := t.TempDir()
	s := openTest(t, tmpl, Options{})
	var rs []frontier.Request
	for i := range 20000 {
		rs = append(rs, frontier.Request{URL: fmt.Sprintf("http://h%d.example/%d", i%50, i), Key: "k"})
	}
	if _, err := s.Discover(ctx, rs); err != nil {
		t.Fatal(err)
	}
	must(t, s.Close())
	good, err := os.ReadFile(filepath.Join(tmpl, DBFile))
	if err != nil {
		t.Fatal(err)
	}
	both := append([]byte(nil), good...)
	both[20] ^= 0xff      // meta page 0
	both[4096+20] ^= 0xff // meta page 1
	tests := []struct {
		name    string
		content []byte
		damaged bool
	}{
		{"half", good[:len(good)/2], true},
		{"half and a bit", good[:len(good)/2+100], true},
		{"two pages", good[:8192], true},
		{"one page and a bit", good[:5000], true},
		{"a hundred bytes", good[:100], true},
		{"both meta pages flipped", both, true},
		{"empty", []byte{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "state")
			must(t, os.MkdirAll(dir, 0o700))
			must(t, os.WriteFile(filepath.Join(dir, DBFile), tt.content, 0o600))
			st, err := Open(dir, Options{})
			if !tt.damaged {
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				must(t, st.Close())
				return
			}
			if err == nil {
				st.Close()
				t.Fatal("Open accepted a damaged state file")
			}
			if !errors.Is(err, ErrDamaged) {
				t.Errorf("Open: %v, want ErrDamaged", err)
			}
			for _, want := range []string{filepath.Join(dir, DBFile), "spider fsck --data " + filepath.Dir(dir)} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name %q", err, want)
				}
			}
		})
	}
}
