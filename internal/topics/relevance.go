package topics

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Scorer measures how relevant a page's text is to one topic: the share of
// the text's non-space characters covered by occurrences of the topic's
// terms (case-insensitive). Substring counting works for Chinese text,
// which has no spaces between words; for English a term also matches inside
// longer words ("tax" in "taxation"), which is what a topic vocabulary wants.
type Scorer struct {
	terms []string // lower-cased, longest first
}

// NewScorer returns a Scorer for terms (blank terms are ignored).
func NewScorer(terms []string) *Scorer {
	s := &Scorer{}
	for _, t := range terms {
		if t = strings.ToLower(strings.TrimSpace(t)); t != "" {
			s.terms = append(s.terms, t)
		}
	}
	// Longest first, so that a term inside a longer one is not counted
	// twice where the longer one matched (see Score).
	for i := 1; i < len(s.terms); i++ {
		for j := i; j > 0 && len(s.terms[j]) > len(s.terms[j-1]); j-- {
			s.terms[j], s.terms[j-1] = s.terms[j-1], s.terms[j]
		}
	}
	return s
}

// Score returns the share in [0, 1] of text's non-space characters that
// belong to term occurrences; 0 for empty text.
func (s *Scorer) Score(text string) float64 {
	if len(s.terms) == 0 || text == "" {
		return 0
	}
	low := strings.ToLower(text)
	total := 0
	for _, r := range low {
		if !unicode.IsSpace(r) {
			total++
		}
	}
	if total == 0 {
		return 0
	}
	// Mark matched bytes so overlapping terms count once.
	var covered []bool
	matched := 0
	for _, t := range s.terms {
		for off := 0; ; {
			i := strings.Index(low[off:], t)
			if i < 0 {
				break
			}
			start := off + i
			if covered == nil {
				covered = make([]bool, len(low))
			}
			for k := start; k < start+len(t); {
				_, w := utf8.DecodeRuneInString(low[k:])
				if !covered[k] && !unicode.IsSpace(rune(low[k])) {
					matched++
				}
				for j := k; j < k+w; j++ {
					covered[j] = true
				}
				k += w
			}
			off = start + len(t)
		}
	}
	return min(1, float64(matched)/float64(total))
}
