package state

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/spider-crawler/spider/internal/dedup"
	bolt "go.etcd.io/bbolt"
)

// The recent set: newly accepted URLs are buffered before they reach the
// seen bucket (Mercator's duplicate-URL eliminator). A URL's seen key is a
// random 16-byte hash, so inserting it into the seen B+tree dirties a leaf
// of its own; once the tree has more leaves than a commit has keys, every
// new URL costs a 4 KiB leaf rewrite, and that cost grew with the crawl.
// Instead, Discover appends the entry to the active generation of the
// recent bucket (key: the URL's Seq, so appends fill one leaf like
// pending's) and to an in-memory map that lookups consult before seen.
// When the active generation reaches the merge threshold it is frozen and
// a new one starts; every later transaction that accepts q new URLs also
// moves about q frozen entries, in key order, into seen. A merge therefore
// touches each leaf of seen about once per frozen generation instead of
// once per key, and because the threshold grows with seen (1/RecentShare of
// it, at least Options.RecentSize), the leaves rewritten per new URL stay
// bounded as the crawl grows.
//
// Crash safety: every change is made in the caller's transaction. Merged
// entries stay in the frozen generation's bucket (deleting them in key
// order would dirty its leaves at random); meta "_merged" records the
// largest merged key, so an entry of the frozen generation is in seen iff
// its key is at most that one. The transaction that merges the last frozen
// key deletes the frozen generation's bucket. Open rebuilds the map from
// the recent bucket.
//
// The in-memory part changes inside write transactions only (bbolt runs
// one at a time), and a transaction can roll back after changing it. Every
// changing transaction therefore writes a fresh marker to meta "_txmark"
// and keeps an undo log; the next write transaction to use the set reads
// the marker, and if it is not the one written last (the transaction did
// not commit), it undoes the log first.

var (
	bRecent = []byte("recent")

	mTxMark = []byte("_txmark")
	mMerged = []byte("_merged")
)

const (
	// DefaultRecentSize is Options.RecentSize's default. It is small on
	// purpose: the merge threshold is then 1/RecentShare of seen from
	// 128 Ki URLs on, so a new URL costs the same at any size beyond that
	// (a larger minimum only makes the first URLs cheaper).
	DefaultRecentSize = 16 << 10
	// DefaultRecentShare is Options.RecentShare's default: the merge
	// threshold is at least 1/8 of the seen bucket's size, so a merge
	// rewrites each leaf of seen (≈ 80 keys) once per 1/8 of its size in
	// new URLs, about 0.1 leaf per new URL.
	DefaultRecentShare = 8
)

// recentEntry is the seen value of a URL in the recent set.
type recentEntry struct {
	seq, depth uint64
}

// recentScalars is the part of recentSet restored as a whole on rollback.
type recentScalars struct {
	active  uint64      // first Seq of the active generation, its bucket's name
	activeN int         // entries of the active generation
	frozen  []dedup.Key // sorted keys of the frozen generation; nil: none
	gen     uint64      // the frozen generation's name (when frozen != nil)
	pos     int         // frozen[:pos] are merged into seen
	// Pace: merge ⌈q·paceNum/paceDen⌉ frozen keys per q new URLs, so the
	// frozen generation is merged by the time the active one is full.
	paceNum, paceDen int
}

// undoOp restores one map entry: to old if existed, else absent.
type undoOp struct {
	key     dedup.Key
	old     recentEntry
	existed bool
}

// recentSet is the in-memory index of the recent bucket's unmerged
// entries. It is used only inside write transactions, through
// Store.recentIn.
type recentSet struct {
	m map[dedup.Key]recentEntry
	recentScalars

	tx     *bolt.Tx      // the write transaction of the latest recentIn
	mark   uint64        // the marker written by the latest changing transaction
	dirty  bool          // tx changed the set
	saved  recentScalars // the scalars before tx changed them
	undo   []undoOp
	bucket *bolt.Bucket // the active generation's bucket in tx, once looked up
}

// recentIn returns the recent set, synchronised with write transaction tx:
// if the last transaction that changed it did not commit, its changes are
// undone first. Every use of the set inside a transaction starts here.
func (s *Store) recentIn(tx *bolt.Tx) *recentSet {
	r := &s.recent
	if r.tx == tx {
		return r
	}
	if r.dirty {
		if v := tx.Bucket(bMeta).Get(mTxMark); len(v) != 8 || binary.BigEndian.Uint64(v) != r.mark {
			for i := len(r.undo) - 1; i >= 0; i-- {
				u := r.undo[i]
				if u.existed {
					r.m[u.key] = u.old
				} else {
					delete(r.m, u.key)
				}
			}
			r.recentScalars = r.saved
		}
		r.dirty = false
	}
	r.undo = r.undo[:0]
	if cap(r.undo) > 1<<16 {
		r.undo = nil // do not keep a large merge's log alive
	}
	r.tx, r.bucket = tx, nil
	return r
}

// touch prepares the set for a change in r.tx: the first change writes a
// fresh marker and saves the scalars.
func (r *recentSet) touch() error {
	if r.dirty {
		return nil
	}
	r.mark++
	if err := r.tx.Bucket(bMeta).Put(mTxMark, binary.BigEndian.AppendUint64(make([]byte, 0, 8), r.mark)); err != nil {
		return err
	}
	r.saved, r.dirty = r.recentScalars, true
	return nil
}

func (r *recentSet) set(key dedup.Key, e recentEntry) {
	old, existed := r.m[key]
	r.undo = append(r.undo, undoOp{key, old, existed})
	r.m[key] = e
}

func (r *recentSet) remove(key dedup.Key) {
	old, existed := r.m[key]
	if !existed {
		return
	}
	r.undo = append(r.undo, undoOp{key, old, true})
	delete(r.m, key)
}

// add records a newly accepted URL in the active generation.
func (r *recentSet) add(key dedup.Key, kb []byte, e recentEntry) error {
	if err := r.touch(); err != nil {
		return err
	}
	if r.bucket == nil {
		r.bucket = r.tx.Bucket(bRecent).Bucket(seqKey(r.active))
		if r.bucket == nil {
			return fmt.Errorf("recent generation %d is missing", r.active)
		}
		r.bucket.FillPercent = 1 // appends only: full pages
	}
	if err := r.bucket.Put(seqKey(e.seq), recentValue(kb, e)); err != nil {
		return err
	}
	r.set(key, e)
	r.activeN++
	return nil
}

// setDepth lowers the depth of key, an entry of the set, in memory and in
// its generation's bucket.
func (r *recentSet) setDepth(key dedup.Key, kb []byte, e recentEntry) error {
	if err := r.touch(); err != nil {
		return err
	}
	name := r.active
	if e.seq < r.active {
		if r.frozen == nil {
			return fmt.Errorf("recent entry %d predates the active generation %d, and none is frozen", e.seq, r.active)
		}
		name = r.gen
	}
	b := r.tx.Bucket(bRecent).Bucket(seqKey(name))
	if b == nil {
		return fmt.Errorf("recent generation %d is missing", name)
	}
	if err := b.Put(seqKey(e.seq), recentValue(kb, e)); err != nil {
		return err
	}
	r.set(key, e)
	return nil
}

// recentValue is a recent record's value: the URL's seen key, then its
// seen value (Seq and smallest depth, uvarints).
func recentValue(kb []byte, e recentEntry) []byte {
	v := append(make([]byte, 0, 16+12), kb...)
	v = binary.AppendUvarint(v, e.seq)
	return binary.AppendUvarint(v, e.depth)
}

// decodeRecent reads the recent record k → v written by recentValue and
// checks that its Seq matches its key.
func decodeRecent(k, v []byte) (dedup.Key, recentEntry, error) {
	if len(k) != 8 {
		return dedup.Key{}, recentEntry{}, fmt.Errorf("recent key %x is not an 8-byte Seq", k)
	}
	if len(v) < 16 {
		return dedup.Key{}, recentEntry{}, fmt.Errorf("recent record %x is %d bytes, too short", k, len(v))
	}
	key, _ := dedup.KeyFromBytes(v[:16])
	seq, n := binary.Uvarint(v[16:])
	if n <= 0 {
		return dedup.Key{}, recentEntry{}, fmt.Errorf("recent record %x has a bad Seq", k)
	}
	depth, m := binary.Uvarint(v[16+n:])
	if m <= 0 || 16+n+m != len(v) {
		return dedup.Key{}, recentEntry{}, fmt.Errorf("recent record %x has a bad depth", k)
	}
	if seq != binary.BigEndian.Uint64(k) {
		return dedup.Key{}, recentEntry{}, fmt.Errorf("recent record %x holds Seq %d", k, seq)
	}
	return key, recentEntry{seq: seq, depth: depth}, nil
}

// recentThreshold is the active generation's size at which it is frozen.
func (s *Store) recentThreshold() int {
	inSeen := int(s.seen.Load()) - len(s.recent.m)
	return max(s.opt.RecentSize, inSeen/s.opt.RecentShare)
}

// mergeStep is run by every transaction that accepted q new URLs (after
// they were added): it merges about q entries of the frozen generation
// into seen, in key order, and freezes the active generation once it holds
// the threshold and no frozen one remains.
func (s *Store) mergeStep(tx *bolt.Tx, q int) error {
	if q <= 0 {
		return nil
	}
	r := s.recentIn(tx)
	if r.frozen != nil {
		m := (q*r.paceNum + r.paceDen - 1) / r.paceDen
		if err := s.mergeFrozen(r, m); err != nil {
			return fmt.Errorf("cannot merge recent URLs into seen: %w", err)
		}
	}
	if r.frozen == nil && r.activeN >= s.recentThreshold() {
		if err := s.freeze(r); err != nil {
			return fmt.Errorf("cannot start a merge of recent URLs: %w", err)
		}
	}
	return nil
}

// mergeFrozen moves up to m frozen entries into seen; after the last one it
// deletes the frozen generation.
func (s *Store) mergeFrozen(r *recentSet, m int) error {
	if err := r.touch(); err != nil {
		return err
	}
	seenB := r.tx.Bucket(bSeen)
	end := min(r.pos+m, len(r.frozen))
	kb := make([]byte, 0, 16)
	for _, key := range r.frozen[r.pos:end] {
		e, ok := r.m[key]
		if !ok {
			return fmt.Errorf("frozen key %x is missing from the recent set", key.AppendBinary(nil))
		}
		kb = key.AppendBinary(kb[:0])
		if err := seenB.Put(kb, seenValue(e.seq, int(e.depth))); err != nil {
			return err
		}
		r.remove(key)
	}
	r.pos = end
	meta := r.tx.Bucket(bMeta)
	if r.pos < len(r.frozen) {
		if r.pos == 0 {
			return nil
		}
		return meta.Put(mMerged, append(seqKey(r.gen), kb...))
	}
	if err := r.tx.Bucket(bRecent).DeleteBucket(seqKey(r.gen)); err != nil {
		return fmt.Errorf("cannot delete merged generation %d: %w", r.gen, err)
	}
	if err := meta.Delete(mMerged); err != nil {
		return err
	}
	r.frozen, r.gen, r.pos = nil, 0, 0
	return nil
}

// freeze makes the active generation the frozen one (there is none) and
// starts a new active generation at the next Seq.
func (s *Store) freeze(r *recentSet) error {
	if err := r.touch(); err != nil {
		return err
	}
	next := r.tx.Bucket(bPending).Sequence() + 1
	if next <= r.active {
		return fmt.Errorf("next Seq %d is not after the active generation %d", next, r.active)
	}
	if _, err := r.tx.Bucket(bRecent).CreateBucket(seqKey(next)); err != nil {
		return fmt.Errorf("cannot create recent generation %d: %w", next, err)
	}
	keys := make([]dedup.Key, 0, len(r.m))
	for k := range r.m { // no frozen generation: every entry is active
		keys = append(keys, k)
	}
	sortKeys(keys)
	t := s.recentThreshold()
	r.frozen, r.gen, r.pos = keys, r.active, 0
	r.paceNum, r.paceDen = max(len(keys), 1), max(t, 1)
	r.active, r.activeN, r.bucket = next, 0, nil
	return nil
}

// sortKeys sorts keys in the byte order of their binary form (H1, then H2,
// both big endian), the seen bucket's order.
func sortKeys(keys []dedup.Key) {
	slices.SortFunc(keys, compareKeys)
}

func compareKeys(a, b dedup.Key) int {
	switch {
	case a.H1 < b.H1:
		return -1
	case a.H1 > b.H1:
		return 1
	case a.H2 < b.H2:
		return -1
	case a.H2 > b.H2:
		return 1
	}
	return 0
}

// recentLayout is what the recent bucket holds, read by walkRecent.
type recentLayout struct {
	active uint64 // name of the active generation
	gen    uint64 // name of the frozen generation, 0 if none
	merged []byte // the largest merged key of the frozen generation, nil if none
}

// readRecentLayout finds the recent bucket's generations (one active, at
// most one frozen) and the merge progress. It returns ok false when the
// bucket or its active generation does not exist yet.
func readRecentLayout(tx *bolt.Tx) (recentLayout, bool, error) {
	var l recentLayout
	rb := tx.Bucket(bRecent)
	if rb == nil {
		return l, false, nil
	}
	var gens []uint64
	err := rb.ForEach(func(k, v []byte) error {
		if v != nil || len(k) != 8 {
			return fmt.Errorf("recent bucket holds %x, not a generation", k)
		}
		gens = append(gens, binary.BigEndian.Uint64(k))
		return nil
	})
	if err != nil {
		return l, false, err
	}
	switch len(gens) {
	case 0:
		return l, false, nil
	case 1:
		l.active = gens[0]
	case 2:
		l.gen, l.active = gens[0], gens[1]
	default:
		return l, false, fmt.Errorf("recent bucket holds %d generations, at most 2 are written", len(gens))
	}
	if p := tx.Bucket(bMeta).Get(mMerged); p != nil {
		gen, last, err := decodeMerged(p)
		if err != nil {
			return l, false, err
		}
		if gen != l.gen || l.gen == 0 {
			return l, false, fmt.Errorf("merge progress names generation %d, but the frozen one is %d", gen, l.gen)
		}
		l.merged = last
	}
	return l, true, nil
}

// damagedRecent wraps err, an inconsistency of the recent bucket, and
// ErrDamaged (Open wraps it again, naming the file).
func damagedRecent(err error) error {
	return fmt.Errorf("the state's recent bucket is damaged (%w): run spider fsck --data DIR --repair on the crawl's data directory, which rebuilds the state from records.jsonl: %w", err, ErrDamaged)
}

// decodeMerged reads meta "_merged": the frozen generation's name (8
// bytes) and the largest key merged from it (16 bytes).
func decodeMerged(v []byte) (gen uint64, last []byte, err error) {
	if len(v) != 24 {
		return 0, nil, fmt.Errorf("merge progress is %d bytes, want 24", len(v))
	}
	return binary.BigEndian.Uint64(v), v[8:], nil
}

// walkRecent calls fn for every entry of the recent bucket that is not yet
// in seen, with frozen true for those of the frozen generation. It checks
// that every entry is in the generation its Seq belongs to.
func walkRecent(tx *bolt.Tx, l recentLayout, fn func(key dedup.Key, e recentEntry, frozen bool) error) error {
	rb := tx.Bucket(bRecent)
	for _, gen := range []uint64{l.gen, l.active} {
		if gen == 0 {
			continue
		}
		frozen := gen == l.gen
		b := rb.Bucket(seqKey(gen))
		c := b.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			key, e, err := decodeRecent(k, v)
			if err != nil {
				return err
			}
			if e.seq < gen || (frozen && e.seq >= l.active) {
				return fmt.Errorf("recent entry %d is in generation %d", e.seq, gen)
			}
			if frozen && l.merged != nil && bytes.Compare(v[:16], l.merged) <= 0 {
				continue // merged into seen
			}
			if err := fn(key, e, frozen); err != nil {
				return err
			}
		}
	}
	return nil
}

// loadRecent rebuilds the recent set from tx (in Open).
func (s *Store) loadRecent(tx *bolt.Tx) error {
	l, ok, err := readRecentLayout(tx)
	if err != nil {
		return damagedRecent(err)
	}
	if !ok {
		return damagedRecent(errors.New("no active generation"))
	}
	r := &s.recent
	r.m = make(map[dedup.Key]recentEntry)
	r.recentScalars = recentScalars{active: l.active}
	if l.gen != 0 {
		r.gen, r.frozen = l.gen, []dedup.Key{}
	}
	err = walkRecent(tx, l, func(key dedup.Key, e recentEntry, frozen bool) error {
		if _, dup := r.m[key]; dup {
			return fmt.Errorf("key %x is in the recent bucket twice", key.AppendBinary(nil))
		}
		r.m[key] = e
		if frozen {
			r.frozen = append(r.frozen, key)
		} else {
			r.activeN++
		}
		return nil
	})
	if err != nil {
		return damagedRecent(err)
	}
	sortKeys(r.frozen)
	if v := tx.Bucket(bMeta).Get(mTxMark); len(v) == 8 {
		r.mark = binary.BigEndian.Uint64(v)
	}
	return nil
}

// setPace sets the merge pace of a frozen generation found by Open: its
// remaining keys are merged by the time the active generation is full.
func (s *Store) setPace() {
	r := &s.recent
	if r.frozen == nil {
		return
	}
	t := s.recentThreshold()
	r.paceNum = max(len(r.frozen), 1)
	r.paceDen = max(t-r.activeN, t/s.opt.RecentShare, 1)
}

// seenEntry is what lookup found for a seen URL.
type seenEntry struct {
	recentEntry
	hasDepth bool // false for seen entries written before seen values existed
	recent   bool // in the recent set, not (yet) in the seen bucket
}

// lookup finds the seen entry of key (binary form kb) in write transaction
// tx: in the recent set, else in the seen bucket.
func (s *Store) lookup(tx *bolt.Tx, key dedup.Key, kb []byte) (seenEntry, bool) {
	if e, ok := s.recentIn(tx).m[key]; ok {
		return seenEntry{recentEntry: e, hasDepth: true, recent: true}, true
	}
	v := tx.Bucket(bSeen).Get(kb)
	if v == nil {
		return seenEntry{}, false
	}
	seq, n := binary.Uvarint(v)
	if n <= 0 {
		return seenEntry{}, true
	}
	depth, m := binary.Uvarint(v[n:])
	if m <= 0 {
		return seenEntry{recentEntry: recentEntry{seq: seq}}, true
	}
	return seenEntry{recentEntry: recentEntry{seq: seq, depth: depth}, hasDepth: true}, true
}

// setSeenDepth records depth as the smallest depth of the seen URL key
// (entry e, found by lookup), where e lives.
func (s *Store) setSeenDepth(tx *bolt.Tx, key dedup.Key, kb []byte, e seenEntry, depth int) error {
	if e.recent {
		return s.recentIn(tx).setDepth(key, kb, recentEntry{seq: e.seq, depth: uint64(depth)})
	}
	return tx.Bucket(bSeen).Put(kb, seenValue(e.seq, depth))
}
