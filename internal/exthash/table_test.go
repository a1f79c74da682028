package exthash

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// randomOp draws one change over a key space of nkeys keys with values of
// up to maxVal bytes.
func randomOp(r *rand.Rand, nkeys, maxVal int) Op {
	k := []byte(fmt.Sprintf("key-%d", r.IntN(nkeys)))
	if r.IntN(5) == 0 {
		return Op{Key: k, Delete: true}
	}
	v := make([]byte, r.IntN(maxVal+1))
	for i := range v {
		v[i] = byte('a' + r.IntN(26))
	}
	return Op{Key: k, Value: v}
}

func applyModel(m map[string]string, ops []Op) {
	for _, op := range ops {
		if op.Delete {
			delete(m, string(op.Key))
		} else {
			m[string(op.Key)] = string(op.Value)
		}
	}
}

// contents reads every record of t.
func contents(t *testing.T, tb *Table) map[string]string {
	t.Helper()
	got := map[string]string{}
	if err := tb.Range(func(k, v []byte) bool {
		if _, dup := got[string(k)]; dup {
			t.Fatalf("Range returned key %q twice", k)
		}
		got[string(k)] = string(v)
		return true
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

// same checks t against the model: invariants, Range, Get and Len.
func same(t *testing.T, tb *Table, want map[string]string) {
	t.Helper()
	if err := tb.Check(); err != nil {
		t.Fatal(err)
	}
	got := contents(t, tb)
	if !maps.Equal(got, want) {
		t.Fatalf("table holds %d records, model %d; differ", len(got), len(want))
	}
	if tb.Len() != int64(len(want)) {
		t.Fatalf("Len = %d, want %d", tb.Len(), len(want))
	}
	for k, v := range want {
		g, ok, err := tb.Get([]byte(k))
		if err != nil || !ok || string(g) != v {
			t.Fatalf("Get(%q) = %q, %v, %v; want %q", k, g, ok, err, v)
		}
	}
	if _, ok, _ := tb.Get([]byte("absent-key")); ok {
		t.Fatal("Get of an absent key found it")
	}
}

// TestRandomOpsAgainstMap runs random puts and deletes against a Go map,
// reopening the table now and then.
func TestRandomOpsAgainstMap(t *testing.T) {
	for _, tc := range []struct {
		name          string
		nkeys, maxVal int
		ops           int
		maxDepth      int
	}{
		{"small values", 3000, 40, 6000, 0},
		{"large values", 400, 900, 2000, 0},
		{"shallow directory uses cache", 300, 400, 1500, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			opts := Options{NoSync: true, MaxGlobalDepth: tc.maxDepth}
			tb, err := Open(dir, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { tb.Close() }()
			r := rand.New(rand.NewPCG(1, uint64(tc.nkeys)))
			model := map[string]string{}
			full := 0
			for i := range tc.ops {
				op := randomOp(r, tc.nkeys, tc.maxVal)
				err := tb.Apply([]Op{op})
				if errors.Is(err, ErrFull) {
					full++
					continue
				}
				if err != nil {
					t.Fatalf("op %d: %v", i, err)
				}
				applyModel(model, []Op{op})
				if i%997 == 0 {
					same(t, tb, model)
					tb.Close()
					if tb, err = Open(dir, opts); err != nil {
						t.Fatal(err)
					}
				}
			}
			same(t, tb, model)
			st := tb.Stats()
			t.Logf("GL %d, %d buckets, %d records (%d in cache), %d splits, %d doublings, %d ErrFull",
				st.GlobalDepth, st.Buckets, st.Records, st.CacheRecords, st.Splits, st.Doublings, full)
			if st.Buckets < 2 {
				t.Fatalf("no split happened: %+v", st)
			}
			if tc.maxDepth > 0 && st.CacheRecords == 0 && full == 0 {
				t.Fatalf("a directory capped at GL %d never used the cache bucket: %+v", tc.maxDepth, st)
			}
		})
	}
}

// TestCacheBucketDefersDoubling pins the SPEC §4 rule: a full bucket whose
// LL equals GL (LG = 1) sends the record to the cache bucket and sets BNP
// instead of doubling the directory; a later look-up finds it there.
func TestCacheBucketDefersDoubling(t *testing.T) {
	tb, err := Open(t.TempDir(), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	val := bytes.Repeat([]byte("v"), 900)
	// GL = 0: one bucket with LL = GL. Four 904+-byte records fill it.
	for i := range 4 {
		if err := tb.Put([]byte{byte('a' + i)}, val); err != nil {
			t.Fatal(err)
		}
	}
	if st := tb.Stats(); st.GlobalDepth != 0 || st.CacheRecords != 0 {
		t.Fatalf("after 4 records: %+v, want GL 0 and an empty cache", st)
	}
	if err := tb.Put([]byte("e"), val); err != nil {
		t.Fatal(err)
	}
	st := tb.Stats()
	if st.GlobalDepth != 0 || st.CacheRecords != 1 || st.Doublings != 0 {
		t.Fatalf("after the 5th record: %+v, want it in the cache bucket, no doubling", st)
	}
	if v, ok, err := tb.Get([]byte("e")); err != nil || !ok || !bytes.Equal(v, val) {
		t.Fatalf("Get of the cached record: %v %v", ok, err)
	}
	if err := tb.Check(); err != nil {
		t.Fatal(err)
	}
	// Fill the cache bucket: then the directory must double.
	for i := range 4 {
		if err := tb.Put([]byte{byte('f' + i)}, val); err != nil {
			t.Fatal(err)
		}
	}
	st = tb.Stats()
	if st.Doublings == 0 || st.GlobalDepth == 0 {
		t.Fatalf("cache full but the directory did not double: %+v", st)
	}
	if err := tb.Check(); err != nil {
		t.Fatal(err)
	}
}

func TestBadRecords(t *testing.T) {
	tb, err := Open(t.TempDir(), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	for _, tc := range []struct {
		key, val []byte
	}{
		{nil, []byte("x")},
		{[]byte("k"), make([]byte, MaxRecord)},
	} {
		if err := tb.Put(tc.key, tc.val); !errors.Is(err, ErrTooLarge) {
			t.Errorf("Put(%d-byte key, %d-byte value) = %v, want ErrTooLarge", len(tc.key), len(tc.val), err)
		}
	}
	if err := tb.Put([]byte("k"), make([]byte, MaxRecord-1)); err != nil {
		t.Errorf("a record of exactly MaxRecord bytes: %v", err)
	}
	tb.Close()
	if _, _, err := tb.Get([]byte("k")); !errors.Is(err, ErrClosed) {
		t.Errorf("Get after Close = %v, want ErrClosed", err)
	}
}

func TestOpenRejectsCorruptFiles(t *testing.T) {
	dir := t.TempDir()
	tb, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := tb.Put([]byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	tb.Close()
	// A damaged header must be reported, not read as an empty table.
	path := filepath.Join(dir, DirectoryFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[20] ^= 0xff
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	// The log still holds the last commit's header and repairs it.
	if tb, err = Open(dir, Options{}); err != nil {
		t.Fatalf("the log did not repair a damaged header: %v", err)
	}
	tb.Close()
	if err := os.WriteFile(filepath.Join(dir, LogFile), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	b[20] ^= 0xff
	b[21] ^= 0xff
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, Options{}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open of a damaged header without log = %v, want ErrCorrupt", err)
	}
	if _, err := Open(t.TempDir(), Options{MaxGlobalDepth: 31}); err == nil {
		t.Fatal("MaxGlobalDepth 31 accepted")
	}
}

// TestCrashAtRandomPoints crashes the file layer at a random write or sync
// during a random batch, loses what a power failure may lose, and checks
// that the reopened table is consistent and holds the state before or
// after that batch, never anything else.
func TestCrashAtRandomPoints(t *testing.T) {
	trials := 100
	if testing.Short() {
		trials = 30
	}
	outcomes := map[string]int{}
	for trial := range trials {
		fs := newMemFS(uint64(trial))
		r := rand.New(rand.NewPCG(uint64(trial), 99))
		opts := Options{FS: fs, MaxGlobalDepth: 6}
		tb, err := Open("t", opts)
		if err != nil {
			t.Fatal(err)
		}
		model := map[string]string{}
		for range r.IntN(300) {
			op := randomOp(r, 200, 300)
			if err := tb.Apply([]Op{op}); err != nil {
				if errors.Is(err, ErrFull) {
					continue
				}
				t.Fatal(err)
			}
			applyModel(model, []Op{op})
		}
		fs.arm(1 + r.IntN(40))
		var before, after map[string]string
		for {
			batch := make([]Op, 1+r.IntN(4))
			for i := range batch {
				batch[i] = randomOp(r, 200, 300)
			}
			before = maps.Clone(model)
			after = maps.Clone(model)
			applyModel(after, batch)
			err := tb.Apply(batch)
			if errors.Is(err, ErrFull) {
				after = before
				continue
			}
			if err != nil {
				if !errors.Is(err, errCrash) {
					t.Fatalf("trial %d: %v", trial, err)
				}
				break
			}
			model = after
		}
		fs.crash()
		tb, err = Open("t", opts)
		if err != nil {
			t.Fatalf("trial %d: reopen after crash: %v", trial, err)
		}
		if err := tb.Check(); err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		got := contents(t, tb)
		switch {
		case maps.Equal(got, after):
			outcomes["after"]++
			model = after
		case maps.Equal(got, before):
			outcomes["before"]++
			model = before
		default:
			t.Fatalf("trial %d: after the crash the table holds %d records, neither the %d before nor the %d after the interrupted batch",
				trial, len(got), len(before), len(after))
		}
		// The recovered table keeps working.
		for range 20 {
			op := randomOp(r, 200, 300)
			if err := tb.Apply([]Op{op}); err != nil && !errors.Is(err, ErrFull) {
				t.Fatalf("trial %d: after recovery: %v", trial, err)
			} else if err == nil {
				applyModel(model, []Op{op})
			}
		}
		same(t, tb, model)
		tb.Close()
	}
	t.Logf("outcomes over %d crashes: %v", trials, outcomes)
	if outcomes["before"] == 0 || outcomes["after"] == 0 {
		t.Fatalf("crashes never hit both sides of the commit point: %v", outcomes)
	}
}
