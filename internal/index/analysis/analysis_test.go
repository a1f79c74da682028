package analysis_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/spider-crawler/spider/internal/index/analysis"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func shared(t testing.TB) *analysis.Analyzer {
	t.Helper()
	a, err := analysis.Shared()
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// render writes one line per token: position, term and the text it came from.
func render(a *analysis.Analyzer, text string, query bool) string {
	var b strings.Builder
	fn := func(t analysis.Token) { fmt.Fprintf(&b, "%d\t%s\t%s\n", t.Pos, t.Term, text[t.Start:t.End]) }
	for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		text = line
		if query {
			a.AnalyzeQuery(line, fn)
		} else {
			a.Analyze(line, fn)
		}
		b.WriteString("--\n")
	}
	return b.String()
}

func TestGolden(t *testing.T) {
	a := shared(t)
	inputs, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no inputs: %v", err)
	}
	for _, in := range inputs {
		for _, query := range []bool{false, true} {
			name := strings.TrimSuffix(in, ".txt")
			if query {
				name += ".query"
			}
			t.Run(filepath.Base(name), func(t *testing.T) {
				src, err := os.ReadFile(in)
				if err != nil {
					t.Fatal(err)
				}
				got := render(a, string(src), query)
				golden := name + ".golden"
				if *update {
					if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (run go test -update)", err)
				}
				if got != string(want) {
					t.Errorf("%s differs:\n--- got\n%s--- want\n%s", golden, got, want)
				}
			})
		}
	}
}

func TestRules(t *testing.T) {
	a := shared(t)
	cases := []struct {
		text string
		want string
	}{
		{"The THE the", ""},
		{"Running runs ran", "run run ran"},
		{strings.Repeat("x", analysis.MaxTermBytes+1) + " ok", "ok"},
		{"a\u00a0b c", "b c"}, // no-break space separates words; "a" is a stop word
		{"hello\xffworld", "hello world"},
		{"", ""},
	}
	for _, c := range cases {
		if got := strings.Join(a.QueryTerms(c.text), " "); got != c.want {
			t.Errorf("%q: got %q, want %q", c.text, got, c.want)
		}
	}
}

func TestConcurrent(t *testing.T) {
	a := shared(t)
	want := render(a, "足球比赛 investors watched markets 北京大学", false)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				if got := render(a, "足球比赛 investors watched markets 北京大学", false); got != want {
					t.Errorf("concurrent analysis differs: %q", got)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func FuzzAnalyze(f *testing.F) {
	for _, s := range []string{"The quick brown fox", "足球比赛的冠军", "Go语言programming", "\xff\xfe", "a\u0301b", ""} {
		f.Add(s)
	}
	a := shared(f)
	f.Fuzz(func(t *testing.T, s string) {
		last := -1
		a.Analyze(s, func(tk analysis.Token) {
			if tk.Start < 0 || tk.End > len(s) || tk.Start >= tk.End {
				t.Fatalf("bad offsets %d..%d in %q", tk.Start, tk.End, s)
			}
			if tk.Pos < last {
				t.Fatalf("position went back: %d after %d", tk.Pos, last)
			}
			last = tk.Pos
			if tk.Term == "" || len(tk.Term) > 4*analysis.MaxTermBytes || !utf8.ValidString(tk.Term) && utf8.ValidString(s[tk.Start:tk.End]) {
				t.Fatalf("bad term %q from %q", tk.Term, s[tk.Start:tk.End])
			}
		})
	})
}
