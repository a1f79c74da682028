package layered

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spider-crawler/spider/internal/frontier"
	"github.com/spider-crawler/spider/internal/store"
)

// Layout of DATA/layered (see the package documentation).
const (
	DirName      = store.LayeredDirName // store.DataDir.Layered
	ManifestFile = "manifest.json"
	ReportFile   = "report.json"
	ResultFile   = "result.json"
)

func roundDir(root string, r int) string { return filepath.Join(root, fmt.Sprintf("round-%03d", r)) }

func passFile(root string, r, p int) string {
	if p == 0 {
		return filepath.Join(roundDir(root, r), "in.txt")
	}
	return filepath.Join(roundDir(root, r), fmt.Sprintf("redirects-%02d.txt", p))
}

func taskDir(root string, t Task) string {
	if t.Kind == KindRevisit {
		return filepath.Join(revisitDir(root, t.Round), fmt.Sprintf("group-%04d", t.Group))
	}
	return filepath.Join(roundDir(root, t.Round), fmt.Sprintf("pass-%02d", t.Pass), fmt.Sprintf("group-%04d", t.Group))
}

// revisitDir is revisit round n's directory: its input (in.json) and
// its tasks' directories.
func revisitDir(root string, n int) string {
	return filepath.Join(root, "revisits", fmt.Sprintf("round-%06d", n))
}

// writeFileAtomic writes b to path through a temporary file and a rename,
// with fsync, so a reader sees the old or the new file, never a torn one.
func writeFileAtomic(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("cannot create %s: %w", filepath.Dir(path), err)
	}
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("cannot sync %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	return nil
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("cannot encode %s: %w", path, err)
	}
	return writeFileAtomic(path, append(b, '\n'))
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("cannot read %s (remove it to redo that step): %w", path, err)
	}
	return nil
}

// writeInput stores a pass's input: one URL per line, followed by a tab and
// the redirect hops that led to it when there were any.
func writeInput(path string, reqs []frontier.Request) error {
	var b strings.Builder
	for _, r := range reqs {
		b.WriteString(r.URL)
		if r.Redirects > 0 {
			b.WriteByte('\t')
			b.WriteString(strconv.Itoa(r.Redirects))
		}
		b.WriteByte('\n')
	}
	return writeFileAtomic(path, []byte(b.String()))
}

// readInput reads a pass's input written by writeInput; depth is the
// round's.
func readInput(path string, depth int) ([]frontier.Request, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read round input: %w", err)
	}
	defer f.Close()
	var out []frontier.Request
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		u, hops, found := strings.Cut(line, "\t")
		r := frontier.Request{URL: u, Depth: depth, Priority: depth}
		if found {
			h, err := strconv.Atoi(hops)
			if err != nil || h < 0 {
				return nil, fmt.Errorf("%s line %d: bad redirect count %q", path, n, hops)
			}
			r.Redirects = h
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("cannot read %s: %w", path, err)
	}
	return out, nil
}
