package urls

import "net/url"

// Resolver resolves the links of one page against the page's base URL with
// a Normalizer: the same results as Normalizer.ResolveString(base, ref),
// computed with less work per link. The base's scheme, authority and
// escaped path are taken once, and the canonical form of the last host seen
// is remembered (most links of a page are on the page's host, whose IDN
// conversion, port and validation are then done once per page).
//
// A Resolver is not safe for concurrent use; make one per page (it is
// cheap). The URLs it returns are made in blocks of a few dozen: one kept
// keeps its block alive. The Normalizer and the base must not be modified while it is in
// use.
type Resolver struct {
	n    *Normalizer
	base baseInfo
	hc   hostCache
	slab []url.URL // the URLs it returned, made in blocks (newURL)
}

// Resolver returns a Resolver for the links of the page at base (nil: the
// links must be absolute, as with Resolve).
func (n *Normalizer) Resolver(base *url.URL) *Resolver {
	return &Resolver{n: n, base: baseInfo{u: base}}
}

// Base returns the base URL links are resolved against.
func (r *Resolver) Base() *url.URL { return r.base.u }

// ResolveString returns what r's Normalizer.ResolveString(base, ref) returns:
// the canonical URL of ref resolved against the base, its string form, or
// the same error.
func (r *Resolver) ResolveString(ref string) (*url.URL, string, error) {
	return r.n.resolveWith(&r.base, &r.hc, &r.slab, ref, true)
}
