package state

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"

	bolt "go.etcd.io/bbolt"

	"github.com/spider-crawler/spider/internal/dedup"
)

// Near-duplicate tables (Complete, Outcome.SimHash).
//
// The simhash bucket is an append-only log of the pages filed: key a
// sequence number (8 bytes big endian, bucket.NextSequence), value the
// distance k (1 byte), the SimHash (8 bytes big endian) and the page's URL.
// Appending fills one leaf, as pending does, so filing a page costs one
// sequential Put in the completion's transaction. The permuted tables
// themselves (dedup.SimIndex, one per distance) live in memory, rebuilt
// from the log at Open: a lookup costs no disk read, and about 116 bytes of
// memory per filed page (distance 3; only pages that are neither exact nor
// near duplicates are filed).
//
// The tables change only inside write transactions, which bbolt runs one at
// a time. A transaction's additions are visible to the later calls batched
// in it; if it does not commit (a batched call failed and the batch is run
// again, or the commit failed), the next transaction first forgets every
// entry added since the last commit, so memory always holds the committed
// log plus the current transaction's entries.
type simMem struct {
	mu        sync.Mutex
	idx       map[int]*dedup.SimIndex // distance → tables
	order     []int                   // distance of each entry, in order of addition
	committed int                     // entries in committed transactions
	tx        *bolt.Tx                // the transaction that added the entries after committed
}

// add files h under the log key seq in the tables of distance k.
func (m *simMem) add(k int, h uint64, seq uint64) error {
	x := m.idx[k]
	if x == nil {
		var err error
		if x, err = dedup.NewSimIndex(k); err != nil {
			return err
		}
		if m.idx == nil {
			m.idx = map[int]*dedup.SimIndex{}
		}
		m.idx[k] = x
	}
	x.Add(h, int(seq))
	m.order = append(m.order, k)
	return nil
}

// begin makes memory match the committed log when tx is a new transaction
// (forgetting what an earlier one that did not commit added), and arranges
// for tx's additions to count as committed when it commits.
func (m *simMem) begin(tx *bolt.Tx) {
	if m.tx == tx {
		return
	}
	m.rollback()
	m.tx = tx
	tx.OnCommit(func() {
		m.mu.Lock()
		m.committed, m.tx = len(m.order), nil
		m.mu.Unlock()
	})
}

// rollback forgets the entries added after the last commit.
func (m *simMem) rollback() {
	if len(m.order) == m.committed {
		return
	}
	keep := map[int]int{}
	for _, k := range m.order[:m.committed] {
		keep[k]++
	}
	for k, x := range m.idx {
		x.Truncate(keep[k])
	}
	m.order = m.order[:m.committed]
}

// simEntry decodes the distance and SimHash of one simhash log entry
// (key: 8-byte sequence number; value: the distance, 1 to
// dedup.MaxNearDistance, the SimHash, the URL), or says it is damaged.
// Open (loadSim) and Inspect (fsck) judge entries alike.
func simEntry(k, v []byte) (dist int, h uint64, err error) {
	if len(k) != 8 || len(v) < 9 || v[0] == 0 || int(v[0]) > dedup.MaxNearDistance {
		return 0, 0, fmt.Errorf("simhash log entry %x is damaged", k)
	}
	return int(v[0]), binary.BigEndian.Uint64(v[1:9]), nil
}

// loadSim rebuilds the tables from the simhash log.
func (s *Store) loadSim(tx *bolt.Tx) error {
	b := tx.Bucket(bSim)
	if b == nil {
		return nil
	}
	m := &s.sim
	m.mu.Lock()
	defer m.mu.Unlock()
	m.idx, m.order, m.committed, m.tx = nil, nil, 0, nil
	err := b.ForEach(func(k, v []byte) error {
		dist, h, err := simEntry(k, v)
		if err != nil {
			return err
		}
		return m.add(dist, h, binary.BigEndian.Uint64(k))
	})
	m.committed = len(m.order)
	return err
}

// nearTx looks h up in the near-duplicate tables of distance k and returns
// the URL of the nearest page filed there (ties: the first filed). When
// that page is owner or self (the request's URL: a revisited page is never
// a near-duplicate of itself) it returns "" and files nothing; when there
// is none it files h under owner (a log entry in tx, and the tables) and
// returns "". The lookup reads memory only (dedup.SimIndex: its cost does
// not grow with the crawl).
func (s *Store) nearTx(tx *bolt.Tx, h uint64, k int, owner, self string) (string, error) {
	if _, err := dedup.NewSimTables(k); err != nil {
		return "", err
	}
	b, err := tx.CreateBucketIfNotExists(bSim) // a state opened before the bucket existed
	if err != nil {
		return "", err
	}
	m := &s.sim
	m.mu.Lock()
	defer m.mu.Unlock()
	m.begin(tx)
	if x := m.idx[k]; x != nil {
		if seq, _, ok := x.Find(h); ok {
			v := b.Get(binary.BigEndian.AppendUint64(nil, uint64(seq)))
			if len(v) < 9 {
				return "", fmt.Errorf("simhash log entry %d is missing or damaged", seq)
			}
			if u := string(v[9:]); u != owner && u != self {
				return u, nil
			}
			return "", nil
		}
	}
	return "", simPut(tx, b, m, k, h, owner)
}

// File is crawlstate.Filer: it judges a page before its record is
// written, with the decision Complete would make (Complete's rules, "never
// a duplicate of itself" included), against the persisted tables (the fp
// bucket, the simhash log's tables in memory) and the pages filed by File
// whose Complete has not committed yet (an overlay in memory, looked up
// after the persisted tables: ties go to the page filed first). A new page
// is filed in the overlay (its fingerprint when no page owns it, its
// SimHash when none is within k), so two copies in flight see each other:
// File calls are serialised, and exactly one of them is filed. A
// Complete with Outcome.Filed moves the page's overlay entry into the
// persisted tables in its transaction and drops it once that commits.
//
// The window: the overlay is memory only. A process killed between File
// and Complete loses the entries of the pages in flight; their URLs are
// still pending, so the next run fetches them again and files them anew
// (a refetch never names its own earlier filing). Until then a copy of
// such a page, judged by the next run, does not name it.
func (s *Store) File(ctx context.Context, url string, fp, sim uint64, k int) (dup string, near bool, err error) {
	if err := ctx.Err(); err != nil {
		return "", false, err
	}
	if k < 0 || k > dedup.MaxNearDistance {
		return "", false, fmt.Errorf("cannot file %q: near-duplicate distance %d is outside 0 to %d", url, k, dedup.MaxNearDistance)
	}
	if k == 0 {
		sim = 0
	}
	if fp == 0 && sim == 0 {
		return "", false, nil
	}
	fset := &s.filed
	fset.judge.Lock()
	defer fset.judge.Unlock()
	// The overlay first, then the persisted tables in a read transaction
	// begun after: an entry is dropped from the overlay only once its
	// commit is done, so a page missing from the overlay here was never
	// filed or is visible to the transaction. Complete's transaction never
	// waits for this read (only for mu, held briefly).
	fset.mu.Lock()
	var ovOwner, ovURL string
	var ovD int
	var ovMine, ovOK bool
	if fp != 0 {
		ovOwner = fset.ownerOf(fp)
	}
	if sim != 0 {
		ovURL, ovD, ovMine, ovOK = fset.nearest(sim, k, url)
	}
	fset.mu.Unlock()
	e := filedPage{url: url, k: k}
	err = s.db.View(func(tx *bolt.Tx) error {
		if fp != 0 {
			fk := binary.BigEndian.AppendUint64(nil, fp)
			prev := ""
			if b := tx.Bucket(bFP); b != nil {
				prev = string(b.Get(fk))
			}
			if prev == "" {
				prev = ovOwner
			}
			switch {
			case prev == "":
				e.fp = fp
			case prev != url:
				dup = prev // an exact duplicate: nothing filed
				return nil
			}
		}
		if sim == 0 {
			return nil
		}
		bestD, mine := k+1, false
		if u, d, ok := s.nearestSim(tx, sim, k); ok {
			if u == url {
				mine = true
			} else {
				dup = u
			}
			bestD = d
		}
		if ovOK && ovD < bestD { // ties: the persisted page, filed first
			dup, mine = ovURL, ovMine
			if ovMine {
				dup = ""
			}
		}
		switch {
		case dup != "":
			near = true
		case !mine:
			e.sim = sim
		}
		return nil
	})
	if err != nil {
		return "", false, fmt.Errorf("cannot file %q in the duplicate tables: %w", url, err)
	}
	if dup != "" && !near {
		return dup, false, nil
	}
	if e.fp != 0 || e.sim != 0 {
		fset.mu.Lock()
		fset.pages = append(fset.pages, e)
		fset.mu.Unlock()
	}
	return dup, near, nil
}

// nearestSim is the URL and distance of the nearest page filed in the
// persisted tables of distance k within k bits of h (ties: the first
// filed). An entry of a transaction not yet committed, not visible to tx,
// is passed over.
func (s *Store) nearestSim(tx *bolt.Tx, h uint64, k int) (string, int, bool) {
	m := &s.sim
	m.mu.Lock()
	x := m.idx[k]
	var (
		seq, d int
		ok     bool
	)
	if x != nil {
		seq, d, ok = x.Find(h)
	}
	m.mu.Unlock()
	if !ok {
		return "", 0, false
	}
	b := tx.Bucket(bSim)
	if b == nil {
		return "", 0, false
	}
	v := b.Get(binary.BigEndian.AppendUint64(nil, uint64(seq)))
	if len(v) < 9 {
		return "", 0, false
	}
	return string(v[9:]), d, true
}

// filedSet is the overlay of File: the pages filed whose Complete has not
// committed yet, in the order filed (at most the pages in flight, so a
// lookup scans them).
type filedSet struct {
	judge sync.Mutex // held for a whole File: one judgement at a time
	mu    sync.Mutex // guards pages (held briefly, never during a read of the database)
	pages []filedPage
}

// filedPage is what File filed for one page: its fingerprint (0: none, or
// owned by an earlier page) and its SimHash in the tables of distance k
// (0: none, or a page within k was filed).
type filedPage struct {
	url string
	fp  uint64
	sim uint64
	k   int
}

// ownerOf is the URL that filed fp in the overlay, "" if none. The caller
// holds mu.
func (f *filedSet) ownerOf(fp uint64) string {
	for _, p := range f.pages {
		if p.fp == fp {
			return p.url
		}
	}
	return ""
}

// nearest is the overlay's page nearest to h within k bits, in the tables
// of distance k (ties: the first filed), and whether it is self's. The
// caller holds mu.
func (f *filedSet) nearest(h uint64, k int, self string) (u string, d int, mine, ok bool) {
	d = k + 1
	for _, p := range f.pages {
		if p.sim == 0 || p.k != k {
			continue
		}
		if dd := dedup.HammingDistance(h, p.sim); dd < d {
			u, d, mine, ok = p.url, dd, p.url == self, true
		}
	}
	return u, d, mine, ok
}

// Unfile forgets what File filed for url without completing it (a page
// whose Complete will not come: a topic hub's recrawl, which keeps its URL
// completed). Its filing, if any, is not made durable.
func (s *Store) Unfile(url string) {
	f := &s.filed
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pages = slices.DeleteFunc(f.pages, func(p filedPage) bool { return p.url == url })
}

// take returns the overlay entry of url (ok false: none).
func (f *filedSet) take(url string) (filedPage, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.pages {
		if p.url == url {
			return p, true
		}
	}
	return filedPage{}, false
}

// dropOnCommit drops url's overlay entries once tx commits (its filing is
// then in the persisted tables, or the URL was not pending).
func (f *filedSet) dropOnCommit(tx *bolt.Tx, url string) {
	tx.OnCommit(func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.pages = slices.DeleteFunc(f.pages, func(p filedPage) bool { return p.url == url })
	})
}

// fileTx makes File's filing of owner durable in tx (Complete with
// Outcome.Filed): its fingerprint in the fp bucket unless another page
// owns it there, its SimHash in the simhash log and the tables. The
// overlay entry is dropped when tx commits.
func (s *Store) fileTx(tx *bolt.Tx, owner string) error {
	p, ok := s.filed.take(owner)
	if !ok {
		return nil // nothing was filed: a copy, or no fingerprint or SimHash
	}
	s.filed.dropOnCommit(tx, owner)
	if p.fp != 0 {
		fp := tx.Bucket(bFP)
		fk := binary.BigEndian.AppendUint64(nil, p.fp)
		if fp.Get(fk) == nil {
			if err := fp.Put(fk, []byte(owner)); err != nil {
				return err
			}
		}
	}
	if p.sim == 0 {
		return nil
	}
	b, err := tx.CreateBucketIfNotExists(bSim)
	if err != nil {
		return err
	}
	m := &s.sim
	m.mu.Lock()
	defer m.mu.Unlock()
	m.begin(tx)
	return simPut(tx, b, m, p.k, p.sim, owner)
}

// simPut appends h (distance k, page owner) to the simhash log in tx and
// adds it to the tables. The caller holds m.mu and called m.begin(tx).
func simPut(tx *bolt.Tx, b *bolt.Bucket, m *simMem, k int, h uint64, owner string) error {
	seq, err := b.NextSequence()
	if err != nil {
		return err
	}
	v := make([]byte, 0, 9+len(owner))
	v = append(v, byte(k))
	v = binary.BigEndian.AppendUint64(v, h)
	v = append(v, owner...)
	if err := b.Put(binary.BigEndian.AppendUint64(nil, seq), v); err != nil {
		return err
	}
	return m.add(k, h, seq)
}

// rebuildSim writes the simhash log of a rebuilt state (RebuildSpec.NearDistance).
func rebuildSim(tx *bolt.Tx, spec RebuildSpec) error {
	b, err := tx.CreateBucketIfNotExists(bSim)
	if err != nil || spec.NearDistance == 0 {
		return err
	}
	x, err := dedup.NewSimIndex(spec.NearDistance)
	if err != nil {
		return fmt.Errorf("cannot refile near-duplicates: %w", err)
	}
	fps := map[uint64]bool{}
	for _, c := range spec.Completed {
		if c.Fingerprint != 0 {
			if fps[c.Fingerprint] {
				continue
			}
			fps[c.Fingerprint] = true
		}
		if c.SimHash == 0 {
			continue
		}
		if _, _, near := x.Find(c.SimHash); near {
			continue
		}
		seq, err := b.NextSequence()
		if err != nil {
			return err
		}
		v := append([]byte{byte(spec.NearDistance)}, binary.BigEndian.AppendUint64(nil, c.SimHash)...)
		if err := b.Put(binary.BigEndian.AppendUint64(nil, seq), append(v, c.URL...)); err != nil {
			return err
		}
		x.Add(c.SimHash, int(seq))
	}
	return nil
}
