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

// An Admitter is a Selector that may hold keys back: Next offers Select
// only the ready keys Admit accepts, and when it accepts none, Next leases
// nothing and waits until Wake is called, a lease ends, a URL is pushed,
// or a key that was not ready yet comes due (whichever is first), then
// asks again. It is how a master–worker coordinator leases no URL for a
// crawl node whose window is full. Admit is called with the frontier's
// lock held, at most once per ready key per Next: it must be quick and
// must not call the frontier.
type Admitter interface {
	Selector
	Admit(c Candidate) bool
}

// MaxCandidates bounds the candidates offered to a Selector per Next: the
// ready back queues are visited from the heap top (earliest allowed start
// first along each path), so the offered ones are among the longest-waiting.
// Keys an Admitter declines do not count: the traversal goes on until
// MaxCandidates keys are admitted or every ready key was asked, so admitted
// keys are offered however many declined ones wait ahead of them.
const MaxCandidates = 256

// selectLocked offers the back queues that may start now to the Selector
// and returns the chosen one. The heap top must be ready. With an
// Admitter, only admitted keys are offered (the traversal goes on below
// declined ones); when none is admitted it returns nil and the earliest
// start of a key not ready yet (zero: none).
func (f *Frontier) selectLocked(now time.Time) (*backQueue, time.Time) {
	f.cands = f.cands[:0]
	f.candQ = f.candQ[:0]
	adm, _ := f.cfg.Selector.(Admitter)
	var later time.Time
	var visit func(i int)
	visit = func(i int) {
		if i >= len(f.ready) || len(f.candQ) >= MaxCandidates {
			return
		}
		bq := f.ready[i]
		if bq.ks.nextStart.After(now) {
			if later.IsZero() || bq.ks.nextStart.Before(later) {
				later = bq.ks.nextStart
			}
			return
		}
		it := bq.items.peek()
		c := Candidate{URL: it.url, Key: bq.ks.key, Topic: f.topics[it.topic], Priority: int(it.prio), Depth: int(it.depth)}
		if adm == nil || adm.Admit(c) {
			f.candQ = append(f.candQ, bq)
			f.cands = append(f.cands, c)
		}
		visit(2*i + 1)
		visit(2*i + 2)
	}
	visit(0)
	if len(f.candQ) == 0 {
		return nil, later
	}
	k := f.cfg.Selector.Select(now, f.cands, f.queuedLocked)
	if k < 0 || k >= len(f.candQ) {
		k = 0
	}
	bq := f.candQ[k]
	clear(f.cands)
	clear(f.candQ)
	return bq, time.Time{}
}

// Wake makes waiting Next calls look at the ready keys again: an
// Admitter's answers changed (a crawl node's window got room, the nodes
// changed).
func (f *Frontier) Wake() {
	f.mu.Lock()
	f.wakeLocked()
	f.mu.Unlock()
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
