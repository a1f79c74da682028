package index

import (
	"bytes"
	"context"
	"testing"

	"github.com/spider-crawler/spider/internal/index/analysis"
)

func analyzerForFuzz() (*analysis.Analyzer, error) { return analysis.Shared() }

// segmentFile builds a small segment in memory.
func segmentFile(t testing.TB) []byte {
	a, err := analyzerForFuzz()
	if err != nil {
		t.Fatal(err)
	}
	sd := &segmentData{}
	for _, p := range corpus {
		sd.add(NewDoc(a, p.url, p.title, p.text))
	}
	sd.delete("http://gone.test/")
	var buf bytes.Buffer
	if _, _, err := sd.write(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// FuzzSegment feeds damaged segment files to the reader and runs queries on
// those it accepts: nothing may panic or loop.
func FuzzSegment(f *testing.F) {
	good := segmentFile(f)
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte(segMagic))
	a, err := analyzerForFuzz()
	if err != nil {
		f.Fatal(err) // without an analyzer the target cannot run its subject
	}
	queries := []string{"tax", `"stock market"`, "market -tax", "site:a.test", "足球 OR football"}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := decodeSegment("fuzz.seg", data)
		if err != nil {
			return
		}
		snapDel := computeDeleted([]*segment{s})
		for d := range s.ndocs {
			s.doc(d)
		}
		s.terms(func(ti termInfo) error {
			it := newPostIter(s, ti)
			for p, ok := it.next(); ok; p, ok = it.next() {
				p.positions(nil)
			}
			return nil
		})
		for _, q := range queries {
			pq, err := parseQuery(a, q)
			if err != nil {
				t.Fatal(err)
			}
			e := &evalCtx{ctx: context.Background(), seg: s, del: snapDel[0], n: float64(s.ndocs), avgdl: 10,
				df: map[string]int{}, ti: map[string]*termInfo{}}
			e.eval(pq.root)
		}
	})
}

// TestSegmentRoundTrip checks that a written segment reads back.
func TestSegmentRoundTrip(t *testing.T) {
	s, err := decodeSegment("t.seg", segmentFile(t))
	if err != nil {
		t.Fatal(err)
	}
	if s.ndocs != len(corpus) || s.tombs() != 1 || s.tomb(0) != urlHash("http://gone.test/") {
		t.Fatalf("docs %d tombs %d", s.ndocs, s.tombs())
	}
	prev := ""
	n := 0
	if err := s.terms(func(ti termInfo) error {
		if ti.term <= prev {
			t.Fatalf("dictionary out of order: %q after %q", ti.term, prev)
		}
		prev = ti.term
		n++
		got, ok, err := s.lookup(ti.term)
		if err != nil || !ok || got.df != ti.df {
			t.Fatalf("lookup %q: %+v %v %v", ti.term, got, ok, err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n != s.nterms {
		t.Fatalf("%d terms, footer says %d", n, s.nterms)
	}
	for _, missing := range []string{"", "zzzz", "aaaa"} {
		if _, ok, err := s.lookup(missing); ok || err != nil {
			t.Errorf("lookup %q: %v %v", missing, ok, err)
		}
	}
	for d := range s.ndocs {
		doc, err := s.doc(d)
		if err != nil {
			t.Fatal(err)
		}
		text, err := inflate(doc.Text)
		if err != nil || text == "" {
			t.Fatalf("doc %d text: %q %v", d, text, err)
		}
	}
}

func FuzzQuery(f *testing.F) {
	for _, q := range []string{"tax", `"a b" OR -c`, "(x OR (y -z)) site:a.test", "NOT", "足球 AND 比赛", `-"`, "))(("} {
		f.Add(q)
	}
	a, err := analyzerForFuzz()
	if err != nil {
		f.Fatal(err) // without an analyzer the target cannot run its subject
	}
	f.Fuzz(func(t *testing.T, q string) {
		pq, err := parseQuery(a, q)
		if err == nil && pq.root == nil {
			t.Fatalf("%q: no error and no query", q)
		}
	})
}

func FuzzLocatePages(f *testing.F) {
	f.Add([]byte("0 5 15 25 http://a.test/ Fri Mar 30 08:31:34 2012\n1 3 15 25 http://b.test/ Fri Mar 30 08:31:34 2012\n"), int64(8))
	f.Add([]byte("0 99999999999 2 2 x y\n"), int64(0))
	f.Fuzz(func(t *testing.T, idx []byte, l int64) {
		lens := []int64{l & 0xffff, 100}
		locs, err := locatePages(idx, lens)
		if err != nil {
			return
		}
		for _, p := range locs {
			if p.file < 0 || p.file >= len(lens) || p.off < 0 || p.size < 0 || p.off+p.size > lens[p.file] {
				t.Fatalf("location %+v outside files %v", p, lens)
			}
		}
	})
}
