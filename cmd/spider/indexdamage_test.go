package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spider-crawler/spider/internal/index"
	"github.com/spider-crawler/spider/internal/websim"
)

// TestIndexRebuildsDamagedSegment: with a segment deleted or damaged,
// spider search names the segment and spider fsck, and spider index
// reports it and rebuilds the index (it used to say "up to date"), after
// which search answers as before.
func TestIndexRebuildsDamagedSegment(t *testing.T) {
	data := crawlForIndex(t)
	if code, out, errOut := runCLI(t, "index", "--data", data, "--batch", "20"); code != 0 {
		t.Fatalf("index: code %d\n%s%s", code, out, errOut)
	}
	en, _ := websim.TopicWords(websim.Topics()[0])
	query := en[0] + " OR " + en[1]
	code, before, errOut := runCLI(t, "search", "--data", data, "--limit", "50", "--json", query)
	if code != 0 {
		t.Fatalf("search: code %d %s", code, errOut)
	}
	for _, damage := range []string{"delete", "flip"} {
		segs, _ := filepath.Glob(filepath.Join(data, index.DirName, "*.seg"))
		if len(segs) == 0 {
			t.Fatal("no segments")
		}
		victim := segs[len(segs)-1]
		if damage == "delete" {
			os.Remove(victim)
		} else {
			b, _ := os.ReadFile(victim)
			b[len(b)/2] ^= 1
			os.WriteFile(victim, b, 0o600)
		}
		name := filepath.Base(victim)
		if code, _, errOut := runCLI(t, "search", "--data", data, query); code == 0 || !strings.Contains(errOut, name) || !strings.Contains(errOut, "spider fsck") {
			t.Errorf("%s: search over a damaged segment: code %d, stderr %q; want an error naming %s and spider fsck", damage, code, errOut, name)
		}
		code, out, errOut := runCLI(t, "index", "--data", data, "--batch", "20")
		if code != 0 || !strings.Contains(out, "damaged segment "+name) || !strings.Contains(out, "rebuilt") || strings.Contains(out, "up to date") {
			t.Errorf("%s: index over a damaged segment: code %d\n%s%s", damage, code, out, errOut)
		}
		code, after, errOut := runCLI(t, "search", "--data", data, "--limit", "50", "--json", query)
		if code != 0 || stripTook(after) != stripTook(before) {
			t.Errorf("%s: search after the rebuild differs (code %d, %s)", damage, code, errOut)
		}
	}
}

// stripTook drops the timing field of a JSON search result.
func stripTook(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if !strings.Contains(l, `"took_ms"`) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
