package state

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/bits"

	bolt "go.etcd.io/bbolt"

	"github.com/spider-crawler/spider/internal/dedup"
)

// nearTx looks h up in the near-duplicate tables of distance k (the
// simhash bucket: dedup.SimTables key, then the 8-byte hash → the URL filed
// with it) and returns the URL of the nearest page filed there (ties: the
// first table, then key order), other than owner. When there is none it
// files h under owner in every table and returns "". One seek per table:
// the cost does not grow with the crawl (dedup.SimTables).
func nearTx(tx *bolt.Tx, h uint64, k int, owner string) (string, error) {
	st, err := dedup.NewSimTables(k)
	if err != nil {
		return "", err
	}
	b, err := tx.CreateBucketIfNotExists(bSim) // a state opened before the bucket existed
	if err != nil {
		return "", err
	}
	var (
		key   = make([]byte, 0, dedup.SimKeyLen+8)
		best  []byte
		bestD = k + 1
	)
	c := b.Cursor()
	for i := 0; i < st.Len(); i++ {
		key = st.AppendKey(key[:0], i, h)
		for ck, v := c.Seek(key); ck != nil && bytes.HasPrefix(ck, key); ck, v = c.Next() {
			if len(ck) != dedup.SimKeyLen+8 {
				return "", fmt.Errorf("simhash bucket: key of %d bytes, want %d", len(ck), dedup.SimKeyLen+8)
			}
			if string(v) == owner {
				continue
			}
			if d := bits.OnesCount64(h ^ binary.BigEndian.Uint64(ck[dedup.SimKeyLen:])); d < bestD {
				best, bestD = v, d
			}
		}
	}
	if best != nil {
		return string(best), nil
	}
	for i := 0; i < st.Len(); i++ {
		key = binary.BigEndian.AppendUint64(st.AppendKey(key[:0], i, h), h)
		if b.Get(key) != nil {
			continue // the same hash is filed already (by owner)
		}
		if err := b.Put(key, []byte(owner)); err != nil {
			return "", err
		}
	}
	return "", nil
}
