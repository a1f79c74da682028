package state

// Inspection and rebuilding of a state file for `spider fsck` (internal/fsck).
// Neither goes through Open: Inspect must not change a file it is asked to
// judge (Open writes its format, repairs counts and a pid file), and
// Rebuild writes a new file from what the caller decided to keep.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"time"

	"github.com/spider-crawler/spider/internal/dedup"
	"github.com/spider-crawler/spider/internal/frontier"
	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// ErrDamaged is wrapped by Inspect when the state file cannot be read as a
// crawl state at all (truncated, zero length, bbolt's check fails, a bucket
// or record that does not decode). `spider fsck --repair` rebuilds such a
// state from records.jsonl.
var ErrDamaged = errors.New("crawl state file is damaged")

// SeenInfo is what the state keeps of one accepted URL: only its key (the
// URL itself is not stored) and the smallest depth it was discovered at
// (HasDepth false for entries written before depths were kept).
type SeenInfo struct {
	Depth    int
	HasDepth bool
}

// Inspection is what Inspect read from a state file. Problems lists
// inconsistencies that do not stop the state from being read (meta counts
// that disagree with the buckets, counters that do not add up); a state
// with Problems opens, but fsck reports them.
type Inspection struct {
	Created  time.Time
	Pending  []frontier.Request // in Seq order
	Seen     map[dedup.Key]SeenInfo
	Counters map[string]int64 // outcome class → count
	FP       map[uint64]string
	// UserMeta holds the keys set with SetMeta.
	UserMeta map[string][]byte
	// MetaSeen, MetaPending and MetaPages are the stored counts.
	MetaSeen, MetaPending, MetaPages int64
	// PageNext and RecordsEnd are the high-water marks of the page store
	// and the records file that completions recorded (Store.PageNext,
	// Store.RecordsEnd).
	PageNext, RecordsEnd int64
	// Revisits are the revisit records that decode (in key order); a
	// damaged one is a Problem, left out, its key in DamagedRevisits (a
	// rebuild drops it, or makes a fresh record for its URL when the
	// caller knows the URL).
	Revisits        []Revisit
	DamagedRevisits []dedup.Key
	// Taken is how many URLs TakeDue made pending, ever; MetaRevisits and
	// MetaDue the stored counts of revisit records and due entries.
	Taken, MetaRevisits, MetaDue int64
	Problems                     []string
}

// Revisit is one URL's revisit record (crawlstate.Revisits), as Inspect
// reads it and Rebuild writes it.
type Revisit struct {
	// Request is the request as last completed, its Schedule set; Seq is
	// the Seq TakeDue made it pending under (0: not taken since).
	Request frontier.Request
	// Due is when it is due (zero: not in the due index).
	Due time.Time
	// Failed: its last completion had Outcome.Failed.
	Failed bool
}

// Completed returns how many URLs the state counts as completed: the sum
// of its outcome counters.
func (in *Inspection) Completed() int64 {
	var n int64
	for _, c := range in.Counters {
		n += c
	}
	return n
}

// pendingKeys returns the keys of the pending URLs.
func (in *Inspection) pendingKeys() map[dedup.Key]bool {
	m := make(map[dedup.Key]bool, len(in.Pending))
	for _, r := range in.Pending {
		m[dedup.KeyOf(r.URL)] = true
	}
	return m
}

// CompletedKeys returns the keys of the seen URLs that are not pending:
// the URLs the state says were completed.
func (in *Inspection) CompletedKeys() map[dedup.Key]SeenInfo {
	pend := in.pendingKeys()
	out := make(map[dedup.Key]SeenInfo, len(in.Seen))
	for k, v := range in.Seen {
		if !pend[k] {
			out[k] = v
		}
	}
	return out
}

// Inspect reads the crawl state in dir (dir/state.db) read-only, without
// changing any file: it validates the file's size against its meta page
// (a truncated bbolt file would otherwise crash the process on access),
// walks every bucket, runs bbolt's consistency check (tx.Check) and compares
// the stored counts with the buckets. A process holding the state (a running
// crawl) makes Inspect fail after timeout with an error wrapping ErrLocked;
// a state that cannot be read yields an error wrapping ErrDamaged that says
// what is wrong; a missing file wraps os.ErrNotExist.
func Inspect(dir string, timeout time.Duration) (in *Inspection, err error) {
	path := filepath.Join(dir, DBFile)
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("cannot inspect crawl state: %w", err)
	}
	if info.Size() == 0 {
		return nil, fmt.Errorf("cannot inspect crawl state: %s is empty (zero bytes): %w", path, ErrDamaged)
	}
	if err := checkBoltSize(path, info.Size()); err != nil {
		return nil, fmt.Errorf("cannot inspect crawl state %s: %w: %w", path, err, ErrDamaged)
	}
	if err := walkBoltFile(path); err != nil {
		return nil, fmt.Errorf("cannot inspect crawl state %s: %w: %w", path, err, ErrDamaged)
	}
	if timeout <= 0 {
		timeout = DefaultLockTimeout
	}
	// A damaged file can make bbolt fault on its memory map: turn faults
	// into panics and panics into ErrDamaged.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			in, err = nil, fmt.Errorf("cannot inspect crawl state %s: reading it failed (%v): %w", path, r, ErrDamaged)
		}
	}()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: timeout})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("cannot inspect crawl state in %s: it is in use by another spider process (pid %s); stop it first: %w", dir, readPID(dir), ErrLocked)
	}
	if err != nil {
		return nil, fmt.Errorf("cannot inspect crawl state %s: %w: %w", path, err, ErrDamaged)
	}
	defer db.Close()
	in = &Inspection{Seen: map[dedup.Key]SeenInfo{}, Counters: map[string]int64{}, FP: map[uint64]string{}, UserMeta: map[string][]byte{}}
	var checkErrs []error
	err = db.View(func(tx *bolt.Tx) error {
		if err := in.read(tx); err != nil {
			return err
		}
		for cerr := range tx.Check() { // drained: the check runs in its own goroutine
			if len(checkErrs) < 10 {
				checkErrs = append(checkErrs, cerr)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cannot inspect crawl state %s: %w: %w", path, err, ErrDamaged)
	}
	if len(checkErrs) > 0 {
		return nil, fmt.Errorf("cannot inspect crawl state %s: bbolt's consistency check failed: %w: %w", path, errors.Join(checkErrs...), ErrDamaged)
	}
	in.compare()
	return in, nil
}

// checkBoltSize validates the meta pages of a bbolt file and that the file
// is as long as the newest valid meta page says (a truncated file makes
// bbolt fault on its memory map): newestMeta on the mapped file, without
// walking the pages (CheckFile does that too). size is the file's size
// when the caller looked; the mapping is what is checked.
func checkBoltSize(path string, size int64) error {
	data, unmap, err := mapBoltFile(path)
	if err != nil {
		return err
	}
	defer unmap()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	if int64(len(data)) != size {
		return fmt.Errorf("file changed size while being checked (%d, then %d bytes)", size, len(data))
	}
	_, err = newestMeta(data)
	return err
}

// fnv64a is the FNV-1a hash bbolt checksums its meta pages with.
func fnv64a(b []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range b {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return h
}

// read fills in from tx.
func (in *Inspection) read(tx *bolt.Tx) error {
	for _, name := range [][]byte{bPending, bSeen, bFP, bCounters, bMeta} {
		if tx.Bucket(name) == nil {
			return fmt.Errorf("bucket %q is missing", name)
		}
	}
	if sb := tx.Bucket(bSim); sb != nil {
		bad := 0
		if err := sb.ForEach(func(k, v []byte) error {
			if _, _, err := simEntry(k, v); err != nil {
				if bad++; bad <= 5 {
					in.Problems = append(in.Problems, err.Error()+" (the near-duplicate tables; a rebuild files them again from the records)")
				}
			}
			return nil
		}); err != nil {
			return err
		}
	}
	if err := in.readRevisits(tx); err != nil {
		return err
	}
	meta := tx.Bucket(bMeta)
	created, err := time.Parse(time.RFC3339Nano, string(meta.Get(mCreated)))
	if err != nil {
		return fmt.Errorf("meta %q: %w", mCreated, err)
	}
	in.Taken, in.MetaRevisits, in.MetaDue = getInt(meta, mTaken), getInt(meta, mRevisits), getInt(meta, mDue)
	in.Created = created
	in.MetaSeen, in.MetaPending, in.MetaPages = getInt(meta, mSeen), getInt(meta, mPending), getInt(meta, mPages)
	in.PageNext, in.RecordsEnd = getInt(meta, mPageEnd), getInt(meta, mRecEnd)
	if v := meta.Get(mFormat); v != nil {
		if f, err := strconv.Atoi(string(v)); err != nil || f > stateFormat {
			return fmt.Errorf("state format %q is not one this spider reads (up to %d)", v, stateFormat)
		}
	}
	if err := meta.ForEach(func(k, v []byte) error {
		if len(k) > 0 && k[0] != '_' {
			in.UserMeta[string(k)] = slices.Clone(v)
		}
		return nil
	}); err != nil {
		return err
	}
	if err := tx.Bucket(bPending).ForEach(func(k, v []byte) error {
		var r frontier.Request
		if err := r.UnmarshalBinary(v); err != nil {
			return fmt.Errorf("pending record %x: %w", k, err)
		}
		if len(k) != 8 || binary.BigEndian.Uint64(k) != r.Seq {
			return fmt.Errorf("pending record %x holds Seq %d", k, r.Seq)
		}
		in.Pending = append(in.Pending, r)
		return nil
	}); err != nil {
		return err
	}
	if err := tx.Bucket(bSeen).ForEach(func(k, v []byte) error {
		key, err := dedup.KeyFromBytes(k)
		if err != nil {
			return fmt.Errorf("seen bucket: %w", err)
		}
		in.Seen[key] = seenInfo(v)
		return nil
	}); err != nil {
		return err
	}
	if l, ok, err := readRecentLayout(tx); err != nil {
		return damagedRecent(err)
	} else if ok {
		err := walkRecent(tx, l, func(key dedup.Key, e recentEntry, _ bool) error {
			in.Seen[key] = SeenInfo{Depth: int(e.depth), HasDepth: true}
			return nil
		})
		if err != nil {
			return damagedRecent(err)
		}
	}
	if lb := tx.Bucket(bLinks); lb != nil {
		// Walked only to touch its pages here, where a fault is recovered,
		// before tx.Check walks them in a goroutine of its own.
		if err := lb.ForEach(func(k, v []byte) error { return nil }); err != nil {
			return err
		}
	}
	if err := tx.Bucket(bCounters).ForEach(func(k, v []byte) error {
		if len(v) != 8 {
			return fmt.Errorf("counter %q is %d bytes, want 8", k, len(v))
		}
		in.Counters[string(k)] = int64(binary.BigEndian.Uint64(v))
		return nil
	}); err != nil {
		return err
	}
	return tx.Bucket(bFP).ForEach(func(k, v []byte) error {
		if len(k) == 8 {
			in.FP[binary.BigEndian.Uint64(k)] = string(v)
		}
		return nil
	})
}

func seenInfo(v []byte) SeenInfo {
	_, n := binary.Uvarint(v)
	if n <= 0 {
		return SeenInfo{}
	}
	d, m := binary.Uvarint(v[n:])
	if m <= 0 {
		return SeenInfo{}
	}
	return SeenInfo{Depth: int(d), HasDepth: true}
}

// compare adds a problem for every stored count that disagrees with the
// buckets, and for pending URLs missing from the seen set.
func (in *Inspection) compare() {
	if in.MetaPending != int64(len(in.Pending)) {
		in.Problems = append(in.Problems, fmt.Sprintf("meta says %d URLs pending, the pending bucket holds %d", in.MetaPending, len(in.Pending)))
	}
	if in.MetaSeen != int64(len(in.Seen)) {
		in.Problems = append(in.Problems, fmt.Sprintf("meta says %d URLs seen, the seen set holds %d", in.MetaSeen, len(in.Seen)))
	}
	missing := 0
	for k := range in.pendingKeys() {
		if _, ok := in.Seen[k]; !ok {
			missing++
		}
	}
	if missing > 0 {
		in.Problems = append(in.Problems, fmt.Sprintf("%d pending URLs are not in the seen set", missing))
	}
	// Every accepted URL and every URL TakeDue made pending again is
	// either pending or counted once more.
	if done := int64(len(in.Seen)) - int64(len(in.Pending)) + int64(missing) + in.Taken; in.Completed() != done {
		if in.Taken == 0 {
			in.Problems = append(in.Problems, fmt.Sprintf("outcome counters add up to %d completed URLs, the seen set less the pending ones is %d", in.Completed(), done))
		} else {
			in.Problems = append(in.Problems, fmt.Sprintf("outcome counters add up to %d completions, the seen set less the pending ones plus the %d revisits taken is %d", in.Completed(), in.Taken, done))
		}
	}
}

// CompletedURL is a URL a rebuilt state counts as completed.
type CompletedURL struct {
	URL         string
	Depth       int
	Class       string // outcome counter
	Stored      bool   // its page is in the page store
	Fingerprint uint64 // 0: none
	SimHash     uint64 // near-duplicate hash (Outcome.SimHash); 0: none
}

// RebuildSpec is what Rebuild writes.
type RebuildSpec struct {
	Created time.Time // zero: now
	// Pending are queued in this order with fresh Seqs (their Seq fields
	// are ignored). A URL repeated, or also in Completed, is an error.
	Pending   []frontier.Request
	Completed []CompletedURL
	// FP maps content fingerprints to the URL first stored with them; the
	// fingerprints of Completed are added where missing.
	FP map[uint64]string
	// UserMeta is copied (keys set with SetMeta).
	UserMeta map[string][]byte
	// Pages is stored as the meta page count (PagesStored); it is raised
	// to the number of Completed with Stored if lower.
	Pages int64
	// PageNext and RecordsEnd are stored as the high-water marks of the
	// page store and the records file (see Store.PageNext and
	// Store.RecordsEnd): the page count and the records file's size that
	// the rebuilt state agrees with.
	PageNext, RecordsEnd int64
	// Revisits are the revisit records kept (their URLs must be in
	// Pending or Completed): a pending one's Seq is set to its URL's new
	// Seq, the due index and the failed set are rebuilt from them.
	Revisits []Revisit
	// NearDistance, when 1 to dedup.MaxNearDistance, refiles the Completed
	// URLs' SimHashes in the near-duplicate tables of that distance, in
	// order, as Complete would have (a page whose fingerprint an earlier one
	// has, or whose SimHash is near an earlier filed one, is not filed).
	// 0: the tables start empty.
	NearDistance int
}

// Rebuild writes a new state file at path (which must not exist) holding
// exactly spec: every Pending and Completed URL seen, the Pending ones
// pending, counters from the Completed classes, and the layout and counts
// Open expects. It fsyncs the file before returning. On error the partial
// file is removed.
func Rebuild(path string, spec RebuildSpec) (err error) {
	if _, err := os.Stat(path); err == nil {
		return fmt.Errorf("cannot rebuild crawl state: %s already exists; remove it first", path)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second, FreelistType: bolt.FreelistMapType})
	if err != nil {
		return fmt.Errorf("cannot rebuild crawl state: %w", err)
	}
	defer func() {
		if cerr := db.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("cannot rebuild crawl state: %w", cerr)
		}
		if err != nil {
			os.Remove(path)
		}
	}()
	created := spec.Created
	if created.IsZero() {
		created = time.Now()
	}
	type seenKV struct {
		k []byte
		v []byte
	}
	byKey := map[dedup.Key]bool{}
	var seen []seenKV
	addSeen := func(u string, seq uint64, depth int) error {
		key := dedup.KeyOf(u)
		if byKey[key] {
			return fmt.Errorf("cannot rebuild crawl state: %q is listed twice", u)
		}
		byKey[key] = true
		seen = append(seen, seenKV{key.AppendBinary(nil), seenValue(seq, depth)})
		return nil
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bPending, bSeen, bFP, bCounters, bMeta, bLinks, bRecent, bRevisit, bDue, bFailed} {
			if _, err := tx.CreateBucket(name); err != nil {
				return err
			}
		}
		pend := tx.Bucket(bPending)
		var seq uint64
		for _, r := range spec.Pending {
			seq++
			r.Seq = seq
			enc, err := r.MarshalBinary()
			if err != nil {
				return err
			}
			if err := pend.Put(seqKey(seq), enc); err != nil {
				return err
			}
			if err := addSeen(r.URL, seq, r.Depth); err != nil {
				return err
			}
		}
		counters := map[string]int64{}
		fp := tx.Bucket(bFP)
		for f, u := range spec.FP {
			if err := fp.Put(binary.BigEndian.AppendUint64(nil, f), []byte(u)); err != nil {
				return err
			}
		}
		var stored int64
		for _, c := range spec.Completed {
			if c.Class == "" {
				return fmt.Errorf("cannot rebuild crawl state: %q has no outcome class", c.URL)
			}
			seq++
			if err := addSeen(c.URL, seq, c.Depth); err != nil {
				return err
			}
			counters[c.Class]++
			if c.Stored {
				stored++
			}
			if c.Fingerprint != 0 {
				fk := binary.BigEndian.AppendUint64(nil, c.Fingerprint)
				if fp.Get(fk) == nil {
					if err := fp.Put(fk, []byte(c.URL)); err != nil {
						return err
					}
				}
			}
		}
		if err := pend.SetSequence(seq); err != nil {
			return err
		}
		if err := rebuildRevisits(tx, spec, byKey); err != nil {
			return err
		}
		if err := rebuildSim(tx, spec); err != nil {
			return err
		}
		slices.SortFunc(seen, func(a, b seenKV) int { return bytes.Compare(a.k, b.k) })
		sb := tx.Bucket(bSeen)
		sb.FillPercent = 1
		for _, e := range seen {
			if err := sb.Put(e.k, e.v); err != nil {
				return err
			}
		}
		cb := tx.Bucket(bCounters)
		for class, n := range counters {
			if err := putInt(cb, []byte(class), n); err != nil {
				return err
			}
		}
		if _, err := tx.Bucket(bRecent).CreateBucket(seqKey(seq + 1)); err != nil {
			return err
		}
		meta := tx.Bucket(bMeta)
		for k, v := range spec.UserMeta {
			if err := checkMetaKey([]byte(k)); err != nil {
				return err
			}
			if err := meta.Put([]byte(k), v); err != nil {
				return err
			}
		}
		if err := meta.Put(mFormat, []byte(strconv.Itoa(stateFormat))); err != nil {
			return err
		}
		if err := meta.Put(mCreated, []byte(created.UTC().Format(time.RFC3339Nano))); err != nil {
			return err
		}
		if err := putInt(meta, mSeen, int64(len(seen))); err != nil {
			return err
		}
		if err := putInt(meta, mPending, int64(len(spec.Pending))); err != nil {
			return err
		}
		if err := putInt(meta, mPageEnd, spec.PageNext); err != nil {
			return err
		}
		if err := putInt(meta, mRecEnd, spec.RecordsEnd); err != nil {
			return err
		}
		return putInt(meta, mPages, max(spec.Pages, stored))
	})
	if err != nil {
		return fmt.Errorf("cannot rebuild crawl state: %w", err)
	}
	return nil
}
