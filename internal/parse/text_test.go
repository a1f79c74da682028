package parse

import (
	"testing"
	"unicode/utf8"
)

// refWrite is textBuf.write rune by rune (the form before the ASCII-run
// fast path): the reference the fast path must match byte for byte.
func refWrite(t *textBuf, s []byte) (runes int) {
	for len(s) > 0 {
		r, size := utf8.DecodeRune(s)
		s = s[size:]
		if isSpace(r) {
			t.brk()
			continue
		}
		runes++
		if t.truncated {
			continue
		}
		need := utf8.RuneLen(r)
		if need < 0 {
			r, need = utf8.RuneError, 3
		}
		if t.pending {
			need++
		}
		if *t.budget < need {
			t.truncated = true
			continue
		}
		*t.budget -= need
		if t.pending {
			t.b = append(t.b, ' ')
			t.pending = false
		}
		t.b = utf8.AppendRune(t.b, r)
	}
	return runes
}

func checkTextBuf(t *testing.T, budget int, parts [][]byte) {
	t.Helper()
	fastLeft, refLeft := budget, budget
	fast, ref := newTextBuf(&fastLeft), newTextBuf(&refLeft)
	for _, p := range parts {
		if a, b := fast.write(p), refWrite(&ref, p); a != b {
			t.Fatalf("budget %d, %q: %d runes, reference %d", budget, parts, a, b)
		}
		fast.brk()
		ref.brk()
	}
	if fast.String() != ref.String() || fast.truncated != ref.truncated || fastLeft != refLeft {
		t.Fatalf("budget %d, %q: %q (truncated %v, left %d), reference %q (%v, %d)",
			budget, parts, fast.String(), fast.truncated, fastLeft, ref.String(), ref.truncated, refLeft)
	}
}

func TestTextBufMatchesReference(t *testing.T) {
	inputs := [][]byte{
		[]byte("  hello   world\tand\nmore  "), []byte("中文 text\u00a0nbsp\u3000wide"), []byte("\xff\xfe bad bytes"),
		[]byte("averyveryverylongwordthatdoesnotfit"), []byte(""), []byte("a b c d e f"),
	}
	for budget := 0; budget < 40; budget++ {
		checkTextBuf(t, budget, inputs)
		for _, in := range inputs {
			checkTextBuf(t, budget, [][]byte{in})
		}
	}
}

func FuzzTextBuf(f *testing.F) {
	f.Add([]byte("  hello   world\tand"), []byte("中文 x"), 7)
	f.Fuzz(func(t *testing.T, a, b []byte, budget int) {
		checkTextBuf(t, budget&0xfff, [][]byte{a, b})
	})
}

// TestTextBufLongWordOverBudget: a word far longer than the budget is cut
// in one step (a rune-by-rune fallback that rescans the rest of the word
// made this quadratic: a 4 MiB page of one word never finished).
func TestTextBufLongWordOverBudget(t *testing.T) {
	word := make([]byte, 4<<20)
	for i := range word {
		word[i] = 'x'
	}
	left := 10
	b := newTextBuf(&left)
	b.write([]byte("a"))
	if n := b.write(word); n != len(word) || b.String() != "axxxxxxxxx" || !b.truncated || left != 0 {
		t.Fatalf("runes %d, text %q, truncated %v, left %d", n, b.String(), b.truncated, left)
	}
}

// TestLookupTag: the indexed lookup gives tagTable's entry for every name
// in it, and nothing for names that are not (fails if tagIndex misses or
// confuses an entry).
func TestLookupTag(t *testing.T) {
	for name, want := range tagTable {
		if got := lookupTag(name); got != want {
			t.Errorf("lookupTag(%q) = %+v; want %+v", name, got, want)
		}
		if got := lookupTag([]byte(name)); got != want {
			t.Errorf("lookupTag([]byte(%q)) = %+v; want %+v", name, got, want)
		}
		for _, other := range []string{name + "x", name[:len(name)-1], "x" + name} {
			if got := lookupTag(other); got != tagTable[other] {
				t.Errorf("lookupTag(%q) = %+v; want %+v", other, got, tagTable[other])
			}
		}
	}
	for _, name := range []string{"", "0", "-a", "{", "zz", "aaaaaaaaaaaaaaaa"} {
		if got := lookupTag(name); got != (tagInfo{}) {
			t.Errorf("lookupTag(%q) = %+v; want nothing", name, got)
		}
	}
}
