package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// LockFileName is the data directory's lock file (see LockDir).
const LockFileName = "LOCK"

// DefaultLockWait is how long LockDir waits for another process to release
// the directory when wait is zero.
const DefaultLockWait = time.Second

// DirLock is an exclusive lock on a crawl's data directory, held from
// LockDir until Unlock (or the process's end: the operating system drops it
// even after kill -9, so a stale lock file never blocks a new crawl).
type DirLock struct {
	dir string
	f   *os.File
}

// LockDir takes the data directory's lock: an exclusive flock on
// dir/LOCK, creating dir (DirMode) and the file (FileMode) if needed. Every
// process that writes a crawl's files takes it before it opens any of them
// for writing, so a second crawl on the same directory is refused before
// it can touch (or "repair") a file the first one is writing. Readers
// (Options.ReadOnly) take no lock. command names the holder in the lock
// file ("spider crawl"), for the error another process gets: it wraps
// ErrLocked and names the holder's pid and command. LockDir waits up to
// wait (0: DefaultLockWait) for the lock.
func LockDir(dir, command string, wait time.Duration) (*DirLock, error) {
	if wait <= 0 {
		wait = DefaultLockWait
	}
	if err := os.MkdirAll(dir, DirMode); err != nil {
		return nil, fmt.Errorf("cannot create data directory %s: %w", dir, err)
	}
	path := filepath.Join(dir, LockFileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, FileMode)
	if err != nil {
		return nil, fmt.Errorf("cannot open the data directory's lock file %s: %w", path, err)
	}
	deadline := time.Now().Add(wait)
	for {
		ok, err := tryLock(f)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("cannot lock the data directory %s: %w", dir, err)
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			holder := lockHolder(path)
			f.Close()
			return nil, fmt.Errorf("cannot use data directory %s: it is in use by %s; wait for it to end or stop it, or give another --data directory: %w",
				dir, holder, ErrLocked)
		}
		time.Sleep(20 * time.Millisecond)
	}
	info := fmt.Sprintf("pid %d (%s) since %s\n", os.Getpid(), command, time.Now().UTC().Format(time.RFC3339))
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(info), 0)
	}
	return &DirLock{dir: dir, f: f}, nil
}

// lockHolder describes the process named in a lock file.
func lockHolder(path string) string {
	b, err := os.ReadFile(path)
	if s := strings.TrimSpace(string(b)); err == nil && s != "" {
		return "another process: " + s
	}
	return "another process (its pid is not recorded yet)"
}

// Dir returns the locked directory.
func (l *DirLock) Dir() string { return l.dir }

// Unlock releases the lock; the lock file stays. Later calls return nil.
func (l *DirLock) Unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	f := l.f
	l.f = nil
	_ = f.Truncate(0)
	err := unlock(f)
	return errors.Join(err, f.Close())
}

// Locked reports whether some process holds dir's lock (LockDir). It opens
// the lock file read-only and creates nothing.
func Locked(dir string) bool {
	f, err := os.Open(filepath.Join(dir, LockFileName))
	if err != nil {
		return false
	}
	defer f.Close()
	ok, err := tryShared(f)
	if err != nil {
		return false
	}
	if ok {
		_ = unlock(f)
	}
	return !ok
}
