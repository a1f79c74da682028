package crawl

import (
	"context"
	"errors"
	"sync"
)

// ErrLimitReached is returned by Scheduler.Next when the crawl's budget
// (Config.MaxPages) is spent: MaxPages URLs are completed, so no URL is
// handed out any more; what is still queued stays pending for a resumed
// crawl with a larger limit.
var ErrLimitReached = errors.New("the page limit (--max-pages) is reached")

// Budget makes --max-pages exact. A URL counts once it is completed: it has
// a record in records.jsonl, whatever its outcome (a page, an HTTP error, a
// network error, robots.txt disallowing it). A retry is not a completion.
//
// A slot is reserved before a fetch starts and either committed (the URL
// was completed) or released (the fetch was abandoned, or will be
// retried), so completed + reserved never exceeds the limit and no fetch
// starts that could make it exceed. A Budget is safe for concurrent use.
type Budget interface {
	// Reserve takes one slot. It returns nil with the slot taken,
	// ErrLimitReached when the limit's URLs are completed (no slot will
	// ever be free again in this run), or ctx's error. While every free
	// slot is reserved by fetches in flight it waits: one of them may be
	// released.
	Reserve(ctx context.Context) error
	// Release gives a reserved slot back without counting it.
	Release()
	// Commit counts a reserved slot as one completed URL.
	Commit()
	// Spent reports whether the limit's URLs are completed.
	Spent() bool
}

// LocalBudget is the Budget of one process that schedules the whole crawl
// (the single-node engine, a master–worker crawl's master).
type LocalBudget struct {
	mu       sync.Mutex
	limit    int64
	used     int64         // completed URLs, earlier runs included
	held     int64         // slots reserved by fetches in flight
	released chan struct{} // closed (and replaced) when a slot is released or the limit spent
}

var _ Budget = (*LocalBudget)(nil)

// NewLocalBudget returns a budget of limit URLs of which used are already
// completed (by earlier runs of the crawl).
func NewLocalBudget(limit, used int64) *LocalBudget {
	return &LocalBudget{limit: limit, used: used, released: make(chan struct{})}
}

// Reserve implements Budget.
func (b *LocalBudget) Reserve(ctx context.Context) error {
	for {
		b.mu.Lock()
		if b.used >= b.limit {
			b.mu.Unlock()
			return ErrLimitReached
		}
		if b.used+b.held < b.limit {
			b.held++
			b.mu.Unlock()
			return nil
		}
		wait := b.released
		b.mu.Unlock()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-wait:
		}
	}
}

// Release implements Budget.
func (b *LocalBudget) Release() { b.end(false) }

// Commit implements Budget.
func (b *LocalBudget) Commit() { b.end(true) }

func (b *LocalBudget) end(commit bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.held > 0 {
		b.held--
	}
	if commit {
		b.used++
	}
	// Wake the waiters: a slot is free again, or the limit is spent.
	close(b.released)
	b.released = make(chan struct{})
}

// Spent implements Budget.
func (b *LocalBudget) Spent() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used >= b.limit
}

// Used returns the completed URLs the budget counted (earlier runs included).
func (b *LocalBudget) Used() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}
