// Package analysis turns page text and queries into index terms: the word
// segmentation and counting step of SPEC §1's index build ("segment the text
// into words … count each word's frequency per page … stop words are
// removed").
//
// Text is cut into script runs. A run of Han characters is segmented into
// words with github.com/go-ego/gse (the Go port of jieba, the segmenter the
// paper uses) over gse's embedded simplified AND traditional dictionaries,
// so both scripts are segmented into dictionary words. gse's shortest-path
// mode is used (about 4× faster than its DAG+HMM mode here; unknown words
// fall apart into single characters, which still match themselves). Like
// jieba's search mode, a document word of three or more characters also
// yields the two- and three-character dictionary words inside it, at the
// same position, so the query 足球 finds pages that say 足球比赛; queries are
// analysed without this expansion (AnalyzeQuery). Terms are not mapped
// between the scripts: a query written in traditional characters matches
// pages written in traditional characters (gse carries no conversion table,
// and none is in the module's dependencies). Unknown Han words are found by
// gse's HMM, as jieba does by default.
//
// A run of letters and digits of any other script is one word: it is
// lower-cased, dropped if it is an English stop word (Lucene's default
// English stop set), and stemmed with the Snowball English stemmer
// (github.com/kljensen/snowball). Words longer than MaxTermBytes are
// dropped. Mixed-language text simply alternates runs.
//
// Every word, kept or dropped, takes one position, so phrase queries keep
// their gaps ("state of the art" matches the same gap as in the page).
//
// Loading the gse dictionaries takes 3–10 seconds on a loaded 2-core machine
// and about 200 MB, so it happens once per process (Shared) and only when
// Han text is first met: English-only queries never wait for it.
package analysis

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/go-ego/gse"
	"github.com/kljensen/snowball/english"
)

// MaxTermBytes is the longest term kept, in bytes; longer words (base64
// blobs, hashes) are skipped but still take a position.
const MaxTermBytes = 64

// Token is one indexed word of a text.
type Token struct {
	Term       string // the index term: lower-cased and stemmed, or a Chinese word
	Pos        int    // word position in the text, from 0; dropped words take one too
	Start, End int    // byte offsets of the word in the analysed text
}

// Analyzer segments and normalises text. It is safe for concurrent use.
// The gse dictionaries are loaded on first need (the first Han character
// analysed, or Preload), so English-only work never pays for them: an
// Analyzer that has only seen text without Han characters reports
// Loaded() == false.
type Analyzer struct {
	stop   map[string]bool
	caches sync.Pool // *stemCache

	load     func() (*gse.Segmenter, error) // the dictionary loader (tests replace it)
	segOnce  sync.Once
	seg      *gse.Segmenter // nil if loading failed
	segErr   error
	loadTime time.Duration
	ready    atomic.Bool // the load was attempted (and finished)
}

// stemCache memoises Snowball stems: stemming dominates English analysis and
// web text repeats words heavily. A pool of caches keeps Analyze lock-free.
type stemCache struct{ m map[string]string }

const maxStemCache = 1 << 16

// New returns an Analyzer. The Chinese dictionaries load on first use.
func New() (*Analyzer, error) { return newAnalyzer(loadEmbedded), nil }

// loadEmbedded loads gse's embedded simplified and traditional Chinese
// dictionaries.
func loadEmbedded() (*gse.Segmenter, error) {
	seg := new(gse.Segmenter)
	seg.SkipLog = true
	if err := seg.LoadDictEmbed("zh"); err != nil {
		return nil, err
	}
	return seg, nil
}

func newAnalyzer(load func() (*gse.Segmenter, error)) *Analyzer {
	a := &Analyzer{stop: make(map[string]bool, len(englishStop)+len(chineseStop)), load: load}
	for _, w := range englishStop {
		a.stop[w] = true
	}
	for _, w := range chineseStop {
		a.stop[w] = true
	}
	a.caches.New = func() any { return &stemCache{m: make(map[string]string, 1024)} }
	return a
}

// Preload loads the gse dictionaries now (one to ten seconds, depending on
// the machine) unless that was done already, and returns the load's error,
// if any. Concurrent callers (and Analyze calls meeting Han text) wait for
// the one load. Without a dictionary Han text is cut into single
// characters; DictErr keeps the error for callers that report it later.
func (a *Analyzer) Preload() error {
	a.segOnce.Do(func() {
		start := time.Now()
		seg, err := a.load()
		if err != nil {
			a.segErr = fmt.Errorf("cannot load the gse Chinese dictionaries (Chinese text is indexed character by character instead; "+
				"check that the process has enough memory, about 300 MB, and run the command again): %w", err)
		} else {
			a.seg = seg
		}
		a.loadTime = time.Since(start)
		a.ready.Store(true)
	})
	return a.segErr
}

// Loaded reports whether the dictionary load has happened (successfully or
// not): false until the Analyzer first meets Han text or Preload is called.
func (a *Analyzer) Loaded() bool { return a.ready.Load() }

// DictErr returns the error of the dictionary load, or nil if the load has
// not happened or succeeded.
func (a *Analyzer) DictErr() error {
	if !a.ready.Load() {
		return nil
	}
	return a.segErr
}

// shared is the process-wide Analyzer: written once by sync.OnceValues and
// read-only afterwards (the dictionary is too large to load per index).
var shared = sync.OnceValues(New)

// Shared returns the process-wide Analyzer. Creating it is cheap; its
// dictionaries load when Han text is first analysed.
func Shared() (*Analyzer, error) { return shared() }

// LoadTime reports how long loading the dictionaries took (0 if they were
// not needed yet).
func (a *Analyzer) LoadTime() time.Duration {
	if !a.ready.Load() {
		return 0
	}
	return a.loadTime
}

// IsStop reports whether the lower-cased word w is a stop word.
func (a *Analyzer) IsStop(w string) bool { return a.stop[w] }

// Analyze calls fn for every kept word of text in order. Positions count
// every word, dropped ones included. The Token's Term may be kept by fn.
func (a *Analyzer) Analyze(text string, fn func(Token)) { a.analyze(text, true, fn) }

// AnalyzeQuery is Analyze without the expansion of long Chinese words into
// the dictionary words inside them: a query word is matched as written.
func (a *Analyzer) AnalyzeQuery(text string, fn func(Token)) { a.analyze(text, false, fn) }

func (a *Analyzer) analyze(text string, expand bool, fn func(Token)) {
	c := a.caches.Get().(*stemCache)
	defer a.caches.Put(c)
	pos := 0
	for i := 0; i < len(text); {
		r, n := utf8.DecodeRuneInString(text[i:])
		switch {
		case isHan(r):
			j := hanEnd(text, i+n)
			pos = a.han(text, i, j, pos, expand, fn)
			i = j
		case isWordRune(r):
			j := wordEnd(text, i+n)
			if t, ok := a.word(c, text[i:j]); ok {
				fn(Token{Term: t, Pos: pos, Start: i, End: j})
			}
			pos++
			i = j
		default:
			i += n
		}
	}
}

// Words calls fn for every word of text, kept or dropped, in order: its
// position, numbered from pos0 exactly as Analyze numbers them, and its
// byte offsets. Words are not normalised (no lower-casing, stemming or stop
// words), so this is much cheaper than Analyze; Han runs are still cut by
// gse (loading the dictionaries), since that decides their positions. It
// stops as soon as fn returns false and returns the position after the
// last word visited. Cutting text after a rune for which IsSeparator is
// true and calling Words on each part (with the position returned by the
// previous call) numbers the words as one call on the whole text would.
func (a *Analyzer) Words(text string, pos0 int, fn func(pos, start, end int) bool) int {
	pos := pos0
	for i := 0; i < len(text); {
		// ASCII fast path: snippets lex whole pages, mostly ASCII.
		if c := text[i]; c < utf8.RuneSelf {
			if !asciiWord[c] {
				i++
				continue
			}
			j := wordEnd(text, i+1)
			pos++
			if !fn(pos-1, i, j) {
				return pos
			}
			i = j
			continue
		}
		r, n := utf8.DecodeRuneInString(text[i:])
		switch {
		case isHan(r):
			j := hanEnd(text, i+n)
			var more bool
			pos, more = a.hanWords(text, i, j, pos, fn)
			if !more {
				return pos
			}
			i = j
		case isWordRune(r):
			j := wordEnd(text, i+n)
			pos++
			if !fn(pos-1, i, j) {
				return pos
			}
			i = j
		default:
			i += n
		}
	}
	return pos
}

// asciiWord marks the ASCII bytes that are word runes.
var asciiWord = func() (t [utf8.RuneSelf]bool) {
	for c := range utf8.RuneSelf {
		t[c] = isWordRune(rune(c))
	}
	return t
}()

// wordEnd returns the end of the non-Han word run of text continuing at j.
// hanEnd returns the end of the run of Han runes of text that goes on at j.
func hanEnd(text string, j int) int {
	for j < len(text) {
		r, n := utf8.DecodeRuneInString(text[j:])
		if !isHan(r) {
			break
		}
		j += n
	}
	return j
}

// wordEnd returns the end of the word (word runes other than Han) that goes
// on at j.
func wordEnd(text string, j int) int {
	for j < len(text) {
		if c := text[j]; c < utf8.RuneSelf {
			if !asciiWord[c] {
				break
			}
			j++
			continue
		}
		r2, n2 := utf8.DecodeRuneInString(text[j:])
		if !isWordRune(r2) || isHan(r2) {
			break
		}
		j += n2
	}
	return j
}

// hanWords is Words for the Han run text[i:j]: the same cut, and so the
// same positions, as han.
func (a *Analyzer) hanWords(text string, i, j, pos int, fn func(pos, start, end int) bool) (int, bool) {
	more := a.cutHan(text, i, j, func(start, end int) bool {
		pos++
		return start < 0 || fn(pos-1, start, end)
	})
	return pos, more
}

// cutHan cuts the Han run text[i:j] into words, in order, and calls fn with
// each word's byte offsets; each call is one position. Without the
// dictionary every character is a word. gse returns the run's words in order
// and without gaps; to keep the offsets exact even if a future version trims
// something, a word not found where expected is reported with start -1 (it
// still takes its position). cutHan stops when fn returns false, and then
// returns false.
func (a *Analyzer) cutHan(text string, i, j int, fn func(start, end int) bool) bool {
	if a.Preload() != nil {
		for k, r := range text[i:j] {
			if !fn(i+k, i+k+utf8.RuneLen(r)) {
				return false
			}
		}
		return true
	}
	off := i
	for _, w := range a.seg.Cut(text[i:j]) {
		k := strings.Index(text[off:j], w)
		if k < 0 {
			if !fn(-1, -1) {
				return false
			}
			continue
		}
		start := off + k
		off = start + len(w)
		if !fn(start, off) {
			return false
		}
	}
	return true
}

// IsSeparator reports whether r separates words: it is neither part of a
// word nor a Han character. utf8.RuneError (an invalid byte) separates
// words too, but a caller cutting a stream of bytes cannot tell it from
// an incomplete rune and should not cut there.
func IsSeparator(r rune) bool { return !isWordRune(r) && !isHan(r) }

// han segments the Han run text[i:j] with gse (cutHan).
func (a *Analyzer) han(text string, i, j, pos int, expand bool, fn func(Token)) int {
	a.cutHan(text, i, j, func(start, end int) bool {
		if start >= 0 {
			if w := text[start:end]; len(w) <= MaxTermBytes && !a.stop[w] && strings.TrimSpace(w) != "" {
				fn(Token{Term: w, Pos: pos, Start: start, End: end})
				if expand {
					a.subwords(w, start, pos, fn)
				}
			}
		}
		pos++
		return true
	})
	return pos
}

// subwords emits the 2- and 3-character dictionary words inside the word w
// (which starts at byte start) when w is longer, as jieba's search mode does.
func (a *Analyzer) subwords(w string, start, pos int, fn func(Token)) {
	n := utf8.RuneCountInString(w)
	if n < 3 {
		return
	}
	var offs [MaxTermBytes + 1]int // rune start offsets; w fits in MaxTermBytes
	k := 0
	for i := range w {
		offs[k] = i
		k++
	}
	offs[k] = len(w)
	for size := 2; size <= 3 && size < n; size++ {
		for r := 0; r+size <= n; r++ {
			sub := w[offs[r]:offs[r+size]]
			if f, _, ok := a.seg.Dict.Find([]byte(sub)); ok && f > 0 && !a.stop[sub] {
				fn(Token{Term: sub, Pos: pos, Start: start + offs[r], End: start + offs[r+size]})
			}
		}
	}
}

// word normalises one non-Han word: lower-case, stop word, stem.
func (a *Analyzer) word(c *stemCache, w string) (string, bool) {
	if len(w) > MaxTermBytes {
		return "", false
	}
	if t, ok := c.m[w]; ok {
		return t, t != ""
	}
	lw := lower(w)
	t := ""
	if !a.stop[lw] {
		t = lw
		if hasLetter(lw) {
			t = english.Stem(lw, false)
		}
	}
	if len(c.m) >= maxStemCache {
		clear(c.m)
	}
	c.m[strings.Clone(w)] = t
	return t, t != ""
}

// QueryTerms returns the terms AnalyzeQuery finds in text, in order.
func (a *Analyzer) QueryTerms(text string) []string {
	var out []string
	a.AnalyzeQuery(text, func(t Token) { out = append(out, t.Term) })
	return out
}

func isHan(r rune) bool {
	return r >= 0x2E80 && unicode.Is(unicode.Han, r)
}

func isWordRune(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9'
	}
	return r != utf8.RuneError && (unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r))
}

func hasLetter(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < '0' || c > '9' {
			return true
		}
	}
	return false
}

// lower lower-cases w, without allocating when it is already lower-case
// ASCII.
func lower(w string) string {
	for i := 0; i < len(w); i++ {
		c := w[i]
		if c >= utf8.RuneSelf || 'A' <= c && c <= 'Z' {
			return strings.ToLower(w)
		}
	}
	return w
}

// englishStop is Lucene's default English stop set (EnglishAnalyzer).
var englishStop = []string{
	"a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it",
	"no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these",
	"they", "this", "to", "was", "will", "with",
}

// chineseStop holds common Chinese function words, simplified and
// traditional forms, as single gse words.
var chineseStop = []string{
	"的", "了", "是", "在", "和", "与", "與", "及", "或", "也", "都", "就", "而", "并", "並", "被", "把",
	"对", "對", "从", "從", "这", "這", "那", "之", "其", "个", "個", "等", "我", "你", "他", "她", "它",
	"们", "們", "有", "为", "為", "以", "于", "於", "上", "中", "下", "不", "很", "到", "说", "說",
	"要", "会", "會", "可", "能", "着", "著", "过", "過", "吗", "嗎", "呢", "吧", "啊", "我们", "我們",
	"他们", "他們", "这个", "這個", "那个", "那個", "一个", "一個", "没有", "沒有", "因为", "因為",
	"所以", "但是", "如果", "可以", "已经", "已經",
}
