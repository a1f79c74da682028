package parse

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestParseBlocksMatchesParse checks the one-pass ParseBlocks against Parse
// and Blocks on every golden page: same title, links (resolved and
// unresolved), words and blocks. It fails when ParseBlocks drops, reorders
// or resolves links differently from Parse, or splits blocks differently.
func TestParseBlocksMatchesParse(t *testing.T) {
	inputs, _ := filepath.Glob("testdata/golden/*.html")
	if len(inputs) == 0 {
		t.Fatal("no golden inputs")
	}
	base := mustURL(t, goldenBase)
	for _, in := range inputs {
		body, err := os.ReadFile(in)
		if err != nil {
			t.Fatal(err)
		}
		for _, unresolved := range []bool{false, true} {
			opt := Options{Unresolved: unresolved}
			want, err := Parse(base, body, opt)
			if err != nil {
				t.Fatal(err)
			}
			got, blocks, err := ParseBlocks(base, body, opt)
			if err != nil {
				t.Fatal(err)
			}
			name := filepath.Base(in)
			if got.Title != want.Title || got.Lang != want.Lang || got.Base.String() != want.Base.String() ||
				got.MetaRobots != want.MetaRobots || got.Skipped != want.Skipped {
				t.Errorf("%s: page %+v, Parse gives %+v", name, got, want)
			}
			if (got.Refresh == nil) != (want.Refresh == nil) || got.Refresh != nil && got.Refresh.String() != want.Refresh.String() {
				t.Errorf("%s: refresh %v, Parse gives %v", name, got.Refresh, want.Refresh)
			}
			if len(got.Links) != len(want.Links) {
				t.Fatalf("%s: %d links, Parse gives %d", name, len(got.Links), len(want.Links))
			}
			for i := range got.Links {
				g, w := got.Links[i], want.Links[i]
				if g.Raw != w.Raw || g.Text != w.Text || g.Tag != w.Tag || g.Rel != w.Rel || g.NoFollow != w.NoFollow ||
					(g.URL == nil) != (w.URL == nil) || g.URL != nil && g.URL.String() != w.URL.String() {
					t.Errorf("%s: link %d is %+v, Parse gives %+v", name, i, g, w)
				}
			}
			gw, ww := strings.Fields(got.Text), strings.Fields(want.Text)
			slices.Sort(gw)
			slices.Sort(ww)
			// Parse's text holds the title; the blocks' text does not.
			for _, tw := range strings.Fields(want.Title) {
				if i := slices.Index(ww, tw); i >= 0 {
					ww = slices.Delete(ww, i, i+1)
				}
			}
			if !slices.Equal(gw, ww) {
				t.Errorf("%s: words %q, Parse gives %q", name, gw, ww)
			}
			if !unresolved {
				old := Blocks(base, body)
				var full []Block
				for _, b := range blocks {
					if b.TextLen > 0 || len(b.Links) > 0 {
						full = append(full, b)
					}
				}
				if len(old) != len(full) {
					t.Errorf("%s: %d blocks with text or links, Blocks gives %d", name, len(full), len(old))
				}
				for i := range min(len(old), len(full)) {
					if old[i].Tag != full[i].Tag || old[i].Text != full[i].Text || len(old[i].Links) != len(full[i].Links) {
						t.Errorf("%s: block %d is %s %q, Blocks gives %s %q", name, i, full[i].Tag, full[i].Text, old[i].Tag, old[i].Text)
					}
				}
			}
		}
	}
}

// TestBlockTree checks Parent and Depth: the document's content, nested
// blocks, empty blocks skipped to the nearest kept ancestor, headings as
// blocks. It fails when a parent index points to the wrong block or after
// its child.
func TestBlockTree(t *testing.T) {
	body := `top <div><div><ul><li><a href="/a">a</a></li><li>b</li></ul></div><h2>Title</h2><p>para</p></div>`
	blocks := Blocks(mustURL(t, "http://h.example/"), []byte(body))
	type tb struct {
		tag, text     string
		parent, depth int
	}
	var got []tb
	for _, b := range blocks {
		got = append(got, tb{b.Tag, b.Text, b.Parent, b.Depth})
	}
	want := []tb{
		{"", "top", -1, 0},
		{"li", "a", 0, 4}, // div, div and ul are empty: the document is the nearest kept ancestor
		{"li", "b", 0, 4},
		{"h2", "Title", 0, 2},
		{"p", "para", 0, 2},
	}
	if !slices.Equal(got, want) {
		t.Errorf("blocks\n got %+v\nwant %+v", got, want)
	}
	// ParseBlocks keeps the containers of kept blocks.
	_, blocks, _ = ParseBlocks(mustURL(t, "http://h.example/"), []byte(body), Options{})
	got = got[:0]
	for _, b := range blocks {
		got = append(got, tb{b.Tag, b.Text, b.Parent, b.Depth})
	}
	want = []tb{
		{"", "top", -1, 0},
		{"div", "", 0, 1},
		{"div", "", 1, 2},
		{"ul", "", 2, 3},
		{"li", "a", 3, 4},
		{"li", "b", 3, 4},
		{"h2", "Title", 1, 2},
		{"p", "para", 1, 2},
	}
	if !slices.Equal(got, want) {
		t.Errorf("ParseBlocks blocks\n got %+v\nwant %+v", got, want)
	}
}

// TestDeepBlocks: 10,000 nested divs and 10,000 sibling blocks are split in
// bounded time with valid parents (a recursive walk would overflow or take
// quadratic time).
func TestDeepBlocks(t *testing.T) {
	for name, body := range map[string]string{
		"deep":  strings.Repeat("<div>x ", 10_000) + `<a href="/a">a</a>`,
		"wide":  strings.Repeat(`<p>x <a href="/a">a</a></p>`, 10_000),
		"empty": "",
	} {
		start := time.Now()
		p, blocks, err := ParseBlocks(mustURL(t, "http://h.example/"), []byte(body), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s: %v", name, d)
		}
		for i, b := range blocks {
			if b.Parent >= i || b.Parent < -1 {
				t.Fatalf("%s: block %d has parent %d", name, i, b.Parent)
			}
		}
		if name != "empty" && len(p.Links) == 0 {
			t.Errorf("%s: no links", name)
		}
	}
}
