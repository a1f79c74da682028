package index

import (
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/spider-crawler/spider/internal/index/analysis"
)

// ErrQuery is wrapped by every error about a malformed query; the message
// says what was wrong and how to write it.
var ErrQuery = errors.New("bad query")

// MaxQueryBytes and MaxQueryTerms bound the work one query may ask for.
const (
	MaxQueryBytes = 1024
	MaxQueryTerms = 32
)

// Query syntax:
//
//	word            pages containing the word (analysed like page text)
//	w1 w2           both (implicit AND); "w1 AND w2" is the same
//	w1 OR w2        either; AND binds tighter than OR
//	"w1 w2"         the phrase: the words at consecutive positions
//	-w, NOT w       pages without w (needs a positive part)
//	site:host       pages on host or its sub-domains
//	( … )           grouping
//
// A word that analysis splits into several terms (Chinese text, "e-mail")
// must match all of them; quote it to require them in order.
type (
	qnode interface{ isNode() }
	// qterms matches documents holding all its terms (one written word).
	qterms struct{ terms []string }
	// qphrase matches the terms at the relative positions rel.
	qphrase struct {
		terms []string
		rel   []int
	}
	// qand matches all of pos, none of neg, and one of sites if any.
	qand struct {
		pos   []qnode
		neg   []qnode
		sites []string
	}
	qor struct{ kids []qnode }
)

func (qterms) isNode()  {}
func (qphrase) isNode() {}
func (*qand) isNode()   {}
func (*qor) isNode()    {}

type qtok struct {
	kind   byte // 'w' word, 'p' phrase, '(' , ')'
	text   string
	neg    bool
	offset int
}

func queryErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrQuery, fmt.Sprintf(format, args...))
}

// lexQuery splits a query into words, phrases and parentheses.
func lexQuery(q string) ([]qtok, error) {
	var toks []qtok
	i := 0
	for i < len(q) {
		c := q[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == 0xC2 && i+1 < len(q) && q[i+1] == 0xA0:
			if c == 0xC2 {
				i++
			}
			i++
		case c == '(' || c == ')':
			toks = append(toks, qtok{kind: c, offset: i})
			i++
		default:
			neg := false
			start := i
			if c == '-' && i+1 < len(q) && (q[i+1] == '"' || q[i+1] == '(' || !isSpaceByte(q[i+1])) {
				neg = true
				i++
				if q[i] == '(' {
					toks = append(toks, qtok{kind: '(', neg: true, offset: start})
					i++
					continue
				}
			}
			if i < len(q) && q[i] == '"' {
				end := strings.IndexByte(q[i+1:], '"')
				if end < 0 {
					return nil, queryErr("the quote at character %d is not closed; end the phrase with \"", i+1)
				}
				toks = append(toks, qtok{kind: 'p', text: q[i+1 : i+1+end], neg: neg, offset: start})
				i += end + 2
				continue
			}
			j := i
			for j < len(q) && !isSpaceByte(q[j]) && q[j] != '(' && q[j] != ')' && q[j] != '"' {
				j++
			}
			if j == i {
				i++
				continue
			}
			toks = append(toks, qtok{kind: 'w', text: q[i:j], neg: neg, offset: start})
			i = j
		}
	}
	return toks, nil
}

func isSpaceByte(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// parsedQuery is a query ready to run.
type parsedQuery struct {
	root  qnode
	terms []string // positive terms, for highlighting and the Result
}

// parseQuery parses q with a's query analysis. Errors wrap ErrQuery.
func parseQuery(a *analysis.Analyzer, q string) (*parsedQuery, error) {
	if strings.TrimSpace(q) == "" {
		return nil, queryErr("the query is empty; type some words to search for")
	}
	if len(q) > MaxQueryBytes {
		return nil, queryErr("the query is %d bytes long; the limit is %d", len(q), MaxQueryBytes)
	}
	toks, err := lexQuery(q)
	if err != nil {
		return nil, err
	}
	p := &qparser{a: a, toks: toks, seen: map[string]bool{}}
	root, err := p.or()
	if err != nil {
		return nil, err
	}
	if p.i < len(p.toks) {
		return nil, queryErr("unexpected ) at character %d; remove it or add the ( it closes", p.toks[p.i].offset+1)
	}
	if root == nil {
		return nil, queryErr("the query %q has no searchable words (only stop words or punctuation); use more specific words", q)
	}
	if p.nterms > MaxQueryTerms {
		return nil, queryErr("the query has %d terms; the limit is %d", p.nterms, MaxQueryTerms)
	}
	return &parsedQuery{root: root, terms: p.terms}, nil
}

type qparser struct {
	a      *analysis.Analyzer
	toks   []qtok
	i      int
	depth  int
	terms  []string
	seen   map[string]bool
	nterms int
}

func (p *qparser) or() (qnode, error) {
	var kids []qnode
	for {
		n, err := p.and()
		if err != nil {
			return nil, err
		}
		if n != nil {
			kids = append(kids, n)
		}
		if p.i < len(p.toks) && p.toks[p.i].kind == 'w' && p.toks[p.i].text == "OR" && !p.toks[p.i].neg {
			p.i++
			continue
		}
		break
	}
	switch len(kids) {
	case 0:
		return nil, nil
	case 1:
		return kids[0], nil
	}
	return &qor{kids: kids}, nil
}

func (p *qparser) and() (qnode, error) {
	n := &qand{}
	negNext := false
	for p.i < len(p.toks) {
		t := p.toks[p.i]
		if t.kind == ')' {
			break
		}
		if t.kind == 'w' && !t.neg {
			switch t.text {
			case "OR":
				if negNext {
					return nil, queryErr("NOT before OR at character %d; write NOT before a word", t.offset+1)
				}
				return p.finishAnd(n, t.offset)
			case "AND":
				p.i++
				continue
			case "NOT":
				negNext = true
				p.i++
				continue
			}
		}
		p.i++
		neg := t.neg != negNext
		negNext = false
		var kid qnode
		switch t.kind {
		case '(':
			if p.depth >= 16 {
				return nil, queryErr("parentheses nest deeper than 16 levels")
			}
			p.depth++
			sub, err := p.or()
			p.depth--
			if err != nil {
				return nil, err
			}
			if p.i >= len(p.toks) || p.toks[p.i].kind != ')' {
				return nil, queryErr("the ( at character %d is not closed; add a )", t.offset+1)
			}
			p.i++
			kid = sub
		case 'p':
			kid = p.phrase(t.text, neg)
		case 'w':
			if host, ok := strings.CutPrefix(t.text, "site:"); ok {
				host = strings.Trim(strings.ToLower(host), "./")
				if host == "" || strings.ContainsAny(host, "/?#") {
					return nil, queryErr("site: at character %d needs a host name, as in site:example.org", t.offset+1)
				}
				if neg {
					n.neg = append(n.neg, &qand{sites: []string{host}})
				} else {
					n.sites = append(n.sites, host)
				}
				continue
			}
			kid = p.word(t.text, neg)
		}
		if kid == nil {
			continue
		}
		if neg {
			n.neg = append(n.neg, kid)
		} else {
			n.pos = append(n.pos, kid)
		}
	}
	if negNext {
		return nil, queryErr("NOT at the end of the query or group has nothing to exclude")
	}
	return p.finishAnd(n, -1)
}

func (p *qparser) finishAnd(n *qand, at int) (qnode, error) {
	if len(n.pos) == 0 && len(n.sites) == 0 {
		if len(n.neg) > 0 {
			return nil, queryErr("the query only excludes words; add a word to search for (e.g. tax -income)")
		}
		if at >= 0 {
			return nil, queryErr("OR at character %d has no words before it", at+1)
		}
		return nil, nil
	}
	if len(n.pos) == 1 && len(n.neg) == 0 && len(n.sites) == 0 {
		return n.pos[0], nil
	}
	return n, nil
}

// word analyses one written word into a qterms node (nil for stop words).
func (p *qparser) word(text string, neg bool) qnode {
	terms := p.a.QueryTerms(text)
	if len(terms) == 0 {
		return nil
	}
	p.nterms += len(terms)
	if !neg {
		p.note(terms)
	}
	return qterms{terms: terms}
}

// phrase analyses a quoted phrase; a one-term phrase is a word.
func (p *qparser) phrase(text string, neg bool) qnode {
	var ph qphrase
	first := -1
	p.a.AnalyzeQuery(text, func(t analysis.Token) {
		if first < 0 {
			first = t.Pos
		}
		ph.terms = append(ph.terms, t.Term)
		ph.rel = append(ph.rel, t.Pos-first)
	})
	if len(ph.terms) == 0 {
		return nil
	}
	p.nterms += len(ph.terms)
	if !neg {
		p.note(ph.terms)
	}
	if len(ph.terms) == 1 {
		return qterms{terms: ph.terms}
	}
	return ph
}

func (p *qparser) note(terms []string) {
	for _, t := range terms {
		if !p.seen[t] {
			p.seen[t] = true
			p.terms = append(p.terms, t)
		}
	}
}

// hostOf returns the lower-cased host of an absolute URL without parsing it
// fully (this runs once per candidate document of a site: query).
func hostOf(u string) string {
	i := strings.Index(u, "://")
	if i < 0 {
		return ""
	}
	h := u[i+3:]
	if j := strings.IndexAny(h, "/?#"); j >= 0 {
		h = h[:j]
	}
	if j := strings.LastIndexByte(h, '@'); j >= 0 {
		h = h[j+1:]
	}
	if j := strings.LastIndexByte(h, ':'); j >= 0 && !strings.HasSuffix(h, "]") {
		h = h[:j]
	}
	return strings.ToLower(strings.TrimSuffix(h, "."))
}

// siteMatch reports whether host is site or a sub-domain of it. A site
// given with a port (site:www.a.test:8080) also matches the port.
func siteMatch(u, site string) bool {
	host := hostOf(u)
	if strings.ContainsRune(site, ':') {
		i := strings.Index(u, "://")
		if i < 0 {
			return false
		}
		hp := u[i+3:]
		if j := strings.IndexAny(hp, "/?#"); j >= 0 {
			hp = hp[:j]
		}
		return strings.EqualFold(hp, site)
	}
	return host == site || strings.HasSuffix(host, "."+site) && !unicode.IsDigit(rune(site[0]))
}
