package frontier

import "time"

// Candidate is a URL that Next may hand out now: the head of a back queue
// whose key may start a request (its politeness delay has passed and it
// has a free lease slot).
type Candidate struct {
	URL      string
	Key      string
	Topic    string
	Priority int
	Depth    int
}

// Selector chooses which of the URLs that may be fetched now is leased
// next (Config.Selector); the topic scheduler (internal/topics) is one.
// Politeness stays in the frontier: only candidates whose key is free are
// offered, so a Selector decides what is crawled next, never how fast a
// host is hit.
type Selector interface {
	// Select returns the index in cands (never empty) of the URL to lease.
	// queued reports how many URLs of a topic the frontier holds in memory
	// (front and back queues; spilled URLs are not counted). It is called
	// with the frontier's lock held: it must be quick and must not call the
	// frontier. An index out of range selects cands[0].
	Select(now time.Time, cands []Candidate, queued func(topic string) int) int
}

// MaxCandidates bounds the candidates offered to a Selector per Next: the
// ready back queues are visited from the heap top (earliest allowed start
// first along each path), so the offered ones are among the longest-waiting.
const MaxCandidates = 256

// selectLocked offers the back queues that may start now to the Selector
// and returns the chosen one. The heap top must be ready.
func (f *Frontier) selectLocked(now time.Time) *backQueue {
	f.cands = f.cands[:0]
	f.candQ = f.candQ[:0]
	var visit func(i int)
	visit = func(i int) {
		if i >= len(f.ready) || len(f.candQ) >= MaxCandidates || f.ready[i].ks.nextStart.After(now) {
			return
		}
		bq := f.ready[i]
		it := bq.items.peek()
		f.candQ = append(f.candQ, bq)
		f.cands = append(f.cands, Candidate{URL: it.url, Key: bq.ks.key, Topic: f.topics[it.topic], Priority: int(it.prio), Depth: int(it.depth)})
		visit(2*i + 1)
		visit(2*i + 2)
	}
	visit(0)
	k := f.cfg.Selector.Select(now, f.cands, f.queuedLocked)
	if k < 0 || k >= len(f.candQ) {
		k = 0
	}
	bq := f.candQ[k]
	clear(f.cands)
	clear(f.candQ)
	return bq
}

// queuedLocked returns the URLs of topic held in memory.
func (f *Frontier) queuedLocked(topic string) int {
	t, ok := f.topicIdx[topic]
	if !ok || int(t) >= len(f.topicN) {
		return 0
	}
	return f.topicN[t]
}

// TopicQueued returns, per topic name, the URLs held in memory (front and
// back queues, not spilled ones); topics with none are left out. The
// caller owns the map.
func (f *Frontier) TopicQueued() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]int{}
	for i, n := range f.topicN {
		if n > 0 {
			out[f.topics[i]] = n
		}
	}
	return out
}

// PushUrgent queues rs at the head of their keys' back queues, ahead of
// the URLs already waiting for those keys, in the order given (a topic
// scheduler's hub revisits and the links they find: with a FIFO per key,
// they would otherwise wait behind every URL of their host). Politeness
// still applies. Urgent URLs bypass the front queues and MemoryBudget, and
// a key without a back queue gets one even when Config.BackQueues are all
// in use. It validates every request first and queues none if one is
// invalid; it fails with ErrClosed after Close.
func (f *Frontier) PushUrgent(rs []Request) error {
	for _, r := range rs {
		if err := validate(r); err != nil {
			return err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return ErrClosed
	}
	for i := len(rs) - 1; i >= 0; i-- {
		it := f.makeItem(rs[i])
		ks := it.ks
		bq := ks.bq
		if bq == nil {
			f.bqOrder++
			bq = &backQueue{ks: ks, idx: -1, order: f.bqOrder}
			ks.bq = bq
			f.active++
		}
		bq.items.pushFront(it)
		f.m.pushed.Inc()
		f.placeLocked(bq)
	}
	f.wakeLocked()
	return nil
}
