package state

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/spider-crawler/spider/internal/crawlstate"
	"github.com/spider-crawler/spider/internal/dedup"
	"github.com/spider-crawler/spider/internal/frontier"
)

// The revisit schedule (crawlstate.Revisits).
//
//	bucket   key                            value
//	revisit  dedup.Key of the URL (16 B)    the revisit record: a version byte
//	                                        (1), a flag byte (1: failed), the
//	                                        Due as uvarint Unix ms (0: not in
//	                                        the due index), then the request
//	                                        as last completed (frontier.Request
//	                                        encoding, Schedule set, Attempt 0,
//	                                        Seq 0, or the Seq TakeDue made it
//	                                        pending under)
//	due      Due in Unix ms (8 B big        empty: the index TakeDue walks,
//	         endian), then the dedup.Key    earliest first
//	failed   dedup.Key of the URL           empty: the URLs whose last
//	                                        completion had Outcome.Failed
//	meta     "_revisits", "_due": counts of the revisit and due buckets
//	         (Scheduled); "_taken": how many URLs TakeDue made pending, ever
//	         (so the outcome counters add up to seen − pending + taken)
//
// Every change is made in the transaction of the Complete, TakeDue or
// RetryFailed that causes it, so the record, the index and the failed set
// always agree. A URL that TakeDue made pending keeps its record, with its
// new Seq: while the pending record under that Seq holds the URL, the URL
// is pending and is not taken again (RetryFailed leaves it alone too).
var (
	bRevisit = []byte("revisit")
	bDue     = []byte("due")
	bFailed  = []byte("failed")

	mRevisits = []byte("_revisits")
	mDue      = []byte("_due")
	mTaken    = []byte("_taken")
)

const (
	revisitVersion    = 1
	revisitFailed     = 1 // flag: the last completion failed
	revisitFlagsKnown = revisitFailed
)

// revisitRec is a decoded revisit record.
// setDue moves rec's entry of the due index (key kb) to ms, Unix ms; 0
// takes it out of the index. It returns the change in the index's size.
func (rec *revisitRec) setDue(due *bolt.Bucket, kb []byte, ms int64) (int64, error) {
	var d int64
	if rec.due != 0 {
		if err := due.Delete(dueKey(rec.due, kb)); err != nil {
			return 0, err
		}
		d--
	}
	rec.due = ms
	if ms != 0 {
		if err := due.Put(dueKey(ms, kb), nil); err != nil {
			return 0, err
		}
		d++
	}
	return d, nil
}

type revisitRec struct {
	due    int64 // Unix ms; 0: not in the due index
	failed bool
	req    frontier.Request
}

func (r revisitRec) encode() []byte {
	b := make([]byte, 0, 16+len(r.req.URL)+len(r.req.Key)+len(r.req.Topic)+len(r.req.Schedule)+24)
	var fl byte
	if r.failed {
		fl |= revisitFailed
	}
	b = append(b, revisitVersion, fl)
	b = binary.AppendUvarint(b, uint64(r.due))
	b, _ = r.req.AppendBinary(b)
	return b
}

// decodeRevisit reads the revisit record v stored under key k, or says
// what is damaged. Open's callers and Inspect judge records alike.
func decodeRevisit(k, v []byte) (revisitRec, error) {
	var r revisitRec
	if len(k) != 16 {
		return r, fmt.Errorf("revisit record key %x is %d bytes, want 16", k, len(k))
	}
	if len(v) < 3 || v[0] != revisitVersion || v[1]&^revisitFlagsKnown != 0 {
		return r, fmt.Errorf("revisit record %x is damaged (bad header)", k)
	}
	r.failed = v[1]&revisitFailed != 0
	due, n := binary.Uvarint(v[2:])
	if n <= 0 || due > 1<<62 {
		return r, fmt.Errorf("revisit record %x is damaged (bad due time)", k)
	}
	r.due = int64(due)
	if err := r.req.UnmarshalBinary(v[2+n:]); err != nil {
		return r, fmt.Errorf("revisit record %x is damaged: %w", k, err)
	}
	if !bytes.Equal(dedup.KeyOf(r.req.URL).AppendBinary(nil), k) {
		return r, fmt.Errorf("revisit record %x is damaged: it holds %q, whose key is another", k, r.req.URL)
	}
	return r, nil
}

// dueKey is the due index's key of a record due at ms.
func dueKey(ms int64, kb []byte) []byte {
	return append(binary.BigEndian.AppendUint64(make([]byte, 0, 24), uint64(ms)), kb...)
}

// revisitBuckets returns the three buckets, creating them in a state opened
// before they existed (Open creates them; this keeps a transaction of an
// older layout working all the same).
func revisitBuckets(tx *bolt.Tx) (rv, due, failed *bolt.Bucket, err error) {
	if rv, err = tx.CreateBucketIfNotExists(bRevisit); err != nil {
		return
	}
	if due, err = tx.CreateBucketIfNotExists(bDue); err != nil {
		return
	}
	failed, err = tx.CreateBucketIfNotExists(bFailed)
	return
}

// revisitTx is Complete's part for the schedule: the record of r's URL is
// replaced by one from o (or removed when o has neither a Schedule nor
// Failed), the due index and the failed set follow.
func revisitTx(tx *bolt.Tx, r frontier.Request, o Outcome) error {
	rv, due, failed, err := revisitBuckets(tx)
	if err != nil {
		return err
	}
	meta := tx.Bucket(bMeta)
	kb := dedup.KeyOf(r.URL).AppendBinary(make([]byte, 0, 16))
	if old := rv.Get(kb); old != nil {
		// A damaged old record is replaced all the same: its due entry,
		// if any, is found by Inspect and dropped by a rebuild.
		if prev, err := decodeRevisit(kb, old); err == nil && prev.due != 0 {
			if err := due.Delete(dueKey(prev.due, kb)); err != nil {
				return err
			}
			if err := addInt(meta, mDue, -1); err != nil {
				return err
			}
		}
		if o.Schedule == "" && !o.Failed {
			if err := rv.Delete(kb); err != nil {
				return err
			}
			if err := addInt(meta, mRevisits, -1); err != nil {
				return err
			}
		}
	} else if o.Schedule != "" || o.Failed {
		if err := addInt(meta, mRevisits, 1); err != nil {
			return err
		}
	}
	if o.Failed {
		if err := failed.Put(kb, nil); err != nil {
			return err
		}
	} else if err := failed.Delete(kb); err != nil {
		return err
	}
	if o.Schedule == "" && !o.Failed {
		return nil
	}
	rec := revisitRec{failed: o.Failed, req: r}
	rec.req.Seq, rec.req.Attempt, rec.req.Schedule = 0, 0, o.Schedule
	if !o.Due.IsZero() {
		rec.due = max(o.Due.UnixMilli(), 1)
		if err := due.Put(dueKey(rec.due, kb), nil); err != nil {
			return err
		}
		if err := addInt(meta, mDue, 1); err != nil {
			return err
		}
	}
	return rv.Put(kb, rec.encode())
}

// pendingAs reports whether rec's URL is pending under the Seq TakeDue
// gave it.
func pendingAs(pend *bolt.Bucket, rec revisitRec) bool {
	if rec.req.Seq == 0 {
		return false
	}
	v := pend.Get(seqKey(rec.req.Seq))
	if v == nil {
		return false
	}
	var p frontier.Request
	return p.UnmarshalBinary(v) == nil && p.URL == rec.req.URL
}

// TakeDue makes up to max URLs whose Due is at or before now pending
// again, earliest Due first, in one transaction (crawlstate.Revisits): each
// leaves the due index and is pending under a fresh Seq with its record's
// request (Attempt 0). A URL still pending is skipped (its due entry is
// dropped: its Complete schedules it again).
func (s *Store) TakeDue(ctx context.Context, now time.Time, max int) ([]frontier.Request, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if max <= 0 {
		return nil, nil
	}
	limit := now.UnixMilli()
	var (
		out []frontier.Request
		d   deltas
	)
	err := s.batch(func(tx *bolt.Tx) error {
		out, d = nil, deltas{}
		rv, due, _, err := revisitBuckets(tx)
		if err != nil {
			return err
		}
		pend, meta := tx.Bucket(bPending), tx.Bucket(bMeta)
		type entry struct {
			dk  []byte
			rec revisitRec
			ok  bool
		}
		var ents []entry
		taking := 0
		c := due.Cursor()
		for k, _ := c.First(); k != nil && taking < max; k, _ = c.Next() {
			if len(k) != 24 {
				return fmt.Errorf("due index entry %x is damaged", k)
			}
			if int64(binary.BigEndian.Uint64(k)) > limit {
				break
			}
			e := entry{dk: bytes.Clone(k)}
			kb := k[8:]
			if v := rv.Get(kb); v != nil {
				rec, err := decodeRevisit(kb, v)
				if err != nil {
					return err
				}
				e.rec, e.ok = rec, rec.due == int64(binary.BigEndian.Uint64(k))
			}
			if e.ok && !pendingAs(pend, e.rec) {
				taking++
			}
			ents = append(ents, e)
		}
		var dropped, taken int64
		for _, e := range ents {
			if err := due.Delete(e.dk); err != nil {
				return err
			}
			dropped++
			if !e.ok {
				continue // an index entry without its record: dropped
			}
			kb := e.dk[8:]
			rec := e.rec
			rec.due = 0
			if !pendingAs(pend, e.rec) {
				seq, err := pend.NextSequence()
				if err != nil {
					return err
				}
				req := rec.req
				req.Seq, req.Attempt = seq, 0
				enc, err := req.MarshalBinary()
				if err != nil {
					return err
				}
				if err := pend.Put(seqKey(seq), enc); err != nil {
					return err
				}
				rec.req.Seq = seq
				out = append(out, req)
				d.pending++
				taken++
			}
			if err := rv.Put(kb, rec.encode()); err != nil {
				return err
			}
		}
		if err := addInt(meta, mDue, -dropped); err != nil {
			return err
		}
		if err := addInt(meta, mTaken, taken); err != nil {
			return err
		}
		return d.write(meta)
	})
	if err != nil {
		return nil, fmt.Errorf("cannot take due revisits: %w", err)
	}
	s.apply(d)
	return out, nil
}

// NextDue reports the earliest Due in the index; ok is false when no URL
// is scheduled.
func (s *Store) NextDue(ctx context.Context) (next time.Time, ok bool, err error) {
	if err := ctx.Err(); err != nil {
		return time.Time{}, false, err
	}
	err = s.db.View(func(tx *bolt.Tx) error {
		due := tx.Bucket(bDue)
		if due == nil {
			return nil
		}
		k, _ := due.Cursor().First()
		if k == nil {
			return nil
		}
		if len(k) != 24 {
			return fmt.Errorf("due index entry %x is damaged", k)
		}
		next, ok = time.UnixMilli(int64(binary.BigEndian.Uint64(k))), true
		return nil
	})
	if err != nil {
		return time.Time{}, false, fmt.Errorf("cannot read the next due revisit: %w", err)
	}
	return next, ok, nil
}

// RetryFailed sets Due to now for every URL whose last Complete had
// Outcome.Failed (a URL pending meanwhile is left alone: it is being
// fetched again), in one transaction, and returns how many.
func (s *Store) RetryFailed(ctx context.Context, now time.Time) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	ms := max(now.UnixMilli(), 1)
	var n int
	err := s.batch(func(tx *bolt.Tx) error {
		n = 0
		rv, due, failed, err := revisitBuckets(tx)
		if err != nil {
			return err
		}
		pend, meta := tx.Bucket(bPending), tx.Bucket(bMeta)
		var keys [][]byte
		if err := failed.ForEach(func(k, _ []byte) error {
			keys = append(keys, bytes.Clone(k))
			return nil
		}); err != nil {
			return err
		}
		var added int64
		for _, kb := range keys {
			v := rv.Get(kb)
			if v == nil {
				continue // Inspect reports a failed mark without its record
			}
			rec, err := decodeRevisit(kb, v)
			if err != nil {
				return err
			}
			if pendingAs(pend, rec) {
				continue
			}
			if rec.due == ms {
				n++
				continue
			}
			d, err := rec.setDue(due, kb, ms)
			if err != nil {
				return err
			}
			added += d
			if err := rv.Put(kb, rec.encode()); err != nil {
				return err
			}
			n++
		}
		return addInt(meta, mDue, added)
	})
	if err != nil {
		return 0, fmt.Errorf("cannot requeue the failed URLs: %w", err)
	}
	return n, nil
}

// Scheduled reports how many URLs have a revisit record and how many of
// those are in the due index.
func (s *Store) Scheduled(ctx context.Context) (records, due int64, err error) {
	if err := ctx.Err(); err != nil {
		return 0, 0, err
	}
	err = s.db.View(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bMeta)
		records, due = getInt(meta, mRevisits), getInt(meta, mDue)
		return nil
	})
	if err != nil {
		return 0, 0, fmt.Errorf("cannot count the revisit schedule: %w", err)
	}
	return records, due, nil
}

var _ crawlstate.Revisits = (*Store)(nil)

var _ crawlstate.Rescheduler = (*Store)(nil)

// Reschedule implements crawlstate.Rescheduler in one transaction (the
// completion's batch): for each URL with a revisit record that has a
// Schedule and is not pending, fn decides the new Schedule and Due; the
// due index follows. A record that does not decode is left alone (fsck
// reports it).
func (s *Store) Reschedule(ctx context.Context, urls []string, fn crawlstate.RescheduleFunc) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if len(urls) == 0 {
		return 0, nil
	}
	var n int
	err := s.batch(func(tx *bolt.Tx) error {
		n = 0
		rv, due, _, err := revisitBuckets(tx)
		if err != nil {
			return err
		}
		pend, meta := tx.Bucket(bPending), tx.Bucket(bMeta)
		done := make(map[string]bool, len(urls))
		var added int64
		for _, u := range urls {
			if done[u] {
				continue
			}
			done[u] = true
			kb := dedup.KeyOf(u).AppendBinary(make([]byte, 0, 16))
			v := rv.Get(kb)
			if v == nil {
				continue
			}
			rec, err := decodeRevisit(kb, v)
			if err != nil || rec.req.Schedule == "" || pendingAs(pend, rec) {
				continue
			}
			var cur time.Time
			if rec.due != 0 {
				cur = time.UnixMilli(rec.due)
			}
			sch, next, ok := fn(rec.req, cur)
			if !ok {
				continue
			}
			rec.req.Schedule = sch
			var ms int64
			if !next.IsZero() {
				ms = max(next.UnixMilli(), 1)
			}
			d, err := rec.setDue(due, kb, ms)
			if err != nil {
				return err
			}
			added += d
			if err := rv.Put(kb, rec.encode()); err != nil {
				return err
			}
			n++
		}
		return addInt(meta, mDue, added)
	})
	if err != nil {
		return 0, fmt.Errorf("cannot reschedule revisits: %w", err)
	}
	return n, nil
}

// ScheduleCounts implements crawlstate.Rescheduler: the stored counts,
// the failed marks and the due entries up to now counted (a walk of the
// failed set and of the overdue part of the index), in one read
// transaction.
func (s *Store) ScheduleCounts(ctx context.Context, now time.Time) (crawlstate.ScheduleCounts, error) {
	var c crawlstate.ScheduleCounts
	if err := ctx.Err(); err != nil {
		return c, err
	}
	err := s.db.View(func(tx *bolt.Tx) error {
		return scheduleCounts(tx, now, &c)
	})
	if err != nil {
		return crawlstate.ScheduleCounts{}, fmt.Errorf("cannot count the revisit schedule: %w", err)
	}
	return c, nil
}

// scheduleCounts fills c from tx at now.
func scheduleCounts(tx *bolt.Tx, now time.Time, c *crawlstate.ScheduleCounts) error {
	meta := tx.Bucket(bMeta)
	c.Records, c.Due = getInt(meta, mRevisits), getInt(meta, mDue)
	if fb := tx.Bucket(bFailed); fb != nil {
		c.Failed = int64(fb.Stats().KeyN) // a walk of the bucket's pages, not of its keys
	}
	due := tx.Bucket(bDue)
	if due == nil {
		return nil
	}
	limit := now.UnixMilli()
	cur := due.Cursor()
	for k, _ := cur.First(); k != nil; k, _ = cur.Next() {
		if len(k) != 24 {
			return fmt.Errorf("due index entry %x is damaged", k)
		}
		at := int64(binary.BigEndian.Uint64(k))
		if c.Next.IsZero() {
			c.Next = time.UnixMilli(at)
		}
		if at > limit {
			break
		}
		c.Overdue++
	}
	return nil
}

// readRevisits reads the revisit records, the due index and the failed
// set into in (Inspect): a record that does not decode, an index entry or
// a failed mark that disagrees with the records, and stored counts that
// disagree with the buckets are Problems. Each is repaired by a rebuild
// from in.Revisits (the records that decode): a damaged record's schedule
// (validators, change history) is lost; fsck gives its URL a fresh record
// due at once when records.jsonl names it (in.DamagedRevisits), else the
// URL stays completed and is not revisited; the index and the marks are
// rebuilt from the records.
func (in *Inspection) readRevisits(tx *bolt.Tx) error {
	rv := tx.Bucket(bRevisit)
	if rv == nil {
		return nil // a state older than the schedule
	}
	problem := func(n *int, format string, args ...any) {
		if *n++; *n <= 5 {
			in.Problems = append(in.Problems, fmt.Sprintf(format, args...))
		}
	}
	var bad, badDue, badFailed int
	dues := map[string]int64{} // key → due of the records that decode
	failed := map[string]bool{}
	var records int64
	if err := rv.ForEach(func(k, v []byte) error {
		records++
		rec, err := decodeRevisit(k, v)
		if err != nil {
			problem(&bad, "%v (a repair makes a fresh record, due at once, for a URL the records name; else it drops it: the URL stays completed and is no longer revisited)", err)
			if key, kerr := dedup.KeyFromBytes(k); kerr == nil {
				in.DamagedRevisits = append(in.DamagedRevisits, key)
			}
			return nil
		}
		dues[string(k)], failed[string(k)] = rec.due, rec.failed
		r := Revisit{Request: rec.req, Failed: rec.failed}
		if rec.due != 0 {
			r.Due = time.UnixMilli(rec.due)
		}
		in.Revisits = append(in.Revisits, r)
		return nil
	}); err != nil {
		return err
	}
	var indexed int64
	if due := tx.Bucket(bDue); due != nil {
		if err := due.ForEach(func(k, _ []byte) error {
			indexed++
			if len(k) != 24 {
				problem(&badDue, "due index entry %x is damaged (a repair rebuilds the index from the revisit records)", k)
				return nil
			}
			if d, ok := dues[string(k[8:])]; !ok || d != int64(binary.BigEndian.Uint64(k)) {
				problem(&badDue, "due index entry %x names no revisit record due then (a repair rebuilds the index from the revisit records)", k)
				return nil
			}
			delete(dues, string(k[8:])) // each record is indexed once
			return nil
		}); err != nil {
			return err
		}
	}
	for k, d := range dues {
		if d != 0 {
			problem(&badDue, "revisit record %x is due but not in the due index (a repair rebuilds the index)", k)
		}
	}
	var marked int64
	if fb := tx.Bucket(bFailed); fb != nil {
		if err := fb.ForEach(func(k, _ []byte) error {
			marked++
			if f, ok := failed[string(k)]; !ok || !f {
				problem(&badFailed, "failed mark %x names no failed revisit record (a repair rebuilds the marks from the records)", k)
			}
			delete(failed, string(k))
			return nil
		}); err != nil {
			return err
		}
	}
	for k, f := range failed {
		if f {
			problem(&badFailed, "revisit record %x failed but has no failed mark (a repair rebuilds the marks)", k)
		}
	}
	meta := tx.Bucket(bMeta)
	if m := getInt(meta, mRevisits); m != records {
		in.Problems = append(in.Problems, fmt.Sprintf("meta says %d revisit records, the revisit bucket holds %d", m, records))
	}
	if m := getInt(meta, mDue); m != indexed {
		in.Problems = append(in.Problems, fmt.Sprintf("meta says %d due revisits, the due index holds %d", m, indexed))
	}
	return nil
}

// rebuildRevisits writes spec.Revisits into a rebuilt state whose seen
// URLs are known (keys): a record of a URL the rebuilt state does not know
// is left out (the URL is accepted again when rediscovered); a pending
// one's Seq is its URL's new pending Seq.
func rebuildRevisits(tx *bolt.Tx, spec RebuildSpec, known map[dedup.Key]bool) error {
	rv, due, failed, err := revisitBuckets(tx)
	if err != nil {
		return err
	}
	pendingSeq := make(map[dedup.Key]uint64, len(spec.Pending))
	for i, r := range spec.Pending {
		pendingSeq[dedup.KeyOf(r.URL)] = uint64(i + 1) // Rebuild's Seqs
	}
	var records, dues int64
	for _, r := range spec.Revisits {
		key := dedup.KeyOf(r.Request.URL)
		if !known[key] {
			continue
		}
		kb := key.AppendBinary(nil)
		if rv.Get(kb) != nil {
			return fmt.Errorf("cannot rebuild crawl state: revisit record of %q listed twice", r.Request.URL)
		}
		rec := revisitRec{failed: r.Failed, req: r.Request}
		rec.req.Seq, rec.req.Attempt = pendingSeq[key], 0
		if !r.Due.IsZero() && rec.req.Seq == 0 {
			rec.due = max(r.Due.UnixMilli(), 1)
			if err := due.Put(dueKey(rec.due, kb), nil); err != nil {
				return err
			}
			dues++
		}
		if r.Failed {
			if err := failed.Put(kb, nil); err != nil {
				return err
			}
		}
		if err := rv.Put(kb, rec.encode()); err != nil {
			return err
		}
		records++
	}
	meta := tx.Bucket(bMeta)
	if err := putInt(meta, mRevisits, records); err != nil {
		return err
	}
	return putInt(meta, mDue, dues)
}

// ReadScheduleCounts reads the revisit schedule's figures of the state in
// dir at now without opening it for writing (spider status --data, the
// dashboard of a data directory). A missing or empty state file, or one
// older than the schedule, has none (zero counts). While a crawl holds the
// directory it fails at once with an error wrapping ErrLocked (the crawl
// writes its figures to a file of its own: crawl.ReadSchedule); a damaged
// file is an error wrapping ErrDamaged.
func ReadScheduleCounts(dir string, now time.Time) (c crawlstate.ScheduleCounts, err error) {
	path := filepath.Join(dir, DBFile)
	info, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) || err == nil && info.Size() == 0 {
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("cannot read the revisit schedule: %w", err)
	}
	if err := checkBoltSize(path, info.Size()); err != nil {
		return c, damaged(dir, err)
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			c, err = crawlstate.ScheduleCounts{}, damaged(dir, fmt.Errorf("reading it failed: %v", r))
		}
	}()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: 50 * time.Millisecond})
	if errors.Is(err, berrors.ErrTimeout) {
		return c, fmt.Errorf("cannot read the revisit schedule in %s while a crawl (pid %s) runs there: %w", dir, readPID(dir), ErrLocked)
	}
	if err != nil {
		return c, damaged(dir, err)
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		if tx.Bucket(bMeta) == nil {
			return nil
		}
		return scheduleCounts(tx, now, &c)
	})
	if err != nil {
		return crawlstate.ScheduleCounts{}, fmt.Errorf("cannot read the revisit schedule in %s: %w", dir, err)
	}
	return c, nil
}
