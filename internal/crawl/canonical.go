package crawl

import (
	"strings"

	"github.com/spider-crawler/spider/internal/fetch"
	"github.com/spider-crawler/spider/internal/frontier"
	"github.com/spider-crawler/spider/internal/parse"
)

// canonical applies the page's canonical URL (Config.Canonical): the HTTP
// Link header's rel="canonical" target (resolved against the URL the answer
// came from) or else the page's first <link rel="canonical"> (against its
// base). It is kept only when it names another URL than the page's own
// (after normalisation), on the same host (scheme and port included), and
// the filter chain admits it at the page's depth (scope, host lists,
// suffixes: the rules a redirect target meets); then the record carries it
// (store.Record.Canonical) and it is discovered at the page's depth, as a
// redirect target is. Anything else (another host, out of scope, a URL
// that does not parse) is ignored: the page stands for itself. A canonical
// URL that answers 404 or points back (a loop) is settled by the index,
// which folds a page into its canonical only when that page was fetched
// with 2xx and names no other canonical itself; the crawl fetches each URL
// once whatever the canonical links say, so a loop never loops.
func (f *Fetcher) canonical(res *result, resp *fetch.Response, page *parse.Page, req frontier.Request) {
	raw, base := parse.LinkHeaderCanonical(resp.Header.Values("Link")), resp.URL
	if resp.FinalURL != nil {
		base = resp.FinalURL
	}
	if raw == "" {
		raw, base = page.Canonical(), page.Base
	}
	if raw == "" || base == nil {
		return
	}
	n, s, err := f.norm.ResolveString(base, raw)
	if err != nil {
		return
	}
	self, err := f.norm.Resolve(base, res.rec.FinalURL)
	if err != nil || s == self.String() || s == req.URL {
		return
	}
	if n.Scheme != self.Scheme || n.Host != self.Host {
		return
	}
	if f.chain.Check(n, req.Depth) != nil {
		return
	}
	res.rec.Canonical = s
	res.discovered = append(res.discovered, f.request(n, req.Depth, 0))
}

// isCanonicalLink reports whether l is a <link rel="canonical">, which
// Fetcher.canonical follows (or not) instead of the link walk.
func isCanonicalLink(l *parse.Link) bool {
	if l.Tag != "link" {
		return false
	}
	for _, t := range strings.Fields(l.Rel) {
		if t == "canonical" {
			return true
		}
	}
	return false
}
