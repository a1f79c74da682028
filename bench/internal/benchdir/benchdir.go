// Package benchdir holds what every benchmark program needs to find its
// way: the repository root and a work directory.
package benchdir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Root walks up from the working directory to the go.mod of module
// github.com/spider-crawler/spider.
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("cannot find the repository root: %w", err)
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(b), "module github.com/spider-crawler/spider\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("cannot find the repository root: run inside the spider repository or give --root")
		}
		dir = parent
	}
}

// Work returns the work directory: dir (created if missing), or, when dir
// is empty, a new temporary one named after prefix. cleanup removes a
// temporary directory unless keep is set; it does nothing otherwise.
func Work(dir, prefix string, keep bool) (work string, cleanup func(), err error) {
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", nil, fmt.Errorf("cannot create the work directory: %w", err)
		}
		return dir, func() {}, nil
	}
	work, err = os.MkdirTemp("", prefix+"-")
	if err != nil {
		return "", nil, fmt.Errorf("cannot create a work directory: %w", err)
	}
	if keep {
		return work, func() {}, nil
	}
	return work, func() { os.RemoveAll(work) }, nil
}
