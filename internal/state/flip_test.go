package state

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/spider-crawler/spider/internal/frontier"
)

// TestFlippedStateNeverPanics: random bit flips in a state file give
// ErrDamaged at Open or a state that loads its pending URLs, never a panic
// (bbolt asserted on a page that did not identify as itself, inside
// LoadPending, before Open checked the file's structure).
func TestFlippedStateNeverPanics(t *testing.T) {
	golden := t.TempDir()
	if err := fillState(golden); err != nil {
		t.Fatal(err)
	}
	orig, err := os.ReadFile(filepath.Join(golden, DBFile))
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
				if !errors.Is(err, ErrDamaged) {
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
