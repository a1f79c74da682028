package websim

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDump: every page of the manifest is a file (with its .gz), no page
// refers to a host by its name any more, every page carries its host's
// TOC (the disallowed pages included, so that robots.txt is put to the
// test), robots.txt disallows what the manifest says, and the same web
// gives the same bytes.
func TestDump(t *testing.T) {
	w, err := New(Config{Seed: 5, Hosts: 3, PagesPerHost: 40, Port: 8081})
	if err != nil {
		t.Fatal(err)
	}
	origins, err := LoopbackOrigins(3, 11, 8081)
	if err != nil {
		t.Fatal(err)
	}
	opt := DumpOptions{Origins: origins, TOC: true, Disallow: "/s/1/a/", Gzip: true}
	dir := t.TempDir()
	m, err := w.DumpTo(context.Background(), dir, opt)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Hosts) != 3 || len(m.Seeds) != 3 || m.Seeds[0] != "http://127.0.0.11:8081/" {
		t.Fatalf("manifest hosts %d, seeds %v", len(m.Hosts), m.Seeds)
	}
	for _, h := range m.Hosts {
		if len(h.Pages) < 20 || len(h.Disallowed) == 0 {
			t.Errorf("%s: %d pages, %d disallowed; want ≥ 20 and some", h.Name, len(h.Pages), len(h.Disallowed))
		}
		robots, err := os.ReadFile(filepath.Join(dir, h.Dir, "robots.txt"))
		if err != nil || !strings.Contains(string(robots), "Disallow: /s/1/a/") {
			t.Errorf("%s: robots.txt %q, %v", h.Name, robots, err)
		}
		for _, u := range append(h.Pages, h.Disallowed...) {
			path := strings.TrimPrefix(u, h.Origin)
			if strings.HasSuffix(path, "/") {
				path += "index.html"
			}
			name := filepath.Join(dir, h.Dir, filepath.FromSlash(path))
			body, err := os.ReadFile(name)
			if err != nil {
				t.Fatalf("%s: %v", u, err)
			}
			if _, err := os.Stat(name + ".gz"); err != nil {
				t.Errorf("%s: no .gz: %v", u, err)
			}
			for _, other := range w.Hosts() {
				if bytes.Contains(body, []byte("//"+other+":")) {
					t.Fatalf("%s still names host %s in a URL", u, other)
				}
			}
			if !bytes.Contains(body, []byte(`<a class="toc-link" href="`+strings.TrimPrefix(h.Disallowed[0], h.Origin)+`"`)) {
				t.Fatalf("%s: no TOC link to a disallowed page", u)
			}
		}
	}
	again := t.TempDir()
	if _, err := w.DumpTo(context.Background(), again, opt); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"manifest.json", "127.0.0.12_8081/index.html", "127.0.0.13_8081/s/2/index.html.gz"} {
		a, errA := os.ReadFile(filepath.Join(dir, f))
		b, errB := os.ReadFile(filepath.Join(again, f))
		if errA != nil || errB != nil || !bytes.Equal(a, b) {
			t.Errorf("%s differs between two dumps of the same web (%v, %v)", f, errA, errB)
		}
	}
	if _, err := w.DumpTo(context.Background(), dir, opt); !errors.Is(err, ErrDumpDirNotEmpty) {
		t.Errorf("dump into a full directory: %v, want ErrDumpDirNotEmpty", err)
	}
}
