package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrLockLost is returned by Lock.Keep when the lock is gone from Redis or
// held under another value: it expired (the holder was cut off from Redis,
// or stalled, for a whole TTL) and another process may have taken it. The
// holder must stop the work the lock guards at once.
var ErrLockLost = errors.New("lock lost")

// Lock is a lease on one Redis key without a fencing token: the key holds
// the holder's value (unique to one process, e.g. "NODE/RANDOM") with a TTL;
// taken only when free, renewed and released only by the value that holds
// it (compare and act in one script, the same scripts BucketLeases uses), so
// a process whose lock expired and was taken over can neither extend nor
// delete the new holder's. It guards a role one process plays at a time
// (the rank map/reduce master, the layered coordinator). Writes that must
// not land after the lock is lost need a fencing token (BucketLeases and
// FencedScript), which a Lock does not give. Safe for concurrent use.
type Lock struct {
	rdb   redis.Cmdable
	key   string
	value string
	ttl   time.Duration
}

// NewLock returns the lock on key for the holder value with lifetime ttl
// (at least 3 ms: Keep renews every ttl/3). It does no I/O.
func NewLock(rdb redis.Cmdable, key, value string, ttl time.Duration) (*Lock, error) {
	if key == "" || value == "" {
		return nil, errors.New("cannot make a lock without a key and a holder value: give both")
	}
	if ttl < 3*time.Millisecond {
		return nil, fmt.Errorf("cannot make lock %s with TTL %v: give at least 3ms", key, ttl)
	}
	return &Lock{rdb: rdb, key: key, value: value, ttl: ttl}, nil
}

// Key returns the lock's key; Value the holder value; TTL its lifetime.
func (l *Lock) Key() string        { return l.key }
func (l *Lock) Value() string      { return l.value }
func (l *Lock) TTL() time.Duration { return l.ttl }

// TryAcquire takes the lock when the key does not exist (SET NX PX) and
// reports whether it did. false with a nil error: someone holds it (this
// value too: a holder does not take its own lock twice). Errors are
// transport errors; the lock may or may not be taken then (it expires after
// the TTL if so).
func (l *Lock) TryAcquire(ctx context.Context) (bool, error) {
	ok, err := l.rdb.SetNX(ctx, l.key, l.value, l.ttl).Result()
	if err != nil {
		return false, fmt.Errorf("cannot take the lock %s: %w", l.key, err)
	}
	return ok, nil
}

// Renew extends the lock to a full TTL from now if this value still holds
// it and reports whether it did: false with a nil error means the lock is
// gone or another's (lost). Errors are transport errors: the lock's state
// is unknown; a later Renew may still succeed within the TTL.
func (l *Lock) Renew(ctx context.Context) (bool, error) {
	n, err := renewScript.Run(ctx, l.rdb, []string{l.key}, l.value, l.ttl.Milliseconds()).Int()
	if err != nil {
		return false, fmt.Errorf("cannot renew the lock %s: %w", l.key, err)
	}
	return n == 1, nil
}

// Release deletes the lock if this value holds it and reports whether it
// did; another holder's lock is left alone (false, nil).
func (l *Lock) Release(ctx context.Context) (bool, error) {
	n, err := releaseScript.Run(ctx, l.rdb, []string{l.key}, l.value).Int()
	if err != nil {
		return false, fmt.Errorf("cannot release the lock %s: %w", l.key, err)
	}
	return n == 1, nil
}

// Keep renews the lock every TTL/3 until ctx ends (then it returns nil) or
// Redis says the lock is gone or another's (then it returns an error
// wrapping ErrLockLost at once). A renewal that fails on the way (Redis
// unreachable, a time-out) is passed to transient, if not nil, and retried
// at the next tick: the TTL covers two missed renewals. Keep does not
// release the lock.
func (l *Lock) Keep(ctx context.Context, transient func(error)) error {
	t := time.NewTicker(l.ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		ok, err := l.Renew(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			if transient != nil {
				transient(err)
			}
		case !ok:
			return fmt.Errorf("%w: %s expired and is gone or held by another process", ErrLockLost, l.key)
		}
	}
}
