package websim

import (
	"net/url"
	"strconv"
)

// Duplicate pages and canonical links (Config.NearDups).
//
// Every article /s/N/a/M.html links (as content) to some of its copies:
//
//	/mirror/s/N/a/M.html   the article as it is (an exact copy: the same visible text;
//	                       a <base href> keeps its relative links the article's)
//	/dated/s/N/a/M.html    the article with a date line ("Updated …") before its text:
//	                       a near-duplicate
//	/print/s/N/a/M.html    the print view (the article's text without navigation,
//	                       links or footer): the same content, a near-duplicate of the
//	                       article's main text; it names the article canonical in an
//	                       HTTP Link header
//
// Canonical links, by M mod 4, on the mirror (a <link rel="canonical">):
//
//	0  the article (a good canonical: the mirror folds into it)
//	1  /missing/M.html, which answers 404 (the mirror stands alone)
//	2  the same article on the next host (off-site: never followed)
//	3  the dated copy, whose own canonical names the mirror (a loop)
//
// With FeatureNoise, session-id variants (;jsessionid=, ?sid=) and tracking parameters
// of a page serve the page itself: exact duplicates too.
//
// Truth.Duplicates labels every fetched copy with its original and kind;
// Truth.Canonicals lists the canonical URL each fetched page names. With
// TruthRules.Canonical (a crawler that respects rel=canonical, spider crawl's default)
// the truth's crawl treats canonical links as the crawler must: a canonical URL of the
// same host and port is queued at the page's own depth (like a redirect target), any
// other is never followed, and a canonical <link> is not an ordinary link.

// Duplicate kinds of Truth.Duplicates.
const (
	// DupExact: the copy's visible text is the original's.
	DupExact = "exact"
	// DupNear: the copy's main text is the original's, or differs by a date line.
	DupNear = "near"
)

// Duplicate is the label of one copy in Truth.Duplicates.
type Duplicate struct {
	// Of is the original page (canonical form).
	Of string `json:"of"`
	// Kind is DupExact or DupNear.
	Kind string `json:"kind"`
	// Why names the copy's kind: "mirror", "dated", "print", "session".
	Why string `json:"why"`
}

// dupArticle returns the article route a copy route copies.
func dupArticle(rt route) route { return route{kind: rArticle, a: rt.a, b: rt.b} }

// dupLinks links an article to its copies (Config.NearDups): decided from the
// article's key, so the article's other links are those of a web without copies.
func (b *builder) dupLinks(n, m int) {
	h := hash2(b.key, 0x6475706c)
	sec := "/s/" + strconv.Itoa(n) + "/a/" + strconv.Itoa(m) + ".html"
	for i, prefix := range []string{"/mirror", "/dated", "/print"} {
		if (h>>(8*i))&0xff < 0x60 { // about 3 in 8 articles link each copy
			b.content(formRoot, prefix+sec, b.w.dupAnchor(b.d.zh, i), relNone)
		}
	}
}

func (w *Web) dupAnchor(zh bool, i int) string {
	if zh {
		return [...]string{"镜像", "更新版", "打印"}[i]
	}
	return [...]string{"mirror", "updated", "print"}[i]
}

// dupPage builds a mirror or dated copy of an article into b.d.
func (b *builder) dupPage(rt route) {
	w, d := b.w, b.d
	art := dupArticle(rt)
	b.path = appendPath(b.path[:0], art)
	b.dir = dirOf(b.dir[:0], b.path)
	b.key = w.pageKey(b.hi, art)
	b.r = newRNG(b.key)
	b.article(rt.a, rt.b, w.shape.pageID(art))
	if d.base.n == 0 {
		d.base = b.d.add(string(b.path)) // relative links resolve as on the article
	}
	if rt.kind == rDated {
		day := 1 + int(hash2(b.key, 0x64617465)%28)
		d.dateLine = d.add("Updated " + strconv.Itoa(day) + " November 2026")
	}
	if c, ok := w.canonicalOf(b.hi, rt); ok {
		// Not among d.links: the page model's rendering draws from their
		// count, and a copy must render as its article does.
		d.canonical = d.add(c)
	}
}

// canonicalOf returns the canonical link of the page of route rt on host hi (an
// absolute path on the same host, or an absolute URL), when it has one.
func (w *Web) canonicalOf(hi int, rt route) (string, bool) {
	if !w.cfg.NearDups {
		return "", false
	}
	art := string(appendPath(nil, dupArticle(rt)))
	switch rt.kind {
	case rPrint:
		return art, true
	case rMirror:
		switch rt.b % 4 {
		case 0:
			return art, true
		case 1:
			return "/missing/" + strconv.Itoa(rt.b) + ".html", true
		case 2:
			return w.hosts[(hi+1)%len(w.hosts)].origin + art, true
		default:
			return string(appendPath(nil, route{kind: rDated, a: rt.a, b: rt.b})), true
		}
	case rDated:
		if rt.b%4 == 3 {
			return string(appendPath(nil, route{kind: rMirror, a: rt.a, b: rt.b})), true
		}
	}
	return "", false
}

// canonicalHeader is the HTTP Link header of the page of route rt ("" for none):
// print views name their article there.
func (w *Web) canonicalHeader(hi int, rt route) string {
	if rt.kind != rPrint {
		return ""
	}
	c, ok := w.canonicalOf(hi, rt)
	if !ok {
		return ""
	}
	return "<" + c + `>; rel="canonical"`
}

// truthCanonical handles the canonical URL of a fetched page for the truth's crawl:
// it is recorded in Truth.Canonicals and, with TruthRules.Canonical and on the same
// host and port, returned for the current layer (queued at the page's depth). Without
// TruthRules.Canonical a <link rel="canonical"> is an ordinary link: it is added to
// next.
func (c *truthCrawl) truthCanonical(it truthItem, rt route, next *[]truthCand) (*url.URL, bool) {
	raw, ok := c.w.canonicalOf(it.hi, rt)
	if !ok {
		return nil, false
	}
	u, ok := Canonical(it.u, raw)
	if !ok || u.String() == it.key {
		return nil, false
	}
	if c.t.Canonicals == nil {
		c.t.Canonicals = map[string]string{}
	}
	c.t.Canonicals[it.key] = u.String()
	if !c.rules.Canonical {
		if rt.kind != rPrint { // the print view's is a header, not a link
			c.noteNoise(u)
			*next = append(*next, truthCand{u: u})
		}
		return nil, false
	}
	if u.Host != it.u.Host {
		return nil, false
	}
	return u, true
}

// labelDuplicates fills Truth.Duplicates from the fetched pages that answer 200:
// copies whose original was fetched too.
func (c *truthCrawl) labelDuplicates() {
	t := c.t
	for _, key := range t.MustFetch {
		if t.Final[key] != "200" {
			continue
		}
		u, err := url.Parse(key)
		if err != nil {
			continue
		}
		var of, kind, why string
		if c.w.cfg.features.Has(FeatureNoise) {
			if p, ok := stripSession(u.Path); ok || u.RawQuery != "" {
				v := *u
				v.Path, v.RawPath, v.RawQuery = p, "", ""
				if v.String() != key {
					of, kind, why = v.String(), DupExact, "session"
				}
			}
		}
		if of == "" && c.w.cfg.NearDups {
			rt, ok := parsePath(u.Path, c.w.shape)
			if ok {
				switch rt.kind {
				case rMirror:
					kind, why = DupExact, "mirror"
				case rDated:
					kind, why = DupNear, "dated"
				case rPrint:
					kind, why = DupNear, "print"
				}
				if kind != "" {
					v := *u
					v.Path, v.RawQuery = string(appendPath(nil, dupArticle(rt))), ""
					of = v.String()
				}
			}
		}
		if of == "" || t.Final[of] != "200" || !c.isPage(of) || !c.isPage(key) {
			continue
		}
		if t.Duplicates == nil {
			t.Duplicates = map[string]Duplicate{}
		}
		t.Duplicates[key] = Duplicate{Of: of, Kind: kind, Why: why}
	}
}

// isPage reports whether u is an HTML page a crawler parses (not an image, a
// stylesheet, an error page).
func (c *truthCrawl) isPage(u string) bool {
	v, err := url.Parse(u)
	if err != nil {
		return false
	}
	hi, ok := c.w.lookup(v.Hostname())
	if !ok {
		return false
	}
	a := c.w.answerOf(hi, v.Path)
	return a.parse && a.doc && a.status == 200
}
