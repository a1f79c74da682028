//go:build unix

package index

import (
	"fmt"
	"os"
	"syscall"
)

// mapFile maps path read-only. Segment files are immutable once renamed
// into place, and a mapping stays valid after the file is removed, so a
// merge may delete a segment that running queries still read.
func mapFile(path string) ([]byte, func() error, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if info.Size() == 0 {
		return []byte{}, func() error { return nil }, nil
	}
	if info.Size() != int64(int(info.Size())) {
		return nil, nil, fmt.Errorf("file of %d bytes is too large to map", info.Size())
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, int(info.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot map: %w", err)
	}
	return data, func() error { return syscall.Munmap(data) }, nil
}

// lockDir takes an exclusive advisory lock on dir/LOCK, so that only one
// writer changes an index at a time. The lock is released by the returned
// function or when the process dies.
func lockDir(path string) (func() error, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("another spider index is writing this index (%s is locked): wait for it to finish", path)
	}
	return f.Close, nil
}
