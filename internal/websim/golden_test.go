package websim

import (
	"crypto/sha256"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/golden.txt")

// TestGolden pins the generated web: a change of any page, robots.txt or of the ground
// truth of a fixed configuration shows up here. Run with -update after an intended change
// (crawler tests and benchmarks measured on websim then need a look too).
func TestGolden(t *testing.T) {
	w := mustNew(t, Config{Seed: 7, Hosts: 8, PagesPerHost: 30, Profile: ProfileHostile, Disable: FeatureSlow,
		Port: 8080, TroubleShare: 1, LargeSize: 64 << 10, BombSize: 1 << 20})
	var b strings.Builder
	for _, host := range w.Hosts() {
		h := sha256.New()
		for _, p := range samplePaths(w) {
			code, hdr, body := get(t, w, "http://"+host+":8080"+p)
			fmt.Fprintf(h, "%s %d %s %s %d\n", p, code, hdr.Get("Content-Type"), hdr.Get("Location"), len(body))
			h.Write(body)
		}
		fmt.Fprintf(&b, "%s %x\n", host, h.Sum(nil))
	}
	truth, err := w.Truth(TruthRules{Seeds: w.SeedURLs(2), MaxDepth: 3, Scope: ScopeDomain})
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	for _, u := range truth.MustFetch {
		fmt.Fprintf(h, "%s %s %d\n", u, truth.Final[u], truth.Depth[u])
	}
	for _, u := range truth.NoiseURLs {
		fmt.Fprintln(h, u)
	}
	fmt.Fprintf(&b, "truth %d fetched, %d not fetched, %x\n", len(truth.MustFetch), len(truth.MustNotFetch), h.Sum(nil))
	path := filepath.Join("testdata", "golden.txt")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run TestGolden -update)", err)
	}
	if string(want) != b.String() {
		t.Fatalf("the generated web changed; if intended, run go test -run TestGolden -update\ngot:\n%s\nwant:\n%s", b.String(), want)
	}
}
