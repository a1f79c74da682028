package dedup

import (
	"unicode"
	"unicode/utf8"
)

// The features SimHash votes with: which words make shingles.
//
// A near-duplicate detector should see two pages that differ only in a
// date, a time or a counter as the same text. Such tokens carry no content
// identity, yet each one inserted or changed alters ShingleSize+1 shingles
// around it: a copy of a 300-shingle article with an "Updated 25 November
// 2026" line has 8 shingles changed (2 lost, 6 new), and every bit whose
// vote margin is below that may flip. So these words are left out before
// shingling (the line above becomes the one word "updated": 5 shingles
// changed):
//
//   - numbers: words of decimal digits only (ASCII 0–9, and any Unicode
//     decimal digit, Nd), and ordinals and times written as one word: digits
//     then st, nd, rd, th, am or pm (25th, 3pm), words of up to 7 bytes;
//   - English month and weekday names and their usual abbreviations
//     (dateNames; "may", "march", "sun" and "sat" are words too, and are
//     left out as well: a small loss of content, the same on every page);
//   - Chinese dates (the analyser's other language): a date unit right
//     after a number (2026年, 11月, 25日, 10时30分), Han numerals before
//     年, 月, 日 or 号 (十一月, 二十五日, 二〇二六年), and weekdays (星期三,
//     礼拜天, 周三).
//
// The rule is the same wherever a SimHash is computed (SimHash,
// PageSimHash, PageHashes: the crawl's state, the Redis tables, the
// index's clusters all read the value the fetcher computed with it). A
// text without any such word hashes exactly as before the rule; a text
// with some has a value a few bits (one per few such words) from its old
// one, so stored values of an older crawl stay comparable: unrelated pages
// stay about 32 bits apart whichever rule hashed them.

// fold folds the word's 8 bytes in the lane into its hash (and the number
// test's OR).
func (st *simState) fold() {
	st.or |= st.lane
	st.wh = (st.wh ^ st.lane) * wordK
	st.lane = 0
}

// rune handles a non-ASCII rune r of the text; it reports whether r was a
// separator (neither a letter, a digit nor an ideograph).
func (st *simState) rune(r rune) bool {
	switch {
	case isIdeographic(r):
		afterNumber := false
		if st.wn != 0 {
			afterNumber = st.digitsOnly()
			st.endWord()
		}
		st.han(r, afterNumber)
	case unicode.IsDigit(r):
		// Any decimal digit counts as a digit for the number rule; its
		// byte keeps digits of one script apart in a word of letters.
		st.feedByte('0' + byte(r%10))
	case unicode.IsLetter(r) || unicode.IsNumber(r):
		st.feedRune(unicode.ToLower(r))
	default:
		st.endWord()
		return true
	}
	return false
}

// endWord ends the word being read (if any), after the Han characters
// held back before it: the word becomes the next of the shingles unless it
// carries no content identity.
func (st *simState) endWord() {
	if st.npend != 0 {
		st.flushHan()
	}
	st.pushWord()
}

// pushWord ends the word being read: it becomes the next word of the
// shingles unless it carries no content identity (a number, an ordinal or
// time such as 25th or 3pm, a month or weekday name). The common case, a
// word of letters, costs a test of its bytes and one slot of dateNames.
func (st *simState) pushWord() {
	wn, lane := st.wn, st.lane
	if wn == 0 {
		return
	}
	w := (st.wh^lane)*wordK ^ uint64(wn)
	or := st.or | lane
	st.wh, st.lane, st.wn, st.or = 0, 0, 0, 0
	if or&byteMask40 == 0 {
		return // digits only
	}
	if uint(wn-3) <= 9-3 && (dateNames[w>>56] != 0 || wn <= 7 && (lane>>16)&byteMask40 == 0) && dateWord(w, wn, lane) {
		return
	}
	copy(st.ring[:], st.ring[1:])
	st.ring[ShingleSize-1] = w
	st.words++
	if st.words >= ShingleSize {
		st.add(fmix64(st.ring[0]*shingleK[0] + st.ring[1]*shingleK[1] + st.ring[2]*shingleK[2] ^ ShingleSize))
	}
}

// byteMask40 has bit 6 of every byte set: clear in ASCII digits ('0'–'9'
// are 0x30–0x39), set in ASCII letters (0x61–0x7a, lower-cased) and in
// every UTF-8 lead byte (0xc2–0xf4), so a word of digits only is one whose
// bytes OR-ed together have it clear in every byte.
const byteMask40 = 0x4040404040404040

// digitsOnly reports whether the word being read is digits only.
func (st *simState) digitsOnly() bool {
	return (st.or|st.lane)&byteMask40 == 0
}

// dateWord reports whether a word of wn bytes, 3 to 9, not digits only,
// with hash w (and, up to 7 bytes, all its bytes in lane) is an ordinal or
// a time (digits, then st, nd, rd, th, am or pm) or a month or weekday
// name.
func dateWord(w uint64, wn int, lane uint64) bool {
	if wn <= 7 && (lane>>16)&byteMask40 == 0 {
		switch uint16(lane) {
		case 's'<<8 | 't', 'n'<<8 | 'd', 'r'<<8 | 'd', 't'<<8 | 'h', 'a'<<8 | 'm', 'p'<<8 | 'm':
			return true
		}
	}
	return dateNames.has(w)
}

// han handles a Han (or kana, Hangul) character r; afterNumber says that a
// number word ended right before it, with nothing between.
func (st *simState) han(r rune, afterNumber bool) {
	if afterNumber && isDateUnit(r) {
		return // 2026年, 11月, 25日, 10时
	}
	if st.npend != 0 {
		p := st.pend[:st.npend]
		switch {
		case isWeekdayStart(p) && isWeekday(r),
			allHanNumerals(p) && (r == '年' || r == '月' || r == '日' || r == '号'):
			st.npend = 0 // a date: all of it left out
			return
		case len(p) == 1 && (p[0] == '星' && r == '期' || p[0] == '礼' && r == '拜'),
			allHanNumerals(p) && isHanNumeral(r) && len(p) < len(st.pend):
			st.pend[st.npend] = r
			st.npend++
			return
		}
		st.flushHan()
	}
	if isHanNumeral(r) || r == '星' || r == '礼' || r == '周' {
		st.pend[0], st.npend = r, 1
		return
	}
	st.feedRune(r)
	st.pushWord()
}

// flushHan makes the Han characters held back words after all (each its
// own word, as isIdeographic's characters are), before the word being
// read, which it keeps.
func (st *simState) flushHan() {
	wh, lane, wn, or := st.wh, st.lane, st.wn, st.or
	st.wh, st.lane, st.wn, st.or = 0, 0, 0, 0
	for _, r := range st.pend[:st.npend] {
		st.feedRune(r)
		st.pushWord()
	}
	st.npend = 0
	st.wh, st.lane, st.wn, st.or = wh, lane, wn, or
}

func isDateUnit(r rune) bool {
	switch r {
	case '年', '月', '日', '号', '时', '分', '秒':
		return true
	}
	return false
}

func isHanNumeral(r rune) bool {
	switch r {
	case '〇', '零', '一', '二', '三', '四', '五', '六', '七', '八', '九', '十':
		return true
	}
	return false
}

func allHanNumerals(p []rune) bool {
	for _, r := range p {
		if !isHanNumeral(r) {
			return false
		}
	}
	return true
}

// isWeekdayStart reports whether p is 星期, 礼拜 or 周: a weekday follows.
func isWeekdayStart(p []rune) bool {
	switch len(p) {
	case 1:
		return p[0] == '周'
	case 2:
		return p[0] == '星' && p[1] == '期' || p[0] == '礼' && p[1] == '拜'
	}
	return false
}

func isWeekday(r rune) bool {
	switch r {
	case '一', '二', '三', '四', '五', '六', '日', '天':
		return true
	}
	return false
}

func (st *simState) feedByte(b byte) {
	st.lane = st.lane<<8 | uint64(b)
	st.wn++
	if st.wn&7 == 0 {
		st.fold()
	}
}

func (st *simState) feedRune(r rune) {
	var buf [utf8.UTFMax]byte
	n := utf8.EncodeRune(buf[:], r)
	for _, b := range buf[:n] {
		st.feedByte(b)
	}
}

// wordSet is a set of word hashes (as pushWord computes them), open
// addressing on the top bits: a lookup of a word not in it reads one slot
// or a few.
type wordSet [256]uint64

func (s *wordSet) has(w uint64) bool {
	for i := w >> 56; s[i] != 0; i = (i + 1) & 255 {
		if s[i] == w {
			return true
		}
	}
	return false
}

func (s *wordSet) add(w uint64) {
	i := w >> 56
	for s[i] != 0 && s[i] != w {
		i = (i + 1) & 255
	}
	s[i] = w
}

// wordHash is pushWord's hash of a lower-case ASCII word.
func wordHash(word string) uint64 {
	var st simState
	for i := 0; i < len(word); i++ {
		st.feedByte(word[i])
	}
	return (st.wh^st.lane)*wordK ^ uint64(st.wn)
}

// dateNameList are the English month and weekday names and abbreviations
// SimHash leaves out (3 to 9 letters, lower case).
var dateNameList = []string{
	"january", "february", "march", "april", "may", "june", "july", "august",
	"september", "october", "november", "december",
	"jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec",
	"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
	"mon", "tue", "tues", "wed", "thu", "thur", "thurs", "fri", "sat", "sun",
}

var dateNames = func() (s *wordSet) {
	s = new(wordSet)
	for _, w := range dateNameList {
		s.add(wordHash(w))
	}
	return s
}()
