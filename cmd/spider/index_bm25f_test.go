package main

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestIndexOldFormatAndFields: spider search on an index of the format
// before BM25F says to run spider index, which rebuilds it; --fields is
// read and checked (a usage error names the flag), and other weights
// rebuild the index.
func TestIndexOldFormatAndFields(t *testing.T) {
	data := crawlForIndex(t)
	if code, _, errOut := runCLI(t, "index", "--data", data); code != 0 {
		t.Fatal(errOut)
	}
	segs, _ := filepath.Glob(filepath.Join(data, "index", "*.seg"))
	if len(segs) == 0 {
		t.Fatal("no segment")
	}
	for _, s := range segs {
		b, err := os.ReadFile(s)
		if err != nil {
			t.Fatal(err)
		}
		binary.LittleEndian.PutUint32(b[8:], 2) // the format before BM25F
		if err := os.WriteFile(s, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, _, errOut := runCLI(t, "search", "--data", data, "page")
	if code == 0 || !strings.Contains(errOut, "format version 2") || !strings.Contains(errOut, "run spider index") {
		t.Errorf("search on an old index: code %d, want a message saying to run spider index:\n%s", code, errOut)
	}
	code, out, errOut := runCLI(t, "index", "--data", data)
	if code != 0 || !strings.Contains(out, "pages added") {
		t.Fatalf("index over an old index: code %d, want a rebuild\n%s\n%s", code, out, errOut)
	}
	if code, _, errOut := runCLI(t, "search", "--data", data, "page"); code != 0 {
		t.Errorf("search after the rebuild: code %d\n%s", code, errOut)
	}
	// Other weights: rebuilt from the first record.
	code, out, _ = runCLI(t, "index", "--data", data, "--fields", "title=0,headings=0,anchor=0")
	if code != 0 || !strings.Contains(out, "pages added") {
		t.Errorf("index with other weights: code %d, want a rebuild\n%s", code, out)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--fields", "body=0"}, "body must be"},
		{[]string{"--fields", "colour=2"}, "the fields are"},
		{[]string{"--fields", "title=3", "--mapper", "--redis", "redis://127.0.0.1:1"}, "default field weights"},
	} {
		code, _, errOut := runCLI(t, append([]string{"index", "--data", data}, c.args...)...)
		if code != 2 || !strings.Contains(errOut, "--fields") || !strings.Contains(errOut, c.want) {
			t.Errorf("index %v: code %d, want 2 and a message with --fields and %q:\n%s", c.args, code, c.want, errOut)
		}
	}
}
