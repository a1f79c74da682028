package state

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/dedup"
	"github.com/spider-crawler/spider/internal/frontier"
	bolt "go.etcd.io/bbolt"
)

// fixedRecent makes the merge threshold exactly n (not growing with seen).
func fixedRecent(opt Options, n int) Options {
	opt.RecentSize, opt.RecentShare = n, 1<<30
	return opt
}

var errCheckOnly = errors.New("check only: roll back")

// inWriteTx runs fn in a write transaction, on the recent set as that
// transaction sees it, and rolls the transaction back.
func inWriteTx(t *testing.T, s *Store, fn func(tx *bolt.Tx, r *recentSet)) {
	t.Helper()
	err := s.db.Update(func(tx *bolt.Tx) error {
		fn(tx, s.recentIn(tx))
		return errCheckOnly
	})
	if !errors.Is(err, errCheckOnly) {
		t.Fatal(err)
	}
}

// checkRecent checks that the in-memory recent set is what the database
// holds, and that the seen set (seen bucket + recent) has SeenCount keys.
func checkRecent(t *testing.T, s *Store) {
	t.Helper()
	inWriteTx(t, s, func(tx *bolt.Tx, r *recentSet) {
		t.Helper()
		l, ok, err := readRecentLayout(tx)
		if err != nil || !ok {
			t.Fatalf("recent layout: ok %v, %v", ok, err)
		}
		if l.active != r.active || l.gen != r.gen || (l.gen != 0) != (r.frozen != nil) {
			t.Fatalf("generations on disk active %d frozen %d; in memory %d %d (frozen %v)", l.active, l.gen, r.active, r.gen, r.frozen != nil)
		}
		want := map[dedup.Key]recentEntry{}
		var frozen []dedup.Key
		activeN := 0
		must(t, walkRecent(tx, l, func(key dedup.Key, e recentEntry, isFrozen bool) error {
			want[key] = e
			if isFrozen {
				frozen = append(frozen, key)
			} else {
				activeN++
			}
			return nil
		}))
		if len(want) != len(r.m) || activeN != r.activeN {
			t.Fatalf("recent set: %d entries (%d active) on disk, %d (%d) in memory", len(want), activeN, len(r.m), r.activeN)
		}
		for k, e := range want {
			if got, ok := r.m[k]; !ok || got != e {
				t.Fatalf("recent entry %x: disk %+v, memory %+v (present %v)", k.AppendBinary(nil), e, got, ok)
			}
		}
		sortKeys(frozen)
		if r.frozen != nil && !slices.Equal(frozen, r.frozen[r.pos:]) {
			t.Fatalf("unmerged frozen keys: disk %d, memory %d", len(frozen), len(r.frozen)-r.pos)
		}
		all, err := logicalSeen(tx)
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(all)) != s.SeenCount() {
			t.Fatalf("seen set holds %d URLs, SeenCount %d", len(all), s.SeenCount())
		}
	})
}

// place is where a seen URL is.
type place int

const (
	inActive place = iota
	inFrozen       // frozen generation, not merged yet
	inMerged       // seen bucket
)

func (p place) String() string { return [...]string{"active", "frozen", "merged"}[p] }

func placeOf(t *testing.T, s *Store, url string) place {
	t.Helper()
	var p place
	inWriteTx(t, s, func(tx *bolt.Tx, r *recentSet) {
		e, ok := r.m[dedup.KeyOf(url)]
		switch {
		case !ok:
			if tx.Bucket(bSeen).Get(dedup.KeyOf(url).AppendBinary(nil)) == nil {
				t.Fatalf("%s is not seen", url)
			}
			p = inMerged
		case e.seq >= r.active:
			p = inActive
		default:
			p = inFrozen
		}
	})
	return p
}

// mergePhase reports whether a frozen generation exists and how much of it
// is merged.
func mergePhase(t *testing.T, s *Store) (frozen bool, merged, total int) {
	inWriteTx(t, s, func(_ *bolt.Tx, r *recentSet) {
		frozen, merged, total = r.frozen != nil, r.pos, len(r.frozen)
	})
	return
}

// frozenGen is the name of the frozen generation, 0 if none.
func frozenGen(t *testing.T, s *Store) (gen uint64) {
	inWriteTx(t, s, func(_ *bolt.Tx, r *recentSet) { gen = r.gen })
	return
}

func numbered(prefix string, from, to, depth int) []frontier.Request {
	var out []frontier.Request
	for i := from; i < to; i++ {
		out = append(out, frontier.Request{URL: fmt.Sprintf("%s%d", prefix, i), Key: "k:80", Depth: depth, Priority: depth})
	}
	return out
}

// TestRecentMergeBoundaries fills the store through several freezes and
// merges (threshold 50, batches of 20) and checks, after every batch, that
// the recent set matches the database, that no URL seen before is accepted
// again, and that a URL can be lowered wherever it is: active, frozen or
// merged.
func TestRecentMergeBoundaries(t *testing.T) {
	for _, mode := range []string{SeenExact, SeenBloom} {
		t.Run(mode, func(t *testing.T) {
			s := openTest(t, t.TempDir(), fixedRecent(Options{SeenMode: mode}, 50))
			accepted := map[string]frontier.Request{}
			phases := map[string]bool{}
			for b := 0; b < 30; b++ {
				batch := numbered("http://m/", 20*b, 20*b+20, 5)
				got, err := s.Discover(ctx, batch)
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != len(batch) {
					t.Fatalf("batch %d: accepted %d of %d new URLs", b, len(got), len(batch))
				}
				for _, r := range got {
					accepted[r.URL] = r
				}
				checkRecent(t, s)
				frozen, merged, total := mergePhase(t, s)
				phase := "none frozen"
				switch {
				case frozen && merged == 0:
					phase = "frozen, none merged"
				case frozen && merged < total:
					phase = "frozen, partly merged"
				}
				phases[phase] = true
				// Everything seen so far, again (redirect flag: even bloom
				// mode looks it up): nothing is new.
				again := numbered("http://m/", 0, 20*b+20, 5)
				for i := range again {
					again[i].Redirects = i % 2
				}
				if got, err := s.Discover(ctx, again); err != nil || len(got) != 0 {
					t.Fatalf("batch %d (%s): rediscovery accepted %v, %v", b, phase, urlsOf(got), err)
				}
				if phase != "frozen, partly merged" || phases["lowered"] {
					continue
				}
				// One URL from each place, lowered from depth 5 to 1.
				byPlace := map[place]string{}
				for i := 0; i < 20*b+20; i++ {
					u := fmt.Sprintf("http://m/%d", i)
					byPlace[placeOf(t, s, u)] = u
				}
				if len(byPlace) != 3 {
					t.Fatalf("URLs are in %d places, want active, frozen and merged: %v", len(byPlace), byPlace)
				}
				for p, u := range byPlace {
					low := accepted[u]
					// A redirect target: bloom mode looks it up too.
					low.Depth, low.Priority, low.Redirects = 1, 1, 1
					got, err := s.Discover(ctx, []frontier.Request{low})
					if err != nil || len(got) != 1 || got[0].Seq != accepted[u].Seq || got[0].Depth != 1 {
						t.Fatalf("lowering %s (%s): got %+v, %v; want Seq %d at depth 1", u, p, got, err, accepted[u].Seq)
					}
					if cur, err := s.Current(ctx, accepted[u]); err != nil || cur {
						t.Fatalf("old copy of lowered %s (%s) still current: %v %v", u, p, cur, err)
					}
					accepted[u] = got[0]
				}
				phases["lowered"] = true
				checkRecent(t, s)
			}
			for _, p := range []string{"none frozen", "frozen, none merged", "frozen, partly merged", "lowered"} {
				if !phases[p] {
					t.Errorf("never observed %q: the test did not cross a merge boundary", p)
				}
			}
			// Lowered depths survived the merges: depth 1 again is not lower.
			var lowered []frontier.Request
			for _, r := range accepted {
				if r.Depth == 1 {
					lowered = append(lowered, r)
				}
			}
			if len(lowered) != 3 {
				t.Fatalf("%d URLs lowered, want 3", len(lowered))
			}
			if got, err := s.Discover(ctx, lowered); err != nil || len(got) != 0 {
				t.Fatalf("lowered URLs at the same depth: accepted %v, %v", urlsOf(got), err)
			}
			n := 0
			must(t, s.LoadPending(ctx, func(r frontier.Request) error {
				if a := accepted[r.URL]; a.Seq != r.Seq || a.Depth != r.Depth {
					t.Errorf("pending %s: Seq %d depth %d, want %d %d", r.URL, r.Seq, r.Depth, a.Seq, a.Depth)
				}
				n++
				return nil
			}))
			if n != len(accepted) || s.SeenCount() != int64(len(accepted)) {
				t.Fatalf("pending %d, seen %d, accepted %d", n, s.SeenCount(), len(accepted))
			}
		})
	}
}

// copyDB copies the database file of an open store, as a kill -9 would
// leave it (no Close: no snapshot, counts as last committed).
func copyDB(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(from, DBFile))
	must(t, err)
	must(t, os.MkdirAll(to, 0o755))
	must(t, os.WriteFile(filepath.Join(to, DBFile), b, 0o600))
}

// TestRecentReopen stops a store while a frozen generation is partly
// merged, by Close or as a kill would, and checks that the reopened store
// has the same seen set, accepts nothing twice, and finishes the merge.
func TestRecentReopen(t *testing.T) {
	for _, killed := range []bool{true, false} {
		t.Run(map[bool]string{true: "killed", false: "closed"}[killed], func(t *testing.T) {
			dir := t.TempDir()
			opt := fixedRecent(Options{}, 50)
			s := openTest(t, dir, opt)
			for b := 0; ; b++ {
				if _, err := s.Discover(ctx, numbered("http://r/", 20*b, 20*b+20, 2)); err != nil {
					t.Fatal(err)
				}
				if frozen, merged, _ := mergePhase(t, s); frozen && merged > 0 && b > 5 {
					break
				}
			}
			seen, pending := s.SeenCount(), s.PendingCount()
			if killed {
				dir = filepath.Join(t.TempDir(), "copy")
				copyDB(t, s.Dir(), dir)
			}
			must(t, s.Close())
			var logs logBuffer
			opt.Logger = slogTo(&logs)
			s = openTest(t, dir, opt)
			wantFrom := map[bool]string{true: `bloom_from="seen bucket"`, false: "bloom_from=snapshot"}[killed]
			if !strings.Contains(logs.String(), wantFrom) {
				t.Fatalf("Open log %q lacks %s", logs.String(), wantFrom)
			}
			if s.SeenCount() != seen || s.PendingCount() != pending {
				t.Fatalf("reopened: seen %d pending %d, want %d %d", s.SeenCount(), s.PendingCount(), seen, pending)
			}
			if frozen, merged, total := mergePhase(t, s); !frozen || merged != 0 || total == 0 {
				t.Fatalf("reopened: frozen %v, %d of %d merged; want the rest of a frozen generation", frozen, merged, total)
			}
			checkRecent(t, s)
			if got, err := s.Discover(ctx, numbered("http://r/", 0, int(seen), 2)); err != nil || len(got) != 0 {
				t.Fatalf("reopened store accepted %d seen URLs again, %v", len(got), err)
			}
			// New URLs finish the merge (then a new generation is frozen).
			gen := frozenGen(t, s)
			for b := 0; ; b++ {
				if b > 20 {
					t.Fatal("the frozen generation was never merged")
				}
				if _, err := s.Discover(ctx, numbered("http://new/", 20*b, 20*b+20, 2)); err != nil {
					t.Fatal(err)
				}
				checkRecent(t, s)
				if frozenGen(t, s) != gen {
					break
				}
			}
		})
	}
}

// oldFormat writes a database as spider wrote it before the recent set:
// seen entries in the seen bucket only (one of them with the empty value of
// still older versions), some pending.
func oldFormat(t *testing.T, dir string, n int) {
	t.Helper()
	must(t, os.MkdirAll(dir, 0o755))
	db, err := bolt.Open(filepath.Join(dir, DBFile), 0o600, nil)
	must(t, err)
	defer db.Close()
	must(t, db.Update(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bPending, bSeen, bFP, bCounters, bMeta, bLinks} {
			if _, err := tx.CreateBucket(name); err != nil {
				return err
			}
		}
		pend, seen, meta := tx.Bucket(bPending), tx.Bucket(bSeen), tx.Bucket(bMeta)
		for i := 1; i <= n; i++ {
			r := frontier.Request{URL: fmt.Sprintf("http://old/%d", i), Key: "old:80", Depth: 3, Priority: 3, Seq: uint64(i)}
			v := seenValue(r.Seq, r.Depth)
			if i == n {
				v = []byte{}
			}
			if err := seen.Put(dedup.KeyOf(r.URL).AppendBinary(nil), v); err != nil {
				return err
			}
			if i%2 == 0 {
				continue // completed
			}
			enc, err := r.MarshalBinary()
			if err != nil {
				return err
			}
			if err := pend.Put(seqKey(r.Seq), enc); err != nil {
				return err
			}
		}
		if err := pend.SetSequence(uint64(n)); err != nil {
			return err
		}
		if err := putInt(tx.Bucket(bCounters), []byte("200"), int64(n/2)); err != nil {
			return err
		}
		if err := putInt(meta, mSeen, int64(n)); err != nil {
			return err
		}
		if err := putInt(meta, mPending, int64(n-n/2)); err != nil {
			return err
		}
		return meta.Put(mCreated, []byte(time.Now().UTC().Format(time.RFC3339Nano)))
	}))
}

// TestOldFormatDirectory opens a state written before the recent set: it
// gets one, old URLs stay seen (and can be lowered), new ones go through
// the recent set and merge into the old seen bucket.
func TestOldFormatDirectory(t *testing.T) {
	dir := t.TempDir()
	const n = 101
	oldFormat(t, dir, n)
	opt := fixedRecent(Options{}, 40)
	s := openTest(t, dir, opt)
	if s.SeenCount() != n || s.PendingCount() != n-n/2 {
		t.Fatalf("old state: seen %d pending %d, want %d %d", s.SeenCount(), s.PendingCount(), n, n-n/2)
	}
	checkRecent(t, s)
	if got, err := s.Discover(ctx, numbered("http://old/", 1, n+1, 3)); err != nil || len(got) != 0 {
		t.Fatalf("old URLs accepted again: %v, %v", urlsOf(got), err)
	}
	// Pending http://old/1 is lowered in the seen bucket; the empty entry is
	// never lowered.
	got, err := s.Discover(ctx, append(numbered("http://old/", 1, 2, 1), numbered("http://old/", n, n+1, 0)...))
	if err != nil || len(got) != 1 || got[0].Seq != 1 || got[0].Depth != 1 {
		t.Fatalf("lowering old URLs: %+v, %v; want http://old/1 at depth 1, Seq 1", got, err)
	}
	if p := placeOf(t, s, "http://old/1"); p != inMerged {
		t.Fatalf("old URL is in %s", p)
	}
	for b := 0; b < 10; b++ {
		got, err := s.Discover(ctx, numbered("http://new/", 20*b, 20*b+20, 2))
		if err != nil || len(got) != 20 {
			t.Fatalf("new batch %d: %d accepted, %v", b, len(got), err)
		}
		if got[0].Seq <= n {
			t.Fatalf("new Seq %d reuses an old one", got[0].Seq)
		}
		checkRecent(t, s)
	}
	if p := placeOf(t, s, "http://new/0"); p != inMerged {
		t.Fatalf("first new URL is %s after 5 thresholds, want merged", p)
	}
	must(t, s.Close())
	s = openTest(t, dir, opt)
	checkRecent(t, s)
	if got, err := s.Discover(ctx, append(numbered("http://old/", 1, n+1, 3), numbered("http://new/", 0, 200, 2)...)); err != nil || len(got) != 0 {
		t.Fatalf("after reopen accepted %v, %v", urlsOf(got), err)
	}
}

// TestRelinkAcrossMerge runs TestRelinkFetchedURL's crawl with filler URLs
// between its steps, so that the relinked URLs' seen entries are in every
// place (active, frozen, merged) when they are lowered.
func TestRelinkAcrossMerge(t *testing.T) {
	for _, filler := range []int{0, 7, 13, 40, 120} {
		t.Run(fmt.Sprintf("filler %d", filler), func(t *testing.T) {
			s := openTest(t, t.TempDir(), fixedRecent(Options{Relink: true, MaxDepth: 3}, 10))
			next := 0
			fill := func() {
				if _, err := s.Discover(ctx, numbered("http://filler/", next, next+filler, 9)); err != nil {
					t.Fatal(err)
				}
				next += filler
			}
			c := newRelinkCrawl(t, s, "S", "T")
			fill()
			c.fetch("S", "A")
			fill()
			c.fetch("A", "B")
			fill()
			c.fetch("B", "C")
			fill()
			if got := c.fetch("C", "E"); len(got) != 0 {
				t.Fatalf("depth-4 link accepted under MaxDepth 3: %v", got)
			}
			fill()
			places := map[string]place{}
			for _, u := range []string{"B", "C"} {
				places[u] = placeOf(t, s, u)
			}
			got := c.fetch("T", "B")
			if d := depths(got); len(d) != 1 || d["E"] != 3 {
				t.Fatalf("relink (B %s, C %s) accepted %v, want E at depth 3", places["B"], places["C"], d)
			}
			fill()
			if got := c.fetch("E"); len(got) != 0 {
				t.Errorf("E's completion accepted %v", got)
			}
			if s.SeenCount() != int64(6+next) {
				t.Errorf("seen %d, want %d", s.SeenCount(), 6+next)
			}
			// The lowered depths hold: T's link to B again relinks nothing.
			if got, err := s.Discover(ctx, []frontier.Request{rq("B", 1), rq("C", 2)}); err != nil || len(got) != 0 {
				t.Errorf("B and C found again at their depths: %v, %v", got, err)
			}
			checkRecent(t, s)
		})
	}
}

// TestRecentRollback: a transaction that added URLs, froze a generation
// and merged entries, then failed, leaves no trace, even when another
// transaction commits before the recent set is used again.
func TestRecentRollback(t *testing.T) {
	s := openTest(t, t.TempDir(), fixedRecent(Options{}, 30))
	if _, err := s.Discover(ctx, numbered("http://a/", 0, 40, 1)); err != nil { // frozen: 40
		t.Fatal(err)
	}
	before, _, _ := mergePhase(t, s)
	if !before {
		t.Fatal("no frozen generation after 40 URLs with threshold 30")
	}
	boom := errors.New("boom")
	var attempted bool
	err := s.db.Update(func(tx *bolt.Tx) error {
		d := deltas{}
		news, err := s.discoverTx(tx, numbered("http://b/", 0, 60, 1), map[dedup.Key]struct{}{}, &d)
		if err != nil {
			return err
		}
		if err := s.mergeStep(tx, len(news)); err != nil {
			return err
		}
		// All 40 merged, the generation deleted, the 60 new ones frozen.
		r := s.recentIn(tx)
		attempted = len(news) == 60 && r.frozen != nil && len(r.frozen) == 60
		return boom
	})
	if !errors.Is(err, boom) || !attempted {
		t.Fatalf("failed transaction: %v (did it merge and freeze? %v)", err, attempted)
	}
	must(t, s.SetMeta(ctx, []byte("other"), []byte("commit")))
	checkRecent(t, s)
	got, err := s.Discover(ctx, numbered("http://b/", 0, 60, 1))
	if err != nil || len(got) != 60 {
		t.Fatalf("after the rollback %d of 60 URLs accepted, %v", len(got), err)
	}
	checkRecent(t, s)
}

// TestOpenDamagedRecent: a recent bucket that no version writes is
// reported, not used.
func TestOpenDamagedRecent(t *testing.T) {
	tests := []struct {
		name   string
		tamper func(tx *bolt.Tx) error
		want   string
	}{
		{"three generations", func(tx *bolt.Tx) error {
			_, err := tx.Bucket(bRecent).CreateBucket(seqKey(1 << 40))
			if err == nil {
				_, err = tx.Bucket(bRecent).CreateBucket(seqKey(1 << 41))
			}
			return err
		}, "3 generations"},
		{"record under a wrong Seq", func(tx *bolt.Tx) error {
			b := tx.Bucket(bRecent).Bucket(seqKey(1))
			k, v := b.Cursor().First()
			return b.Put(seqKey(binary64(k)+1000), bytes.Clone(v))
		}, "holds Seq"},
		{"merge progress of another generation", func(tx *bolt.Tx) error {
			return tx.Bucket(bMeta).Put(mMerged, make([]byte, 24))
		}, "merge progress"},
		{"value in place of a generation", func(tx *bolt.Tx) error {
			return tx.Bucket(bRecent).Put([]byte("x"), []byte("y"))
		}, "not a generation"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openTest(t, dir, Options{})
			if _, err := s.Discover(ctx, reqs("http://a/", "http://b/")); err != nil {
				t.Fatal(err)
			}
			must(t, s.db.Update(tt.tamper))
			must(t, s.Close())
			s2, err := Open(dir, Options{ExpectedURLs: 1000})
			if err == nil {
				_ = s2.Close()
				t.Fatal("Open accepted a damaged recent bucket")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not say %q", err, tt.want)
			}
		})
	}
}

func slogTo(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }

func binary64(b []byte) uint64 {
	var v uint64
	for _, c := range b {
		v = v<<8 | uint64(c)
	}
	return v
}

func FuzzDecodeRecent(f *testing.F) {
	kb := dedup.KeyOf("http://a/").AppendBinary(nil)
	f.Add(seqKey(7), recentValue(kb, recentEntry{seq: 7, depth: 3}))
	f.Add(seqKey(7), recentValue(kb, recentEntry{seq: 8, depth: 3}))
	f.Add(seqKey(1<<40), recentValue(kb, recentEntry{seq: 1 << 40, depth: 1 << 20}))
	f.Add([]byte{1}, kb)
	f.Add(seqKey(0), append(kb, 0x80))
	f.Fuzz(func(t *testing.T, k, v []byte) {
		key, e, err := decodeRecent(k, v)
		if err != nil {
			return
		}
		if !bytes.Equal(seqKey(e.seq), k) {
			t.Fatalf("decodeRecent(%x, %x) = Seq %d, not its key", k, v, e.seq)
		}
		key2, e2, err := decodeRecent(k, recentValue(key.AppendBinary(nil), e))
		if err != nil || key2 != key || e2 != e {
			t.Fatalf("decodeRecent(%x, %x) = %+v, which does not encode back: %+v %v", k, v, e, e2, err)
		}
	})
}

// TestStateFormat: Open writes the state format (also into an old-format
// directory it upgrades) and refuses a newer or unreadable one with an
// error saying what to do.
func TestStateFormat(t *testing.T) {
	dir := t.TempDir()
	oldFormat(t, dir, 10)
	s := openTest(t, dir, Options{})
	must(t, s.Close())
	setFormat := func(v string) (was string) {
		db, err := bolt.Open(filepath.Join(dir, DBFile), 0o600, nil)
		must(t, err)
		defer db.Close()
		must(t, db.Update(func(tx *bolt.Tx) error {
			was = string(tx.Bucket(bMeta).Get(mFormat))
			return tx.Bucket(bMeta).Put(mFormat, []byte(v))
		}))
		return was
	}
	if was := setFormat("2"); was != "3" {
		t.Errorf("format after opening an old directory: %q, want 3", was)
	}
	// A format-2 directory (before the revisit schedule) is upgraded in
	// place: its new buckets start empty.
	s = openTest(t, dir, Options{})
	must(t, s.Close())
	for _, v := range []string{"4", "x"} {
		if was := setFormat(v); was != "3" {
			t.Errorf("format after opening a format-2 directory: %q, want 3", was)
		}
		_, err := Open(dir, Options{ExpectedURLs: 1000})
		if err == nil || !strings.Contains(err.Error(), "this spider reads formats up to 3") {
			t.Fatalf("format %q: Open: %v, want a refusal", v, err)
		}
		setFormat("3")
	}
	setFormat("3")
	s = openTest(t, dir, Options{})
	must(t, s.Close())
}
