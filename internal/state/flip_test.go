package state

import (
	"context"
	"errors"
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spider-crawler/spider/internal/frontier"
)

var updateFlip = flag.Bool("update-flip", false, "rewrite testdata/flip/state.db for TestFlippedStateNeverPanics")

// TestFlippedStateNeverPanics: random bit flips in a state file give
// ErrDamaged at Open or a state that loads its pending URLs, never a panic
// (bbolt asserted on a page that did not identify as itself, inside
// LoadPending, before Open checked the file's structure).
func TestFlippedStateNeverPanics(t *testing.T) {
	// A state written once by fillState and kept, so that every run flips
	// the same bytes (a new fillState differs in times and page layout).
	// Regenerate with: go test ./internal/state -run TestFlippedStateNeverPanics -update-flip
	path := filepath.Join("testdata", "flip", DBFile)
	if *updateFlip {
		dir := t.TempDir()
		if err := fillState(dir); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dir, DBFile))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	damagedN := 0
	for run := range 300 {
		b := append([]byte(nil), orig...)
		for range 1 + rng.IntN(4) {
			b[rng.IntN(len(b))] ^= 1 << rng.IntN(8)
		}
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, DBFile), b, 0o600); err != nil {
			t.Fatal(err)
		}
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("run %d: panic: %v", run, r)
				}
			}()
			s, err := Open(dir, Options{SyncInterval: -1, ExpectedURLs: 1000})
			if err != nil {
				// A flipped format number reads as a newer format: that
				// refusal (naming the format) is as good as ErrDamaged.
				if !errors.Is(err, ErrDamaged) && !strings.Contains(err.Error(), "state format") {
					t.Errorf("run %d: Open: %v, want ErrDamaged", run, err)
				}
				damagedN++
				return
			}
			defer s.Close()
			_ = s.LoadPending(context.Background(), func(frontier.Request) error { return nil })
		}()
	}
	if damagedN == 0 {
		t.Fatal("no flip was found damaged: the test flips nothing that matters")
	}
	t.Logf("%d of 300 flipped files refused as damaged", damagedN)
}
