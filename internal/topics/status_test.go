package topics

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestStatusFileJSON writes a status and reads it back: the file has
// period_ms (a number, not "1m0s") and RFC 3339 times; a file written
// before that change ("period": "1m30s") still reads with its period.
func TestStatusFileJSON(t *testing.T) {
	dir := t.TempDir()
	at := time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC)
	st := Status{Updated: at, Epoch: 3, PeriodMS: 60_000, PeriodStart: at, Tasks: []TaskStatus{{Name: "a", SliceTotalMS: 500}}}
	if err := WriteStatus(dir, st); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, StatusFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"period_ms": 60000`, `"updated": "2026-11-25T03:00:00Z"`, `"slice_total_ms": 500`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("status file lacks %s:\n%s", want, b)
		}
	}
	got, err := ReadStatus(dir)
	if err != nil || got.PeriodMS != 60_000 || got.Epoch != 3 {
		t.Errorf("read back: %+v, %v", got, err)
	}

	old := `{"updated": "2026-11-25T03:00:00Z", "epoch": 2, "period": "1m30s", "tasks": []}`
	if err := os.WriteFile(filepath.Join(dir, StatusFile), []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err = ReadStatus(dir)
	if err != nil || got.PeriodMS != 90_000 || got.Epoch != 2 {
		t.Errorf("old file: %+v, %v; want period_ms 90000", got, err)
	}
}

// TestStatusFilePriority: a changed priority shows beside the file's in the
// table; a status file without file_priority reads as unchanged.
func TestStatusFilePriority(t *testing.T) {
	s, clk := newTestScheduler(t, testYAML)
	if err := s.SetPriority("tax", 4); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	s.Status(clk.Now()).Print(&b)
	if !strings.Contains(b.String(), "4 (file 0)") {
		t.Fatalf("table does not show tax's changed priority:\n%s", b.String())
	}
	dir := t.TempDir()
	old := `{"updated": "2026-11-25T03:00:00Z", "period_ms": 1000, "tasks": [{"name": "a", "priority": 3}]}`
	if err := os.MkdirAll(filepath.Join(dir, "topics"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, StatusFile), []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadStatus(dir)
	if err != nil || got.Tasks[0].FilePriority != 3 {
		t.Fatalf("old file: %+v, %v; want file_priority 3", got, err)
	}
}
