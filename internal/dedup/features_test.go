package dedup

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// featureBase is a text long enough for a SimHash, without any word the
// feature rule leaves out.
const featureBase = "the quick brown fox jumps over the lazy dog and runs far away into the dark forest where nobody lives"

// TestSimHashIgnoresDates: words without content identity (numbers,
// ordinals, times, month and weekday names, Chinese dates) are left out,
// so texts differing only in them hash alike; words that merely contain
// digits or look like a date's parts are kept.
func TestSimHashIgnoresDates(t *testing.T) {
	tests := []struct {
		name  string
		extra string // inserted in the middle of featureBase
		equal bool   // SimHash equal to that of featureBase
	}{
		{"date line", "updated 25 November 2026", false}, // "updated" stays
		{"numbers", "25 2026 3 1000000 0042", true},
		{"long number", "202611250830123456789", true},
		{"ISO date and time", "2026-11-25T08:30:00Z", false}, // t and z are words
		{"date and time", "2026-11-25 08:30", true},
		{"ordinals", "1st 2nd 3rd 25th 11TH", true},
		{"times", "3pm 10am 11:30PM", true},
		{"months", "January FEB March apr may Sept december", true},
		{"weekdays", "Monday tue Wednesday thurs fri sat Sunday", true},
		{"Unicode digits", "２０２６ ٣ ৫", true},
		{"Chinese date", "2026年11月25日", true},
		{"Chinese time", "10时30分15秒", true},
		{"Han numeral month and day", "十一月二十五日", true},
		{"Han numeral year", "二〇二六年", true},
		{"weekdays in Chinese", "星期三 礼拜天 周一", true},
		{"digits inside words", "mp3 covid19 x86", false},
		{"not an ordinal", "25thx", false},
		{"weekend (周末)", "周末", false},
		{"week (星期) alone", "星期", false},
		{"a Han numeral in a word", "一些", false},
		{"a date unit alone", "年", false},
		{"a number and a space before a unit", "2026 年", false},
		{"numerals too many for a date", "一二三四五", false},
	}
	words := strings.Fields(featureBase)
	base := SimHash(featureBase)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := strings.Join(slices.Concat(words[:8], []string{tt.extra}, words[8:]), " ")
			if got := SimHash(text) == base; got != tt.equal {
				t.Errorf("SimHash(%q) equal to the text without %q: %v, want %v", text, tt.extra, got, tt.equal)
			}
			_, sim := PageHashes(text, true)
			if sim != PageSimHash(text) {
				t.Errorf("PageHashes and PageSimHash differ on %q", text)
			}
		})
	}
}

// TestPageSimHashNumbersOnly: a page of numbers and dates has no words
// left, so no hash (never a duplicate), like an empty page.
func TestPageSimHashNumbersOnly(t *testing.T) {
	for _, s := range []string{
		"1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20",
		"Monday 1 Tuesday 2 Wednesday 3 Thursday 4 Friday 5 Saturday 6 Sunday 7 January 2026",
		"2026年1月1日 2026年1月2日 2026年1月3日 2026年1月4日 2026年1月5日",
	} {
		if h := PageSimHash(s); h != 0 {
			t.Errorf("PageSimHash(%q) = %x, want 0", s, h)
		}
	}
}

// TestSimHashFeatureRuleReference checks the one-pass rule against a
// plain, string-based statement of it (refFeatureWords) on random texts of
// words, numbers, dates, Han numerals and separators: SimHash(text) must be
// the SimHash of the words the reference keeps, joined by spaces.
func TestSimHashFeatureRuleReference(t *testing.T) {
	pieces := []string{
		"word", "Page", "may", "May", "Nov", "sept", "25", "2026", "3rd", "4TH", "10pm", "x86", "٣", "２", "ab12",
		"年", "月", "日", "号", "分", "十", "一", "二", "〇", "星", "期", "礼", "拜", "周", "天", "三", "末", "分布式", "些",
		"Ünï", "ß", "\xff", ",", ".", "-", ":", "·", "\u3000", " ", " ", " ", " ", " ",
	}
	r := rand.New(rand.NewPCG(27, 2))
	for n := 0; n < 5000; n++ {
		var b strings.Builder
		for w := r.IntN(60); w > 0; w-- {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		text := b.String()
		kept := strings.Join(refFeatureWords(text), " ")
		if got, want := SimHash(text), SimHash(kept); got != want {
			t.Fatalf("SimHash(%q) = %x, want SimHash(%q) = %x", text, got, kept, want)
		}
		if _, sim := PageHashes(text, true); sim != PageSimHash(text) {
			t.Fatalf("PageHashes(%q) SimHash %x, PageSimHash %x", text, sim, PageSimHash(text))
		}
	}
}

// refToken is a word of the reference tokeniser; glued: no separator
// between it and the token before.
type refToken struct {
	s      string
	han    bool
	glued  bool
	digits bool
}

// refFeatureWords is the feature rule stated plainly: the words of text
// that SimHash shingles, lower-cased.
func refFeatureWords(text string) []string {
	var toks []refToken
	var cur []rune
	glued := false
	end := func(sep bool) {
		if len(cur) > 0 {
			digits := true
			for _, r := range cur {
				digits = digits && unicode.IsDigit(r)
			}
			toks = append(toks, refToken{s: string(cur), glued: glued, digits: digits})
			cur = cur[:0]
			glued = true
		}
		if sep {
			glued = false
		}
	}
	for _, r := range strings.ToValidUTF8(text, "\x00") {
		switch {
		case isIdeographic(r):
			end(false)
			toks = append(toks, refToken{s: string(r), han: true, glued: glued})
			glued = true
		case unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsNumber(r):
			cur = append(cur, unicode.ToLower(r))
		default:
			end(true)
		}
	}
	end(true)

	in := func(r rune, set string) bool { return strings.ContainsRune(set, r) }
	const numerals, units, weekdays = "〇零一二三四五六七八九十", "年月日号", "一二三四五六日天"
	var out []string
	for i := 0; i < len(toks); i++ {
		tk := toks[i]
		if !tk.han {
			if !refNoIdentity(tk.s) {
				out = append(out, tk.s)
			}
			continue
		}
		r, _ := utf8.DecodeRuneInString(tk.s)
		next := func(j int) (rune, bool) { // the Han character at j, glued
			if j < len(toks) && toks[j].han && toks[j].glued {
				c, _ := utf8.DecodeRuneInString(toks[j].s)
				return c, true
			}
			return 0, false
		}
		if i > 0 && tk.glued && toks[i-1].digits && in(r, "年月日号时分秒") {
			continue
		}
		switch {
		case in(r, numerals):
			j := i + 1
			for ; j < i+4; j++ {
				if c, ok := next(j); !ok || !in(c, numerals) {
					break
				}
			}
			if c, ok := next(j); ok && in(c, units) {
				i = j
				continue
			}
			for ; i < j; i++ {
				out = append(out, toks[i].s)
			}
			i--
			continue
		case r == '周' || r == '星' || r == '礼':
			j := i + 1
			if r != '周' {
				if c, ok := next(j); ok && (r == '星' && c == '期' || r == '礼' && c == '拜') {
					j++
				} else {
					out = append(out, tk.s)
					continue
				}
			}
			if c, ok := next(j); ok && in(c, weekdays) {
				i = j
				continue
			}
			for ; i < j; i++ {
				out = append(out, toks[i].s)
			}
			i--
			continue
		}
		out = append(out, tk.s)
	}
	return out
}

// refNoIdentity: numbers, ordinals and times of up to 7 bytes, month and
// weekday names.
func refNoIdentity(w string) bool {
	rs := []rune(w)
	digits := func(rs []rune) bool {
		for _, r := range rs {
			if !unicode.IsDigit(r) {
				return false
			}
		}
		return true
	}
	if digits(rs) {
		return true
	}
	if n := len(rs); n >= 3 && n <= 7 && digits(rs[:n-2]) {
		switch string(rs[n-2:]) {
		case "st", "nd", "rd", "th", "am", "pm":
			return true
		}
	}
	return slices.Contains(dateNameList, w)
}

// datedPageText is a page's text with numbers and dates among its words
// (as websim's articles: navigation with section numbers, a date line, a
// copyright year), for the cost of the feature rule.
var datedPageText = strings.TrimSpace(strings.Repeat("Home Section 1 Section 2 Section 3 About Updated 25 November 2026 "+
	"ecology as electron neutron from journal physics galaxy fossil biology quantum evolution at hypothesis reaction "+
	"page 12 of 40 posted Monday 3pm © 2026 ", 40))

// BenchmarkSimHashDatedText: SimHash and the crawl's PageHashes of a text
// with numbers and dates (the feature rule at work on about a fifth of the
// words).
func BenchmarkSimHashDatedText(b *testing.B) {
	b.Run("SimHash", func(b *testing.B) {
		b.SetBytes(int64(len(datedPageText)))
		for i := 0; i < b.N; i++ {
			SimHash(datedPageText)
		}
	})
	b.Run("PageHashes", func(b *testing.B) {
		b.SetBytes(int64(len(datedPageText)))
		for i := 0; i < b.N; i++ {
			PageHashes(datedPageText, true)
		}
	})
}

// TestSimHashAcrossTheRuleChange: a crawl resumed across the feature
// rule's introduction compares values of both rules (the state's simhash
// log, the Redis tables and the records keep the old ones). Unrelated
// pages stay far apart whichever rule hashed each: mixing can lose a
// near-duplicate (these texts, a tenth of their words numbers or dates,
// are 11–18 bits from their own old values), never make one. The old
// values were recorded with the rule before it (commit bf7bbd5).
func TestSimHashAcrossTheRuleChange(t *testing.T) {
	old := []struct {
		seed uint64
		sim  uint64
	}{
		{1, 0xc34c33c4fe895c1a},
		{2, 0x692920cf9525f899},
		{3, 0xc068fd08791125f6},
		{4, 0x502eb2cdf3f07b76},
		{5, 0x8b59bd1ad0f29811},
		{6, 0xe5c9fbb0f6f42d2d},
	}
	for i, a := range old {
		nowA := PageSimHash(numberedText(a.seed))
		if nowA == a.sim {
			t.Errorf("text %d: the same SimHash under both rules; its numbers should have been left out", a.seed)
		}
		for j, b := range old {
			if i == j {
				continue
			}
			if d := HammingDistance(nowA, b.sim); d < 12 {
				t.Errorf("text %d (new rule) and unrelated text %d (old rule) %d bits apart, want ≥ 12", a.seed, b.seed, d)
			}
		}
	}
}

// numberedText is a text of 300 random words (seed s) with a number, a
// month or a date among every tenth word, as many real pages have.
func numberedText(s uint64) string {
	r := rand.New(rand.NewPCG(s, 99))
	words := randomText(r, 300)
	dates := []string{"2026", "25", "November", "3pm", "1st", "10:30", "Monday", "2026年11月25日", "404", "12"}
	for i := 5; i < len(words); i += 10 {
		words[i] = dates[r.IntN(len(dates))]
	}
	return strings.Join(words, " ")
}
