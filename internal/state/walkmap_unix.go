//go:build unix

package state

import (
	"fmt"
	"os"
	"syscall"
)

// mapBoltFile maps the file at path read-only for walkBoltFile; unmap
// releases it.
func mapBoltFile(path string) (data []byte, unmap func(), err error) {
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
		return nil, func() {}, nil
	}
	if info.Size() != int64(int(info.Size())) {
		return nil, nil, fmt.Errorf("file of %d bytes is too large to map", info.Size())
	}
	data, err = syscall.Mmap(int(f.Fd()), 0, int(info.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot map %s: %w", path, err)
	}
	return data, func() { _ = syscall.Munmap(data) }, nil
}
