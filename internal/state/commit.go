package state

import (
	"errors"
	"fmt"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// committer runs the write functions of concurrent callers in shared bbolt
// transactions: group commit.
//
// It replaces bolt.DB.Batch, whose batch closes when a fixed timer fires
// and then queues for the writer lock: once commits take longer than the
// timer (a large state has deeper trees and more dirty pages per commit),
// batches stay as small as the timer makes them and queue up, so the
// cost per call rises with the crawl. Here a batch stays open while the
// previous commit runs, and everything that queued meanwhile shares the
// next commit: the slower commits get, the more calls each one carries,
// while a lone caller still waits only delay. Failure handling is
// Batch's: a function that fails is taken out, the others run again in a
// new transaction, and the failed one runs alone so that its caller gets
// its own error.
type committer struct {
	db       *bolt.DB
	delay    time.Duration // how long a commit after an idle spell waits for company
	maxCalls int           // most calls in one transaction

	mu      sync.Mutex
	queue   []call
	running bool // a loop goroutine is committing
	commits int64
	calls   int64
}

type call struct {
	fn  func(*bolt.Tx) error
	err chan error
}

// errSolo tells a caller to run its function in a transaction of its own:
// it failed inside a shared one.
var errSolo = errors.New("state: function failed in a group commit; run it alone")

// do runs fn in a write transaction shared with concurrent callers and
// returns fn's error, or the commit's. fn may run more than once (a shared
// transaction that rolls back because another function failed is run
// again without it), so it must reset whatever it collects.
func (c *committer) do(fn func(*bolt.Tx) error) error {
	ch := make(chan error, 1)
	c.mu.Lock()
	c.queue = append(c.queue, call{fn: fn, err: ch})
	if !c.running {
		c.running = true
		go c.loop()
	}
	c.mu.Unlock()
	if err := <-ch; err != errSolo { //nolint:errorlint // a sentinel compared by identity, never wrapped
		return err
	}
	return c.db.Update(fn)
}

// loop commits the queue until it is empty. Only the first commit waits
// delay; later ones take what queued during the previous commit.
func (c *committer) loop() {
	time.Sleep(c.delay)
	for {
		c.mu.Lock()
		n := min(len(c.queue), c.maxCalls)
		if n == 0 {
			c.running = false
			c.mu.Unlock()
			return
		}
		calls := make([]call, n)
		copy(calls, c.queue)
		c.queue = append(c.queue[:0], c.queue[n:]...)
		c.commits++
		c.calls += int64(n)
		c.mu.Unlock()
		c.run(calls)
	}
}

// run commits calls in one transaction, taking out (and sending back to
// run alone) each function that fails.
func (c *committer) run(calls []call) {
	for len(calls) > 0 {
		failed := -1
		err := c.db.Update(func(tx *bolt.Tx) error {
			for i, k := range calls {
				if err := safeCall(k.fn, tx); err != nil {
					failed = i
					return err
				}
			}
			return nil
		})
		if failed >= 0 {
			calls[failed].err <- errSolo
			calls = append(calls[:failed], calls[failed+1:]...)
			continue
		}
		for _, k := range calls {
			k.err <- err
		}
		return
	}
}

// stats returns the number of commits made and of calls they carried.
func (c *committer) stats() (commits, calls int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.commits, c.calls
}

// CommitStats returns how many write transactions the store's group
// commit has made since Open, and how many Discover, Complete and
// UpdatePending calls they carried (calls ÷ commits is the mean group).
func (s *Store) CommitStats() (commits, calls int64) { return s.commit.stats() }

// safeCall runs fn, turning a panic into an error so that one caller's
// panic fails its own call instead of the shared transaction's goroutine.
func safeCall(fn func(*bolt.Tx) error, tx *bolt.Tx) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("state: panic in a write transaction: %v", p)
		}
	}()
	return fn(tx)
}
