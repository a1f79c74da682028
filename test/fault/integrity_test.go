package fault

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFileStateChanged checks the live-reader comparison on a hand-made data directory:
// the crawl's own appends and state rewrites pass, anything else a reader could do is
// reported.
func TestFileStateChanged(t *testing.T) {
	write := func(t *testing.T, dir, rel, content string) {
		t.Helper()
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name   string
		setup  func(t *testing.T, dir string) // after the common files; nil for none
		change func(t *testing.T, dir string)
		want   string // substring of the one difference expected; "" for none
	}{
		{"nothing", nil, func(*testing.T, string) {}, ""},
		{"crawl appends a page", nil, func(t *testing.T, d string) { write(t, d, "pages/PageData000000", "bodyA bodyB") }, ""},
		{"crawl rolls to a new data file", nil, func(t *testing.T, d string) { write(t, d, "pages/PageData000001", "bodyC") }, ""},
		{"crawl appends a record", nil, func(t *testing.T, d string) { write(t, d, "records.jsonl", "{\"a\":1}\n{\"b\":2}\n") }, ""},
		{"crawl rewrites its state", nil, func(t *testing.T, d string) { write(t, d, "state/state.db", "other") }, ""},
		{"page data cut", nil, func(t *testing.T, d string) { write(t, d, "pages/PageData000000", "body") }, "pages/PageData000000: shrank"},
		{"page index rewritten", nil, func(t *testing.T, d string) { write(t, d, "pages/PageIndex", "0 9 …\n") }, "pages/PageIndex: the first"},
		{"records cut", nil, func(t *testing.T, d string) { write(t, d, "records.jsonl", "") }, "records.jsonl: shrank"},
		{"state removed", nil, func(t *testing.T, d string) { os.Remove(filepath.Join(d, "state/state.db")) }, "state/state.db: removed"},
		{"lock file changed", nil, func(t *testing.T, d string) { write(t, d, "LOCK", "999") }, "LOCK: content changed"},
		{"file created", nil, func(t *testing.T, d string) { write(t, d, "stray.txt", "x") }, "stray.txt: created"},
		{"directory created", nil, func(t *testing.T, d string) { os.Mkdir(filepath.Join(d, "typo"), 0o700) }, "typo/: directory created"},
		// A tail read through FUSE while the crawl's write to it was in flight reads as
		// NULs (see settled): not content yet, so its real bytes later are no change.
		{"index tail read as NULs, then written", func(t *testing.T, d string) { write(t, d, "pages/PageIndex", "0 5 …\n\x00\x00\x00") },
			func(t *testing.T, d string) { write(t, d, "pages/PageIndex", "0 5 …\n1 3 …\n") }, ""},
		{"data tail read as NULs, then written", func(t *testing.T, d string) { write(t, d, "pages/PageData000000", "bodyA\x00\x00") },
			func(t *testing.T, d string) { write(t, d, "pages/PageData000000", "bodyAbodyB") }, ""},
		{"reader zeroes the index", nil, func(t *testing.T, d string) { write(t, d, "pages/PageIndex", "\x00\x00\x00\x00\x00\x00\x00\x00") }, "pages/PageIndex: shrank"},
		{"reader zeroes a record", nil, func(t *testing.T, d string) { write(t, d, "records.jsonl", "{\"a\"\x00}\n") }, "records.jsonl: shrank"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, "pages/PageData000000", "bodyA")
			write(t, dir, "pages/PageIndex", "0 5 …\n")
			write(t, dir, "records.jsonl", "{\"a\":1}\n")
			write(t, dir, "state/state.db", "state")
			write(t, dir, "LOCK", "123")
			if tc.setup != nil {
				tc.setup(t, dir)
			}
			before, err := TakeFileState(dir)
			if err != nil {
				t.Fatal(err)
			}
			tc.change(t, dir)
			diffs, err := before.Changed(dir)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.want == "" && len(diffs) > 0:
				t.Errorf("differences %q, want none", diffs)
			case tc.want != "" && (len(diffs) != 1 || !strings.Contains(diffs[0], tc.want)):
				t.Errorf("differences %q, want one containing %q", diffs, tc.want)
			}
		})
	}
}

// TestDamageFile checks that every damage changes the file and says how, and that an
// empty file is left alone.
func TestDamageFile(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	dir := t.TempDir()
	orig := bytes.Repeat([]byte("spider "), 100)
	truncs, flips := 0, 0
	for i := range 200 {
		p := filepath.Join(dir, "f")
		if err := os.WriteFile(p, orig, 0o600); err != nil {
			t.Fatal(err)
		}
		how, ok, err := damageFile(rng, p)
		if err != nil || !ok {
			t.Fatalf("damage %d: %v %v", i, ok, err)
		}
		got, _ := os.ReadFile(p)
		if bytes.Equal(got, orig) {
			t.Fatalf("damage %d (%s) left the file unchanged", i, how)
		}
		switch {
		case strings.HasPrefix(how, "truncated"):
			truncs++
			if len(got) >= len(orig) {
				t.Errorf("damage %d (%s) kept %d bytes", i, how, len(got))
			}
		case strings.HasPrefix(how, "bits flipped"):
			flips++
			if len(got) != len(orig) {
				t.Errorf("damage %d (%s) changed the length to %d", i, how, len(got))
			}
		default:
			t.Errorf("damage %d: unknown description %q", i, how)
		}
	}
	if truncs == 0 || flips == 0 {
		t.Errorf("%d truncations and %d bit flips in 200 damages: want both kinds", truncs, flips)
	}
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, nil, 0o600)
	if _, ok, err := damageFile(rng, empty); ok || err != nil {
		t.Errorf("an empty file was damaged (%v, %v)", ok, err)
	}
}
