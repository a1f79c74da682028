package p2p

import (
	"testing"

	"github.com/spider-crawler/spider/internal/cluster"
)

// TestQuietConfirms: the crawl is over only when a second quiet check
// sees the same epoch, members and counters and a newer report of every
// member; a report the first check had seen may be stale (its node may
// have received a batch since), however long ago the first check was.
func TestQuietConfirms(t *testing.T) {
	first := &quiet{epoch: 3, sent: 10, received: 10, seqs: map[string]int64{"n1": 5, "n2": 7}}
	tests := []struct {
		name string
		q    *quiet
		want bool
	}{
		{"every member reported again", &quiet{epoch: 3, sent: 10, received: 10, seqs: map[string]int64{"n1": 6, "n2": 9}}, true},
		{"one member's report is the one seen", &quiet{epoch: 3, sent: 10, received: 10, seqs: map[string]int64{"n1": 6, "n2": 7}}, false},
		{"URLs sent since", &quiet{epoch: 3, sent: 12, received: 12, seqs: map[string]int64{"n1": 6, "n2": 9}}, false},
		{"another epoch", &quiet{epoch: 4, sent: 10, received: 10, seqs: map[string]int64{"n1": 6, "n2": 9}}, false},
		{"another member", &quiet{epoch: 3, sent: 10, received: 10, seqs: map[string]int64{"n1": 6, "n3": 9}}, false},
		{"a member more", &quiet{epoch: 3, sent: 10, received: 10, seqs: map[string]int64{"n1": 6, "n2": 9, "n3": 1}}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.q.confirms(first); got != tc.want {
				t.Fatalf("confirms = %v, want %v", got, tc.want)
			}
		})
	}
	if first.confirms(nil) {
		t.Fatal("a first check confirmed itself")
	}
}

// TestEventQueueOrder: a bucket's events are taken one at a time in the
// coordinator's order; a bucket URLs wait for (urge) is taken first.
func TestEventQueueOrder(t *testing.T) {
	q := newEventQueue()
	for _, ev := range []cluster.Event{{Kind: cluster.Acquired, Bucket: 1}, {Kind: cluster.Acquired, Bucket: 2},
		{Kind: cluster.Released, Bucket: 1}, {Kind: cluster.Acquired, Bucket: 3}, {Kind: cluster.Released, Bucket: 3}} {
		q.push(ev)
	}
	q.urge(3)
	take := func(want cluster.Event) {
		t.Helper()
		got, ok := q.take()
		if !ok || got != want {
			t.Fatalf("take = %+v %v, want %+v", got, ok, want)
		}
	}
	take(cluster.Event{Kind: cluster.Acquired, Bucket: 3}) // urgent
	take(cluster.Event{Kind: cluster.Acquired, Bucket: 1})
	take(cluster.Event{Kind: cluster.Acquired, Bucket: 2}) // 1 and 3 are being applied
	q.done(1)
	take(cluster.Event{Kind: cluster.Released, Bucket: 1})
	q.done(3)
	take(cluster.Event{Kind: cluster.Released, Bucket: 3})
	q.close()
	if _, ok := q.take(); ok {
		t.Fatal("take after close returned an event")
	}
}
