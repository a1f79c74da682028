package frontier

import "time"

// item is a queued URL in its compact in-memory form (48 bytes on 64-bit
// platforms). The key is not stored: ks points to the interned per-key state.
type item struct {
	url       string
	ks        *keyState
	seq       uint64
	depth     int32
	topic     uint32 // index into Frontier.topics
	attempt   uint16
	redirects uint16
	prio      uint16
	extra     *itemExtra // Kind and Schedule; nil for a plain page request (most)
}

// itemExtra holds the request fields few items have.
type itemExtra struct {
	kind     Kind
	schedule string
}

// Limits of the packed item fields; Push rejects requests beyond them.
const (
	maxDepth     = 1<<31 - 1
	maxSmall     = 1<<16 - 1 // Priority, Attempt, Redirects
	minBlockSize = 4
	maxBlockSize = 128
)

// block is one node of a deque: a fixed array of item slots.
type block struct {
	items []item
	next  *block
}

// deque is a FIFO of items with push at both ends, stored as a linked list of
// blocks. Blocks start small (most back queues hold few URLs) and double up
// to maxBlockSize, so a queue of n items wastes at most one block; consumed
// blocks are released at once, so a long queue never holds a large array
// that is mostly empty.
type deque struct {
	head, tail *block
	hi         int // index of the first item in head
	ti         int // index one past the last item in tail
	n          int
	nextSize   int
}

func (q *deque) len() int { return q.n }

func (q *deque) pushBack(it item) {
	switch {
	case q.tail == nil:
		b := &block{items: make([]item, minBlockSize)}
		q.head, q.tail, q.hi, q.ti = b, b, 0, 0
		q.nextSize = 2 * minBlockSize
	case q.ti == len(q.tail.items):
		b := &block{items: make([]item, q.nextSize)}
		q.nextSize = min(2*q.nextSize, maxBlockSize)
		q.tail.next = b
		q.tail, q.ti = b, 0
	}
	q.tail.items[q.ti] = it
	q.ti++
	q.n++
}

func (q *deque) pushFront(it item) {
	if q.head == nil {
		q.pushBack(it)
		return
	}
	if q.hi == 0 {
		q.head = &block{items: make([]item, minBlockSize), next: q.head}
		q.hi = minBlockSize
	}
	q.hi--
	q.head.items[q.hi] = it
	q.n++
}

// peek returns the first item; the deque must not be empty.
func (q *deque) peek() *item { return &q.head.items[q.hi] }

// popFront removes and returns the first item; the deque must not be empty.
func (q *deque) popFront() item {
	b := q.head
	it := b.items[q.hi]
	b.items[q.hi] = item{} // drop references for the GC
	q.hi++
	q.n--
	switch {
	case q.n == 0:
		q.head, q.tail, q.hi, q.ti = nil, nil, 0, 0
	case q.hi == len(b.items):
		q.head, q.hi = b.next, 0
	}
	return it
}

// keyState is the politeness state of one key. It lives while the key has
// URLs in memory, a back queue, a lease, or a next start time in the future.
type keyState struct {
	key       string // interned: items refer to the key through ks
	delay     time.Duration
	nextStart time.Time // earliest start of the next lease
	last      time.Time // last Done (PerKey 1) or last start (PerKey > 1)
	leases    int
	leaseN    uint64     // leases handed out so far (Done with Unused checks it)
	queued    int        // URLs in memory (front or back queues) of this key
	bq        *backQueue // nil when the key has no back queue
	idleIdx   int        // index in the idle heap, -1 when not in it
}

// backQueue is the FIFO of routed URLs of one key.
type backQueue struct {
	ks    *keyState
	items deque
	idx   int    // index in the ready heap, -1 when not in it
	order uint64 // creation order, the last tie-break of the heap
}

// readyHeap is the min-heap of back queues by the earliest time their key may
// start a request. It holds exactly the back queues that have URLs and whose
// key has a free lease slot.
type readyHeap []*backQueue

func (h readyHeap) less(i, j int) bool {
	a, b := h[i], h[j]
	if !a.ks.nextStart.Equal(b.ks.nextStart) {
		return a.ks.nextStart.Before(b.ks.nextStart)
	}
	if pa, pb := a.items.peek().prio, b.items.peek().prio; pa != pb {
		return pa < pb
	}
	return a.order < b.order
}

func (h readyHeap) swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].idx = i
	h[j].idx = j
}

func (h readyHeap) up(j int) {
	for j > 0 {
		i := (j - 1) / 2
		if !h.less(j, i) {
			break
		}
		h.swap(i, j)
		j = i
	}
}

func (h readyHeap) down(i int) bool {
	i0 := i
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		j := l
		if r := l + 1; r < n && h.less(r, l) {
			j = r
		}
		if !h.less(j, i) {
			break
		}
		h.swap(i, j)
		i = j
	}
	return i > i0
}

func (h *readyHeap) push(bq *backQueue) {
	bq.idx = len(*h)
	*h = append(*h, bq)
	h.up(bq.idx)
}

func (h *readyHeap) remove(bq *backQueue) {
	i := bq.idx
	n := len(*h) - 1
	if i != n {
		h.swap(i, n)
	}
	(*h)[n] = nil
	*h = (*h)[:n]
	if i != n {
		if !h.down(i) {
			h.up(i)
		}
	}
	bq.idx = -1
}

func (h readyHeap) fix(bq *backQueue) {
	if !h.down(bq.idx) {
		h.up(bq.idx)
	}
}

// countReady returns how many entries have a next start at or before now,
// visiting only those entries and their children.
func (h readyHeap) countReady(now time.Time) int {
	n := 0
	var visit func(i int)
	visit = func(i int) {
		if i >= len(h) || h[i].ks.nextStart.After(now) {
			return
		}
		n++
		visit(2*i + 1)
		visit(2*i + 2)
	}
	visit(0)
	return n
}

// idleHeap is the min-heap, by next start, of keys with nothing queued, no
// back queue and no lease, whose politeness state must be kept until their
// next start passes.
type idleHeap []*keyState

func (h idleHeap) less(i, j int) bool { return h[i].nextStart.Before(h[j].nextStart) }

func (h idleHeap) swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].idleIdx = i
	h[j].idleIdx = j
}

func (h idleHeap) up(j int) {
	for j > 0 {
		i := (j - 1) / 2
		if !h.less(j, i) {
			break
		}
		h.swap(i, j)
		j = i
	}
}

func (h idleHeap) down(i int) bool {
	i0, n := i, len(h)
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		j := l
		if r := l + 1; r < n && h.less(r, l) {
			j = r
		}
		if !h.less(j, i) {
			break
		}
		h.swap(i, j)
		i = j
	}
	return i > i0
}

func (h *idleHeap) push(ks *keyState) {
	ks.idleIdx = len(*h)
	*h = append(*h, ks)
	h.up(ks.idleIdx)
}

// remove takes ks out of the heap; it must be in it.
func (h *idleHeap) remove(ks *keyState) {
	i, n := ks.idleIdx, len(*h)-1
	if i != n {
		h.swap(i, n)
	}
	(*h)[n] = nil
	*h = (*h)[:n]
	if i != n && !h.down(i) {
		h.up(i)
	}
	ks.idleIdx = -1
}

// wrr is a smooth weighted round robin (as in nginx): over any window, queue
// i is picked in proportion to its weight among the non-empty queues, picks
// are spread evenly, and the first pick goes to the heaviest queue.
type wrr struct {
	w   []int
	cur []int
}

func newWRR(weights []int) wrr {
	return wrr{w: weights, cur: make([]int, len(weights))}
}

// pick returns the index of the next queue among those for which nonEmpty is
// true, or -1 when there is none.
func (s *wrr) pick(nonEmpty func(i int) bool) int {
	best, total := -1, 0
	for i, w := range s.w {
		if !nonEmpty(i) {
			continue
		}
		s.cur[i] += w
		total += w
		if best < 0 || s.cur[i] > s.cur[best] {
			best = i
		}
	}
	if best >= 0 {
		s.cur[best] -= total
	}
	return best
}
