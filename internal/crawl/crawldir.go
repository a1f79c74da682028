package crawl

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/spider-crawler/spider/internal/store"
)

// ErrNoCrawl is wrapped by CheckCrawlDir's error for a data directory that
// holds no crawl (a missing or mistyped --data): the commands that read a
// crawl exit 2 with it, as for any other wrong argument.
var ErrNoCrawl = errors.New("no crawl there")

// CheckCrawlDir returns nil when dir holds a crawl (its records.jsonl
// exists), and otherwise an error naming the path and what to do, wrapping
// ErrNoCrawl when dir or its records.jsonl does not exist (or dir is a file). It only looks:
// it never creates or changes anything, so a read-only command calls it
// before opening anything in dir.
func CheckCrawlDir(dir string) error {
	path := filepath.Join(dir, store.RecordsFileName)
	_, err := os.Stat(path)
	switch {
	case err == nil:
		return nil
	case !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR):
		return fmt.Errorf("cannot read the crawl in %s: %w", dir, err)
	}
	what := "holds no crawl records (no " + store.RecordsFileName + ")"
	if fi, derr := os.Stat(dir); derr != nil {
		what = "does not exist"
	} else if !fi.IsDir() {
		what = "is not a directory"
	}
	return fmt.Errorf("%s %s: give the --data directory of a crawl, or run spider crawl --data %s URL first: %w",
		dir, what, dir, ErrNoCrawl)
}
