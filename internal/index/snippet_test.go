package index

import (
	"bytes"
	"compress/flate"
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/spider-crawler/spider/internal/index/analysis"
)

func TestSnippetWindow(t *testing.T) {
	m := func(pt ...int) []termPos {
		var out []termPos
		for i := 0; i < len(pt); i += 2 {
			out = append(out, termPos{pos: pt[i], term: pt[i+1]})
		}
		return out
	}
	cases := []struct {
		name   string
		m      []termPos
		nterms int
		want   int
	}{
		{"no match", nil, 2, 0},
		{"one match at the start", m(0, 0), 1, 0},
		{"one match later: 4 words of context", m(100, 0), 1, 96},
		{"context never before 0", m(2, 0), 1, 0},
		{"distinct terms beat more hits", m(10, 0, 11, 0, 12, 0, 200, 0, 210, 1), 2, 196},
		{"more hits on a tie of distinct terms", m(10, 0, 100, 0, 101, 0, 102, 0), 1, 96},
		{"earliest of equal windows", m(50, 0, 500, 0), 1, 46},
		{"context shrinks to keep the window's matches", m(100, 0, 130, 1), 2, 99},
		{"a window holds 32 positions", m(100, 0, 132, 1), 2, 96},
	}
	for _, c := range cases {
		if got := snippetWindow(c.m, c.nterms); got != c.want {
			t.Errorf("%s: window starts at %d, want %d", c.name, got, c.want)
		}
	}
}

func deflateStored(t testing.TB, s string) []byte {
	var b bytes.Buffer
	w, _ := flate.NewWriter(&b, flate.NoCompression)
	w.Write([]byte(s))
	w.Close()
	return b.Bytes()
}

// referenceSnippet is the snippet computed the slow way: the whole text
// analysed for the terms' positions and lexed in one piece.
func referenceSnippet(a *analysis.Analyzer, text string, terms []string) []Fragment {
	want := map[string]int{}
	for i, t := range terms {
		if _, ok := want[t]; !ok {
			want[t] = i
		}
	}
	var m []termPos
	a.Analyze(text, func(tk analysis.Token) {
		if i, ok := want[tk.Term]; ok {
			m = append(m, termPos{pos: tk.Pos, term: i})
		}
	})
	m = normaliseMatches(m)
	first := snippetWindow(m, len(terms))
	var win []snippetWord
	more := false
	a.Words(text, 0, func(p, s, e int) bool {
		if p >= first+snippetWords {
			more = true
			return false
		}
		if p >= first {
			win = append(win, snippetWord{p, s, e})
		}
		return true
	})
	if len(win) == 0 {
		return []Fragment{{Text: clip(text, 200)}}
	}
	return snippetFragments(text, win, m, first > 0, more)
}

// randomText makes n words of English and Chinese with punctuation.
func randomText(r *rand.Rand, n int) string {
	en := []string{"garden", "tax", "the", "of", "refund", "gardens", "Taxes", "river", "naïve", "2024", "crawler", "is"}
	zh := []string{"足球", "比赛", "足球比赛", "北京大学", "的", "市场", "经济"}
	var b strings.Builder
	for i := range n {
		switch k := r.IntN(20); {
		case k < 3:
			b.WriteString(zh[r.IntN(len(zh))])
			if r.IntN(2) == 0 {
				b.WriteString("，")
			}
		case k < 4:
			b.WriteString(". ")
		default:
			b.WriteString(en[r.IntN(len(en))])
			b.WriteByte(' ')
		}
		if i%40 == 39 {
			b.WriteString("\n  ")
		}
	}
	return b.String()
}

// TestSnippetMatchesReference checks the fast snippet (postings positions,
// text read and lexed chunk by chunk up to the window) against the slow
// one on random pages, long ones included (several chunks, and pages
// longer than StoredTextBytes whose matches lie beyond the stored text).
func TestSnippetMatchesReference(t *testing.T) {
	a := analyzer(t)
	r := rand.New(rand.NewPCG(7, 8))
	dir := t.TempDir()
	w := openWriter(t, dir, 8)
	var pages []page
	sizes := []int{0, 1, 5, 40, 300, 2000, 6000, 9000}
	for i := range 60 {
		text := randomText(r, sizes[i%len(sizes)])
		if i%10 == 9 {
			// Matches only beyond the stored text.
			text = strings.Repeat("plain filler words ", StoredTextBytes/19+10) + "garden tax refund"
		}
		title := []string{"", "Garden tax", "足球比赛", "The"}[i%4]
		pages = append(pages, page{fmt.Sprintf("http://s.test/%02d", i), title, text})
	}
	commitPages(t, w, pages)
	ix := openIndex(t, dir)
	texts := map[string]string{}
	for _, p := range pages {
		stored := p.text
		if len(stored) > StoredTextBytes {
			stored = p.text[:StoredTextBytes]
		}
		texts[p.url] = stored
	}
	checkSnippets(t, a, ix, texts, "garden", "garden tax", "tax OR refund OR river", "足球", "足球 比赛", `"garden tax"`, "crawler 2024", "plain")
}

// checkSnippets runs each query and compares the snippet of every hit
// whose URL texts holds with referenceSnippet of that text (hits of other
// pages are not checked); every query must have hits.
func checkSnippets(t *testing.T, a *analysis.Analyzer, ix *Index, texts map[string]string, queries ...string) {
	t.Helper()
	for _, q := range queries {
		res, err := ix.Search(context.Background(), Request{Query: q, Limit: 100, RankWeight: 0})
		if err != nil {
			t.Fatalf("%q: %v", q, err)
		}
		if res.Total == 0 {
			t.Fatalf("%q: no hits", q)
		}
		for _, h := range res.Hits {
			text, ok := texts[h.URL]
			if !ok {
				continue
			}
			if want := referenceSnippet(a, text, res.Terms); !reflect.DeepEqual(h.Snippet, want) {
				t.Errorf("%q on %s:\n got  %+v\n want %+v", q, h.URL, h.Snippet, want)
			}
		}
	}
}

// TestMarksRestart: lexing a stored text from any of the marks NewDoc
// makes gives the same words (positions and byte ranges) as lexing it from
// the start, on random English and Chinese text with punctuation, long
// texts cut at StoredTextBytes included; and the marks are markEvery
// positions apart or more.
func TestMarksRestart(t *testing.T) {
	a := analyzer(t)
	r := rand.New(rand.NewPCG(3, 4))
	checked := 0
	for i := range 40 {
		text := randomText(r, []int{0, 3, 17, 200, 1000, 7000}[i%6])
		title := []string{"", "Garden tax", "足球比赛 the"}[i%3]
		d := NewDoc(a, "http://m.test/", title, text)
		base, marks, ok, err := parseMarks(d.Marks)
		if err != nil || !ok {
			t.Fatalf("text %d: marks %x: ok %v, %v", i, d.Marks, ok, err)
		}
		if want := bodyBase(a, title); base != want {
			t.Errorf("text %d: base %d, want %d (bodyBase)", i, base, want)
		}
		stored := storedPrefix(text)
		var all []snippetWord
		a.Words(stored, 0, func(p, s, e int) bool { all = append(all, snippetWord{p, s, e}); return true })
		prev := mark{pos: -markEvery}
		for _, m := range marks {
			if m.pos-prev.pos < markEvery || m.off <= prev.off || m.off >= len(stored) {
				t.Fatalf("text %d: mark %+v after %+v", i, m, prev)
			}
			prev = m
			st := newStoredText(deflateStored(t, stored))
			var got []snippetWord
			st.words(a, m, func(w snippetWord) bool { got = append(got, w); return true })
			var want []snippetWord
			for _, w := range all {
				if w.start >= m.off {
					want = append(want, w)
				}
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("text %d from mark %+v:\n got  %v\n want %v", i, m, got[:min(5, len(got))], want[:min(5, len(want))])
			}
			checked++
		}
	}
	if checked < 100 {
		t.Errorf("only %d marks checked: the texts make too few", checked)
	}
}

// TestMarksDamaged: damaged marks are an error, never a panic or a wrong
// snippet.
func TestMarksDamaged(t *testing.T) {
	for _, b := range [][]byte{{0x80}, {1, 0, 5}, {1, 16}, {1, 16, 0xff, 0xff, 0xff, 0xff, 0x0f}} {
		if _, _, _, err := parseMarks(b); err == nil {
			t.Errorf("%x: no error", b)
		}
	}
	a := analyzer(t)
	comp := deflateStored(t, "garden tax refund")
	if _, err := makeSnippet(a, comp, []mark{{pos: 20, off: 500}}, []termPos{{25, 0}}, 1); err == nil {
		t.Error("a mark beyond the text: no error")
	}
}

func TestSnippetDamagedText(t *testing.T) {
	a := analyzer(t)
	good := deflateStored(t, "garden tax")
	for _, bad := range [][]byte{{0xff, 0xff, 0xff}, good[:len(good)-3], append([]byte{0x07}, good...)} {
		if _, err := makeSnippet(a, bad, nil, []termPos{{0, 0}}, 1); err == nil {
			t.Errorf("%x: no error", bad)
		}
	}
}

func FuzzSnippet(f *testing.F) {
	f.Add("the garden tax is due", uint8(1), uint8(3), false)
	f.Add("足球比赛的冠军，北京大学。", uint8(0), uint8(2), false)
	f.Add("", uint8(0), uint8(0), true)
	f.Add("x\xffy z", uint8(2), uint8(5), true)
	f.Add(randomText(rand.New(rand.NewPCG(1, 2)), 120), uint8(40), uint8(90), false)
	a, err := analyzerForFuzz()
	if err != nil {
		f.Fatal(err)
	}
	// Load the dictionary before fuzzing: a first input that took the
	// seconds of the load would count as a hung worker.
	if err := a.Preload(); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text string, p1, p2 uint8, corrupt bool) {
		comp := deflateStored(t, text)
		if corrupt && len(comp) > 2 {
			comp = comp[:len(comp)/2]
		}
		m := normaliseMatches([]termPos{{int(p1), 0}, {int(p2), 1}})
		// The marks NewDoc makes for the text, as a search would use them.
		_, marks, _, err := parseMarks(NewDoc(a, "http://f.test/", "", text).Marks)
		if err != nil {
			t.Fatalf("%q: marks: %v", text, err)
		}
		frags, err := makeSnippet(a, comp, marks, m, 2)
		if err != nil {
			if !corrupt {
				t.Fatalf("%q: %v", text, err)
			}
			return
		}
		if corrupt {
			return
		}
		if want := referenceFromPositions(a, text, m); !reflect.DeepEqual(frags, want) {
			t.Fatalf("%q %v:\n got  %+v\n want %+v", text, m, frags, want)
		}
	})
}

// referenceFromPositions is referenceSnippet with the match positions given.
func referenceFromPositions(a *analysis.Analyzer, text string, m []termPos) []Fragment {
	var words []snippetWord
	total := a.Words(text, 0, func(p, s, e int) bool { words = append(words, snippetWord{p, s, e}); return true })
	var in []termPos
	for _, x := range m {
		if x.pos < total {
			in = append(in, x)
		}
	}
	first := snippetWindow(in, 2)
	if first >= len(words) {
		return []Fragment{{Text: clip(text, 200)}}
	}
	end := min(first+snippetWords, len(words))
	return snippetFragments(text, words[first:end], in, first > 0, end < len(words))
}
