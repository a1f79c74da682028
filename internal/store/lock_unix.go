//go:build unix

package store

import (
	"errors"
	"os"
	"syscall"
)

// tryLock takes an exclusive flock on f without waiting; ok is false when
// another open file holds it.
func tryLock(f *os.File) (ok bool, err error) { return flock(f, syscall.LOCK_EX|syscall.LOCK_NB) }

// tryShared takes a shared flock on f without waiting.
func tryShared(f *os.File) (ok bool, err error) { return flock(f, syscall.LOCK_SH|syscall.LOCK_NB) }

func flock(f *os.File, how int) (bool, error) {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, syscall.EWOULDBLOCK):
			return false, nil
		case errors.Is(err, syscall.EINTR):
			continue
		default:
			return false, err
		}
	}
}

func unlock(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
