//go:build !unix

package index

import "os"

// mapFile reads path into memory where mmap is not available.
func mapFile(path string) ([]byte, func() error, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	return data, func() error { return nil }, nil
}

// lockDir creates the lock file exclusively where flock is not available;
// a writer that died leaves it behind and it must be removed by hand.
func lockDir(path string) (func() error, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	f.Close()
	return func() error { return os.Remove(path) }, nil
}
