package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/spider-crawler/spider/internal/index/analysis"
)

// Query mixes.
const (
	mixZipf    = "zipf"    // ranks drawn Zipf(s) from the distinct set: a real query log's shape
	mixUniform = "uniform" // every distinct query equally likely
	mixUnique  = "unique"  // every query new: nothing can be cached (the worst case)
)

// source gives the next query of a mix; next is called concurrently, each
// caller with its own rng. ok is false when a finite source is used up.
type source interface {
	next(rng *rand.Rand) (q string, ok bool)
}

// latinWordRE is a Latin query word: 3+ letters.
var latinWordRE = regexp.MustCompile(`^[A-Za-z]{3,}$`)

// vocabulary is what queries are built from: the distinct words of the
// crawled titles and the pairs of words adjacent in a title.
type vocabulary struct {
	words []string
	pairs [][2]string
}

// readVocabulary reads the titles of records.jsonl in dataDir (the pages
// the index holds: status 200) and returns their words and adjacent pairs,
// each in first-seen order.
func readVocabulary(dataDir string) (*vocabulary, error) {
	// The index's own analyser cuts the titles, so that Chinese words are
	// the index's terms (gse), not arbitrary pairs of characters.
	an, err := analysis.Shared()
	if err != nil {
		return nil, fmt.Errorf("cannot load the index's analyser: %w", err)
	}
	path := filepath.Join(dataDir, "records.jsonl")
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read the crawled titles: %w (give --data a crawl's data directory, or --queries FILE)", err)
	}
	defer f.Close()
	v := &vocabulary{}
	seenWord := map[string]bool{}
	seenPair := map[[2]string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var r struct {
			Status int    `json:"status"`
			Title  string `json:"title"`
		}
		if json.Unmarshal(sc.Bytes(), &r) != nil || r.Status != 200 || r.Title == "" {
			continue
		}
		words := titleWords(an, r.Title)
		for i, w := range words {
			if !seenWord[w] {
				seenWord[w] = true
				v.words = append(v.words, w)
			}
			if i > 0 {
				p := [2]string{words[i-1], w}
				if p[0] != p[1] && !seenPair[p] {
					seenPair[p] = true
					v.pairs = append(v.pairs, p)
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("cannot read %s: %w", path, err)
	}
	if len(v.words) < 2 {
		return nil, fmt.Errorf("%s has fewer than 2 distinct title words: crawl more pages or give --queries FILE", path)
	}
	return v, nil
}

// titleWords returns a title's query words as the index cuts them:
// Latin words of 3+ letters (lower-cased) and Chinese words of 2+
// characters, stop words left out.
func titleWords(an *analysis.Analyzer, title string) []string {
	var out []string
	an.Words(title, 0, func(_, start, end int) bool {
		w := title[start:end]
		r, _ := utf8.DecodeRuneInString(w)
		switch {
		case latinWordRE.MatchString(w):
			w = strings.ToLower(w)
		case unicode.Is(unicode.Han, r) && utf8.RuneCountInString(w) >= 2:
		default:
			return true
		}
		if !an.IsStop(w) {
			out = append(out, w)
		}
		return true
	})
	return out
}

// distinctQueries builds n distinct queries from v, in popularity order
// (a seeded shuffle, so that the most popular query is not simply the
// first title word): every single word, then adjacent pairs (implicit
// AND), quoted phrases and OR pairs, in the proportions 7:1.5:1.5.
func distinctQueries(v *vocabulary, n int, seed uint64) []string {
	rng := rand.New(rand.NewPCG(seed, 0x5e12e))
	seen := map[string]bool{}
	var out []string
	add := func(q string) {
		if !seen[q] && len(out) < n {
			seen[q] = true
			out = append(out, q)
		}
	}
	for _, w := range v.words {
		add(w)
	}
	pairs := slices.Clone(v.pairs)
	rng.Shuffle(len(pairs), func(i, j int) { pairs[i], pairs[j] = pairs[j], pairs[i] })
	// Stop when the vocabulary cannot give more (a small crawl).
	limit := 10 * (3*len(pairs) + len(v.words)*len(v.words) + 10)
	for i := 0; len(out) < n && i < limit; i++ {
		switch k := rng.IntN(20); {
		case k < 14 && len(pairs) > 0:
			p := pairs[i%len(pairs)]
			add(p[0] + " " + p[1])
		case k < 17 && len(pairs) > 0:
			p := pairs[i%len(pairs)]
			add(`"` + p[0] + " " + p[1] + `"`)
		default:
			a, b := v.words[rng.IntN(len(v.words))], v.words[rng.IntN(len(v.words))]
			if a != b {
				add(a + " OR " + b)
			}
		}
	}
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// readQueryFile reads one query per line (blank lines and lines starting
// with # skipped), most popular first.
func readQueryFile(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read --queries: %w", err)
	}
	var out []string
	for line := range strings.Lines(string(b)) {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			out = append(out, line)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--queries %s holds no query: write one query per line", path)
	}
	return out, nil
}

// zipfSource draws query i (0-based rank) with probability ∝ 1/(i+1)^s.
// Hand-written because math/rand/v2's Zipf needs s > 1, and query logs
// are measured at s ≈ 1: the cumulative weights are precomputed and a
// draw is a binary search.
type zipfSource struct {
	queries []string
	cum     []float64 // cum[i] = Σ_{j≤i} 1/(j+1)^s
}

func newZipfSource(queries []string, s float64) *zipfSource {
	z := &zipfSource{queries: queries, cum: make([]float64, len(queries))}
	sum := 0.0
	for i := range queries {
		sum += 1 / math.Pow(float64(i+1), s)
		z.cum[i] = sum
	}
	return z
}

func (z *zipfSource) next(rng *rand.Rand) (string, bool) {
	u := rng.Float64() * z.cum[len(z.cum)-1]
	i := sort.SearchFloat64s(z.cum, u)
	return z.queries[min(i, len(z.queries)-1)], true
}

// uniformSource draws every query with the same probability.
type uniformSource struct{ queries []string }

func (u uniformSource) next(rng *rand.Rand) (string, bool) {
	return u.queries[rng.IntN(len(u.queries))], true
}

// uniqueSource never gives the same query twice. From a vocabulary it
// makes adjacent title pairs (shuffled) and then random pairs, phrases,
// OR pairs and triples of title words, skipping anything given before and
// the other mixes' queries (list); from a query file (no vocabulary) it
// gives each line of list once and then is used up.
type uniqueSource struct {
	mu    sync.Mutex
	rng   *rand.Rand
	list  []string // a query file's lines
	v     *vocabulary
	pairs [][2]string
	i     int
	seen  map[string]bool
}

func newUniqueSource(v *vocabulary, list []string, seed uint64) *uniqueSource {
	u := &uniqueSource{rng: rand.New(rand.NewPCG(seed, 0x0417e)), list: list, v: v, seen: map[string]bool{}}
	if v != nil {
		// Not even the zipf and uniform mixes' queries: a server shared
		// by several runs (--fresh=false) may have cached them.
		for _, q := range list {
			u.seen[q] = true
		}
		u.pairs = slices.Clone(v.pairs)
		u.rng.Shuffle(len(u.pairs), func(i, j int) { u.pairs[i], u.pairs[j] = u.pairs[j], u.pairs[i] })
	}
	return u
}

// errUsedUp ends a run whose unique queries ran out.
var errUsedUp = errors.New("the unique queries are used up")

func (u *uniqueSource) next(*rand.Rand) (string, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.v == nil {
		if u.i >= len(u.list) {
			return "", false
		}
		u.i++
		return u.list[u.i-1], true
	}
	for tries := 0; tries < 1000; tries++ {
		var q string
		if u.i < len(u.pairs) {
			p := u.pairs[u.i]
			u.i++
			q = p[0] + " " + p[1]
		} else {
			w := u.v.words
			a, b, c := w[u.rng.IntN(len(w))], w[u.rng.IntN(len(w))], w[u.rng.IntN(len(w))]
			switch u.rng.IntN(4) {
			case 0:
				q = a + " " + b
			case 1:
				q = `"` + a + " " + b + `"`
			case 2:
				q = a + " OR " + b
			default:
				q = a + " OR " + b + " OR " + c
			}
		}
		if !u.seen[q] {
			u.seen[q] = true
			return q, true
		}
	}
	return "", false
}
