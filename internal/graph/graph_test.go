package graph

import (
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/store"
)

func sample(t *testing.T) *Graph {
	t.Helper()
	g, err := FromAdjacency([]string{"c", "a", "b", "d"}, [][]int{{1, 1, 0}, {2, 3}, {0}, {}})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestFromAdjacency(t *testing.T) {
	g := sample(t)
	// names sorted: a=0 b=1 c=2 d=3; c→a (dup and self-loop dropped), a→b,d, b→c.
	want := &Graph{Names: []string{"a", "b", "c", "d"}, Offsets: []uint64{0, 2, 3, 4, 4}, Targets: []uint32{1, 3, 2, 0}}
	if !reflect.DeepEqual(g, want) {
		t.Fatalf("got %+v, want %+v", g, want)
	}
	off, src := g.Transpose()
	if !reflect.DeepEqual(off, []uint64{0, 1, 2, 3, 4}) || !reflect.DeepEqual(src, []uint32{2, 0, 1, 0}) {
		t.Fatalf("transpose = %v %v", off, src)
	}
	if g.ID("c") != 2 || g.ID("zz") != -1 {
		t.Fatal("ID lookup wrong")
	}
	for _, tc := range []struct {
		names []string
		adj   [][]int
	}{
		{[]string{"a", "a"}, [][]int{{}, {}}},
		{[]string{"a"}, [][]int{{5}}},
		{[]string{"a"}, nil},
	} {
		if _, err := FromAdjacency(tc.names, tc.adj); err == nil {
			t.Errorf("FromAdjacency(%v, %v) succeeded", tc.names, tc.adj)
		}
	}
}

func TestFileRoundTrip(t *testing.T) {
	for _, g := range []*Graph{sample(t), {Offsets: []uint64{0}}} {
		path := filepath.Join(t.TempDir(), "g.csr")
		if err := WriteFile(path, g, Header{Kind: KindHosts, SourceSize: 1234}); err != nil {
			t.Fatal(err)
		}
		got, h, err := ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if h != (Header{Kind: KindHosts, SourceSize: 1234}) {
			t.Fatalf("header %+v", h)
		}
		if g.N() == 0 {
			if got.N() != 0 || got.M() != 0 {
				t.Fatalf("empty graph came back as %+v", got)
			}
			continue
		}
		if !reflect.DeepEqual(got, g) {
			t.Fatalf("got %+v, want %+v", got, g)
		}
	}
	if _, _, err := ReadFile(filepath.Join(t.TempDir(), "none")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}

func TestDecodeCorrupt(t *testing.T) {
	good, err := Encode(sample(t), Header{Kind: KindPages, SourceSize: 7})
	if err != nil {
		t.Fatal(err)
	}
	n, m := 4, 4
	offsetsAt := headerSize
	targetsAt := offsetsAt + 8*(n+1) + 4
	namesAt := targetsAt + 4*m + 4
	flip := func(at int) []byte {
		b := append([]byte(nil), good...)
		b[at] ^= 0x40
		return b
	}
	version := append([]byte(nil), good...)
	binary.LittleEndian.PutUint32(version[8:], 9)
	binary.LittleEndian.PutUint32(version[headerSize-4:], crc32c(version[:headerSize-4]))
	for _, tc := range []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, ErrCorrupt},
		{"short header", good[:20], ErrCorrupt},
		{"truncated", good[:len(good)-1], ErrCorrupt},
		{"trailing", append(append([]byte(nil), good...), 0), ErrCorrupt},
		{"magic", flip(0), ErrCorrupt},
		{"header", flip(20), ErrCorrupt},
		{"offsets", flip(offsetsAt + 8), ErrCorrupt},
		{"targets", flip(targetsAt), ErrCorrupt},
		{"names", flip(namesAt + 4*n), ErrCorrupt},
		{"checksum", flip(len(good) - 1), ErrCorrupt},
		{"version", version, ErrVersion},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Decode(tc.b)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Decode = %v, want %v", err, tc.want)
			}
		})
	}
}

func crc32c(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

func FuzzDecode(f *testing.F) {
	g, _ := FromAdjacency([]string{"http://a/", "http://b/", "http://c/"}, [][]int{{1, 2}, {0}, {}})
	b, _ := Encode(g, Header{Kind: KindPages, SourceSize: 99})
	f.Add(b)
	f.Add(b[:headerSize])
	f.Add([]byte(magic))
	e, _ := Encode(&Graph{Offsets: []uint64{0}}, Header{})
	f.Add(e)
	f.Fuzz(func(t *testing.T, b []byte) {
		g, h, err := Decode(b)
		if err != nil {
			return
		}
		if verr := g.Validate(); verr != nil {
			t.Fatalf("Decode returned an invalid graph: %v", verr)
		}
		again, err := Encode(g, h)
		if err != nil {
			t.Fatal(err)
		}
		g2, _, err := Decode(again)
		if err != nil || !reflect.DeepEqual(g2, g) && g.N() > 0 {
			t.Fatalf("re-encode round trip failed: %v", err)
		}
	})
}

func writeRecords(t *testing.T, dir string, recs []store.Record) {
	t.Helper()
	r, err := store.OpenRecords(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range recs {
		if rec.FetchedAt.IsZero() {
			rec.FetchedAt = time.Unix(0, 0).UTC()
		}
		if err := r.Append(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestBuildRules(t *testing.T) {
	dir := t.TempDir()
	writeRecords(t, dir, []store.Record{
		{URL: "http://a.test/", FinalURL: "http://a.test/", Status: 200, PageNo: 0,
			OutLinks: []string{"http://a.test/", "http://a.test/old", "http://b.test:8080/x", "http://b.test:8080/x", "http://nowhere.test/", "http://a.test/loop"}},
		// a redirect chain old → mid → new
		{URL: "http://a.test/old", FinalURL: "http://a.test/old", Status: 301, PageNo: -1, OutLinks: []string{"http://a.test/mid"}},
		{URL: "http://a.test/mid", FinalURL: "http://a.test/mid", Status: 302, PageNo: -1, OutLinks: []string{"http://a.test/new"}},
		{URL: "http://a.test/new", FinalURL: "http://a.test/new", Status: 200, PageNo: 1, OutLinks: []string{"http://B.test:8080/x"}},
		// a redirect loop must not hang the build
		{URL: "http://a.test/loop", FinalURL: "http://a.test/loop", Status: 301, PageNo: -1, OutLinks: []string{"http://a.test/loop2"}},
		{URL: "http://a.test/loop2", FinalURL: "http://a.test/loop2", Status: 301, PageNo: -1, OutLinks: []string{"http://a.test/loop"}},
		// first attempt failed, the last one succeeded: the last counts
		{URL: "http://b.test:8080/x", FinalURL: "http://b.test:8080/x", Status: 503, PageNo: -1},
		{URL: "http://b.test:8080/x", FinalURL: "http://b.test:8080/x", Status: 200, PageNo: 2, OutLinks: []string{"http://a.test/"}},
		// a 404 and a page without a stored body are not nodes
		{URL: "http://c.test/", FinalURL: "http://c.test/", Status: 404, PageNo: 3},
		{URL: "http://d.test/", FinalURL: "http://d.test/", Status: 200, PageNo: -1},
		// succeeded first, then failed on a refetch: not a node
		{URL: "http://e.test/", FinalURL: "http://e.test/", Status: 200, PageNo: 4},
		{URL: "http://e.test/", FinalURL: "http://e.test/", Status: 500, PageNo: -1},
	})
	set, err := Build(context.Background(), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantPages := []string{"http://a.test/", "http://a.test/new", "http://b.test:8080/x"}
	if !reflect.DeepEqual(set.Pages.Names, wantPages) {
		t.Fatalf("pages %v, want %v", set.Pages.Names, wantPages)
	}
	edges := map[string][]string{}
	for u := 0; u < set.Pages.N(); u++ {
		for _, v := range set.Pages.Out(u) {
			edges[set.Pages.Names[u]] = append(edges[set.Pages.Names[u]], set.Pages.Names[v])
		}
	}
	wantEdges := map[string][]string{
		"http://a.test/":       {"http://a.test/new", "http://b.test:8080/x"},
		"http://b.test:8080/x": {"http://a.test/"},
	}
	// http://a.test/new links to http://B.test:8080/x which is not the
	// normalised spelling and so no node: the crawler stores normalised links.
	if !reflect.DeepEqual(edges, wantEdges) {
		t.Fatalf("edges %v, want %v", edges, wantEdges)
	}
	if !reflect.DeepEqual(set.Hosts.Names, []string{"a.test", "b.test"}) {
		t.Fatalf("hosts %v", set.Hosts.Names)
	}
	if set.Hosts.M() != 2 {
		t.Fatalf("host edges %d, want a.test→b.test and b.test→a.test", set.Hosts.M())
	}
}

func TestLoadRebuildsWhenRecordsGrow(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	writeRecords(t, dir, []store.Record{{URL: "http://a.test/", FinalURL: "http://a.test/", Status: 200, PageNo: 0}})
	set, built, err := Load(ctx, dir, false, nil)
	if err != nil || !built || set.Pages.N() != 1 {
		t.Fatalf("first load: %v built=%v", err, built)
	}
	if _, built, err = Load(ctx, dir, false, nil); err != nil || built {
		t.Fatalf("second load: %v built=%v, want the stored graph", err, built)
	}
	writeRecords(t, dir, []store.Record{{URL: "http://b.test/", FinalURL: "http://b.test/", Status: 200, PageNo: 1, OutLinks: []string{"http://a.test/"}}})
	set, built, err = Load(ctx, dir, false, nil)
	if err != nil || !built || set.Pages.N() != 2 || set.Pages.M() != 1 {
		t.Fatalf("after growth: %v built=%v", err, built)
	}
	// damage the stored file: Load rebuilds, ReadFile says what is wrong
	path := filepath.Join(dir, PagesFile)
	b, _ := os.ReadFile(path)
	if err := os.WriteFile(path, b[:len(b)-3], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadFile(path); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("truncated file: %v", err)
	}
	if _, built, err = Load(ctx, dir, false, nil); err != nil || !built {
		t.Fatalf("after damage: %v built=%v", err, built)
	}
	if _, _, err := Load(ctx, t.TempDir(), false, nil); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("no crawl: %v", err)
	}
}

func TestSiteGraph(t *testing.T) {
	a := SiteGraph(SiteGraphConfig{Pages: 5000, Seed: 1})
	if err := a.Validate(); err != nil {
		t.Fatal(err)
	}
	b := SiteGraph(SiteGraphConfig{Pages: 5000, Seed: 1})
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same seed, different graphs")
	}
	if a.N() != 5000 || a.M() < 5000*5 {
		t.Fatalf("%d nodes, %d edges", a.N(), a.M())
	}
	intra := 0
	for u := 0; u < a.N(); u++ {
		for _, v := range a.Out(u) {
			if HostOf(a.Names[u]) == HostOf(a.Names[v]) {
				intra++
			}
		}
	}
	if share := float64(intra) / float64(a.M()); share < 0.6 {
		t.Fatalf("intra-host share %.2f, want mostly intra-host", share)
	}
}
