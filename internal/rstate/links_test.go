package rstate

import (
	"encoding/binary"
	"slices"
	"testing"

	"github.com/spider-crawler/spider/internal/frontier"
)

// keptRecord is what the complete script stores: depth, base, then the
// keptRequests encoding.
func keptRecord(depth, base int, reqs []frontier.Request) ([]byte, error) {
	tail, err := keptRequests(reqs)
	if err != nil {
		return nil, err
	}
	b := binary.AppendUvarint(nil, uint64(depth))
	b = binary.AppendUvarint(b, uint64(base))
	if len(tail) == 0 {
		tail = []byte{0}
	}
	return append(b, tail...), nil
}

func TestDecodeKept(t *testing.T) {
	reqs := []frontier.Request{{URL: "http://a/", Key: "a:80", Depth: 4, Priority: 4}, {URL: "http://b/", Key: "b:80", Depth: 3, Redirects: 1, Topic: "x"}}
	rec, err := keptRecord(1, 3, reqs)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		in   []byte
		ok   bool
	}{
		{"record", rec, true},
		{"empty", nil, false},
		{"no count", []byte{1, 3}, false},
		{"count too large", []byte{1, 3, 9}, false},
		{"truncated", rec[:len(rec)-1], false},
		{"trailing", append(slices.Clone(rec), 0), false},
	}
	for _, tt := range tests {
		d, base, got, err := decodeKept(tt.in)
		if (err == nil) != tt.ok {
			t.Errorf("%s: err %v, want ok=%v", tt.name, err, tt.ok)
			continue
		}
		if tt.ok && (d != 1 || base != 3 || !slices.Equal(got, reqs)) {
			t.Errorf("%s: %d %d %+v", tt.name, d, base, got)
		}
	}
}

func FuzzDecodeKept(f *testing.F) {
	rec, err := keptRecord(2, 3, []frontier.Request{{URL: "http://a/", Key: "a:80", Depth: 4}, {URL: "http://b/", Depth: 3, Redirects: 1}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(rec)
	f.Add([]byte{})
	f.Add([]byte{0, 0, 0})
	f.Add([]byte{3, 200, 1})
	f.Add(rec[:len(rec)-1])
	f.Fuzz(func(t *testing.T, b []byte) {
		depth, base, reqs, err := decodeKept(b)
		if err != nil {
			return
		}
		again, err := keptRecord(depth, base, reqs)
		if err != nil {
			t.Fatal(err)
		}
		d2, b2, r2, err := decodeKept(again)
		if err != nil || d2 != depth || b2 != base || !slices.Equal(r2, reqs) {
			t.Fatalf("round trip of %x: %d %d %v %v, want %d %d %v", b, d2, b2, r2, err, depth, base, reqs)
		}
	})
}
