package rstate

import (
	"encoding/binary"
	"fmt"

	"github.com/spider-crawler/spider/internal/crawlstate"
	"github.com/spider-crawler/spider/internal/dedup"
)

// simArg is the complete script's near-duplicate argument for o: "" when
// there is no lookup (no SimHash, or NearDistance 0), else the distance k
// (1 byte), the SimHash (8 bytes, big endian) and the key of each of the
// layout's tables (dedup.SimTables.AppendKey), which the client computes
// because Lua has no 64-bit integers. The script reads each key's entries
// from the bucket's sim hash, compares the hashes byte by byte, and files
// the page in every table when none is within k: a lookup reads C(b, k)
// fields whatever the crawl's size.
func simArg(o crawlstate.Outcome) ([]byte, error) {
	if o.NearDistance < 0 || o.NearDistance > dedup.MaxNearDistance {
		return nil, fmt.Errorf("near-duplicate distance %d is outside 0 to %d", o.NearDistance, dedup.MaxNearDistance)
	}
	if o.SimHash == 0 || o.NearDistance == 0 {
		return []byte{}, nil
	}
	st, err := dedup.NewSimTables(o.NearDistance)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, 9+st.Len()*dedup.SimKeyLen)
	b = append(b, byte(o.NearDistance))
	b = binary.BigEndian.AppendUint64(b, o.SimHash)
	for i := 0; i < st.Len(); i++ {
		b = st.AppendKey(b, i, o.SimHash)
	}
	return b, nil
}
