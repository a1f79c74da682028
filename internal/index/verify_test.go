package index

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spider-crawler/spider/internal/websim"
)

// TestBuildRebuildsDamagedSegments damages a live segment of a built index
// in each way and checks that Verify names it, that opening the index for
// search fails naming the segment and spider fsck, and that Build reports
// it and rebuilds the index from the records to what it held before
// (instead of saying "up to date").
func TestBuildRebuildsDamagedSegments(t *testing.T) {
	data, _, _ := crawlWeb(t, websim.Config{Seed: 4, Hosts: 3, PagesPerHost: 10}, 2)
	ctx := context.Background()
	if _, err := Build(ctx, data, BuildOptions{Workers: 1, BatchRecords: 8, MaxSegments: 100}); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(data, DirName)
	searchAll := func() []string {
		t.Helper()
		ix, err := Open(dir, Options{ReloadInterval: -1, NoWarm: true})
		if err != nil {
			t.Fatal(err)
		}
		defer ix.Close()
		return urls(t, ix, "site:www.d0.test OR site:www.d1.test OR site:www.d2.test")
	}
	want := searchAll()
	if len(want) == 0 {
		t.Fatal("the index finds nothing")
	}
	damages := []struct {
		name string
		do   func(path string) error
	}{
		{"flip", func(p string) error {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			b[len(b)/2] ^= 0x10
			return os.WriteFile(p, b, 0o600)
		}},
		{"truncate", func(p string) error { return os.Truncate(p, 100) }},
		{"empty", func(p string) error { return os.Truncate(p, 0) }},
		{"delete", os.Remove},
	}
	for _, d := range damages {
		t.Run(d.name, func(t *testing.T) {
			segs, _ := filepath.Glob(filepath.Join(dir, "*"+segmentSuffix))
			if len(segs) < 2 {
				t.Fatalf("want several segments, have %d", len(segs))
			}
			victim := filepath.Base(segs[len(segs)/2])
			if err := d.do(filepath.Join(dir, victim)); err != nil {
				t.Fatal(err)
			}
			damaged, exists, err := Verify(dir)
			if err != nil || !exists || len(damaged) != 1 || damaged[0].Name != victim {
				t.Fatalf("Verify: %v %v %v, want %s", damaged, exists, err, victim)
			}
			if !errors.Is(damaged[0].Err, ErrCorrupt) && !errors.Is(damaged[0].Err, fs.ErrNotExist) {
				t.Errorf("Verify's error %v wraps neither ErrCorrupt nor fs.ErrNotExist", damaged[0].Err)
			}
			_, err = Open(dir, Options{ReloadInterval: -1})
			if err == nil || !strings.Contains(err.Error(), victim) || !strings.Contains(err.Error(), "spider fsck") {
				t.Errorf("Open over a damaged segment: %v, want an error naming %s and spider fsck", err, victim)
			}
			st, err := Build(ctx, data, BuildOptions{Workers: 1, BatchRecords: 8, MaxSegments: 100})
			if err != nil {
				t.Fatal(err)
			}
			if len(st.Damaged) != 1 || st.Damaged[0].Name != victim || st.Records == 0 {
				t.Fatalf("Build: damaged %v, %d records indexed; want %s reported and the records indexed again", st.Damaged, st.Records, victim)
			}
			if got := searchAll(); !slices.Equal(got, want) {
				t.Errorf("after the rebuild the index finds %d pages, before the damage %d", len(got), len(want))
			}
			if damaged, _, err := Verify(dir); err != nil || len(damaged) != 0 {
				t.Errorf("Verify after the rebuild: %v %v", damaged, err)
			}
		})
	}
}
