// Package parse extracts links, text and metadata from HTML pages (SPEC §3
// "Parser") and splits pages into blocks for the link-text-ratio noise
// filter (SPEC §2 S301/S302).
//
// Parsing streams tokens from golang.org/x/net/html's Tokenizer: no DOM is
// built and nothing recurses, so malformed input (unclosed tags, invalid
// bytes, 100,000 levels of nesting) costs time linear in its size and
// cannot overflow the stack. Work is bounded by Options.
package parse

import (
	"fmt"
	"net/url"
	"strings"
)

// Options bound the work done on one page. The zero value is usable.
type Options struct {
	// MaxLinks is the most links kept; further links are dropped and the
	// Page marked Truncated. Default 10,000.
	MaxLinks int
	// MaxTextBytes caps Page.Text (and the total text of all Blocks);
	// beyond it text is dropped and the Page marked Truncated. Default
	// 1 MiB.
	MaxTextBytes int
	// MaxAnchorText caps each Link.Text, in bytes. Default 256.
	MaxAnchorText int
	// Unresolved leaves links unresolved, for a caller that resolves and
	// normalises them itself (one URL parse per link, not two): Link.URL
	// and Page.Refresh are nil, Link.Raw is the reference cleaned as
	// browsers do (CleanHref) and Page.Base is set as usual. References
	// that do not parse are then not counted in Page.Skipped (the caller
	// finds them).
	Unresolved bool
	// Links, when not nil, is where Page.Links is built (from Links[:0]):
	// a caller that parses page after page and is done with one Page
	// before the next passes its Links back, so that a page's hundreds of
	// links do not cost a new slice each time. Its elements are
	// overwritten.
	Links []Link
}

func (o Options) withDefaults() Options {
	if o.MaxLinks <= 0 {
		o.MaxLinks = 10_000
	}
	if o.MaxTextBytes <= 0 {
		o.MaxTextBytes = 1 << 20
	}
	if o.MaxAnchorText <= 0 {
		o.MaxAnchorText = 256
	}
	return o
}

// Link is one reference found in a page.
type Link struct {
	// Raw is the attribute value as written (entities decoded).
	Raw string
	// URL is Raw resolved against the page's base: absolute, fragment kept,
	// otherwise not normalised (the caller normalises).
	URL *url.URL
	// Tag and Attr say where the link was found: "a"/"href", "img"/"src",
	// "meta"/"content" (a refresh), ...
	Tag, Attr string
	// Text is the anchor text of an <a> (or the alt text of an <area> or of
	// images inside the anchor): whitespace collapsed, trimmed, capped at
	// Options.MaxAnchorText bytes.
	Text string
	// Rel is the lower-cased rel attribute of <a>, <area> and <link>.
	Rel string
	// NoFollow is true when Rel contains "nofollow" or the page's meta
	// robots says nofollow.
	NoFollow bool
}

// MetaRobots holds the directives of <meta name="robots">.
type MetaRobots struct {
	NoIndex  bool // "noindex" or "none"
	NoFollow bool // "nofollow" or "none"
}

// Page is what Parse found in a document.
type Page struct {
	// Title is the text of the first <title>, whitespace collapsed.
	Title string
	// Text is the visible text: the contents of script, style, noscript,
	// template and of the head (except the title) are skipped; whitespace
	// runs become one space; block-level tags separate words.
	Text string
	// Lang is the lang attribute of <html> (xml:lang if lang is absent).
	Lang string
	// Links are in document order, not de-duplicated.
	Links []Link
	// Base is the URL links were resolved against: the first <base href>
	// resolved against the document URL, or the document URL.
	Base *url.URL
	// MetaRobots holds the page-level robots directives.
	MetaRobots MetaRobots
	// Refresh is the target of the first <meta http-equiv="refresh"> that
	// names a URL (it also appears in Links).
	Refresh *url.URL
	// Skipped counts references dropped: empty, javascript:, mailto:,
	// data:, tel:, or unparseable.
	Skipped int
	// Truncated is true when Options.MaxLinks or MaxTextBytes cut the
	// result.
	Truncated bool
}

// Parse extracts a Page from body, UTF-8 HTML fetched from base (an
// absolute URL). It tolerates any input: invalid bytes become U+FFFD in
// text. Once both Options limits are reached it stops reading, so a later
// <base> or meta robots is not seen (the Page is marked Truncated). It
// returns an error only when base is nil or not absolute.
func Parse(base *url.URL, body []byte, opt Options) (*Page, error) {
	if base == nil || !base.IsAbs() {
		return nil, fmt.Errorf("cannot parse page: base URL %v is not absolute; pass the URL the page was fetched from", base)
	}
	w := newWalker(body, opt.withDefaults(), false)
	defer w.release()
	w.run()
	p := &Page{
		Title:      w.title.String(),
		Text:       w.text.String(),
		Lang:       w.lang,
		MetaRobots: w.robots,
		Skipped:    w.skipped,
		Truncated:  w.truncated || w.text.truncated,
	}
	p.Base = w.resolveBase(base)
	if opt.Links != nil && cap(opt.Links) >= len(w.links) {
		p.Links = opt.Links[:0]
	} else {
		p.Links = make([]Link, 0, len(w.links))
	}
	if opt.Unresolved {
		for i := range w.links {
			pl := &w.links[i]
			p.Links = append(p.Links, Link{Raw: pl.clean, Tag: pl.tag(), Attr: pl.attr(), Text: pl.text, Rel: pl.rel,
				NoFollow: w.robots.NoFollow || hasToken(pl.rel, "nofollow")})
		}
		return p, nil
	}
	for i := range w.links {
		l, ok := w.resolve(p.Base, &w.links[i])
		if !ok {
			p.Skipped++
			continue
		}
		if w.links[i].refresh && p.Refresh == nil {
			p.Refresh = l.URL
		}
		p.Links = append(p.Links, l)
	}
	return p, nil
}

// resolveBase applies the first <base href> (HTML: it applies to the whole
// document, links before it included) unless it is unusable. With a nil
// doc, only an absolute <base href> gives a base; otherwise it is nil.
func (w *walker) resolveBase(doc *url.URL) *url.URL {
	if !w.haveBase {
		return doc
	}
	var b *url.URL
	var err error
	if doc == nil {
		b, err = url.Parse(cleanHref(w.baseHref))
		if err != nil || !b.IsAbs() {
			return nil
		}
	} else if b, err = doc.Parse(cleanHref(w.baseHref)); err != nil {
		return doc
	}
	if b.Scheme != "http" && b.Scheme != "https" && (doc == nil || b.Scheme != doc.Scheme) {
		return doc
	}
	return b
}

// resolve turns a pending link into a Link against base; a nil base leaves
// the reference unresolved.
func (w *walker) resolve(base *url.URL, p *pending) (Link, bool) {
	parse := url.Parse
	if base != nil {
		parse = base.Parse
	}
	u, err := parse(p.clean)
	if err != nil {
		return Link{}, false
	}
	return Link{
		Raw:      p.raw,
		URL:      u,
		Tag:      p.tag(),
		Attr:     p.attr(),
		Text:     p.text,
		Rel:      p.rel,
		NoFollow: w.robots.NoFollow || hasToken(p.rel, "nofollow"),
	}, true
}

// CleanHref prepares an attribute value for URL parsing the way browsers
// do (Options.Unresolved gives links in this form); see cleanHref.
func CleanHref(s string) string { return cleanHref(s) }

// cleanHref prepares an attribute value for URL parsing the way browsers
// do: leading and trailing C0 controls and spaces removed, tabs and
// newlines inside removed, and backslashes read as slashes unless the
// reference has a scheme other than http or https.
func cleanHref(s string) string {
	if plainHref(s) {
		return s
	}
	s = strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
	if strings.ContainsAny(s, "\t\n\r") {
		s = strings.Map(func(r rune) rune {
			if r == '\t' || r == '\n' || r == '\r' {
				return -1
			}
			return r
		}, s)
	}
	if strings.IndexByte(s, '\\') >= 0 {
		if scheme := schemeOf(s); scheme == "" || scheme == "http" || scheme == "https" {
			s = strings.ReplaceAll(s, `\`, "/")
		}
	}
	return s
}

// plainHref reports whether cleanHref would return s unchanged because s
// holds no byte it looks at: no space or control character (the only
// runes it trims or removes are ASCII) and no backslash.
func plainHref(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c == '\\' {
			return false
		}
	}
	return true
}

// schemeOf returns the lower-cased scheme of a reference, or "" when it has
// none.
func schemeOf(s string) string {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case i > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'):
		case c == ':' && i > 0:
			return strings.ToLower(s[:i])
		default:
			return ""
		}
	}
	return ""
}

// skipScheme reports whether a reference is not worth resolving.
func skipScheme(s string) bool {
	switch schemeOf(s) {
	case "javascript", "mailto", "data", "tel":
		return true
	}
	return false
}

// hasToken reports whether the space-separated list s holds tok.
func hasToken(s, tok string) bool {
	for _, f := range strings.Fields(s) {
		if f == tok {
			return true
		}
	}
	return false
}
