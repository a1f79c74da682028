package exthash

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzDecodeWAL feeds arbitrary bytes to the log decoder: it must not panic,
// and what it accepts must re-encode to the same bytes.
func FuzzDecodeWAL(f *testing.F) {
	page := (&bucket{ll: 1, recs: []record{{key: []byte("k"), val: []byte("v")}}, used: 6}).encode()
	f.Add(encodeWAL(1, []pageImage{{pageRef{fileBuckets, 3}, page}}))
	f.Add(encodeWAL(7, nil))
	f.Add([]byte("EXTHWAL1"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		seq, pages, ok := decodeWAL(b)
		if !ok {
			return
		}
		re := encodeWAL(seq, pages)
		if !bytes.Equal(re, b[:len(re)]) {
			t.Fatalf("accepted log does not re-encode to its bytes")
		}
	})
}

// FuzzDecodeBucket feeds arbitrary pages to the bucket decoder: it must not
// panic, and a page it accepts must re-encode identically.
func FuzzDecodeBucket(f *testing.F) {
	f.Add((&bucket{}).encode())
	b := &bucket{ll: 3, bnp: true}
	b.add(record{key: []byte("key"), val: []byte("value")})
	b.add(record{key: []byte("x"), val: nil})
	f.Add(b.encode())
	f.Add(make([]byte, PageSize))
	f.Fuzz(func(t *testing.T, p []byte) {
		if len(p) < PageSize {
			p = append(p, make([]byte, PageSize-len(p))...)
		}
		p = p[:PageSize]
		sealPage(p) // get past the checksum to the record parser
		b, err := decodeBucket(p)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error does not wrap ErrCorrupt: %v", err)
			}
			return
		}
		re := b.encode()
		used := pageHeader + b.used
		// Bytes past the records and the reserved header bytes are not kept.
		if !bytes.Equal(re[16:used], p[16:used]) || re[0] != p[0] || re[1]&flagBNP != p[1]&flagBNP {
			t.Fatalf("accepted page does not re-encode to its records")
		}
	})
}

// FuzzOps interprets the input as a sequence of puts and deletes on a small
// key space and checks the table against a map after each reopen.
func FuzzOps(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 200, 100, 50})
	f.Add(bytes.Repeat([]byte{7, 255}, 64))
	f.Fuzz(func(t *testing.T, prog []byte) {
		if len(prog) > 400 {
			prog = prog[:400]
		}
		fs := newMemFS(1)
		opts := Options{FS: fs, MaxGlobalDepth: 4}
		tb, err := Open("f", opts)
		if err != nil {
			t.Fatal(err)
		}
		model := map[string]string{}
		for i := 0; i+1 < len(prog); i += 2 {
			key := []byte{'k', prog[i] % 64}
			if prog[i+1] < 40 {
				if _, err := tb.Delete(key); err != nil {
					t.Fatal(err)
				}
				delete(model, string(key))
				continue
			}
			val := bytes.Repeat([]byte{prog[i+1]}, int(prog[i+1]))
			if err := tb.Put(key, val); err != nil {
				if errors.Is(err, ErrFull) {
					continue
				}
				t.Fatal(err)
			}
			model[string(key)] = string(val)
		}
		tb.Close()
		if tb, err = Open("f", opts); err != nil {
			t.Fatal(err)
		}
		defer tb.Close()
		same(t, tb, model)
	})
}
