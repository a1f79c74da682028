// Package robots implements the Robots Exclusion Protocol (RFC 9309), with
// the leniencies of Google's reference parser (github.com/google/robotstxt)
// where they are cheap, plus Crawl-delay and Sitemap records.
//
// Parse never fails: any byte string is a robots.txt, whose unparseable lines
// are skipped. FromResponse applies the RFC's rules for HTTP status codes, and
// Cache keeps one *Robots per scheme://host:port, fetched once (single-flight)
// and expired after a TTL.
//
//	r := robots.Parse(body)
//	if r.Allowed("spider/1.0", u) { … }
//	delay, ok := r.Group("spider/1.0").CrawlDelay()
package robots

import (
	"bytes"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// MaxSize is the number of bytes of a robots.txt body that Parse reads
// (RFC 9309 §2.5: "The parsing limit MUST be at least 500 kibibytes"). The
// rest is ignored, and so is a last line cut by the limit.
const MaxSize = 500 << 10

// maxLineLen is the longest line Parse reads; longer lines are cut (Google's
// kMaxLineLen = 2083 * 8, of which one byte is the C string terminator).
const maxLineLen = 2083*8 - 1

// Kind says where a Robots came from.
type Kind int

const (
	// KindParsed: parsed from a robots.txt body (a 2xx response, or Parse).
	KindParsed Kind = iota
	// KindUnavailable: the server said the file is unavailable (4xx, or a 3xx
	// that the fetcher did not resolve); everything is allowed.
	KindUnavailable
	// KindUnreachable: server error (5xx, 429) or network error; everything
	// is disallowed.
	KindUnreachable
)

// String returns "parsed", "unavailable" or "unreachable".
func (k Kind) String() string {
	switch k {
	case KindParsed:
		return "parsed"
	case KindUnavailable:
		return "unavailable"
	case KindUnreachable:
		return "unreachable"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Robots is a parsed robots.txt. It is immutable and safe for concurrent use.
type Robots struct {
	kind     Kind
	groups   map[string]*Group // lower-case product token or "*" → merged group
	fallback *Group            // when no group applies: allow all, or disallow all
	sitemaps []string
}

// Group is the set of rules that applies to one crawler: the merge of every
// group of the robots.txt naming its product token, or of every "*" group, or
// an empty group (allow all). It is immutable and safe for concurrent use.
type Group struct {
	rules       []rule
	delay       time.Duration
	hasDelay    bool
	disallowAll bool
}

type rule struct {
	allow   bool
	pattern string // normalised (see normalizePattern)
	text    string // "Allow: <value>" or "Disallow: <value>", value as written
}

// Parse parses a robots.txt body. It never fails: it reads at most MaxSize
// bytes, skips a UTF-8 byte order mark (also a partial one, as Google does),
// accepts CR, LF and CRLF line ends, '#' comments, directive names in any
// case, a missing colon when a line has exactly two words ("disallow /x"),
// Google's accepted typos ("useragent", "user agent", "dissallow",
// "dissalow", "disalow", "diasllow", "disallaw", "site-map") and any
// directive name that starts with a known one; it cuts lines after 16,663
// bytes and skips lines it cannot read.
//
// Grouping follows RFC 9309 §2.1: consecutive user-agent lines (blank lines,
// comments, unknown and Sitemap lines in between do not matter) start a
// group, which the following Allow, Disallow and Crawl-delay lines belong to;
// rules before the first user-agent line are ignored. The product token of a
// user-agent value is its leading run of [a-zA-Z_-] ("Googlebot/2.1" →
// "Googlebot"); "*", alone or followed by a space, names the global group.
// Sitemap lines may appear anywhere.
func Parse(body []byte) *Robots {
	if len(body) > MaxSize {
		complete := body[MaxSize] == '\r' || body[MaxSize] == '\n'
		body = body[:MaxSize]
		if i := bytes.LastIndexAny(body, "\r\n"); i >= 0 && !complete {
			body = body[:i+1]
		}
	}
	const bom = "\xEF\xBB\xBF"
	for i := 0; i < len(bom) && len(body) > 0 && body[0] == bom[i]; i++ {
		body = body[1:]
	}
	var p parser
	for len(body) > 0 {
		end := bytes.IndexAny(body, "\r\n")
		line := body
		if end < 0 {
			body = nil
		} else {
			line = body[:end]
			if body[end] == '\r' && end+1 < len(body) && body[end+1] == '\n' {
				end++
			}
			body = body[end+1:]
		}
		if len(line) > maxLineLen {
			line = line[:maxLineLen]
		}
		p.line(line)
	}
	return p.robots()
}

// parser accumulates the groups of a robots.txt, line by line.
type parser struct {
	groups   []*rawGroup
	cur      *rawGroup
	inRules  bool // cur has received a rule: the next user-agent starts a group
	sitemaps []string
}

type rawGroup struct {
	agents   []string
	rules    []rule
	delay    time.Duration
	hasDelay bool
}

type directive int

const (
	unknownDirective directive = iota
	userAgentDirective
	allowDirective
	disallowDirective
	sitemapDirective
	crawlDelayDirective
)

func (p *parser) line(line []byte) {
	key, value, ok := keyValue(line)
	if !ok {
		return
	}
	switch classify(key) {
	case userAgentDirective:
		if p.cur == nil || p.inRules {
			p.cur = &rawGroup{}
			p.groups = append(p.groups, p.cur)
			p.inRules = false
		}
		p.cur.agents = append(p.cur.agents, agentToken(value))
	case allowDirective, disallowDirective:
		if p.cur == nil {
			return // RFC 9309 §2.2.2: rules outside any group are ignored.
		}
		p.inRules = true
		allow := classify(key) == allowDirective
		name := "Disallow: "
		if allow {
			name = "Allow: "
		}
		pat := normalizePattern(value)
		if pat == "" {
			return // an empty rule matches nothing (it allows, by default)
		}
		r := rule{allow: allow, pattern: pat, text: name + value}
		p.cur.rules = append(p.cur.rules, r)
		// Google: "Allow: /dir/index.htm[l]" also allows "/dir/" itself.
		if i := strings.LastIndexByte(pat, '/'); allow && i >= 0 && strings.HasPrefix(pat[i:], "/index.htm") {
			r.pattern = pat[:i+1] + "$"
			p.cur.rules = append(p.cur.rules, r)
		}
	case crawlDelayDirective:
		if p.cur == nil {
			return
		}
		p.inRules = true
		if d, ok := parseDelay(value); ok && (!p.cur.hasDelay || d > p.cur.delay) {
			p.cur.delay, p.cur.hasDelay = d, true
		}
	case sitemapDirective:
		if value != "" && !contains(p.sitemaps, value) {
			p.sitemaps = append(p.sitemaps, value)
		}
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func (p *parser) robots() *Robots {
	r := &Robots{kind: KindParsed, groups: make(map[string]*Group), fallback: &Group{}, sitemaps: p.sitemaps}
	for _, g := range p.groups {
		for i, a := range g.agents {
			if a == "" || contains(g.agents[:i], a) {
				continue
			}
			m := r.groups[a]
			if m == nil {
				m = &Group{}
				r.groups[a] = m
			}
			m.rules = append(m.rules, g.rules...)
			if g.hasDelay && (!m.hasDelay || g.delay > m.delay) {
				m.delay, m.hasDelay = g.delay, true
			}
		}
	}
	return r
}

// keyValue splits a line into key and value as Google's parser does: the
// comment is cut, whitespace trimmed, and the key ends at the first ':' or,
// if there is none and the line has exactly two words, at the whitespace.
func keyValue(line []byte) (key, value string, ok bool) {
	if i := bytes.IndexByte(line, '#'); i >= 0 {
		line = line[:i]
	}
	line = bytes.TrimSpace(line)
	sep := bytes.IndexByte(line, ':')
	if sep < 0 {
		sep = bytes.IndexAny(line, " \t")
		if sep < 0 || bytes.ContainsAny(bytes.TrimLeft(line[sep:], " \t"), " \t") {
			return "", "", false
		}
	}
	k := bytes.TrimSpace(line[:sep])
	if len(k) == 0 {
		return "", "", false
	}
	return string(k), string(bytes.TrimSpace(line[sep+1:])), true
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

func classify(key string) directive {
	switch {
	case hasPrefixFold(key, "user-agent"), hasPrefixFold(key, "useragent"), hasPrefixFold(key, "user agent"):
		return userAgentDirective
	case hasPrefixFold(key, "allow"):
		return allowDirective
	case hasPrefixFold(key, "disallow"), hasPrefixFold(key, "dissallow"), hasPrefixFold(key, "dissalow"),
		hasPrefixFold(key, "disalow"), hasPrefixFold(key, "diasllow"), hasPrefixFold(key, "disallaw"):
		return disallowDirective
	case hasPrefixFold(key, "sitemap"), hasPrefixFold(key, "site-map"):
		return sitemapDirective
	case hasPrefixFold(key, "crawl-delay"), hasPrefixFold(key, "crawldelay"), hasPrefixFold(key, "crawl delay"):
		return crawlDelayDirective
	}
	return unknownDirective
}

// agentToken returns "*" for a global user-agent value ("*" alone or followed
// by whitespace, as Google accepts), else the lower-case leading run of
// [a-zA-Z_-] characters, possibly empty (a group that names no one).
func agentToken(value string) string {
	if value == "*" || strings.HasPrefix(value, "*") && len(value) > 1 && (value[1] == ' ' || value[1] == '\t') {
		return "*"
	}
	return productToken(value)
}

// productToken returns the lower-case leading run of [a-zA-Z_-] of s.
func productToken(s string) string {
	i := 0
	for i < len(s) && (s[i] >= 'a' && s[i] <= 'z' || s[i] >= 'A' && s[i] <= 'Z' || s[i] == '-' || s[i] == '_') {
		i++
	}
	return strings.ToLower(s[:i])
}

// parseDelay reads a Crawl-delay value in seconds, decimals accepted
// ("0.5"), trailing garbage ignored ("10 seconds"). Negative, non-numeric and
// absurd (more than a year) values are rejected.
func parseDelay(v string) (time.Duration, bool) {
	i := 0
	for i < len(v) && (v[i] >= '0' && v[i] <= '9' || v[i] == '.') {
		i++
	}
	secs, err := strconv.ParseFloat(v[:i], 64)
	if err != nil || math.IsNaN(secs) || secs < 0 || secs > 365*24*3600 {
		return 0, false
	}
	return time.Duration(secs * float64(time.Second)), true
}

// Group returns the group that applies to the crawler whose User-Agent (or
// product token) is agent (RFC 9309 §2.2.1): the merge of all groups naming
// agent's product token (its leading [a-zA-Z_-] characters, compared
// case-insensitively), else the merge of all "*" groups, else a group
// without rules that allows everything. For an unreachable robots.txt every
// agent gets a group that disallows everything. The result is never nil.
func (r *Robots) Group(agent string) *Group {
	if t := productToken(strings.TrimSpace(agent)); t != "" {
		if g, ok := r.groups[t]; ok {
			return g
		}
	}
	if g, ok := r.groups["*"]; ok {
		return g
	}
	return r.fallback
}

// Allowed reports whether the crawler agent may fetch u: the path and query
// of u checked against r.Group(agent).
func (r *Robots) Allowed(agent string, u *url.URL) bool {
	return r.Group(agent).Allowed(PathQuery(u))
}

// Sitemaps returns the Sitemap URLs of the file, as written, in order,
// without duplicates. The slice is a copy owned by the caller.
func (r *Robots) Sitemaps() []string {
	return append([]string(nil), r.sitemaps...)
}

// Kind says whether r was parsed, or stands for an unavailable (allow all) or
// unreachable (disallow all) robots.txt.
func (r *Robots) Kind() Kind { return r.kind }

// PathQuery returns the part of u that robots.txt rules match: the escaped
// path ("/" if empty) and, if present, "?" and the raw query.
func PathQuery(u *url.URL) string {
	p := u.EscapedPath()
	if p == "" {
		p = "/"
	}
	if u.RawQuery != "" || u.ForceQuery {
		p += "?" + u.RawQuery
	}
	return p
}

// CrawlDelay returns the group's Crawl-delay (the largest valid value among
// the merged groups) and whether there was one.
func (g *Group) CrawlDelay() (time.Duration, bool) { return g.delay, g.hasDelay }

// Allowed reports whether pathQuery (a URL path with optional query, such as
// PathQuery returns) may be fetched. See Match.
func (g *Group) Allowed(pathQuery string) bool {
	ok, _ := g.Match(pathQuery)
	return ok
}

// Match decides whether pathQuery may be fetched and returns the deciding
// rule as written ("Disallow: /private"), or "" when no rule matched. Both
// pathQuery and the rules are percent-encoding-normalised before matching
// (RFC 9309 §2.2.2: escapes of unreserved characters decoded, hex upper-case,
// non-ASCII and other characters that must be escaped encoded as UTF-8 %XX);
// '*' in a rule matches any run of characters and a final '$' anchors the
// end. The matching rule with the longest pattern (in octets) wins; Allow
// wins a tie; no match allows. "/robots.txt" is always allowed.
func (g *Group) Match(pathQuery string) (allowed bool, rule string) {
	path := normalizePath(pathQuery)
	if path == "/robots.txt" {
		return true, ""
	}
	if g.disallowAll {
		return false, "(robots.txt unreachable: disallow all)"
	}
	bestAllow, bestDisallow := 0, 0
	var allowText, disallowText string
	var pos []int
	for i := range g.rules {
		r := &g.rules[i]
		n := len(r.pattern)
		if r.allow && n <= bestAllow || !r.allow && n <= bestDisallow {
			continue
		}
		if !matches(path, r.pattern, &pos) {
			continue
		}
		if r.allow {
			bestAllow, allowText = n, r.text
		} else {
			bestDisallow, disallowText = n, r.text
		}
	}
	if bestDisallow > bestAllow {
		return false, disallowText
	}
	return true, allowText
}
