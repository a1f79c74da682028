package state

import (
	"errors"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/spider-crawler/spider/internal/frontier"
)

func TestPendingEncoding(t *testing.T) {
	for _, tc := range []struct {
		name    string
		seq     uint64
		r       frontier.Request
		compact bool
	}{
		{"host key", 7, frontier.Request{URL: "http://a.example/p?q=1", Key: "a.example", Depth: 2, Priority: 2, Seq: 7}, true},
		{"port", 8, frontier.Request{URL: "http://a.example:8080/", Key: "a.example:8080", Seq: 8}, true},
		{"IPv6", 9, frontier.Request{URL: "http://[::1]:8080/x", Key: "[::1]:8080", Seq: 9}, true},
		{"query without a path", 10, frontier.Request{URL: "https://a.example?x=1", Key: "a.example", Seq: 10}, true},
		{"fragment without a path", 10, frontier.Request{URL: "https://a.example#top", Key: "a.example", Seq: 10}, true},
		{"no path", 11, frontier.Request{URL: "https://a.example", Key: "a.example", Seq: 11}, true},
		{"version 2 fields", 12, frontier.Request{URL: "http://a.example/s.xml", Key: "a.example", Seq: 12, Kind: frontier.KindSitemap, Schedule: "\x01\x02", Topic: "t", Attempt: 3, Redirects: 1}, true},
		{"per-IP key", 13, frontier.Request{URL: "http://a.example/", Key: "ip:192.0.2.1", Seq: 13}, false},
		{"default port kept in the URL", 14, frontier.Request{URL: "http://a.example:80/", Key: "a.example", Seq: 14}, false},
		{"no key", 15, frontier.Request{URL: "http://a.example/", Seq: 15}, false},
		{"Seq not the record's", 16, frontier.Request{URL: "http://a.example/", Key: "a.example", Seq: 99}, false},
		{"not absolute", 17, frontier.Request{URL: "/relative", Key: "", Seq: 17}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := encodePending(tc.seq, tc.r)
			if err != nil {
				t.Fatal(err)
			}
			if got := v[0] == pendingCompact; got != tc.compact {
				t.Errorf("compact form %v, want %v", got, tc.compact)
			}
			full, _ := tc.r.MarshalBinary()
			if tc.compact && len(v) >= len(full) {
				t.Errorf("compact form takes %d bytes, the full encoding %d", len(v), len(full))
			}
			var got frontier.Request
			if err := decodePending(seqKey(tc.seq), v, &got); err != nil {
				t.Fatal(err)
			}
			if got != tc.r {
				t.Errorf("decoded %+v, want %+v", got, tc.r)
			}
		})
	}
}

func TestPendingEncodingDamaged(t *testing.T) {
	withKey, _ := frontier.Request{URL: "http://a.example/", Key: "a.example"}.AppendBinary([]byte{pendingCompact})
	withSeq, _ := frontier.Request{URL: "http://a.example/", Seq: 5}.AppendBinary([]byte{pendingCompact})
	good, _ := encodePending(5, frontier.Request{URL: "http://a.example/", Key: "a.example", Seq: 5})
	for _, tc := range []struct {
		name string
		k, v []byte
	}{
		{"compact with a key of its own", seqKey(5), withKey},
		{"compact with a Seq of its own", seqKey(5), withSeq},
		{"compact under a key that is not a Seq", []byte("short"), good},
		{"compact and truncated", seqKey(5), good[:len(good)-2]},
		{"compact and nothing else", seqKey(5), []byte{pendingCompact}},
	} {
		var r frontier.Request
		if err := decodePending(tc.k, tc.v, &r); !errors.Is(err, frontier.ErrBadEncoding) {
			t.Errorf("%s: %v, want an error wrapping frontier.ErrBadEncoding", tc.name, err)
		}
	}
}

// TestPendingFormat3Records: a state written before compact records (format
// 3: every pending record in the request encoding) opens, is upgraded, and
// its records load and complete beside the compact ones a later Discover
// writes.
func TestPendingFormat3Records(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir, Options{})
	old := []frontier.Request{
		{URL: "http://a.example/1", Key: "a.example", Depth: 1, Priority: 1},
		{URL: "http://b.example:8080/2", Key: "b.example:8080", Depth: 2, Priority: 2},
	}
	acc, err := s.Discover(ctx, old)
	must(t, err)
	must(t, s.Close())
	// Rewrite the records as format 3 wrote them.
	db, err := bolt.Open(filepath.Join(dir, DBFile), 0o600, nil)
	must(t, err)
	must(t, db.Update(func(tx *bolt.Tx) error {
		for _, r := range acc {
			v, _ := r.MarshalBinary()
			if err := tx.Bucket(bPending).Put(seqKey(r.Seq), v); err != nil {
				return err
			}
		}
		return tx.Bucket(bMeta).Put(mFormat, []byte("3"))
	}))
	must(t, db.Close())

	s = openTest(t, dir, Options{})
	defer s.Close()
	added, err := s.Discover(ctx, []frontier.Request{{URL: "http://c.example/3", Key: "c.example", Depth: 1, Priority: 1}})
	must(t, err)
	var loaded []frontier.Request
	must(t, s.LoadPending(ctx, func(r frontier.Request) error { loaded = append(loaded, r); return nil }))
	want := append(append([]frontier.Request{}, acc...), added...)
	if len(loaded) != len(want) {
		t.Fatalf("loaded %d pending, want %d", len(loaded), len(want))
	}
	for i := range want {
		if loaded[i] != want[i] {
			t.Errorf("pending %d: %+v, want %+v", i, loaded[i], want[i])
		}
	}
	must(t, s.db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bPending).Get(seqKey(added[0].Seq)); v[0] != pendingCompact {
			t.Errorf("a new record is not compact: %x", v)
		}
		if v := tx.Bucket(bMeta).Get(mFormat); string(v) != "4" {
			t.Errorf("format %q after opening, want 4", v)
		}
		return nil
	}))
	for _, r := range loaded {
		if _, err := s.Complete(ctx, r, Outcome{Class: "200"}, nil); err != nil {
			t.Fatalf("complete %s: %v", r.URL, err)
		}
	}
	if n := s.PendingCount(); n != 0 {
		t.Errorf("%d pending after completing all", n)
	}
}

func FuzzDecodePending(f *testing.F) {
	good, _ := encodePending(5, frontier.Request{URL: "http://a.example/x", Key: "a.example", Seq: 5, Depth: 1})
	legacy, _ := frontier.Request{URL: "http://a.example/x", Key: "ip:1.2.3.4", Seq: 5}.MarshalBinary()
	f.Add(seqKey(5), good)
	f.Add(seqKey(5), legacy)
	f.Add([]byte{1}, []byte{pendingCompact})
	f.Fuzz(func(t *testing.T, k, v []byte) {
		var r frontier.Request
		if decodePending(k, v, &r) != nil || len(k) != 8 {
			return
		}
		enc, err := encodePending(r.Seq, r)
		if err != nil {
			t.Fatal(err)
		}
		var again frontier.Request
		if err := decodePending(seqKey(r.Seq), enc, &again); err != nil || again != r {
			t.Fatalf("decoded %+v, encoded %x, decoded again %+v (%v)", r, enc, again, err)
		}
	})
}
