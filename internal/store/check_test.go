package store

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// pageDir writes a page store of n pages to a new directory and returns it
// with the pages' URLs.
func pageDir(t testing.TB, n int, fileSize int64) (string, []string) {
	t.Helper()
	dir := t.TempDir()
	p, err := OpenPageFiles(dir, Options{DataFileSize: fileSize})
	if err != nil {
		t.Fatal(err)
	}
	var urls []string
	for i := range n {
		u := fmt.Sprintf("http://h.test/%d", i)
		if _, err := p.Append(u, time.Unix(1700000000, 0), []byte(strings.Repeat("x", 10+i*7))); err != nil {
			t.Fatal(err)
		}
		urls = append(urls, u)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, urls
}

// TestCheckPageFiles: CheckPageFiles changes nothing, finds each kind of
// damage and keeps the pages before it; TruncatePageFiles cuts to them
// and leaves a store that checks clean and opens with the same pages.
func TestCheckPageFiles(t *testing.T) {
	cases := []struct {
		name   string
		damage func(dir string) error
		keep   int // consistent pages expected
		file   string
	}{
		{"clean", func(string) error { return nil }, 30, ""},
		{"index cut mid-line", func(dir string) error { return cutAt(filepath.Join(dir, IndexFileName), 0.5) }, -1, IndexFileName},
		{"data cut", func(dir string) error { return cutAt(filepath.Join(dir, DataFileName(1)), 0.5) }, -1, DataFileName(1)},
		{"data file missing", func(dir string) error { return os.Remove(filepath.Join(dir, DataFileName(1))) }, -1, DataFileName(1)},
		{"index missing", func(dir string) error { return os.Remove(filepath.Join(dir, IndexFileName)) }, 0, IndexFileName},
		{"index line damaged", func(dir string) error {
			b, _ := os.ReadFile(filepath.Join(dir, IndexFileName))
			i := strings.Index(string(b), "\n10 ")
			b[i+1] = 'x'
			return os.WriteFile(filepath.Join(dir, IndexFileName), b, 0o600)
		}, 10, IndexFileName},
		{"bytes after the last page", func(dir string) error {
			last := lastDataFile(dir)
			f, err := os.OpenFile(last, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				return err
			}
			f.WriteString("torn")
			return f.Close()
		}, 30, "PageData"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir, urls := pageDir(t, 30, 1000)
			if err := c.damage(dir); err != nil {
				t.Fatal(err)
			}
			before := snapshot(t, dir)
			pc, err := CheckPageFiles(dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !maps(before, snapshot(t, dir)) {
				t.Fatal("CheckPageFiles changed the files")
			}
			if c.file == "" && len(pc.Problems) != 0 || c.file != "" && (len(pc.Problems) == 0 || !strings.HasPrefix(pc.Problems[0].File, c.file)) {
				t.Fatalf("problems %v, want one in %s", pc.Problems, c.file)
			}
			if c.keep >= 0 && len(pc.Pages) != c.keep {
				t.Errorf("%d consistent pages, want %d", len(pc.Pages), c.keep)
			}
			for i, p := range pc.Pages {
				if p.No != int64(i) || p.URL != urls[i] {
					t.Fatalf("page %d is %+v", i, p)
				}
			}
			if err := TruncatePageFiles(dir, pc, int64(len(pc.Pages))); err != nil {
				t.Fatal(err)
			}
			pc2, err := CheckPageFiles(dir, nil)
			if err != nil || len(pc2.Problems) != 0 || len(pc2.Pages) != len(pc.Pages) {
				t.Fatalf("after truncation: %v, %v, %d pages (want %d)", err, pc2.Problems, len(pc2.Pages), len(pc.Pages))
			}
			p, err := OpenPageFiles(dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			if p.Count() != int64(len(pc.Pages)) {
				t.Errorf("reopened store holds %d pages, want %d", p.Count(), len(pc.Pages))
			}
			for i := range pc.Pages {
				pg, err := p.Read(int64(i))
				if err != nil || pg.URL != urls[i] || len(pg.Body) != 10+i*7 {
					t.Fatalf("page %d after truncation: %v %q %d", i, err, pg.URL, len(pg.Body))
				}
			}
		})
	}
}

func cutAt(path string, frac float64) error {
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	return os.Truncate(path, int64(float64(info.Size())*frac))
}

func lastDataFile(dir string) string {
	m, _ := filepath.Glob(filepath.Join(dir, DataFilePrefix+"*"))
	slices.Sort(m)
	return m[len(m)-1]
}

func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = string(b)
	}
	return out
}

func maps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// FuzzCheckPageFiles: any PageIndex content over data files of any sizes
// is checked without error; truncating to the consistent pages always
// leaves a store that checks clean with the same pages.
func FuzzCheckPageFiles(f *testing.F) {
	dir, _ := pageDir(f, 12, 200)
	idx, err := os.ReadFile(filepath.Join(dir, IndexFileName))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(idx, uint16(200), uint16(200), uint16(150))
	f.Add(idx[:len(idx)/2], uint16(200), uint16(0), uint16(0))
	f.Add([]byte("0 5 2 25 a Mon Jan  2 15:04:05 2006\n"), uint16(5), uint16(0), uint16(0))
	f.Fuzz(func(t *testing.T, index []byte, d0, d1, d2 uint16) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, IndexFileName), index, 0o600); err != nil {
			t.Fatal(err)
		}
		for i, n := range []uint16{d0, d1, d2} {
			if n == 0 && i > 0 {
				continue
			}
			if err := os.WriteFile(filepath.Join(dir, DataFileName(i)), make([]byte, n), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		pc, err := CheckPageFiles(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := TruncatePageFiles(dir, pc, int64(len(pc.Pages))); err != nil {
			t.Fatal(err)
		}
		pc2, err := CheckPageFiles(dir, nil)
		if err != nil || len(pc2.Problems) != 0 || !slices.Equal(pc2.Pages, pc.Pages) {
			t.Fatalf("after truncation: %v %v; pages %v, before %v", err, pc2.Problems, pc2.Pages, pc.Pages)
		}
	})
}
