package state

import (
	"encoding/binary"
	"fmt"
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
	seq, err := b.NextSequence()
	if err != nil {
		return "", err
	}
	v := make([]byte, 0, 9+len(owner))
	v = append(v, byte(k))
	v = binary.BigEndian.AppendUint64(v, h)
	v = append(v, owner...)
	if err := b.Put(binary.BigEndian.AppendUint64(nil, seq), v); err != nil {
		return "", err
	}
	return "", m.add(k, h, seq)
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
