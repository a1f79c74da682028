package rank

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/spider-crawler/spider/internal/graph"
)

func TestScoresRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), PagesFile)
	scores := map[string]float64{"http://b/": 0.25, "http://a/": 0.25, "http://c/": 0.5, "http://d/": 1e-300}
	if err := WriteScores(path, scores); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := "0.5\thttp://c/\n0.25\thttp://a/\n0.25\thttp://b/\n1e-300\thttp://d/\n"
	if string(b) != want {
		t.Fatalf("file:\n%s\nwant:\n%s", b, want)
	}
	got, err := ReadScores(path)
	if err != nil || !reflect.DeepEqual(got, scores) {
		t.Fatalf("ReadScores = %v, %v", got, err)
	}
	if _, err := ReadScores(filepath.Join(t.TempDir(), "none.tsv")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
	for _, bad := range []map[string]float64{{"": 1}, {"a\tb": 1}, {"a\nb": 1}} {
		if err := WriteScores(path, bad); err == nil {
			t.Errorf("WriteScores(%v) succeeded", bad)
		}
	}
}

func TestParseScoresErrors(t *testing.T) {
	for _, in := range []string{"0.5 no-tab\n", "x\tu\n", "NaN\tu\n", "+Inf\tu\n", "0.1\t\n", "0.1\tu\n0.2\tu\n"} {
		if _, err := parseScores(strings.NewReader(in)); err == nil {
			t.Errorf("parseScores(%q) succeeded", in)
		}
	}
}

func FuzzParseScores(f *testing.F) {
	f.Add("0.5\thttp://c/\n0.25\thttp://a/\n")
	f.Add("1e-300\tx\n\n")
	f.Add("x\ty\n")
	f.Fuzz(func(t *testing.T, in string) {
		scores, err := parseScores(strings.NewReader(in))
		if err != nil {
			return
		}
		path := filepath.Join(t.TempDir(), "s.tsv")
		if err := WriteScores(path, scores); err != nil {
			return // keys with '\r' parse but cannot be written
		}
		again, err := ReadScores(path)
		if err != nil || !reflect.DeepEqual(again, scores) {
			t.Fatalf("round trip: %v", err)
		}
	})
}

func TestTeleport(t *testing.T) {
	g, err := graph.FromAdjacency([]string{"http://a.test/1", "http://a.test/2", "http://b.test/1"}, [][]int{{1}, {2}, {0}})
	if err != nil {
		t.Fatal(err)
	}
	tele, n := TeleportPrefix(g, "http://a.test/")
	if n != 2 || !reflect.DeepEqual(tele, []float64{1, 1, 0}) {
		t.Fatalf("prefix: %v %d", tele, n)
	}
	if tele, n := TeleportPrefix(g, "http://zzz/"); tele != nil || n != 0 {
		t.Fatal("no match must give nil")
	}
	tele, n, missing, err := TeleportURLs(g, strings.NewReader("# topic\nhttp://b.test/1\n\nhttp://x.test/\nhttp://b.test/1\n"))
	if err != nil || n != 1 || !reflect.DeepEqual(missing, []string{"http://x.test/"}) || !reflect.DeepEqual(tele, []float64{0, 0, 1}) {
		t.Fatalf("urls: %v %d %v %v", tele, n, missing, err)
	}
	hosts, err := graph.FromAdjacency([]string{"a.test", "b.test"}, [][]int{{1}, {0}})
	if err != nil {
		t.Fatal(err)
	}
	if ht := HostTeleport(g, hosts, []float64{1, 1, 0}); !reflect.DeepEqual(ht, []float64{2, 0}) {
		t.Fatalf("host teleport %v", ht)
	}
	res, err := Compute(context.Background(), g, Options{Teleport: []float64{0, 0, 1}})
	if err != nil || !(res.Ranks[2] > res.Ranks[0]) {
		t.Fatalf("personalised ranks %v %v", res.Ranks, err)
	}
}
