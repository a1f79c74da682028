package state

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func openBolt(t *testing.T) *bolt.DB {
	t.Helper()
	db, err := bolt.Open(filepath.Join(t.TempDir(), "t.db"), 0o600, &bolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if err := db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("b")); return err }); err != nil {
		t.Fatal(err)
	}
	return db
}

func put(k string) func(*bolt.Tx) error {
	return func(tx *bolt.Tx) error { return tx.Bucket([]byte("b")).Put([]byte(k), []byte("v")) }
}

func keys(t *testing.T, db *bolt.DB) int {
	t.Helper()
	n := 0
	if err := db.View(func(tx *bolt.Tx) error { n = tx.Bucket([]byte("b")).Stats().KeyN; return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestCommitterGroups: the calls that queue while a commit runs share the
// next commit, without waiting for a timer.
func TestCommitterGroups(t *testing.T) {
	db := openBolt(t)
	c := &committer{db: db, maxCalls: 1000}
	started, release := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		err := c.do(func(tx *bolt.Tx) error {
			close(started)
			<-release
			return put("first")(tx)
		})
		if err != nil {
			t.Error(err)
		}
	}()
	<-started
	const queued = 10
	for i := range queued {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.do(put(fmt.Sprint(i))); err != nil {
				t.Error(err)
			}
		}()
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		c.mu.Lock()
		n := len(c.queue)
		c.mu.Unlock()
		if n == queued {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d calls queued, want %d", n, queued)
		}
	}
	close(release)
	wg.Wait()
	if commits, calls := c.stats(); commits != 2 || calls != queued+1 {
		t.Errorf("%d commits carried %d calls, want 2 carrying %d", commits, calls, queued+1)
	}
	if n := keys(t, db); n != queued+1 {
		t.Errorf("%d keys stored, want %d", n, queued+1)
	}
}

// TestCommitterFailure: a failing function gets its own error and leaves
// nothing behind; the functions that shared its transaction are committed;
// a panic is its caller's.
func TestCommitterFailure(t *testing.T) {
	db := openBolt(t)
	c := &committer{db: db, delay: 5 * time.Millisecond, maxCalls: 1000}
	errBad := errors.New("bad")
	var wg sync.WaitGroup
	errs := make([]error, 20)
	panics := make([]any, 20)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { panics[i] = recover() }()
			errs[i] = c.do(func(tx *bolt.Tx) error {
				if err := put(fmt.Sprint(i))(tx); err != nil {
					return err
				}
				switch i {
				case 3:
					return errBad
				case 7:
					panic("seven")
				}
				return nil
			})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		switch {
		case i == 3 && !errors.Is(err, errBad):
			t.Errorf("call 3: error %v, want %v", err, errBad)
		case i == 7 && panics[i] == nil:
			t.Errorf("call 7 did not panic in its caller")
		case i != 3 && i != 7 && (err != nil || panics[i] != nil):
			t.Errorf("call %d: error %v, panic %v", i, err, panics[i])
		}
	}
	if n := keys(t, db); n != len(errs)-2 {
		t.Errorf("%d keys stored, want %d (all but the failed and the panicking call)", n, len(errs)-2)
	}
}

// TestCommitterMaxCalls: no transaction carries more than maxCalls calls.
func TestCommitterMaxCalls(t *testing.T) {
	db := openBolt(t)
	c := &committer{db: db, delay: 20 * time.Millisecond, maxCalls: 4}
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.do(put(fmt.Sprint(i))); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if commits, calls := c.stats(); calls != 10 || commits < 3 {
		t.Errorf("%d commits carried %d calls, want ≥ 3 carrying 10", commits, calls)
	}
	if n := keys(t, db); n != 10 {
		t.Errorf("%d keys stored, want 10", n)
	}
}
