package urls

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
)

// Filter decides whether a discovered URL may enter the frontier (SPEC §3,
// "URL filters: pluggable chain"). Check returns nil to accept u, found at
// link depth depth (seeds are depth 0), or an error to refuse it: a
// *Rejection for a policy decision, or any other error for a failure of the
// filter itself (such as robots.txt I/O in a FilterFunc). Check must be safe
// for concurrent use and must not modify u.
type Filter interface {
	Check(u *url.URL, depth int) error
}

// Rejection is the error a Filter returns when it refuses a URL.
type Rejection struct {
	// Filter names the filter that refused the URL ("suffix", "host",
	// "scope", "depth", "length", or a FilterFunc's choice).
	Filter string
	// Reason says why, in a few words ("path ends in .png").
	Reason string
}

// Error implements error: "rejected by <filter> filter: <reason>".
func (r *Rejection) Error() string {
	return "rejected by " + r.Filter + " filter: " + r.Reason
}

// AsRejection returns the *Rejection in err's chain, if any.
func AsRejection(err error) (*Rejection, bool) {
	var r *Rejection
	ok := errors.As(err, &r)
	return r, ok
}

// Chain runs its filters in order. The zero (nil) Chain accepts everything.
type Chain []Filter

// Check returns the first non-nil error of the chain's filters (the first
// rejection wins; later filters are not run), or nil if all accept u.
func (c Chain) Check(u *url.URL, depth int) error {
	for _, f := range c {
		if err := f.Check(u, depth); err != nil {
			return err
		}
	}
	return nil
}

// StringFilter is a Filter that can use the URL's string form when its
// caller already has it (Normalizer.ResolveString and Resolver return it),
// instead of computing u.String() again.
type StringFilter interface {
	Filter
	// CheckString returns what Check(u, depth) returns; s must be
	// u.String().
	CheckString(u *url.URL, s string, depth int) error
}

// CheckString is Check for a caller that has u's string form s
// (u.String()): filters that are StringFilters are given s. The result is
// Check's.
func (c Chain) CheckString(u *url.URL, s string, depth int) error {
	for _, f := range c {
		var err error
		if sf, ok := f.(StringFilter); ok {
			err = sf.CheckString(u, s, depth)
		} else {
			err = f.Check(u, depth)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// FilterFunc adapts a function to the Filter interface; the engine uses it for
// the robots.txt filter, which needs I/O.
type FilterFunc func(u *url.URL, depth int) error

// Check calls f(u, depth).
func (f FilterFunc) Check(u *url.URL, depth int) error { return f(u, depth) }

// defaultDenySuffixes backs DefaultDenySuffixes; never modified.
var defaultDenySuffixes = []string{
	".png", ".jpg", ".jpeg", ".gif", ".css", ".js", ".pdf", ".zip", ".ico", ".svg",
	".woff", ".woff2", ".mp4", ".mp3", ".gz", ".tar", ".exe",
}

// DefaultDenySuffixes returns (a fresh copy of) the deny list of a
// SuffixFilter whose Deny is nil: resources a text crawler does not parse
// (.png .jpg .jpeg .gif .css .js .pdf .zip .ico .svg .woff .woff2 .mp4 .mp3
// .gz .tar .exe).
func DefaultDenySuffixes() []string {
	return append([]string(nil), defaultDenySuffixes...)
}

// SuffixFilter refuses URLs whose decoded path ends in one of Deny, compared
// case-insensitively ("/a/LOGO.PNG" ends in ".png"). The query is not looked
// at. A nil Deny means DefaultDenySuffixes(); an empty non-nil Deny refuses
// nothing.
type SuffixFilter struct {
	Deny []string
}

// Check implements Filter.
func (f *SuffixFilter) Check(u *url.URL, _ int) error {
	deny := f.Deny
	if deny == nil {
		deny = defaultDenySuffixes
	}
	p := u.Path
	if p == "" {
		return nil
	}
	last := lowerASCII(p[len(p)-1])
	for _, s := range deny {
		if s == "" || len(p) < len(s) {
			continue
		}
		// Two ASCII last bytes are two last runes, equal under folding
		// only if equal in lower case: most suffixes are refused here.
		if l := lowerASCII(s[len(s)-1]); l < 0x80 && last < 0x80 && l != last {
			continue
		}
		if strings.EqualFold(p[len(p)-len(s):], s) {
			return &Rejection{Filter: "suffix", Reason: "path ends in " + s}
		}
	}
	return nil
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// HostFilter refuses URLs by host name (the port is not looked at). A pattern
// is a host name ("example.com", matching that host only), "*.suffix"
// ("*.example.com", matching every subdomain of example.com at any depth but
// not example.com itself: list both to include the apex), or "*" (any host).
// Matching is case-insensitive and ignores a trailing dot. A host matching a
// Deny pattern is refused; otherwise, if Allow is non-empty, a host matching
// no Allow pattern is refused. The zero value accepts everything.
type HostFilter struct {
	Allow []string
	Deny  []string
}

// Check implements Filter.
func (f *HostFilter) Check(u *url.URL, _ int) error {
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	for _, p := range f.Deny {
		if hostMatch(p, host) {
			return &Rejection{Filter: "host", Reason: "host " + host + " matches deny pattern " + p}
		}
	}
	if len(f.Allow) == 0 {
		return nil
	}
	for _, p := range f.Allow {
		if hostMatch(p, host) {
			return nil
		}
	}
	return &Rejection{Filter: "host", Reason: "host " + host + " matches no allow pattern"}
}

func hostMatch(pattern, host string) bool {
	p := strings.TrimSuffix(strings.ToLower(strings.TrimSpace(pattern)), ".")
	switch {
	case p == "*":
		return true
	case strings.HasPrefix(p, "*."):
		return strings.HasSuffix(host, p[1:])
	default:
		return p == host
	}
}

// Scope modes accepted by NewScope.
const (
	ScopeHost   = "host"   // same host:port (HostPort) as a seed
	ScopeDomain = "domain" // same registrable domain as a seed's host
	ScopeSeeds  = "seeds"  // same host name as a seed, whatever the port
	ScopeRegexp = "regexp" // the whole canonical URL string matches a regexp
	ScopeAny    = "any"    // every URL
)

// ScopeFilter keeps a crawl inside the scope of its seeds. Build it with
// NewScope; it is immutable and safe for concurrent use.
type ScopeFilter struct {
	mode string
	keys map[string]struct{}
	re   *regexp.Regexp
}

// NewScope returns a ScopeFilter in the given mode: ScopeHost (the default
// when mode is ""), ScopeDomain, ScopeSeeds, ScopeRegexp or ScopeAny. The
// host, domain and seeds modes need at least one non-nil seed; the regexp
// mode needs re, a Go regexp (RE2 syntax) that must match the whole URL
// string (it is anchored at both ends) and ignores the seeds. An unknown
// mode, missing seeds or a bad regexp give an error.
func NewScope(mode string, seeds []*url.URL, re string) (*ScopeFilter, error) {
	if mode == "" {
		mode = ScopeHost
	}
	f := &ScopeFilter{mode: mode}
	switch mode {
	case ScopeAny:
		return f, nil
	case ScopeRegexp:
		if re == "" {
			return nil, fmt.Errorf("cannot build a regexp scope: no regexp given")
		}
		r, err := regexp.Compile(`^(?:` + re + `)$`)
		if err != nil {
			return nil, fmt.Errorf("cannot build a regexp scope from %q: %w", re, err)
		}
		f.re = r
		return f, nil
	case ScopeHost, ScopeDomain, ScopeSeeds:
		f.keys = make(map[string]struct{}, len(seeds))
		for _, s := range seeds {
			if s != nil {
				f.keys[f.key(s)] = struct{}{}
			}
		}
		if len(f.keys) == 0 {
			return nil, fmt.Errorf("cannot build a %s scope without seeds", mode)
		}
		return f, nil
	default:
		return nil, fmt.Errorf("cannot build a scope of unknown mode %q (want host, domain, seeds, regexp or any)", mode)
	}
}

// Mode returns the scope mode.
func (f *ScopeFilter) Mode() string { return f.mode }

func (f *ScopeFilter) key(u *url.URL) string {
	switch f.mode {
	case ScopeHost:
		return HostPort(u)
	case ScopeDomain:
		return RegistrableDomain(u.Hostname())
	default:
		return strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	}
}

// Check implements Filter.
func (f *ScopeFilter) Check(u *url.URL, depth int) error {
	if f.mode == ScopeRegexp {
		return f.CheckString(u, u.String(), depth)
	}
	return f.CheckString(u, "", depth)
}

// CheckString implements StringFilter: the regexp mode matches s; the
// other modes do not look at it.
func (f *ScopeFilter) CheckString(u *url.URL, s string, _ int) error {
	switch f.mode {
	case ScopeAny:
		return nil
	case ScopeRegexp:
		if f.re.MatchString(s) {
			return nil
		}
		return &Rejection{Filter: "scope", Reason: "URL does not match the scope regexp"}
	}
	k := f.key(u)
	if _, ok := f.keys[k]; ok {
		return nil
	}
	return &Rejection{Filter: "scope", Reason: fmt.Sprintf("%s %s is not a seed %s", f.mode, k, f.mode)}
}

// DepthFilter refuses URLs found deeper than Max links from a seed (seeds
// are depth 0). A negative Max means unlimited; Max 0 keeps the seeds only.
type DepthFilter struct {
	Max int
}

// Check implements Filter.
func (f *DepthFilter) Check(_ *url.URL, depth int) error {
	if f.Max >= 0 && depth > f.Max {
		return &Rejection{Filter: "depth", Reason: fmt.Sprintf("depth %d exceeds %d", depth, f.Max)}
	}
	return nil
}

// LengthFilter refuses URLs whose string form is longer than Max bytes
// (Max <= 0 means MaxLength), and, if MaxSegments > 0, URLs whose path has
// more than MaxSegments segments (a common crawler trap: /a/b/a/b/…).
type LengthFilter struct {
	Max         int
	MaxSegments int
}

// Check implements Filter.
func (f *LengthFilter) Check(u *url.URL, depth int) error {
	return f.CheckString(u, u.String(), depth)
}

// CheckString implements StringFilter: the length is that of s.
func (f *LengthFilter) CheckString(u *url.URL, s string, _ int) error {
	limit := f.Max
	if limit <= 0 {
		limit = MaxLength
	}
	if n := len(s); n > limit {
		return &Rejection{Filter: "length", Reason: fmt.Sprintf("URL is %d bytes, over %d", n, limit)}
	}
	if f.MaxSegments > 0 {
		if n := strings.Count(u.EscapedPath(), "/"); n > f.MaxSegments {
			return &Rejection{Filter: "length", Reason: fmt.Sprintf("path has %d segments, over %d", n, f.MaxSegments)}
		}
	}
	return nil
}

// Compile-time checks that the filters implement Filter.
var (
	_ Filter = Chain(nil)
	_ Filter = FilterFunc(nil)
	_ Filter = (*SuffixFilter)(nil)
	_ Filter = (*HostFilter)(nil)
	_ Filter = (*ScopeFilter)(nil)
	_ Filter = (*DepthFilter)(nil)
	_ Filter = (*LengthFilter)(nil)

	_ StringFilter = (*ScopeFilter)(nil)
	_ StringFilter = (*LengthFilter)(nil)
)
