package p2p

import (
	"math"
	"testing"
)

func TestSpread(t *testing.T) {
	for _, tc := range []struct {
		name           string
		nodes          []NodeStatus
		fetched, queue float64
	}{
		{"empty", nil, 0, 0},
		{"even", []NodeStatus{{Weight: 100, Fetched: 50, Queue: 10}, {Weight: 100, Fetched: 50, Queue: 10}}, 0, 0},
		{"weighted even", []NodeStatus{{Weight: 150, Fetched: 150}, {Weight: 50, Fetched: 50}}, 0, 0},
		// shares 0.6/0.4 against 0.5/0.5: 20% off; queues 1/0: 100% off.
		{"uneven", []NodeStatus{{Weight: 1, Fetched: 60, Queue: 4}, {Weight: 1, Fetched: 40}}, 0.2, 1},
	} {
		s := spread(tc.nodes)
		if math.Abs(s.FetchedMaxDev-tc.fetched) > 1e-9 || math.Abs(s.QueueMaxDev-tc.queue) > 1e-9 {
			t.Errorf("%s: spread = %+v, want fetched %v queue %v", tc.name, s, tc.fetched, tc.queue)
		}
	}
}
