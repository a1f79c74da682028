package rstate

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/redis/go-redis/v9"

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

// Crawl-wide duplicate tables (Options.DupTags).
//
// Each bucket's own tables (the fp and sim hashes, filed inside the
// complete script) find the copies of a page only among the pages of that
// bucket: two copies on hosts of different buckets (a p2p crawl, a
// master–worker crawl's state parts) were never found. With DupTags the
// tables are the crawl's, spread over the given hash tags: a fingerprint
// by its value, a near-duplicate table key (the table number and the
// hash's bits in the table's blocks, dedup.SimTables.AppendKey) by an
// FNV-1a hash of it, so every call touches one slot and the tables, the
// largest part of a crawl state in bloom mode, spread over a Redis
// Cluster's masters:
//
//	spider:C:{TAG}:dupfp    fingerprint (8 bytes) → owner URL
//	spider:C:{TAG}:dupsim   table key (10 bytes) → entries (8-byte hash,
//	                        2-byte URL length, URL), at most simMax bytes
//
// A completion runs the bucket's complete script first, told no
// fingerprint or SimHash (the bucket's own tables stay empty). Only when
// it completed the URL are the crawl's tables touched, under the Store's
// lock (one page at a time per Store). One pipeline files the fingerprint
// if it is new (HSETNX; another URL already there: an exact duplicate) and
// reads the SimHash's table keys (compared here); for a page that is no
// duplicate, a second pipeline runs simFileScript per tag, which looks
// the keys of its tag up again and files the page there unless a copy was
// filed meanwhile. So a URL not completed (not
// pending any more, fenced, an error) is never filed, and the copies
// completed through one Store behave as with the bucket's own tables
// (exactly one filed, the others its duplicates). Two copies completed at
// the same moment through two Stores (two buckets) may both miss each
// other at the lookup, but their filings meet in a table they share, whose
// script is atomic: at least one of them is reported the other's
// duplicate (both, rarely, when they meet in two tags in opposite
// orders; the earlier filed in the tags where it came first). The window
// left: a process that dies (or loses its connection) between the
// bucket's completion and the filing (one or two round trips) leaves
// the page out of the tables: a later copy of it is not found at crawl
// time (the index's clusters, computed from the records, still find it)
// and Result.DuplicateOf of that completion is lost.

// simMax bounds a table key's entries, as the bucket script's SIM_MAX.
const simMax = 16384

// dupTables are the crawl-wide tables' keys, one pair per tag.
type dupTables struct {
	fp, sim []string
}

func newDupTables(crawl string, tags []string) *dupTables {
	return newDupTablesAt("spider:"+crawl+":", tags)
}

// newDupTablesAt names the tables prefix+"{"+tag+"}:dupfp" and dupsim.
func newDupTablesAt(prefix string, tags []string) *dupTables {
	if len(tags) == 0 {
		return nil
	}
	d := &dupTables{}
	for _, t := range tags {
		d.fp = append(d.fp, prefix+"{"+t+"}:dupfp")
		d.sim = append(d.sim, prefix+"{"+t+"}:dupsim")
	}
	return d
}

// Dupes are a crawl's duplicate tables on their own, for the process that
// writes a page's record: it judges the page in them before the record
// (crawl.Fetcher.FileContent) — a p2p node, a master–worker worker (the
// tables its crawl's Stores share, CrawlDupes) or a §0 host (which keeps
// no crawl state here). The tables, the filing and its guarantees are
// Options.DupTags' (see above). Safe for concurrent use (one filing at a
// time).
type Dupes struct {
	rdb redis.UniversalClient
	t   *dupTables
	mu  sync.Mutex
}

// NewDupes returns the duplicate tables whose keys are
// prefix+"{"+tag+"}:dupfp" and dupsim, spread over tags (at least one,
// each from Bucket's alphabet; every process of the crawl must give the
// same ones in the same order).
func NewDupes(rdb redis.UniversalClient, prefix string, tags []string) (*Dupes, error) {
	if err := checkDupTags(tags); err != nil {
		return nil, err
	}
	return &Dupes{rdb: rdb, t: newDupTablesAt(prefix, tags)}, nil
}

// CrawlDupes returns the duplicate tables the Stores of crawl share when
// opened with Options.Crawl = crawl and Options.DupTags = tags: the same
// keys, named in one place (newDupTables).
func CrawlDupes(rdb redis.UniversalClient, crawl string, tags []string) (*Dupes, error) {
	if err := checkDupTags(tags); err != nil {
		return nil, err
	}
	return &Dupes{rdb: rdb, t: newDupTables(crawl, tags)}, nil
}

// checkDupTags refuses an empty tag list or a tag outside Bucket's alphabet.
func checkDupTags(tags []string) error {
	if len(tags) == 0 {
		return errors.New("cannot keep duplicate tables without a hash tag")
	}
	for _, t := range tags {
		if err := checkName("duplicate tables' tag", t); err != nil {
			return err
		}
	}
	return nil
}

var _ crawlstate.Filer = (*Dupes)(nil)

// File files the page url, with its text's fingerprint fp and
// SimHash sim (0: none) and near-duplicates within k bits (0: exact only),
// and returns the earlier page it copies: an exact duplicate (same
// fingerprint, another URL), else with near the page whose SimHash is the
// nearest within k; "" when the page was filed as new (or is only near its
// own earlier filing). It fails when Redis does, or k is outside 0 to
// dedup.MaxNearDistance. It is crawlstate.Filer: the crawl's processes
// call it before they write the page's record (crawl.Fetcher.FileContent)
// and hand its decision to Complete (crawlstate.Outcome.Filed), which
// then files nothing itself. A page filed here whose URL is never
// completed (its process killed before the completion) stays filed under
// its URL: the refetch does not name itself, and a copy fetched later
// names it (its record exists).
func (d *Dupes) File(ctx context.Context, url string, fp, sim uint64, k int) (dup string, near bool, err error) {
	arg, err := simArg(crawlstate.Outcome{SimHash: sim, NearDistance: k})
	if err != nil {
		return "", false, fmt.Errorf("cannot file %q in the duplicate tables: %w", url, err)
	}
	var fpb []byte
	if fp != 0 {
		fpb = binary.BigEndian.AppendUint64(nil, fp)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if dup, near, err = d.t.file(ctx, d.rdb, fpb, arg, url, url); err != nil {
		return "", false, fmt.Errorf("cannot file %q in the duplicate tables: %w", url, err)
	}
	return dup, near, nil
}

// part is the tag of a fingerprint or table key: FNV-1a of its bytes.
func (d *dupTables) part(b []byte) int {
	h := uint64(14695981039346656037)
	for _, c := range b {
		h = (h ^ uint64(c)) * 1099511628211
	}
	return int(h % uint64(len(d.fp)))
}

// file files a completed page, owner, in the crawl's tables: fp (8 bytes,
// nil for none) when no other URL owns it, else the page is that URL's
// exact duplicate; then sim (simArg, empty for none) unless a page within
// the distance is filed, whose near-duplicate the page then is. Entries of
// owner and of self (the request's URL) are the page's own: never its
// duplicate, and when one is the nearest within the distance (a revisit of
// an unchanged page) nothing is filed, as in the complete script. The
// caller holds the Store's lock.
func (d *dupTables) file(ctx context.Context, rdb redis.UniversalClient, fp, sim []byte, owner, self string) (dup string, near bool, err error) {
	var keys [][]byte
	if len(sim) > 0 && len(owner) <= 65535 {
		for i := 9; i+dedup.SimKeyLen <= len(sim); i += dedup.SimKeyLen {
			keys = append(keys, sim[i:i+dedup.SimKeyLen])
		}
	}
	if len(fp) == 0 && len(keys) == 0 {
		return "", false, nil
	}
	// One round trip: the fingerprint filed if new (and its owner read),
	// every table key of the SimHash read.
	var setCmd *redis.BoolCmd
	var ownerCmd *redis.StringCmd
	cmds := make([]*redis.StringCmd, len(keys))
	if _, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		if len(fp) > 0 {
			key := d.fp[d.part(fp)]
			setCmd = p.HSetNX(ctx, key, string(fp), owner)
			ownerCmd = p.HGet(ctx, key, string(fp))
		}
		for i, key := range keys {
			cmds[i] = p.HGet(ctx, d.sim[d.part(key)], string(key))
		}
		return nil
	}); err != nil && !errors.Is(err, redis.Nil) {
		return "", false, err
	}
	if setCmd != nil && setCmd.Err() != nil {
		return "", false, setCmd.Err()
	}
	for _, c := range cmds {
		if err := c.Err(); err != nil && !errors.Is(err, redis.Nil) {
			return "", false, err
		}
	}
	if setCmd != nil && !setCmd.Val() {
		if o := ownerCmd.Val(); o != "" && o != owner && o != self {
			return o, false, nil // an exact duplicate: its SimHash is not filed
		}
	}
	if len(keys) == 0 {
		return "", false, nil
	}
	k, h := int(sim[0]), binary.BigEndian.Uint64(sim[1:9])
	bestD, mineD := k+1, k+1
	for _, c := range cmds {
		v := c.Val()
		for len(v) >= 10 {
			n := int(v[8])<<8 | int(v[9])
			if len(v) < 10+n {
				break
			}
			u, dd := v[10:10+n], dedup.HammingDistance(h, binary.BigEndian.Uint64([]byte(v[:8])))
			if u == owner || u == self {
				mineD = min(mineD, dd)
			} else if dd < bestD {
				dup, bestD = u, dd
			}
			v = v[10+n:]
		}
	}
	if mineD <= k && mineD <= bestD {
		return "", false, nil // the page itself is the nearest
	}
	if dup != "" {
		return dup, true, nil
	}
	// The filing, per tag, each looking its keys up again.
	byPart := map[int][]any{}
	var parts []int
	for _, key := range keys {
		p := d.part(key)
		if byPart[p] == nil {
			parts = append(parts, p)
			byPart[p] = []any{k, sim[1:9], owner, self}
		}
		byPart[p] = append(byPart[p], key)
	}
	// By SHA in one pipeline; a server that does not know the script yet
	// (NOSCRIPT) gets it loaded by Run, call by call.
	runs := make([]*redis.Cmd, len(parts))
	_, _ = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, part := range parts {
			runs[i] = simFileScript.EvalSha(ctx, p, []string{d.sim[part]}, byPart[part]...)
		}
		return nil
	})
	for i, c := range runs {
		if redis.HasErrorPrefix(c.Err(), "NOSCRIPT") {
			c = simFileScript.Run(ctx, rdb, []string{d.sim[parts[i]]}, byPart[parts[i]]...)
		}
		v, err := c.Slice()
		if err != nil {
			return "", false, err
		}
		if len(v) < 2 {
			return "", false, errors.New("short reply of the near-duplicate script")
		}
		u, _ := v[0].(string)
		dd, _ := v[1].(int64)
		if u != "" && int(dd) < bestD {
			dup, bestD = u, int(dd)
		}
	}
	return dup, dup != "", nil
}

// simFileScript looks a SimHash up in one tag's near-duplicate tables and
// files it there when none but the page's own is within the distance (the
// bucket script's nearest over the tag's keys). KEYS: the tag's dupsim
// hash. ARGV: k,
// the hash (8 bytes), owner, self (the request's URL), then the hash's
// table keys of that tag. Reply: {nearest URL, or the empty string when filed (or when
// the nearest is the page itself: owner or self); its distance}.
var simFileScript = redis.NewScript(luaSimScan + `
local k = tonumber(ARGV[1])
local h = {string.byte(ARGV[2], 1, 8)}
local owner, self = ARGV[3], ARGV[4]
local best, bestD, mineD = '', k + 1, k + 1
local vals, mine = {}, {}
for i = 5, #ARGV do
  local v = redis.call('HGET', KEYS[1], ARGV[i]) or ''
  vals[i] = v
  best, bestD, mineD, mine[i] = sim_scan(v, h, owner, self, best, bestD, mineD)
end
if mineD <= k and mineD <= bestD then return {'', 0} end
if best ~= '' then return {best, bestD} end
local e = ARGV[2] .. string.char(math.floor(#owner / 256), #owner % 256) .. owner
for i = 5, #ARGV do
  if not mine[i] and #vals[i] + #e <= ` + strconv.Itoa(simMax) + ` then
    redis.call('HSET', KEYS[1], ARGV[i], vals[i] .. e)
  end
end
return {'', 0}
`)
