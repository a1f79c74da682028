// Package slots is the Redis Cluster key-slot arithmetic every topology
// shares: the CRC16 of the cluster specification, the hash-tag rule that
// maps a key to one of the 16384 slots (KeySlot, what CLUSTER KEYSLOT
// answers), and the search for hash tags that land in a chosen slot range
// (SpreadTag, InRange), which spreads a job's keys evenly over a cluster's
// masters.
//
// It is a leaf: it links no Redis client and none of the module's packages,
// so the crawl-state back-ends, the search side (index, rank) and the
// topologies can all use it (internal/archtest enforces it).
package slots

import (
	"strconv"
	"strings"
)

// Slots is the number of Redis Cluster hash slots.
const Slots = 16384

// CRC16 is CRC-16/XMODEM (polynomial 0x1021, initial value 0, no
// reflection), the checksum of the Redis Cluster specification:
// CRC16("123456789") = 0x31C3.
func CRC16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// HashTag returns the part of key Redis Cluster hashes: the text between
// the first '{' and the next '}' when that text is not empty, else the
// whole key.
func HashTag(key string) string {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			return key[i+1 : i+1+j]
		}
	}
	return key
}

// KeySlot returns the Redis Cluster hash slot of key (0 to Slots-1), as
// CLUSTER KEYSLOT does: CRC16(HashTag(key)) mod 16384.
func KeySlot(key string) int { return int(CRC16(HashTag(key)) % Slots) }

// InRange returns name(k) for the smallest k ≥ 0 whose CRC16 slot lies in
// [lo, hi): a hash tag (the text to put between '{' and '}') whose keys land
// in that slot range. name must not return text holding '{' or '}' (the
// slot is of the whole text), and the range must not be empty, or InRange
// never returns; with 0 ≤ lo < hi ≤ Slots and names that vary with k it
// returns after about Slots/(hi-lo) tries.
func InRange(lo, hi int, name func(k int) string) string {
	for k := 0; ; k++ {
		tag := name(k)
		if s := int(CRC16(tag) % Slots); s >= lo && s < hi {
			return tag
		}
	}
}

// SpreadTag returns the hash tag of part i of n (0 ≤ i < n) of a job that
// spreads its keys (spider:C:{TAG}:…): prefix + "<i>-<k>" with the smallest
// k ≥ 0 whose slot lies in the i-th of n equal slot ranges, so the n parts
// land evenly on a cluster whose masters hold equal slot ranges (the
// default). The prefixes in use, which internal/crawls parses as their
// topology's keys: "mw-" (master–worker), "ly-" (layered), "rk-" (rank
// map/reduce), "ix-" (distributed index build), "dd-" (crawl-wide
// duplicate tables). The prefix must not hold '{' or '}'.
func SpreadTag(prefix string, i, n int) string {
	return InRange(i*Slots/n, (i+1)*Slots/n, func(k int) string {
		return prefix + strconv.Itoa(i) + "-" + strconv.Itoa(k)
	})
}
