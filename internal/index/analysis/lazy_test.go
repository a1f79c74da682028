package analysis_test

import (
	"errors"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/go-ego/gse"

	"github.com/spider-crawler/spider/internal/index/analysis"
)

// tinyLoader returns a loader of a two-word dictionary that counts its
// calls and holds each load until gate is closed, so the test decides when
// concurrent first uses have piled up behind it.
func tinyLoader(calls *atomic.Int32, gate <-chan struct{}) func() (*gse.Segmenter, error) {
	return func() (*gse.Segmenter, error) {
		calls.Add(1)
		<-gate
		seg := new(gse.Segmenter)
		seg.SkipLog = true
		if err := seg.LoadDictStr("足球 1000 n\n比赛 1000 n"); err != nil {
			return nil, err
		}
		return seg, nil
	}
}

// waitBlockedIn waits until n goroutines are blocked (not running) with a frame of a
// function whose name contains fn on their stacks, reading every goroutine's stack each
// millisecond; it fails the test after 10 s. It is how a test knows that goroutines are
// waiting inside the code under test, with no hook in that code.
func waitBlockedIn(t *testing.T, fn string, n int) {
	t.Helper()
	buf := make([]byte, 1<<20)
	deadline := time.Now().Add(10 * time.Second)
	for {
		k := runtime.Stack(buf, true)
		got := 0
		for _, g := range strings.Split(string(buf[:k]), "\n\n") {
			head, _, _ := strings.Cut(g, "\n")
			if strings.Contains(g, fn) && !strings.Contains(head, "[running]") && !strings.Contains(head, "[runnable]") {
				got++
			}
		}
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines blocked in %s after 10 s, want %d", got, fn, n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestDictionaryLoadsOnlyForHan(t *testing.T) {
	var calls atomic.Int32
	gate := make(chan struct{})
	a := analysis.NewWithLoader(tinyLoader(&calls, gate))
	english := "The quick brown fox jumps over the lazy dog; naïve café 2024 résumé Ωmega"
	a.Analyze(english, func(analysis.Token) {})
	a.AnalyzeQuery(`"quick fox" OR dog -cat`, func(analysis.Token) {})
	a.Words(english, 0, func(int, int, int) bool { return true })
	if a.Loaded() || calls.Load() != 0 || a.LoadTime() != 0 {
		t.Fatalf("English-only analysis loaded the dictionary (loaded %v, %d loads)", a.Loaded(), calls.Load())
	}
	// Japanese kana and Korean hangul are not Han: no dictionary either.
	a.Analyze("ひらがな 한국어", func(analysis.Token) {})
	if a.Loaded() {
		t.Fatal("kana/hangul loaded the dictionary")
	}

	var wg sync.WaitGroup
	got := make([]string, 8)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i] = strings.Join(a.QueryTerms("足球比赛 football"), " ")
		}()
	}
	// All 8 wait inside the analyzer (one in the held load, 7 behind it) before the load
	// may finish: a second load can then only come from a broken once-only guard.
	waitBlockedIn(t, "analysis.(*Analyzer)", 8)
	close(gate)
	wg.Wait()
	if n := calls.Load(); n != 1 {
		t.Fatalf("dictionary loaded %d times by 8 concurrent analyses, want once", n)
	}
	for _, g := range got {
		if g != "足球 比赛 footbal" {
			t.Fatalf("query terms %q, want the dictionary's words", g)
		}
	}
	if !a.Loaded() || a.LoadTime() <= 0 || a.DictErr() != nil {
		t.Fatalf("after Han text: loaded %v, load time %v, error %v", a.Loaded(), a.LoadTime(), a.DictErr())
	}
	a.Analyze("比赛", func(analysis.Token) {})
	if err := a.Preload(); err != nil || calls.Load() != 1 {
		t.Fatalf("Preload after the load: %v, %d loads", err, calls.Load())
	}
}

func TestDictionaryLoadFailure(t *testing.T) {
	a := analysis.NewWithLoader(func() (*gse.Segmenter, error) { return nil, errors.New("out of memory") })
	if a.DictErr() != nil {
		t.Fatal("error before any load")
	}
	if got := strings.Join(a.QueryTerms("足球比赛"), " "); got != "足 球 比 赛" {
		t.Fatalf("without a dictionary: %q, want single characters", got)
	}
	err := a.DictErr()
	if err == nil || !strings.Contains(err.Error(), "cannot load the gse Chinese dictionaries") || !strings.Contains(err.Error(), "out of memory") {
		t.Fatalf("DictErr = %v", err)
	}
	if a.Preload() == nil {
		t.Fatal("Preload hides the error")
	}
}

// checkWords verifies that Words numbers the words of text as Analyze does
// and that cutting text after separators changes nothing.
func checkWords(t *testing.T, a *analysis.Analyzer, text string) {
	t.Helper()
	type word struct{ pos, start, end int }
	var words []word
	n := a.Words(text, 0, func(pos, start, end int) bool {
		words = append(words, word{pos, start, end})
		return true
	})
	if n != len(words) {
		t.Fatalf("%q: Words returned %d after %d words", text, n, len(words))
	}
	for i, w := range words {
		if w.pos != i || w.start < 0 || w.end > len(text) || w.start >= w.end || i > 0 && w.start < words[i-1].end {
			t.Fatalf("%q: bad word %d: %+v", text, i, w)
		}
	}
	a.Analyze(text, func(tk analysis.Token) {
		if tk.Pos >= len(words) || tk.Start < words[tk.Pos].start || tk.End > words[tk.Pos].end {
			t.Fatalf("%q: Analyze token %+v is not inside word %d of Words", text, tk, tk.Pos)
		}
	})
	// Cut after every separator rune, as the snippet reader does.
	var again []word
	pos, from := 0, 0
	for i, r := range text {
		if r != utf8.RuneError && analysis.IsSeparator(r) {
			cut := i + utf8.RuneLen(r)
			part := text[from:cut]
			pos = a.Words(part, pos, func(p, s, e int) bool { again = append(again, word{p, from + s, from + e}); return true })
			from = cut
		}
	}
	part := text[from:]
	a.Words(part, pos, func(p, s, e int) bool { again = append(again, word{p, from + s, from + e}); return true })
	if len(again) != len(words) {
		t.Fatalf("%q: %d words in parts, %d whole", text, len(again), len(words))
	}
	for i := range words {
		if again[i] != words[i] {
			t.Fatalf("%q: word %d is %+v in parts, %+v whole", text, i, again[i], words[i])
		}
	}
	// Stopping early.
	k := 0
	if stop := a.Words(text, 0, func(int, int, int) bool { k++; return k < 2 }); len(words) >= 2 && (stop != 2 || k != 2) {
		t.Fatalf("%q: stopped at %d after %d calls", text, stop, k)
	}
}

func TestWords(t *testing.T) {
	a := shared(t)
	for _, s := range []string{
		"", "   ", "The state of the art", "足球比赛的冠军，北京大学。", "Go语言programming 2024",
		strings.Repeat("x", analysis.MaxTermBytes+5) + " y", "hello\xffworld", "a\u0301b c", "ひらがな 한국어 русский",
	} {
		checkWords(t, a, s)
	}
}

func FuzzWords(f *testing.F) {
	for _, s := range []string{"The quick brown fox", "足球比赛的冠军", "Go语言programming", "\xff\xfe", "a\u0301b", "", "x。y，z"} {
		f.Add(s)
	}
	a := shared(f)
	// Load the dictionary before fuzzing: a first input that took the
	// seconds of the load would count as a hung worker.
	if err := a.Preload(); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) { checkWords(t, a, s) })
}
