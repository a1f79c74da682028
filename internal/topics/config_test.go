package topics

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseDefaults(t *testing.T) {
	c, err := Parse([]byte(testYAML))
	if err != nil {
		t.Fatal(err)
	}
	if c.MinSlice != Duration(12500*time.Microsecond) || c.Quantum != Duration(25*time.Millisecond) || c.Relevance != 0.05 {
		t.Fatalf("defaults: %+v", c)
	}
	if got := c.LevelSlice(2); got != 300*time.Millisecond {
		t.Fatalf("LevelSlice(2) = %v, want 3×base", got)
	}
	if h := c.Topics[0].Hubs; len(h) != 1 || h[0] != "http://news.example/" {
		t.Fatalf("hubs default to seeds, got %v", h)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name, yml, want string
	}{
		{"empty", ``, "no topics"},
		{"unknown key", "topics: [{name: a, terms: [x], seeds: [http://a/]}]\nbogus: 1", "bogus"},
		{"bad name", "topics: [{name: 'a b', terms: [x], seeds: [http://a/]}]", "name must be"},
		{"duplicate", "topics: [{name: a, terms: [x], seeds: [http://a/]}, {name: a, terms: [x], seeds: [http://a/]}]", "used twice"},
		{"priority", "topics: [{name: a, priority: 10, terms: [x], seeds: [http://a/]}]", "priority 10 out of range"},
		{"no match", "topics: [{name: a, terms: [x]}]", "give seeds, patterns or urls"},
		{"pattern", "topics: [{name: a, terms: [x], patterns: [example.com]}]", "not in SURT form"},
		{"seed", "topics: [{name: a, terms: [x], seeds: [ftp://a/]}]", "not an absolute http(s) URL"},
		{"terms", "topics: [{name: a, seeds: [http://a/]}]", "no terms"},
		{"duration", "period: fast\ntopics: [{name: a, terms: [x], seeds: [http://a/]}]", "use forms like"},
		{"tick", "period: 1s\ntick: 2s\ntopics: [{name: a, terms: [x], seeds: [http://a/]}]", "longer than period"},
		{"recrawl", "topics: [{name: a, terms: [x], seeds: [http://a/], recrawl: 1ms}]", "at least 100ms"},
		{"relevance", "relevance: 2\ntopics: [{name: a, terms: [x], seeds: [http://a/]}]", "relevance 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yml))
			if err == nil || !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse error = %v, want ErrConfig mentioning %q", err, tc.want)
			}
		})
	}
}

func TestLoadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "topics.yaml")
	if err := os.WriteFile(path, []byte(testYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path + ".missing"); err == nil {
		t.Fatal("missing file accepted")
	}
}

func TestNormalizePattern(t *testing.T) {
	for in, want := range map[string]string{
		"HTTP://(Test,D0,":     "http://(test,d0,",
		"http://(test,d0,)/A/": "http://(test,d0,)/A/",
	} {
		if got, err := NormalizePattern(in); err != nil || got != want {
			t.Errorf("NormalizePattern(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestScore(t *testing.T) {
	s := NewScorer([]string{"Tax", "refund", "退税", "taxpayer"})
	for _, tc := range []struct {
		text string
		want float64
	}{
		{"", 0},
		{"   ", 0},
		{"tax", 1},
		{"TAX refund", 1},
		{"tax and", 0.5}, // 3 of 6 letters
		{"taxpayer", 1},  // longest first, counted once
		{"申请退税", 0.5},    // 2 of 4 characters
		{"nothing to see", 0},
	} {
		if got := s.Score(tc.text); got < tc.want-1e-9 || got > tc.want+1e-9 {
			t.Errorf("Score(%q) = %v, want %v", tc.text, got, tc.want)
		}
	}
}

// FuzzParse: the topics-file parser must not panic, and what it accepts
// must build a scheduler.
func FuzzParse(f *testing.F) {
	f.Add([]byte(testYAML))
	f.Add([]byte("topics: [{name: a, terms: [x], seeds: [http://a/]}]"))
	f.Add([]byte("slices: {1: 2s}\ntopics: [{name: a, terms: [x], patterns: ['http://(a,']}]"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Parse(b)
		if err != nil {
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("error does not wrap ErrConfig: %v", err)
			}
			return
		}
		s, err := New(c, Options{})
		if err != nil {
			t.Fatal(err)
		}
		s.Classify("http://a/")
	})
}

// FuzzScore: Score stays within [0, 1] for any text and terms.
func FuzzScore(f *testing.F) {
	f.Add("tax refund", "tax")
	f.Add("申请退税", "退税")
	f.Add("\xff\xfeTAX", "ta")
	f.Fuzz(func(t *testing.T, text, term string) {
		v := NewScorer([]string{term, strings.ToUpper(term)}).Score(text)
		if v < 0 || v > 1 {
			t.Fatalf("Score = %v", v)
		}
	})
}
