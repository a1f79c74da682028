package rank

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadScoresDamaged: a scores file cut anywhere, or with a damaged
// line, is refused with an error naming the file and spider fsck; it is
// never read as a shorter or different set of scores.
func TestReadScoresDamaged(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "pages.tsv")
	scores := map[string]float64{"http://a.test/": 0.5, "http://a.test/long/path/page.html": 0.25, "http://b.test/x": 0.125}
	if err := WriteScores(path, scores); err != nil {
		t.Fatal(err)
	}
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := ReadScores(path); err != nil || len(got) != 3 {
		t.Fatalf("intact file: %v %v", got, err)
	}
	for cut := 1; cut < len(orig); cut++ {
		if orig[cut-1] == '\n' {
			continue // a cut at a line end loses whole lines only, like an older file
		}
		if err := os.WriteFile(path, orig[:cut], 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := ReadScores(path)
		if err == nil {
			t.Errorf("cut at %d of %d: read %v without an error", cut, len(orig), got)
			continue
		}
		if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "spider fsck") {
			t.Errorf("cut at %d: error %q does not name the file and spider fsck", cut, err)
		}
	}
	bad := strings.Replace(string(orig), "\t", " ", 1)
	if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadScores(path); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("damaged line: %v", err)
	}
	if _, err := ReadScores(filepath.Join(dir, "missing.tsv")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}
