package main

import (
	"io"
	"math"
	"testing"
	"time"
)

func TestCV(t *testing.T) {
	for _, tc := range []struct {
		name string
		xs   []float64
		want float64
	}{
		{"even", []float64{5, 5, 5}, 0},
		{"all zero", []float64{0, 0, 0}, 0},
		{"one of three", []float64{0, 0, 3}, math.Sqrt2},
		{"two values", []float64{1, 3}, 0.5},
	} {
		if got := cv(tc.xs); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: cv(%v) = %v, want %v", tc.name, tc.xs, got, tc.want)
		}
	}
}

func TestReportZeroIntervals(t *testing.T) {
	names := []string{"a", "b"}
	// Cumulative samples: b gets nothing in intervals 1 and 3.
	samples := []map[string]int64{{"a": 2}, {"a": 4, "b": 2}, {"a": 6, "b": 2}}
	r := report(io.Discard, "x", names, 3*time.Second, time.Second, samples, "")
	if r.ZeroLate != 1 {
		t.Errorf("ZeroLate = %d, want 1 (interval 3; interval 1 does not count)", r.ZeroLate)
	}
	if got := r.Zero["b"]; len(got) != 2 || got[0] != 1 || got[1] != 3 {
		t.Errorf("Zero[b] = %v, want [1 3]", got)
	}
	if r.Totals[0] != 6 || r.Totals[1] != 2 || math.Abs(r.TotalCV-0.5) > 1e-9 {
		t.Errorf("totals %v CV %v, want [6 2] and 0.5", r.Totals, r.TotalCV)
	}
	if r.PerInt[1][0] != 2 || r.PerInt[1][1] != 2 || r.CVs[1] != 0 {
		t.Errorf("interval 2: %v CV %v, want [2 2] and 0", r.PerInt[1], r.CVs[1])
	}
}
