package rank

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// PagesFile is the page ranks file, relative to a crawl data directory:
// DATA/rank/pages.tsv. Each line is "<score %.17g>\t<url>\n", sorted by score
// descending, then URL ascending.
const PagesFile = "rank/pages.tsv"

// HostsFile is the host ranks file, relative to a crawl data directory:
// DATA/rank/hosts.tsv, same format as PagesFile but keyed by host name.
const HostsFile = "rank/hosts.tsv"

// ReadScores reads a scores file written by WriteScores and returns key →
// score. A missing file yields an error wrapping fs.ErrNotExist; a malformed
// line yields an error naming the file and line number.
func ReadScores(path string) (map[string]float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot open rank scores %s (run `spider rank --data DIR` first): %w", path, err)
	}
	defer f.Close()
	scores, err := parseScores(f)
	if err != nil {
		return nil, fmt.Errorf("cannot read rank scores %s (run `spider fsck --data DIR --repair`, or delete it, then rerun `spider rank`): %w", path, err)
	}
	return scores, nil
}

// parseScores decodes the scores format from r.
func parseScores(r io.Reader) (map[string]float64, error) {
	scores := make(map[string]float64)
	// WriteScores ends every line with a newline: a last line without one
	// is a torn file whose last key may be cut short.
	var last byte
	r = &lastByte{r: r, last: &last}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if text == "" {
			continue
		}
		tab := strings.IndexByte(text, '\t')
		if tab < 0 {
			return nil, fmt.Errorf("line %d: missing tab between score and key", line)
		}
		v, err := strconv.ParseFloat(text[:tab], 64)
		if err != nil {
			return nil, fmt.Errorf("line %d: bad score %q: %w", line, text[:tab], err)
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("line %d: score %q is not finite", line, text[:tab])
		}
		key := text[tab+1:]
		if key == "" {
			return nil, fmt.Errorf("line %d: empty key", line)
		}
		if _, dup := scores[key]; dup {
			return nil, fmt.Errorf("line %d: duplicate key %q", line, key)
		}
		scores[key] = v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", line+1, err)
	}
	if line > 0 && last != '\n' {
		return nil, fmt.Errorf("line %d: no newline at the end: the file is truncated", line)
	}
	return scores, nil
}

// lastByte passes r through and remembers the last byte read.
type lastByte struct {
	r    io.Reader
	last *byte
}

func (l *lastByte) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	if n > 0 {
		*l.last = p[n-1]
	}
	return n, err
}

// SortedScores returns the entries of scores ordered by score descending,
// then key ascending (the order of the scores files).
func SortedScores(scores map[string]float64) []Scored {
	out := make([]Scored, 0, len(scores))
	for k, v := range scores {
		out = append(out, Scored{Key: k, Score: v})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Score != out[j].Score {
			return out[i].Score > out[j].Score
		}
		return out[i].Key < out[j].Key
	})
	return out
}

// Scored is one (key, score) pair of a ranking.
type Scored struct {
	Key   string
	Score float64
}

// WriteScores writes scores to path atomically (temporary file in the same
// directory, fsync, rename, directory fsync), creating the parent directory.
// Keys must be non-empty and free of tabs and newlines; scores must be finite.
func WriteScores(path string, scores map[string]float64) error {
	for k, v := range scores {
		if k == "" || strings.ContainsAny(k, "\t\n\r") {
			return fmt.Errorf("cannot write rank scores %s: key %q is empty or contains a tab/newline", path, k)
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("cannot write rank scores %s: score of %q is not finite", path, k)
		}
	}
	var b strings.Builder
	for _, s := range SortedScores(scores) {
		b.WriteString(strconv.FormatFloat(s.Score, 'g', 17, 64))
		b.WriteByte('\t')
		b.WriteString(s.Key)
		b.WriteByte('\n')
	}
	return writeFileAtomic(path, []byte(b.String()))
}

// writeFileAtomic replaces path with data: tmp file + fsync + rename + dir fsync.
func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("cannot create directory %s (check permissions): %w", dir, err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("cannot create temporary file in %s (check permissions and free space): %w", dir, err)
	}
	name := tmp.Name()
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(name)
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("cannot write %s (check free space): %w", name, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("cannot fsync %s: %w", name, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("cannot close %s: %w", name, err)
	}
	if err := os.Rename(name, path); err != nil {
		return fmt.Errorf("cannot rename %s to %s: %w", name, path, err)
	}
	ok = true
	if d, err := os.Open(dir); err == nil {
		serr := d.Sync()
		d.Close()
		if serr != nil && !errors.Is(serr, os.ErrInvalid) {
			return fmt.Errorf("cannot fsync directory %s: %w", dir, serr)
		}
	}
	return nil
}
