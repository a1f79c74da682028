package exthash

import (
	"fmt"
	"os"
	"path/filepath"
)

// FS is the file layer a Table stores its files through. The default is the
// operating system's (OSFS); tests plug in a layer that injects faults and
// simulates crashes. Paths are slash-separated names joined with filepath.
type FS interface {
	// MkdirAll creates dir and its parents.
	MkdirAll(dir string) error
	// OpenFile opens name for reading and writing, creating it empty when it
	// does not exist.
	OpenFile(name string) (File, error)
	// SyncDir makes the creation of files in dir durable.
	SyncDir(dir string) error
}

// File is one open file of an FS.
type File interface {
	// ReadAt and WriteAt are io.ReaderAt and io.WriterAt; WriteAt past the
	// end extends the file.
	ReadAt(p []byte, off int64) (int, error)
	WriteAt(p []byte, off int64) (int, error)
	// Sync makes every completed WriteAt durable.
	Sync() error
	// Size returns the file's length in bytes.
	Size() (int64, error)
	// Close closes the file.
	Close() error
}

// OSFS is the operating system's file layer.
type OSFS struct{}

var _ FS = OSFS{}

// MkdirAll creates dir with mode 0o755.
func (OSFS) MkdirAll(dir string) error { return os.MkdirAll(dir, 0o755) }

// OpenFile opens name read-write, creating it with mode 0o644.
func (OSFS) OpenFile(name string) (File, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

// SyncDir fsyncs the directory dir.
func (OSFS) SyncDir(dir string) error {
	d, err := os.Open(filepath.Clean(dir))
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("cannot sync directory %s: %w", dir, err)
	}
	return nil
}

type osFile struct{ *os.File }

func (f osFile) Size() (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}
