package parse

import (
	"os"
	"regexp"
	"testing"
)

// TestWantedAttrs: every attribute name the walker looks up is one
// readAttrs keeps (wantedAttr); a lookup of a name it drops would never
// find anything.
func TestWantedAttrs(t *testing.T) {
	src, err := os.ReadFile("walk.go")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?:lookupAttr|attr)\(attrs, "([^"]+)"\)`)
	ms := re.FindAllSubmatch(src, -1)
	if len(ms) < 5 {
		t.Fatalf("found %d attribute lookups in walk.go; the pattern is out of date", len(ms))
	}
	for _, m := range ms {
		if got := wantedAttr(m[1]); got != string(m[1]) {
			t.Errorf("walk.go looks up attribute %q, which readAttrs drops (wantedAttr gives %q)", m[1], got)
		}
	}
}
