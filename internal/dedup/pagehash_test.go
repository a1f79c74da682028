package dedup

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// pageHashCorpus is texts of every shape PageHashes tells apart: parse's
// normalised text (the crawl's case), white space of every kind, leading
// and trailing, non-ASCII letters and spaces, ideographs, invalid UTF-8,
// control bytes, and texts too short for a SimHash; plus random texts
// drawn from those pieces.
func pageHashCorpus() []string {
	texts := []string{
		"", " ", "a", "one two", "word", "  lead", "trail  ", "a\tb", "a\nb", "a  b", "a\u00a0b", "a\u0085b", "a\u2003b",
		"the quick brown fox jumps over the lazy dog and runs far away into the dark forest",
		"the quick brown fox jumps over the lazy dog and runs far away into the dark forest ",
		" the quick brown fox jumps over the lazy dog and runs far away into the dark forest",
		"the quick brown fox jumps over the lazy dog and\truns far away into the dark forest",
		"分布式 网络 爬虫 系统 的 设计 与 实现 以及 搜索 引擎 的 索引 结构 和 排序 算法",
		"Ünïcödé wörds hère ând thérè, ÜNÏCÖDÉ WÖRDS HÈRE ÂND THÉRÈ again and again and again",
		"\xff\xfe bad bytes \xc3 in the middle of a text that is long enough to have a hash at all",
		"control\x01bytes\x02between\x03words and some more words to reach eight shingles here",
		strings.Repeat("some visible page text with spaces ", 300),
		strings.TrimSpace(strings.Repeat("some visible page text with spaces ", 300)),
		strings.Repeat("some visible page text with  spaces\n", 300),
	}
	pieces := []string{"word", "Page", "42", "分布式", "Ünï", "\xff", "\x01", ",", ".", "-", "ß", "İ", "ǅ", "٣", "\u00a0", "\u3000", "\t", "\n", "\r\n", " ", " ", " ", " ", " ", " "}
	r := rand.New(rand.NewPCG(27, 1))
	for n := 0; n < 2000; n++ {
		var b strings.Builder
		for w := r.IntN(80); w > 0; w-- {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		texts = append(texts, b.String())
		// The same text normalised, as parse gives it.
		texts = append(texts, strings.Join(strings.Fields(b.String()), " "))
	}
	return texts
}

// TestPageHashesAsBefore checks that the one-pass hashes are exactly the
// two separate ones the crawl computed before (Fingerprint and
// PageSimHash, which keep their own code) on every text of the corpus.
// Breaking either half of PageHashes (a white-space rule, the bulk hash,
// the SimHash walk) makes some text differ.
func TestPageHashesAsBefore(t *testing.T) {
	for _, text := range pageHashCorpus() {
		wantFP, wantSim := Fingerprint([]byte(text)), PageSimHash(text)
		fp, sim := PageHashes(text, true)
		if fp != wantFP || sim != wantSim {
			t.Fatalf("PageHashes(%q, true) = %x, %x, want %x, %x", text, fp, sim, wantFP, wantSim)
		}
		fp, sim = PageHashes(text, false)
		if fp != wantFP || sim != 0 {
			t.Fatalf("PageHashes(%q, false) = %x, %x, want %x, 0", text, fp, sim, wantFP)
		}
	}
}

// TestPageHashesGolden pins the values themselves, recorded with the
// separate functions before PageHashes existed: a change of either hash
// would split the duplicates of a crawl resumed across the upgrade, and
// of its records from the index's clusters.
func TestPageHashesGolden(t *testing.T) {
	tests := []struct {
		text    string
		fp, sim string
	}{
		{"", "ef46db3751d8e999", "0"},
		{"one two", "7b48e40eb685ec50", "0"},
		{"the quick brown fox jumps over the lazy dog and runs far away into the dark forest", "527dffc2ab79a52c", "f73d80a9016c1560"},
		{" the quick  brown fox\njumps over the lazy dog and runs far away into the dark forest\t", "527dffc2ab79a52c", "f73d80a9016c1560"},
		{"分布式 网络 爬虫 系统 的 设计 与 实现 以及 搜索 引擎 的 索引 结构 和 排序 算法", "93761bc9ce37ba39", "6a3e4924f6e4a181"},
		{"Ünïcödé wörds hère ând thérè, ÜNÏCÖDÉ WÖRDS HÈRE ÂND THÉRÈ again and again and again", "e3a0e3e6789f5af5", "300625115067aa96"},
	}
	for _, tt := range tests {
		fp, sim := PageHashes(tt.text, true)
		if got := fmt.Sprintf("%x", fp); got != tt.fp {
			t.Errorf("fingerprint of %q = %s, want %s", tt.text, got, tt.fp)
		}
		if got := fmt.Sprintf("%x", sim); got != tt.sim {
			t.Errorf("SimHash of %q = %s, want %s", tt.text, got, tt.sim)
		}
	}
}

func FuzzPageHashes(f *testing.F) {
	for _, s := range []string{"", " ", "a b", "a  b", " a", "a ", "a\tb", "a\u00a0b", "分布式 爬虫", "\xff\xfe bad", strings.Repeat("w x y z ", 20)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fp, sim := PageHashes(s, true)
		if want := Fingerprint([]byte(s)); fp != want {
			t.Fatalf("fingerprint %x, Fingerprint %x", fp, want)
		}
		if want := PageSimHash(s); sim != want {
			t.Fatalf("SimHash %x, PageSimHash %x", sim, want)
		}
		if fp2, _ := PageHashes(s, false); fp2 != fp {
			t.Fatalf("fingerprint without SimHash %x, with %x", fp2, fp)
		}
	})
}

// pageText is a page's text as parse gives it: normalised white space.
var pageText = strings.TrimSpace(strings.Repeat("some visible page text with spaces ", 300))

// BenchmarkPageHashes compares the crawl's former two passes with the one
// pass, on a normalised text (parse's).
func BenchmarkPageHashes(b *testing.B) {
	b.Run("separate", func(b *testing.B) {
		b.SetBytes(int64(len(pageText)))
		for i := 0; i < b.N; i++ {
			Fingerprint([]byte(pageText))
			PageSimHash(pageText)
		}
	})
	b.Run("one-pass", func(b *testing.B) {
		b.SetBytes(int64(len(pageText)))
		for i := 0; i < b.N; i++ {
			PageHashes(pageText, true)
		}
	})
	b.Run("fingerprint-only", func(b *testing.B) {
		b.SetBytes(int64(len(pageText)))
		for i := 0; i < b.N; i++ {
			PageHashes(pageText, false)
		}
	})
}
