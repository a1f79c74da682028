package crawl

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/spider-crawler/spider/internal/state"
	"github.com/spider-crawler/spider/internal/store"
)

// ErrInconsistent is wrapped by New when the data directory's state and
// files disagree in a way a crawl must not continue from (the error names
// the file and spider fsck).
var ErrInconsistent = errors.New("crawl data directory is inconsistent")

// stateDir is the embedded state's directory inside a data directory.
func stateDir(data string) string { return store.DataDir(data).State() }

// checkStateFile refuses to start a new state beside existing records: a
// missing or empty DATA/state/state.db would otherwise start the crawl
// again from the seeds, fetching every URL again and doubling the records.
func checkStateFile(data string) error {
	path := filepath.Join(stateDir(data), state.DBFile)
	info, err := os.Stat(path)
	switch {
	case err == nil && info.Size() > 0:
		return nil
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("cannot open crawl state %s: %w", path, err)
	}
	what := "is missing"
	if err == nil {
		what = "is empty"
	}
	n, err := countLines(filepath.Join(data, store.RecordsFileName))
	if err != nil || n == 0 {
		return nil // no records (or none readable): a new crawl
	}
	return fmt.Errorf("cannot resume the crawl in %s: the state %s %s but %s holds %d records; a new state would fetch every URL again. %s: %w",
		data, path, what, filepath.Join(data, store.RecordsFileName), n, store.FsckAdvice(data), ErrInconsistent)
}

// countLines counts the complete lines of the file at path (0 if it does
// not exist).
func countLines(path string) (int64, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	buf := make([]byte, 256<<10)
	var n int64
	for {
		k, err := f.Read(buf)
		n += int64(bytes.Count(buf[:k], []byte{'\n'}))
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// checkDataDir checks, before anything in the data directory is opened
// for writing, that its files agree with its state: a state beside records
// must exist and not be empty (checkStateFile), must not be damaged, and
// records.jsonl must be at least as long as the state's completions say
// (state.Marks.RecordsEnd; for a state written before that mark was kept:
// hold at least one line per completed URL). It returns the state's marks.
func checkDataDir(data string) (state.Marks, error) {
	if err := checkStateFile(data); err != nil {
		return state.Marks{}, err
	}
	marks, err := state.ReadMarks(stateDir(data))
	if err != nil {
		return marks, err
	}
	path := filepath.Join(data, store.RecordsFileName)
	var size int64
	if info, err := os.Stat(path); err == nil {
		size = info.Size()
	} else if !errors.Is(err, fs.ErrNotExist) {
		return marks, fmt.Errorf("cannot check the crawl records: %w", err)
	}
	if size < marks.RecordsEnd {
		return marks, fmt.Errorf("cannot resume the crawl in %s: %s holds %d bytes but the state completed URLs whose records end at byte %d, so records were lost (the file was truncated or replaced). %s: %w",
			data, path, size, marks.RecordsEnd, store.FsckAdvice(data), ErrInconsistent)
	}
	if marks.RecordsEnd == 0 && marks.Completed > 0 {
		// A state written before RecordsEnd was kept: every completed URL
		// has at least one record line, so fewer lines lost records.
		n, err := countLines(path)
		if err != nil {
			return marks, fmt.Errorf("cannot check the crawl records: %w", err)
		}
		if n < marks.Completed {
			return marks, fmt.Errorf("cannot resume the crawl in %s: %s holds %d records but the state completed %d URLs, so records were lost (the file was truncated or replaced). %s: %w",
				data, path, n, marks.Completed, store.FsckAdvice(data), ErrInconsistent)
		}
	}
	return marks, nil
}

// skipLostPages skips the numbers of pages lost from the page files (a
// truncated PageData or PageIndex) up to next, the state's PageNext, so
// that they are never issued again.
func (f *Fetcher) skipLostPages(next int64, log *slog.Logger) error {
	lost, err := f.pages.SkipTo(next)
	if err != nil {
		return err
	}
	if lost > 0 {
		log.Warn("pages of completed URLs are missing from the page files; their page numbers are not reused, their records now read as lost pages. "+store.FsckAdvice(f.cfg.Data)+" to fetch them again",
			"dir", store.DataDir(f.cfg.Data).Pages(), "lost_pages", lost, "next_page", next)
	}
	return nil
}
