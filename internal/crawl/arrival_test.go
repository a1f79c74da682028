package crawl

import (
	"testing"
	"time"
)

// TestArrivalBound: the start-to-start delay counts from the answer's
// first byte less the fastest round trip seen on any host, plus the guard.
func TestArrivalBound(t *testing.T) {
	f := &Fetcher{cfg: Config{Delay: Duration(640 * time.Millisecond), DelayFrom: DelayFromStart}}
	const guard = 20 * time.Millisecond // 640 ms / 32
	t0 := time.Unix(100, 0)
	tr := func(written, firstByte time.Duration) *reqTrace {
		r := &reqTrace{}
		if written >= 0 {
			r.written.Store(t0.Add(written).UnixNano())
		}
		if firstByte >= 0 {
			r.firstByte.Store(t0.Add(firstByte).UnixNano())
		}
		return r
	}
	for _, tc := range []struct {
		name             string
		written, firstBy time.Duration
		want             time.Duration // after t0
	}{
		{"first request: write time", 0, 80 * time.Millisecond, guard},
		{"faster: write time", time.Second, time.Second + 50*time.Millisecond, time.Second + guard},
		{"slower by 30 ms", 2 * time.Second, 2*time.Second + 80*time.Millisecond, 2*time.Second + 30*time.Millisecond + guard},
		{"another host, slower by 100 ms", 3 * time.Second, 3*time.Second + 150*time.Millisecond, 3*time.Second + 100*time.Millisecond + guard},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := f.arrivalBound(tr(tc.written, tc.firstBy)).Sub(t0); got != tc.want {
				t.Errorf("arrival bound %s after t0, want %s", got, tc.want)
			}
		})
	}
	// Never written or never answered: now.
	before := time.Now()
	if got := f.arrivalBound(tr(0, -1)); got.Before(before) {
		t.Errorf("unanswered request: %s, want now", got)
	}
	if got := f.arrivalBound(tr(-1, -1)); got.Before(before) {
		t.Errorf("unwritten request: %s, want now", got)
	}
}
