package websim

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strings"

	"golang.org/x/net/publicsuffix"
)

// Scopes accepted in TruthRules.Scope.
const (
	// ScopeHost keeps URLs whose host:port is a seed's.
	ScopeHost = "host"
	// ScopeDomain keeps URLs whose registrable domain (eTLD+1) is a seed's.
	ScopeDomain = "domain"
	// ScopeSeeds keeps URLs whose host name is a seed's (any port).
	ScopeSeeds = "seeds"
	// ScopeAny keeps every URL.
	ScopeAny = "any"
)

// Reasons given in Truth.MustNotFetch, in priority order: when a URL is excluded for
// several reasons, the first applies.
const (
	// ReasonSuffix: the path ends with a suffix of TruthRules.Suffixes.
	ReasonSuffix = "suffix"
	// ReasonScope: the URL is out of scope.
	ReasonScope = "scope"
	// ReasonRobots: robots.txt disallows it for the agent (or robots.txt answered 5xx).
	ReasonRobots = "robots"
	// ReasonNofollow: it is only linked with rel=nofollow.
	ReasonNofollow = "nofollow"
	// ReasonRedirects: it is the target of a redirect beyond MaxRedirects hops.
	ReasonRedirects = "redirects"
	// ReasonDepth: it is only linked from pages at MaxDepth.
	ReasonDepth = "depth"
)

var reasonRank = map[string]int{ReasonSuffix: 0, ReasonScope: 1, ReasonRobots: 2, ReasonNofollow: 3, ReasonRedirects: 4, ReasonDepth: 5}

// ErrUnbounded is returned (wrapped) by Truth when a crawl would fetch more than
// TruthRules.MaxURLs URLs (for example an unlimited depth with traps on).
var ErrUnbounded = errors.New("crawl is unbounded")

// DefaultSuffixes returns the path suffixes a crawler does not fetch by default. The
// caller owns the slice.
func DefaultSuffixes() []string {
	return []string{".png", ".jpg", ".jpeg", ".gif", ".css", ".js", ".pdf", ".zip", ".ico", ".svg", ".woff", ".mp4"}
}

// TruthRules are the crawl settings the ground truth is computed for. The zero value
// crawls from host 0's index with depth 0.
type TruthRules struct {
	// Seeds are absolute URLs on hosts of the web. Default: SeedURLs(1).
	Seeds []string `json:"seeds"`
	// MaxDepth is the largest depth fetched (seeds are 0); negative means unlimited.
	MaxDepth int `json:"max_depth"`
	// Scope is ScopeHost, ScopeDomain, ScopeSeeds (default) or ScopeAny.
	Scope string `json:"scope"`
	// Agent is the robots.txt product token. Default "spider".
	Agent string `json:"agent"`
	// FollowNofollow also follows rel=nofollow links.
	FollowNofollow bool `json:"follow_nofollow"`
	// MaxRedirects is the longest redirect chain followed, in hops. Default 5; negative
	// follows none.
	MaxRedirects int `json:"max_redirects"`
	// Suffixes are the path suffixes not fetched (case-insensitive). nil means
	// DefaultSuffixes(); an empty non-nil slice filters nothing.
	Suffixes []string `json:"suffixes"`
	// MaxURLs bounds MustFetch; beyond it Truth fails with ErrUnbounded. Default 1,000,000.
	MaxURLs int `json:"max_urls"`
	// Canonical is a crawler that respects rel=canonical (spider crawl --canonical, its
	// default): a page's canonical URL on the same host and port is queued at the page's
	// depth, any other is never followed, and a <link rel="canonical"> is no ordinary
	// link (duplicates.go). Only Config.NearDups pages carry canonical links.
	Canonical bool `json:"canonical,omitempty"`
}

// Truth is the expected result of a correct crawl of the web under some TruthRules. All
// URLs are in canonical form (see the package documentation). Maps and slices belong to
// the caller.
type Truth struct {
	// Rules are the rules with defaults applied.
	Rules TruthRules `json:"rules"`
	// MustFetch lists, sorted, every URL a correct crawl requests (robots.txt excluded):
	// pages, redirect sources and targets, error pages.
	MustFetch []string `json:"must_fetch"`
	// MustNotFetch maps URLs seen as links (or redirect targets) but not fetched to the
	// reason (Reason* constants).
	MustNotFetch map[string]string `json:"must_not_fetch"`
	// NoiseLinks maps each fetched page to the sorted URLs of its noise links: <a> links
	// in navigation bars, link farms and footers, the blocks whose link-text ratio is
	// above 1/4.
	NoiseLinks map[string][]string `json:"noise_links"`
	// LinkBlocks maps each fetched page of a Config.PageModel web to its <a>
	// links, in the order the page model made them (not the document's),
	// each with the block it is written in and whether it is noise (nil
	// without PageModel). Noise: "nav", "footer", "farm", and the template
	// blocks whose kinds the crawler's built-in noise samples do not
	// describe (held out): "sidebar", "share", "language", "export",
	// "tags", "ads". Content: "content" (links inside paragraphs), "toc"
	// (tables of contents) and "editorial" (a paragraph dense with links).
	LinkBlocks map[string][]LinkBlock `json:"link_blocks,omitempty"`
	// NoiseURLs lists, sorted, the URLs seen that carry a session id (;jsessionid=,
	// sid=), tracking parameters (utm_*, the /beacon pixel) or are calendar pages.
	NoiseURLs []string `json:"noise_urls"`
	// Topics maps each fetched content page to its topics (Topic names).
	Topics map[string][]string `json:"topics"`
	// Final maps each URL of MustFetch to the outcome it must end with: a status code
	// ("200", "301", "404", "410", "500" …), "too-many-redirects" for the last URL a
	// too-long chain lets the crawler fetch, "timeout" (hang pages) or "reset".
	Final map[string]string `json:"final"`
	// Depth maps each URL of MustFetch to its depth.
	Depth map[string]int `json:"depth"`
	// Robots maps each host whose robots.txt was consulted to its RobotsKind name.
	Robots map[string]string `json:"robots"`
	// Duplicates maps each fetched copy of a fetched page (both 200 HTML) to its
	// original and kind (duplicates.go): Config.NearDups mirrors, dated copies and print
	// views; with FeatureNoise, session-id and query variants.
	Duplicates map[string]Duplicate `json:"duplicates,omitempty"`
	// Canonicals maps each fetched page that names another URL canonical (Config.NearDups)
	// to that URL, whether or not a crawler may follow it.
	Canonicals map[string]string `json:"canonicals,omitempty"`
}

// LinkBlock is one <a> link of a page of Truth.LinkBlocks.
type LinkBlock struct {
	URL   string `json:"url"`
	Block string `json:"block"`
	Noise bool   `json:"noise"`
	// HeldOut marks the noise kinds the built-in noise samples do not
	// describe.
	HeldOut bool `json:"held_out,omitempty"`
}

// Outcomes besides status codes in Truth.Final.
const (
	FinalTooManyRedirects = "too-many-redirects"
	FinalTimeout          = "timeout"
	FinalReset            = "reset"
)

// Canonical returns the canonical form of ref resolved against base (base may be nil for
// an absolute ref): lower-case scheme and host, no default port, dot segments removed,
// empty path "/", query kept as is, no fragment. It reports false for references that do
// not parse or are not http(s) (javascript:, mailto:, data: …).
func Canonical(base *url.URL, ref string) (*url.URL, bool) {
	r, err := url.Parse(strings.TrimSpace(ref))
	if err != nil {
		return nil, false
	}
	u := r
	if base != nil {
		u = base.ResolveReference(r)
	} else {
		u = new(url.URL).ResolveReference(r) // removes dot segments
	}
	u.Scheme = strings.ToLower(u.Scheme)
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" || u.Opaque != "" {
		return nil, false
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if host == "" {
		return nil, false
	}
	if (u.Scheme == "http" && port == "80") || (u.Scheme == "https" && port == "443") {
		port = ""
	}
	if strings.Contains(host, ":") {
		if _, err := netip.ParseAddr(host); err != nil {
			return nil, false
		}
		host = "[" + host + "]" // IPv6 literal
	}
	u.Host = host
	if port != "" {
		u.Host += ":" + port
	}
	u.User = nil
	if u.Path == "" {
		u.Path, u.RawPath = "/", ""
	}
	u.Fragment, u.RawFragment = "", ""
	return u, true
}

// robotsState is a host's parsed robots.txt for the truth.
type robotsState struct {
	rules       robotsRules
	disallowAll bool
}

// Truth computes, from the model and without HTTP, what a correct crawl under rules
// fetches and finds. The conventions are those of the package documentation. It returns
// an error for a seed that is not a URL of the web, an unknown scope, or (wrapping
// ErrUnbounded) when more than rules.MaxURLs URLs would be fetched.
func (w *Web) Truth(rules TruthRules) (*Truth, error) {
	if len(rules.Seeds) == 0 {
		rules.Seeds = w.SeedURLs(1)
	}
	if rules.Scope == "" {
		rules.Scope = ScopeSeeds
	}
	if rules.Agent == "" {
		rules.Agent = "spider"
	}
	if rules.MaxRedirects == 0 {
		rules.MaxRedirects = 5
	} else if rules.MaxRedirects < 0 {
		rules.MaxRedirects = 0
	}
	if rules.Suffixes == nil {
		rules.Suffixes = DefaultSuffixes()
	}
	if rules.MaxURLs <= 0 {
		rules.MaxURLs = 1_000_000
	}
	switch rules.Scope {
	case ScopeHost, ScopeDomain, ScopeSeeds, ScopeAny:
	default:
		return nil, fmt.Errorf("cannot compute truth for scope %q: want host, domain, seeds or any", rules.Scope)
	}
	c := &truthCrawl{
		w: w, rules: rules,
		t: &Truth{
			Rules: rules, MustNotFetch: map[string]string{}, NoiseLinks: map[string][]string{},
			Topics: map[string][]string{}, Final: map[string]string{}, Depth: map[string]int{},
			Robots: map[string]string{},
		},
		seen:       map[string]bool{},
		noise:      map[string]bool{},
		robots:     map[int]*robotsState{},
		hostPorts:  map[string]bool{},
		hostnames:  map[string]bool{},
		domains:    map[string]bool{},
		suffixList: lowerAll(rules.Suffixes),
	}
	var seeds []*url.URL
	for _, s := range rules.Seeds {
		u, ok := Canonical(nil, s)
		if !ok {
			return nil, fmt.Errorf("cannot use seed %q: not an absolute http(s) URL", s)
		}
		if _, ok := w.lookup(u.Hostname()); !ok {
			return nil, fmt.Errorf("cannot use seed %q: host %q is not part of the web", s, u.Hostname())
		}
		seeds = append(seeds, u)
		c.hostPorts[u.Host] = true
		c.hostnames[u.Hostname()] = true
		c.domains[registrable(u.Hostname())] = true
	}
	if err := c.run(seeds); err != nil {
		return nil, err
	}
	return c.finish(), nil
}

func lowerAll(list []string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = strings.ToLower(s)
	}
	return out
}

// registrable returns the eTLD+1 of host (the host itself when it has none).
func registrable(host string) string {
	d, err := publicsuffix.EffectiveTLDPlusOne(host)
	if err != nil {
		return host
	}
	return d
}

type truthItem struct {
	u    *url.URL
	key  string
	hi   int
	hops int
}

type truthCand struct {
	u        *url.URL
	nofollow bool
}

type truthCrawl struct {
	w          *Web
	rules      TruthRules
	t          *Truth
	seen       map[string]bool // queued or fetched
	noise      map[string]bool
	robots     map[int]*robotsState
	hostPorts  map[string]bool
	hostnames  map[string]bool
	domains    map[string]bool
	suffixList []string
	d          doc
}

// run is a layered breadth-first crawl: layer d holds the URLs of depth d; redirect
// targets join the layer of their source; links found in layer d are queued for layer
// d+1 only after layer d (with its redirects) is complete, so every URL gets its
// smallest depth.
func (c *truthCrawl) run(seeds []*url.URL) error {
	var cur []truthItem
	for _, u := range seeds {
		c.noteNoise(u)
		if it, ok := c.admit(u, 0); ok {
			cur = append(cur, it)
		}
	}
	for depth := 0; len(cur) > 0; depth++ {
		var next []truthCand
		for i := 0; i < len(cur); i++ {
			it := cur[i]
			if len(c.t.MustFetch) >= c.rules.MaxURLs {
				return fmt.Errorf("cannot compute truth beyond %d URLs (depth %d): %w; lower MaxDepth", c.rules.MaxURLs, depth, ErrUnbounded)
			}
			a := c.w.answerOf(it.hi, it.u.Path)
			c.t.MustFetch = append(c.t.MustFetch, it.key)
			c.t.Final[it.key] = a.final
			c.t.Depth[it.key] = depth
			if a.location != "" && a.status >= 300 && a.status < 400 {
				tgt, ok := Canonical(it.u, a.location)
				if !ok {
					continue
				}
				c.noteNoise(tgt)
				if it.hops+1 > c.rules.MaxRedirects {
					c.t.Final[it.key] = FinalTooManyRedirects
					c.exclude(tgt.String(), ReasonRedirects)
					continue
				}
				if nt, ok := c.admit(tgt, it.hops+1); ok {
					cur = append(cur, nt)
				}
				continue
			}
			if !a.parse || !a.doc || a.status != 200 {
				continue
			}
			if u, ok := c.truthCanonical(it, a.rt, &next); ok {
				if nt, ok := c.admit(u, 0); ok {
					cur = append(cur, nt) // at this page's depth, as a redirect target
				}
			}
			next = c.links(it, a, next)
		}
		var layer []truthItem
		for _, cand := range next {
			key := cand.u.String()
			if c.seen[key] {
				continue
			}
			if r := c.urlReason(cand.u); r != "" {
				c.exclude(key, r)
				continue
			}
			if cand.nofollow && !c.rules.FollowNofollow {
				c.exclude(key, ReasonNofollow)
				continue
			}
			if c.rules.MaxDepth >= 0 && depth+1 > c.rules.MaxDepth {
				c.exclude(key, ReasonDepth)
				continue
			}
			if it, ok := c.admit(cand.u, 0); ok {
				layer = append(layer, it)
			}
		}
		cur = layer
	}
	return nil
}

// admit marks u as queued if it passes the URL filters and was not seen.
func (c *truthCrawl) admit(u *url.URL, hops int) (truthItem, bool) {
	key := u.String()
	if c.seen[key] {
		return truthItem{}, false
	}
	if r := c.urlReason(u); r != "" {
		c.exclude(key, r)
		return truthItem{}, false
	}
	hi, _ := c.w.lookup(u.Hostname())
	c.seen[key] = true
	return truthItem{u: u, key: key, hi: hi, hops: hops}, true
}

// links collects the links of a fetched page (and its noise labels and topics).
func (c *truthCrawl) links(it truthItem, a answer, next []truthCand) []truthCand {
	d := &c.d
	if !c.w.build(it.hi, a.rt, d) {
		return next
	}
	switch d.kind {
	case docNormal, docPrint, docMalformed:
		topics := make([]string, d.nt)
		for i := range d.nt {
			topics[i] = d.topics[i].String()
		}
		c.t.Topics[it.key] = topics
	}
	if d.kind == docPrint || d.kind == docError {
		return next
	}
	base := it.u
	if d.base.n > 0 {
		if b, ok := Canonical(it.u, d.str(d.base)); ok {
			base = b
		}
	}
	var noise []string
	for _, l := range d.links {
		u, ok := Canonical(base, d.str(l.href))
		if !ok {
			continue
		}
		c.noteNoise(u)
		if l.tag == tagA && l.block.noise() {
			noise = append(noise, u.String())
		}
		if d.model && l.tag == tagA {
			if c.t.LinkBlocks == nil {
				c.t.LinkBlocks = map[string][]LinkBlock{}
			}
			c.t.LinkBlocks[it.key] = append(c.t.LinkBlocks[it.key], LinkBlock{URL: u.String(), Block: blockNames[l.block], Noise: l.block.noise(), HeldOut: l.block.heldOut()})
		}
		next = append(next, truthCand{u: u, nofollow: l.rel == relNofollow})
	}
	if len(noise) > 0 {
		slices.Sort(noise)
		c.t.NoiseLinks[it.key] = slices.Compact(noise)
	}
	return next
}

// exclude records why key is not fetched, keeping the highest-priority reason.
func (c *truthCrawl) exclude(key, reason string) {
	if old, ok := c.t.MustNotFetch[key]; ok && reasonRank[old] <= reasonRank[reason] {
		return
	}
	c.t.MustNotFetch[key] = reason
}

// urlReason applies the filters that depend on the URL alone: suffix, scope, robots.
func (c *truthCrawl) urlReason(u *url.URL) string {
	p := strings.ToLower(u.Path)
	for _, s := range c.suffixList {
		if s != "" && strings.HasSuffix(p, s) {
			return ReasonSuffix
		}
	}
	hostname := u.Hostname()
	switch c.rules.Scope {
	case ScopeHost:
		if !c.hostPorts[u.Host] {
			return ReasonScope
		}
	case ScopeSeeds:
		if !c.hostnames[hostname] {
			return ReasonScope
		}
	case ScopeDomain:
		if !c.domains[registrable(hostname)] {
			return ReasonScope
		}
	}
	hi, ok := c.w.lookup(hostname)
	if !ok {
		return ReasonScope // not part of the web: nothing to fetch
	}
	rs := c.robotsOf(hi)
	if rs.disallowAll {
		return ReasonRobots
	}
	pq := u.EscapedPath()
	if u.RawQuery != "" {
		pq += "?" + u.RawQuery
	}
	if !rs.rules.allowed(pq) {
		return ReasonRobots
	}
	return ""
}

// robotsOf fetches (from the model) and parses host hi's robots.txt: redirects are
// followed up to five hops (more: allow all), 2xx is parsed, 4xx allows everything, 5xx
// disallows everything (RFC 9309 §2.3.1).
func (c *truthCrawl) robotsOf(hi int) *robotsState {
	if rs, ok := c.robots[hi]; ok {
		return rs
	}
	rs := &robotsState{}
	c.robots[hi] = rs
	c.t.Robots[c.w.hosts[hi].name] = c.w.hosts[hi].robots.String()
	u, _ := url.Parse(c.w.hosts[hi].origin + "/robots.txt")
	h := hi
	for range 6 {
		a := c.w.answerOf(h, u.Path)
		var body []byte
		if a.rt.kind == rRobots || a.rt.kind == rRobotsReal {
			body = c.w.robotsFor(h, a.rt.kind == rRobotsReal).body
		}
		switch {
		case a.status >= 200 && a.status < 300:
			rs.rules = parseRobots(body, c.rules.Agent)
			return rs
		case a.status >= 300 && a.status < 400 && a.location != "":
			next, ok := Canonical(u, a.location)
			if !ok {
				return rs
			}
			nh, ok := c.w.lookup(next.Hostname())
			if !ok {
				return rs
			}
			u, h = next, nh
			continue
		case a.status >= 500:
			rs.disallowAll = true
		}
		return rs
	}
	return rs
}

// noteNoise records u when it is a noise URL.
func (c *truthCrawl) noteNoise(u *url.URL) {
	if isNoiseURL(u) {
		c.noise[u.String()] = true
	}
}

// isNoiseURL reports session ids, tracking parameters and calendar pages.
func isNoiseURL(u *url.URL) bool {
	p := u.EscapedPath()
	if strings.Contains(p, ";jsessionid=") || strings.HasPrefix(p, "/calendar/") || p == "/beacon" {
		return true
	}
	for kv := range strings.SplitSeq(u.RawQuery, "&") {
		if strings.HasPrefix(kv, "sid=") || strings.HasPrefix(kv, "utm_") {
			return true
		}
	}
	return false
}

func (c *truthCrawl) finish() *Truth {
	t := c.t
	for key := range c.seen {
		delete(t.MustNotFetch, key)
	}
	slices.Sort(t.MustFetch)
	for u := range c.noise {
		t.NoiseURLs = append(t.NoiseURLs, u)
	}
	slices.Sort(t.NoiseURLs)
	c.labelDuplicates()
	return t
}
