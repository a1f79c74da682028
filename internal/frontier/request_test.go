package frontier

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"testing"
)

func TestRequestRoundTrip(t *testing.T) {
	tests := []Request{
		{},
		{URL: "http://example.com/", Key: "example.com:80"},
		{URL: "https://例子.测试/路径?q=1", Key: "例子.测试:443", Depth: 3, Priority: 2, Seq: 1 << 40, Attempt: 1, Redirects: 2, Topic: "news"},
		{URL: "u", Key: "k", Depth: math.MaxInt32, Priority: math.MaxInt64, Seq: math.MaxUint64, Attempt: -1, Redirects: math.MinInt64},
		{URL: "http://a/sitemap.xml", Key: "a:80", Kind: KindSitemap},
		{URL: "http://a/p", Key: "a:80", Depth: 2, Seq: 7, Schedule: "\x01\x00entry"},
		{URL: "http://a/s.xml.gz", Key: "a:80", Kind: KindSitemap, Schedule: "e", Topic: "t"},
	}
	for _, want := range tests {
		b, err := want.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var got Request
		if err := got.UnmarshalBinary(b); err != nil {
			t.Fatalf("UnmarshalBinary(%x): %v", b, err)
		}
		if got != want {
			t.Errorf("round trip: got %+v, want %+v", got, want)
		}
		ab, _ := want.AppendBinary([]byte("prefix"))
		if !bytes.Equal(ab[6:], b) {
			t.Error("AppendBinary and MarshalBinary differ")
		}
	}
}

func TestRequestSize(t *testing.T) {
	r := Request{URL: "http://example.com/a/b/c.html", Key: "example.com:80", Depth: 2, Priority: 1, Seq: 123456, Topic: ""}
	b, _ := r.MarshalBinary()
	if overhead := len(b) - len(r.URL) - len(r.Key); overhead > 12 {
		t.Errorf("encoding overhead %d bytes, want compact (≤ 12)", overhead)
	}
	if b[0] != requestVersion {
		t.Errorf("a page request without a schedule is written as version %d, want %d (the form the Redis scripts read)", b[0], requestVersion)
	}
}

func TestRequestUnmarshalErrors(t *testing.T) {
	good, _ := Request{URL: "http://a/", Key: "a:80", Topic: "t"}.MarshalBinary()
	tests := []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"bad version", append([]byte{9}, good[1:]...)},
		{"truncated", good[:len(good)-1]},
		{"trailing", append(append([]byte(nil), good...), 0)},
		{"url length too long", []byte{1, 200, 'a'}},
		{"overflowing varint", append([]byte{1}, bytes.Repeat([]byte{0xff}, 11)...)},
	}
	v2, _ := Request{URL: "http://a/", Key: "a:80", Kind: KindSitemap}.MarshalBinary()
	v2page := append([]byte{2}, good[1:]...)
	v2page = append(v2page, 0, 0) // kind page, empty schedule: has a version 1 form
	badKind := append([]byte(nil), v2...)
	badKind[len(badKind)-2] = 7
	tests = append(tests, []struct {
		name string
		data []byte
	}{
		{"v2 truncated", v2[:len(v2)-1]},
		{"v2 trailing", append(append([]byte(nil), v2...), 0)},
		{"v2 unknown kind", badKind},
		{"v2 without kind or schedule", v2page},
	}...)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Request{URL: "keep"}
			err := r.UnmarshalBinary(tt.data)
			if !errors.Is(err, ErrBadEncoding) {
				t.Fatalf("error = %v, want ErrBadEncoding", err)
			}
			if r.URL != "keep" {
				t.Fatal("failed UnmarshalBinary modified the receiver")
			}
		})
	}
}

func FuzzRequestUnmarshal(f *testing.F) {
	for _, r := range []Request{{}, {URL: "http://a/", Key: "a:80", Depth: 1, Priority: 3, Seq: 9, Attempt: 2, Redirects: 1, Topic: "x"}} {
		b, _ := r.MarshalBinary()
		f.Add(b)
	}
	f.Add([]byte{1, 0x80, 0x00})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		var r Request
		if err := r.UnmarshalBinary(data); err != nil {
			if !errors.Is(err, ErrBadEncoding) {
				t.Fatalf("error does not wrap ErrBadEncoding: %v", err)
			}
			return
		}
		b, _ := r.MarshalBinary()
		var r2 Request
		if err := r2.UnmarshalBinary(b); err != nil || r2 != r {
			t.Fatalf("re-encoding of an accepted input does not round-trip: %+v vs %+v (%v)", r, r2, err)
		}
		if len(b) > len(data) {
			t.Fatalf("canonical encoding (%d bytes) longer than accepted input (%d)", len(b), len(data))
		}
	})
}

func FuzzRequestRoundTrip(f *testing.F) {
	f.Add("http://a/", "a:80", 0, 0, uint64(0), 0, 0, "", uint8(0), "")
	f.Add("x", "", -5, 1<<40, uint64(math.MaxUint64), 7, -3, "topic", uint8(1), "")
	f.Add("http://a/", "a:80", 1, 1, uint64(3), 0, 0, "", uint8(0), "\x01entry")
	f.Fuzz(func(t *testing.T, url, key string, depth, prio int, seq uint64, attempt, redirects int, topic string, kind uint8, sched string) {
		want := Request{URL: url, Key: key, Depth: depth, Priority: prio, Seq: seq, Attempt: attempt, Redirects: redirects, Topic: topic, Kind: Kind(kind % 2), Schedule: sched}
		b, _ := want.MarshalBinary()
		var got Request
		if err := got.UnmarshalBinary(b); err != nil || got != want {
			t.Fatalf("round trip of %+v gave %+v, %v", want, got, err)
		}
	})
}

// FuzzReadRecord feeds arbitrary bytes to the spill record reader: it must
// fail cleanly, never panic or allocate beyond maxRecordBytes.
func FuzzReadRecord(f *testing.F) {
	rec, _ := Request{URL: "http://a/", Key: "a:80"}.MarshalBinary()
	good := append(binary.AppendUvarint(nil, uint64(len(rec))), rec...)
	f.Add(good)
	f.Add(append(good, good...))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bufio.NewReader(bytes.NewReader(data))
		var buf []byte
		for i := 0; i < 4; i++ {
			var err error
			var req Request
			req, buf, err = readRecord(r, buf)
			if err != nil {
				return
			}
			if cap(buf) > maxRecordBytes {
				t.Fatalf("buffer grew to %d", cap(buf))
			}
			_ = req
		}
	})
}

func TestRequestsRoundTrip(t *testing.T) {
	lists := [][]Request{
		{},
		{{URL: "http://a/", Key: "a:80", Depth: 2}},
		{{URL: "http://a/", Key: "a:80", Depth: 3, Priority: 1}, {URL: "https://例子.测试/", Key: "例子.测试:443", Redirects: 1, Topic: "news"}},
	}
	for _, want := range lists {
		b, err := AppendRequests([]byte("head"), want)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(b, []byte("head")) {
			t.Fatalf("AppendRequests did not append: %q", b)
		}
		got, err := DecodeRequests(b[len("head"):])
		if err != nil || len(got) != len(want) {
			t.Fatalf("DecodeRequests = %+v, %v; want %+v", got, err, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("request %d: %+v, want %+v", i, got[i], want[i])
			}
		}
		for cut := 1; cut < len(b)-len("head"); cut++ {
			if _, err := DecodeRequests(b[len("head") : len(b)-cut]); err == nil {
				t.Errorf("%d bytes cut off: no error", cut)
			}
		}
		if _, err := DecodeRequests(append(b[len("head"):len(b):len(b)], 0)); err == nil {
			t.Error("trailing byte: no error")
		}
	}
}

func TestShiftDepth(t *testing.T) {
	in := []Request{{URL: "a", Depth: 3, Priority: 1}, {URL: "b", Depth: 1, Priority: 4}}
	got := ShiftDepth(in, 2)
	want := []Request{{URL: "a", Depth: 1, Priority: 0}, {URL: "b", Depth: 0, Priority: 2}}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("shifted %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if in[0].Depth != 3 {
		t.Error("ShiftDepth changed its input")
	}
	if same := ShiftDepth(in, 0); &same[0] != &in[0] {
		t.Error("ShiftDepth(reqs, 0) copied")
	}
}

// FuzzDecodeRequests feeds arbitrary bytes to the request-list decoder: it
// must fail cleanly or decode a list that encodes back to the same bytes.
func FuzzDecodeRequests(f *testing.F) {
	b, _ := AppendRequests(nil, []Request{{URL: "http://a/", Key: "a:80", Depth: 1}, {URL: "http://b/"}})
	f.Add(b)
	f.Add([]byte{0})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, data []byte) {
		reqs, err := DecodeRequests(data)
		if err != nil {
			return
		}
		again, err := AppendRequests(nil, reqs)
		if err != nil {
			t.Fatal(err)
		}
		if back, err := DecodeRequests(again); err != nil || len(back) != len(reqs) {
			t.Fatalf("re-encoded list does not decode: %v", err)
		}
	})
}
