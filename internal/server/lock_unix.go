//go:build unix

package server

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"

	"github.com/spider-crawler/spider/internal/state"
	"github.com/spider-crawler/spider/internal/store"
)

// Locked reports whether a crawl process holds the data directory's state
// database (bbolt takes an exclusive flock on it for as long as a crawl
// runs). It asks for a shared lock without waiting and lets it go at once.
func Locked(dataDir string) bool {
	f, err := os.Open(filepath.Join(store.DataDir(dataDir).State(), state.DBFile))
	if err != nil {
		return false
	}
	defer f.Close()
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
	if err == nil {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		return false
	}
	return errors.Is(err, syscall.EWOULDBLOCK)
}
