package urls

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// MaxLength is the longest URL, in bytes, that Parse and Resolve accept, both
// as input and as canonical output.
const MaxLength = 4096

// Sentinel errors returned (wrapped) by Parse, Resolve and Normalize. Test
// for them with errors.Is.
var (
	// ErrScheme means the URL is not an http or https URL: another scheme
	// (javascript:, mailto:, data:, ftp:, …), no scheme at all where an
	// absolute URL was needed, or an empty string.
	ErrScheme = errors.New("urls: not an http or https URL")
	// ErrTooLong means the URL is longer than MaxLength bytes.
	ErrTooLong = errors.New("urls: URL longer than 4096 bytes")
	// ErrHost means the host is empty or invalid (bad characters, empty
	// labels, an IDN that does not convert to punycode, a bad IP literal) or
	// the port is not a number in 1..65535.
	ErrHost = errors.New("urls: empty or invalid host or port")
	// ErrInvalid means the reference could not be made absolute (a relative
	// reference without a base URL).
	ErrInvalid = errors.New("urls: malformed URL")
)

// Normalizer turns raw URL strings into canonical *url.URL values. The zero
// value is ready to use and gives the default canonical form; a Normalizer is
// safe for concurrent use as long as its fields are not modified.
//
// The canonical form, produced by Parse and Resolve:
//   - only http and https are accepted; the scheme is lower-case;
//   - leading and trailing spaces and control characters are trimmed, tabs and
//     line breaks anywhere are removed, and before the query a backslash is
//     read as a slash, as browsers do; slashes after "http:" are optional
//     ("http:/a.com" and "http:///a.com" mean "http://a.com/");
//   - the host is lower-case, percent-decoded, converted from IDN to punycode
//     (golang.org/x/net/idna Lookup profile), with one trailing dot removed;
//     ASCII host names may contain letters, digits, '-' and '_' (underscores
//     are common in real host names); IPv6 literals are written in their
//     canonical compressed form; zones are rejected;
//   - the default port (80 for http, 443 for https) and an empty port are
//     removed, leading zeros of a port are dropped;
//   - userinfo is kept (re-encoded by net/url); an empty "@" is dropped;
//   - the path is never empty ("/" at least), dot segments are removed
//     (RFC 3986 §5.2.4);
//   - percent-encoding is normalised in path, query and fragment: hex digits
//     are upper-case, escapes of unreserved characters (A-Z a-z 0-9 - . _ ~)
//     are decoded, characters that must be encoded (controls, space, '"', '<',
//     '>', '\\', '^', '`', '{', '|', '}', non-ASCII bytes, a '#' inside the
//     fragment) are encoded as UTF-8 %XX, a '%' not followed by two hex
//     digits becomes "%25", and reserved characters are kept as written
//     (encoded or not);
//   - the query is kept byte for byte after that, in its original order,
//     unless SortQuery or DropParams ask otherwise; an empty query ("?")
//     is removed;
//   - the fragment is removed unless KeepFragment is set.
//
// The canonical form is idempotent: parsing the String() of a canonical URL
// with the same Normalizer gives the same string.
type Normalizer struct {
	// SortQuery sorts the query parameters by key (stable, so parameters
	// with equal keys keep their order). Empty parameters ("a=1&&b=2") are
	// dropped when SortQuery or DropParams is in effect. Default: keep order.
	SortQuery bool
	// DropParams lists query parameters to remove, by exact name or by a
	// glob in which '*' matches any run of characters ("utm_*", "*sessionid").
	// Names are compared with the percent-decoded parameter key,
	// case-insensitively. Default: none.
	DropParams []string
	// KeepFragment keeps the "#fragment" (normalised). Default: removed.
	KeepFragment bool
}

// Parse returns the canonical form of the absolute URL raw with the zero
// Normalizer. See Normalizer.Parse.
func Parse(raw string) (*url.URL, error) {
	var n Normalizer
	return n.Parse(raw)
}

// Resolve resolves the reference ref against base and returns the canonical
// form with the zero Normalizer. See Normalizer.Resolve.
func Resolve(base *url.URL, ref string) (*url.URL, error) {
	var n Normalizer
	return n.Resolve(base, ref)
}

// Parse returns the canonical form (see Normalizer) of the absolute http or
// https URL raw. The returned URL is newly allocated and owned by the caller.
// Errors wrap ErrScheme (not http/https, no scheme, empty), ErrTooLong (input
// or result longer than MaxLength) or ErrHost (empty or invalid host or port).
func (n *Normalizer) Parse(raw string) (*url.URL, error) {
	return n.resolve(nil, raw, false)
}

// Resolve resolves the link ref found in the page at base (RFC 3986 §5.2,
// with the browser leniencies listed on Normalizer) and returns its canonical
// form. base is not modified and may be non-canonical; if it is nil, ref must
// be absolute. An empty ref, and refs whose scheme is not http or https
// ("javascript:", "mailto:", "data:", …), give an error wrapping ErrScheme;
// other errors are those of Parse, plus ErrInvalid for a relative ref without
// a base.
func (n *Normalizer) Resolve(base *url.URL, ref string) (*url.URL, error) {
	return n.resolve(base, ref, true)
}

// ResolveString is Resolve that also returns the canonical URL's string
// form (u.String()), which it computes anyway: for a caller that needs
// both, one String per link instead of two.
func (n *Normalizer) ResolveString(base *url.URL, ref string) (*url.URL, string, error) {
	return n.resolveString(base, ref, true)
}

// Normalize returns the canonical form of u (which may be any absolute http or
// https *url.URL, canonical or not); u is not modified. Errors are those of
// Parse.
func (n *Normalizer) Normalize(u *url.URL) (*url.URL, error) {
	if u == nil {
		return nil, fmt.Errorf("cannot normalise a nil URL: %w", ErrInvalid)
	}
	return n.resolve(nil, u.String(), false)
}

// components are the five parts of a URI reference (RFC 3986 §3), still
// percent-encoded as written.
type components struct {
	scheme       string // lower-case; empty for a relative reference
	hasAuthority bool
	authority    string
	path         string
	hasQuery     bool
	query        string
	hasFragment  bool
	fragment     string
}

func (n *Normalizer) resolve(base *url.URL, raw string, resolving bool) (*url.URL, error) {
	u, _, err := n.resolveString(base, raw, resolving)
	return u, err
}

// resolveString is resolve that also returns the URL's string form.
func (n *Normalizer) resolveString(base *url.URL, raw string, resolving bool) (*url.URL, string, error) {
	var b baseInfo
	if base != nil {
		b = baseInfo{u: base}
	}
	return n.resolveWith(&b, nil, nil, raw, resolving)
}

// baseInfo is a base URL with the parts a relative reference takes from
// it, computed on first use (a Resolver keeps them for every link of a
// page).
type baseInfo struct {
	u         *url.URL // nil: no base
	done      bool     // the fields below are set
	scheme    string   // lower-case
	authority string   // as in a URL string (baseAuthority)
	path      string   // escaped path, "/" when empty
}

func (b *baseInfo) init() {
	if b.done {
		return
	}
	b.done = true
	b.scheme = strings.ToLower(b.u.Scheme)
	b.authority = baseAuthority(b.u)
	if b.path = b.u.EscapedPath(); b.path == "" {
		b.path = "/"
	}
}

// resolveWith resolves raw against b (b.u nil: no base), canonicalising
// the authority through hc when it is not nil.
func (n *Normalizer) resolveWith(b *baseInfo, hc *hostCache, slab *[]url.URL, raw string, resolving bool) (*url.URL, string, error) {
	base := b.u
	if len(raw) > MaxLength {
		return nil, "", fmt.Errorf("cannot parse URL of %d bytes: %w", len(raw), ErrTooLong)
	}
	s := clean(raw)
	if s == "" {
		return nil, "", fmt.Errorf("cannot parse an empty URL: %w", ErrScheme)
	}
	ref := split(s)
	if ref.scheme != "" && ref.scheme != "http" && ref.scheme != "https" {
		return nil, "", fmt.Errorf("cannot crawl %s: scheme %q is not http or https: %w", short(s), ref.scheme, ErrScheme)
	}
	var t components // the target, RFC 3986 §5.2.2
	switch {
	case ref.scheme != "" && (base == nil || ref.hasAuthority || !strings.EqualFold(base.Scheme, ref.scheme)):
		// Absolute URL. For http(s) the slashes before the authority are
		// optional (WHATWG "special authority ignore slashes state").
		t = ref
		rest := t.path
		if t.hasAuthority {
			rest = "//" + t.authority + t.path
		}
		t.hasAuthority = true
		t.authority, t.path = cutAuthority(strings.TrimLeft(rest, "/"))
	case base == nil:
		if ref.scheme == "" && !resolving {
			return nil, "", fmt.Errorf("cannot parse %s: no scheme (want an absolute http or https URL): %w", short(s), ErrScheme)
		}
		return nil, "", fmt.Errorf("cannot resolve %s without a base URL: %w", short(s), ErrInvalid)
	default:
		// Relative reference, or "http:path" with the base's scheme, which
		// browsers resolve as relative.
		b.init()
		if b.scheme != "http" && b.scheme != "https" {
			return nil, "", fmt.Errorf("cannot resolve %s against base %s: base scheme %q is not http or https: %w",
				short(s), short(base.String()), base.Scheme, ErrScheme)
		}
		t.scheme = b.scheme
		t.hasFragment, t.fragment = ref.hasFragment, ref.fragment
		switch {
		case ref.hasAuthority:
			t.hasAuthority, t.authority = true, ref.authority
			t.path, t.hasQuery, t.query = ref.path, ref.hasQuery, ref.query
		case ref.path == "":
			t.hasAuthority, t.authority = true, b.authority
			t.path = b.path
			if ref.hasQuery {
				t.hasQuery, t.query = true, ref.query
			} else {
				t.hasQuery, t.query = base.RawQuery != "" || base.ForceQuery, base.RawQuery
			}
		case ref.path[0] == '/':
			t.hasAuthority, t.authority = true, b.authority
			t.path, t.hasQuery, t.query = ref.path, ref.hasQuery, ref.query
		default:
			t.hasAuthority, t.authority = true, b.authority
			t.path = b.path[:strings.LastIndexByte(b.path, '/')+1] + ref.path
			t.hasQuery, t.query = ref.hasQuery, ref.query
		}
	}
	return n.build(t, s, hc, slab)
}

// baseAuthority returns the authority of base as it appears in a URL string.
func baseAuthority(base *url.URL) string {
	if base.User != nil {
		return base.User.String() + "@" + base.Host
	}
	return base.Host
}

// hostCache remembers the canonical form of the last authority without
// userinfo that build saw (with its scheme, which decides the default
// port): most links of a page are on one host.
type hostCache struct {
	valid             bool
	scheme, authority string // the key, as in components
	host              string // url.URL.Host: canonical host and port
	err               error  // canonicalHost's error, not yet wrapped
}

// canonicalAuthority returns url.URL.Host for a hostport without userinfo
// under scheme: the canonical host, and the port unless it is the
// scheme's default.
func canonicalAuthority(scheme, hostport string) (string, error) {
	host, port, err := canonicalHost(hostport)
	if err != nil {
		return "", err
	}
	if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		port = ""
	}
	if port != "" {
		host += ":" + port
	}
	return host, nil
}

// build canonicalises the absolute components t. s is the cleaned input, for
// error messages. hc, when not nil, caches the canonical authority; slab,
// when not nil, is where the URL is made (newURL).
func (n *Normalizer) build(t components, s string, hc *hostCache, slab *[]url.URL) (*url.URL, string, error) {
	u := newURL(slab)
	u.Scheme = t.scheme
	userinfo, hostport, hasUser := cutLast(t.authority, '@')
	if !hasUser {
		hostport, userinfo = userinfo, ""
	}
	var err error
	switch {
	case hasUser || hc == nil:
		u.Host, err = canonicalAuthority(t.scheme, hostport)
	case hc.valid && hc.scheme == t.scheme && hc.authority == t.authority:
		u.Host, err = hc.host, hc.err
	default:
		u.Host, err = canonicalAuthority(t.scheme, hostport)
		*hc = hostCache{valid: true, scheme: t.scheme, authority: t.authority, host: u.Host, err: err}
	}
	if err != nil {
		return nil, "", fmt.Errorf("cannot parse %s: %w", short(s), err)
	}
	if hasUser && userinfo != "" {
		name, pass, hasPass := strings.Cut(userinfo, ":")
		name, pass = unescapeLoose(name), unescapeLoose(pass)
		if hasPass {
			u.User = url.UserPassword(name, pass)
		} else {
			u.User = url.User(name)
		}
	}

	p := removeDotSegments(normalizeEscapes(t.path, pathChar))
	if p == "" || p[0] != '/' {
		p = "/" + p
	}
	u.RawPath = p
	u.Path, _ = url.PathUnescape(p) // p only holds valid escapes

	if t.hasQuery {
		q := normalizeEscapes(t.query, queryChar)
		if n.SortQuery || len(n.DropParams) > 0 {
			q = n.rewriteQuery(q)
		}
		u.RawQuery = q
	}
	if n.KeepFragment && t.hasFragment && t.fragment != "" {
		f := normalizeEscapes(t.fragment, fragmentChar)
		u.RawFragment = f
		u.Fragment, _ = url.PathUnescape(f)
	}
	var str string
	if u.User == nil && u.Fragment == "" {
		// What u.String() gives, without its re-validation of the path:
		// the host is canonical (nothing to escape) and RawPath is the
		// valid encoding of Path (TestStringForm, FuzzResolverDiff).
		str = concatURL(u.Scheme, u.Host, u.RawPath, u.RawQuery)
	} else {
		str = u.String()
	}
	if l := len(str); l > MaxLength {
		return nil, "", fmt.Errorf("cannot use %s: canonical form is %d bytes: %w", short(s), l, ErrTooLong)
	}
	return u, str, nil
}

// slabSize is how many URLs newURL makes at once.
const slabSize = 32

// newURL returns a new zero URL, from *slab when slab is not nil: a block of
// slabSize URLs is one allocation for the links of a page instead of one
// per link. Each URL is handed out once and never written again by newURL;
// a URL kept keeps its block alive.
func newURL(slab *[]url.URL) *url.URL {
	if slab == nil {
		return new(url.URL)
	}
	if len(*slab) == cap(*slab) {
		*slab = make([]url.URL, 0, slabSize)
	}
	*slab = append(*slab, url.URL{})
	return &(*slab)[len(*slab)-1]
}

// concatURL returns scheme://host path[?query] in one allocation.
func concatURL(scheme, host, path, query string) string {
	n := len(scheme) + 3 + len(host) + len(path)
	if query != "" {
		n += 1 + len(query)
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteString(scheme)
	b.WriteString("://")
	b.WriteString(host)
	b.WriteString(path)
	if query != "" {
		b.WriteByte('?')
		b.WriteString(query)
	}
	return b.String()
}

// rewriteQuery drops the DropParams parameters and, if SortQuery is set, sorts
// the rest by key. q is already escape-normalised.
func (n *Normalizer) rewriteQuery(q string) string {
	params := strings.Split(q, "&")
	kept := params[:0]
	for _, p := range params {
		if p == "" {
			continue
		}
		key, _, _ := strings.Cut(p, "=")
		if n.dropped(key) {
			continue
		}
		kept = append(kept, p)
	}
	if n.SortQuery {
		slices.SortStableFunc(kept, func(a, b string) int {
			ka, _, _ := strings.Cut(a, "=")
			kb, _, _ := strings.Cut(b, "=")
			return strings.Compare(ka, kb)
		})
	}
	return strings.Join(kept, "&")
}

func (n *Normalizer) dropped(rawKey string) bool {
	if len(n.DropParams) == 0 {
		return false
	}
	key, err := url.QueryUnescape(rawKey)
	if err != nil {
		key = rawKey
	}
	key = strings.ToLower(key)
	for _, pat := range n.DropParams {
		if globMatch(strings.ToLower(pat), key) {
			return true
		}
	}
	return false
}

// globMatch reports whether s matches pattern, in which '*' matches any run of
// bytes (possibly empty) and every other byte matches itself.
func globMatch(pattern, s string) bool {
	// Iterative matcher with single back-tracking point: linear in practice.
	p, i := 0, 0
	star, mark := -1, 0
	for i < len(s) {
		switch {
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, i
			p++
		case p < len(pattern) && pattern[p] == s[i]:
			p++
			i++
		case star >= 0:
			p = star + 1
			mark++
			i = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// clean trims leading and trailing C0 controls and spaces and removes tabs
// and line breaks anywhere (WHATWG URL parsing), and reads a backslash before
// the query or fragment as a slash.
func clean(raw string) string {
	plain := true // no byte the steps below look at: raw is clean
	for i := 0; i < len(raw) && plain; i++ {
		plain = raw[i] > ' ' && raw[i] != '\\'
	}
	if plain {
		return raw
	}
	s := strings.TrimFunc(raw, func(r rune) bool { return r <= ' ' })
	if strings.ContainsAny(s, "\t\n\r") {
		s = strings.Map(func(r rune) rune {
			if r == '\t' || r == '\n' || r == '\r' {
				return -1
			}
			return r
		}, s)
	}
	end := strings.IndexAny(s, "?#")
	if end < 0 {
		end = len(s)
	}
	if strings.IndexByte(s[:end], '\\') >= 0 {
		s = strings.ReplaceAll(s[:end], `\`, "/") + s[end:]
	}
	return s
}

// split splits a cleaned URI reference into its components (RFC 3986 §3 and
// Appendix B). The scheme is lower-cased.
func split(s string) components {
	var c components
	if i := schemeEnd(s); i > 0 {
		c.scheme = strings.ToLower(s[:i])
		s = s[i+1:]
	}
	if f := strings.IndexByte(s, '#'); f >= 0 {
		c.hasFragment, c.fragment = true, s[f+1:]
		s = s[:f]
	}
	if q := strings.IndexByte(s, '?'); q >= 0 {
		c.hasQuery, c.query = true, s[q+1:]
		s = s[:q]
	}
	if strings.HasPrefix(s, "//") {
		c.hasAuthority = true
		c.authority, s = cutAuthority(s[2:])
	}
	c.path = s
	return c
}

// cutAuthority splits s (query and fragment already removed) at the first
// '/' into authority and path.
func cutAuthority(s string) (authority, path string) {
	if i := strings.IndexByte(s, '/'); i >= 0 {
		return s[:i], s[i:]
	}
	return s, ""
}

// schemeEnd returns the index of the ':' ending a scheme at the start of s
// (ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":"), or -1.
func schemeEnd(s string) int {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9' || c == '+' || c == '-' || c == '.':
			if i == 0 {
				return -1
			}
		case c == ':':
			if i == 0 {
				return -1
			}
			return i
		default:
			return -1
		}
	}
	return -1
}

func cutLast(s string, sep byte) (before, after string, found bool) {
	if i := strings.LastIndexByte(s, sep); i >= 0 {
		return s[:i], s[i+1:], true
	}
	return s, "", false
}

// canonicalHost validates and canonicalises "host[:port]". It returns the
// host as it goes in url.URL.Host (IPv6 in brackets) and the port without
// leading zeros, or "" if absent or empty.
func canonicalHost(hostport string) (host, port string, err error) {
	if strings.HasPrefix(hostport, "[") {
		end := strings.IndexByte(hostport, ']')
		if end < 0 {
			return "", "", fmt.Errorf("unclosed IPv6 literal %q: %w", hostport, ErrHost)
		}
		lit, rest := hostport[1:end], hostport[end+1:]
		if rest != "" {
			if rest[0] != ':' {
				return "", "", fmt.Errorf("garbage %q after IPv6 literal: %w", rest, ErrHost)
			}
			if port, err = canonicalPort(rest[1:]); err != nil {
				return "", "", err
			}
		}
		addr, perr := netip.ParseAddr(lit)
		if perr != nil || !addr.Is6() || addr.Zone() != "" {
			return "", "", fmt.Errorf("invalid IPv6 literal %q: %w", lit, ErrHost)
		}
		return "[" + addr.String() + "]", port, nil
	}
	name := hostport
	if i := strings.LastIndexByte(hostport, ':'); i >= 0 {
		name = hostport[:i]
		if port, err = canonicalPort(hostport[i+1:]); err != nil {
			return "", "", err
		}
	}
	h, err := canonicalName(name)
	if err != nil {
		return "", "", err
	}
	return h, port, nil
}

func canonicalPort(p string) (string, error) {
	if p == "" {
		return "", nil
	}
	for i := 0; i < len(p); i++ {
		if p[i] < '0' || p[i] > '9' {
			return "", fmt.Errorf("port %q is not a number: %w", p, ErrHost)
		}
	}
	trimmed := strings.TrimLeft(p, "0")
	v, err := strconv.Atoi(trimmed)
	if trimmed == "" || len(trimmed) > 5 || err != nil || v < 1 || v > 65535 {
		return "", fmt.Errorf("port %q is not in 1..65535: %w", p, ErrHost)
	}
	return trimmed, nil
}

// canonicalName canonicalises a registered name or IPv4 address.
func canonicalName(name string) (string, error) {
	if strings.IndexByte(name, '%') >= 0 {
		dec, err := url.PathUnescape(name)
		if err != nil {
			return "", fmt.Errorf("bad percent-encoding in host %q: %w", name, ErrHost)
		}
		name = dec
	}
	name = strings.TrimSuffix(name, ".")
	if name == "" {
		return "", fmt.Errorf("empty host: %w", ErrHost)
	}
	h := strings.ToLower(name)
	if !isASCII(h) || strings.Contains(h, "xn--") {
		if !utf8.ValidString(name) {
			return "", fmt.Errorf("host %q is not valid UTF-8: %w", name, ErrHost)
		}
		a, err := idna.Lookup.ToASCII(name)
		if err != nil {
			return "", fmt.Errorf("cannot convert host %q to punycode: %v: %w", name, err, ErrHost)
		}
		h = strings.TrimSuffix(strings.ToLower(a), ".")
		// The result must be a fixed point, so that canonical URLs re-parse
		// to themselves.
		if again, err := idna.Lookup.ToASCII(h); err != nil || again != h {
			return "", fmt.Errorf("host %q has no stable punycode form: %w", name, ErrHost)
		}
	}
	if err := checkHostName(h); err != nil {
		return "", err
	}
	return h, nil
}

// checkHostName accepts lower-case ASCII host names of at most 253 bytes made
// of non-empty labels of at most 63 bytes from [a-z0-9_-].
func checkHostName(h string) error {
	if h == "" || len(h) > 253 {
		return fmt.Errorf("host %q is empty or longer than 253 bytes: %w", short(h), ErrHost)
	}
	label := 0
	for i := 0; i < len(h); i++ {
		c := h[i]
		switch {
		case c == '.':
			if label == 0 {
				return fmt.Errorf("host %q has an empty label: %w", h, ErrHost)
			}
			label = 0
			continue
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '_':
		default:
			return fmt.Errorf("host %q has invalid character %q: %w", h, c, ErrHost)
		}
		label++
		if label > 63 {
			return fmt.Errorf("host %q has a label longer than 63 bytes: %w", h, ErrHost)
		}
	}
	if label == 0 {
		return fmt.Errorf("host %q has an empty label: %w", h, ErrHost)
	}
	return nil
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// removeDotSegments implements RFC 3986 §5.2.4 on a path that starts with '/'
// (or is empty).
func removeDotSegments(p string) string {
	if !strings.Contains(p, "/.") || p[0] == '/' && !hasDotSegment(p) {
		return p // nothing to remove: the loop below would give p again
	}
	segs := strings.Split(strings.TrimPrefix(p, "/"), "/")
	out := make([]string, 0, len(segs))
	for i, s := range segs {
		last := i == len(segs)-1
		switch s {
		case ".":
			if last {
				out = append(out, "")
			}
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
			if last {
				out = append(out, "")
			}
		default:
			out = append(out, s)
		}
	}
	return "/" + strings.Join(out, "/")
}

// hasDotSegment reports whether the path p has a segment "." or "..".
func hasDotSegment(p string) bool {
	for i := 0; ; {
		j := strings.Index(p[i:], "/.")
		if j < 0 {
			return false
		}
		i += j + 2 // after "/."
		if i == len(p) || p[i] == '/' || p[i] == '.' && (i+1 == len(p) || p[i+1] == '/') {
			return true
		}
	}
}

// Character classes of RFC 3986 used by normalizeEscapes.
const (
	pathChar     = iota // pchar and "/"; '[' and ']' left alone as browsers do
	queryChar           // pchar, "/", "?"; '[' and ']' left alone
	fragmentChar        // as query
)

func isUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}

// allowed reports whether c may appear unencoded in the given component.
func allowed(c byte, class int) bool {
	if isUnreserved(c) {
		return true
	}
	switch c {
	case '!', '$', '&', '\'', '(', ')', '*', '+', ',', ';', '=', ':', '@', '/', '[', ']':
		return true
	case '?':
		return class != pathChar
	}
	return false
}

const upperHex = "0123456789ABCDEF"

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// normalizeEscapes normalises the percent-encoding of one component: escapes
// of unreserved characters are decoded, other escapes get upper-case hex,
// bytes not allowed in the component are encoded, and a stray '%' becomes
// "%25". It returns s itself when nothing changes.
func normalizeEscapes(s string, class int) string {
	var b *strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		var out string // replacement for s[i] (and the two hex digits), "" = keep
		width := 1
		if c == '%' {
			hi, ok1 := byte(0), false
			lo, ok2 := byte(0), false
			if i+2 < len(s) {
				hi, ok1 = unhex(s[i+1])
				lo, ok2 = unhex(s[i+2])
			}
			switch {
			case !ok1 || !ok2:
				out = "%25"
			case isUnreserved(hi<<4 | lo):
				out, width = string(rune(hi<<4|lo)), 3
			default:
				width = 3
				if enc := string([]byte{'%', upperHex[hi], upperHex[lo]}); enc != s[i:i+3] {
					out = enc
				}
			}
		} else if !allowed(c, class) {
			out = string([]byte{'%', upperHex[c>>4], upperHex[c&15]})
		}
		if out == "" {
			if b != nil {
				b.WriteString(s[i : i+width])
			}
		} else {
			if b == nil {
				b = &strings.Builder{}
				b.Grow(len(s) + 8)
				b.WriteString(s[:i])
			}
			b.WriteString(out)
		}
		i += width - 1
	}
	if b == nil {
		return s
	}
	return b.String()
}

// unescapeLoose percent-decodes s, keeping malformed escapes literally.
func unescapeLoose(s string) string {
	v, err := url.PathUnescape(normalizeEscapes(s, queryChar))
	if err != nil {
		return s
	}
	return v
}

// short returns s quoted, cut to 120 bytes, for error messages.
func short(s string) string {
	if len(s) > 120 {
		return strconv.Quote(s[:120]) + "…"
	}
	return strconv.Quote(s)
}
