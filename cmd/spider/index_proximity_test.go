package main

import (
	"regexp"
	"strings"
	"testing"
)

// TestSearchProximityWeight: --proximity-weight adds the proximity bonus
// (shown beside the score) to a query of several words whose words stand
// together in a page (here an article's title), and a weight out of range
// is a usage error naming the flag.
func TestSearchProximityWeight(t *testing.T) {
	data := crawlForIndex(t)
	if code, _, errOut := runCLI(t, "index", "--data", data); code != 0 {
		t.Fatal(errOut)
	}
	code, out, errOut := runCLI(t, "search", "--data", data, "--limit", "1", "article")
	title := regexp.MustCompile(`Article: (\S+) (\S+)`).FindStringSubmatch(out)
	if code != 0 || title == nil {
		t.Fatalf("search article: code %d, no article title in\n%s\n%s", code, out, errOut)
	}
	q := title[1] + " " + title[2]
	code, out, errOut = runCLI(t, "search", "--data", data, "--proximity-weight", "2", "--explain", q)
	if code != 0 || !strings.Contains(out, "proximity ") || !strings.Contains(out, "+ proximity ") {
		t.Errorf("search --proximity-weight 2 %q: code %d, want the proximity term shown\n%s\n%s", q, code, out, errOut)
	}
	if code, out, _ = runCLI(t, "search", "--data", data, q); code != 0 || strings.Contains(out, "proximity") {
		t.Errorf("search %q without the flag: code %d, proximity shown\n%s", q, code, out)
	}
	for _, bad := range []string{"-1", "101"} {
		code, _, errOut := runCLI(t, "search", "--data", data, "--proximity-weight", bad, q)
		if code != 2 || !strings.Contains(errOut, "--proximity-weight") {
			t.Errorf("--proximity-weight %s: code %d, want 2 and the flag named\n%s", bad, code, errOut)
		}
	}
}
