package urls

// The resolver as it was before the per-page Resolver (host cache, string
// built without url.URL.String): the reference the differential tests and
// FuzzResolverDiff compare the current code with. Do not "fix" it.

import (
	"fmt"
	"net/url"
	"strings"
)

// resolveString is resolve that also returns the URL's string form.
func (n *Normalizer) refResolveString(base *url.URL, raw string, resolving bool) (*url.URL, string, error) {
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
		bscheme := strings.ToLower(base.Scheme)
		if bscheme != "http" && bscheme != "https" {
			return nil, "", fmt.Errorf("cannot resolve %s against base %s: base scheme %q is not http or https: %w",
				short(s), short(base.String()), base.Scheme, ErrScheme)
		}
		t.scheme = bscheme
		t.hasFragment, t.fragment = ref.hasFragment, ref.fragment
		basePath := func() string { // only relative paths need it
			if p := base.EscapedPath(); p != "" {
				return p
			}
			return "/"
		}
		switch {
		case ref.hasAuthority:
			t.hasAuthority, t.authority = true, ref.authority
			t.path, t.hasQuery, t.query = ref.path, ref.hasQuery, ref.query
		case ref.path == "":
			t.hasAuthority, t.authority = true, refBaseAuthority(base)
			t.path = basePath()
			if ref.hasQuery {
				t.hasQuery, t.query = true, ref.query
			} else {
				t.hasQuery, t.query = base.RawQuery != "" || base.ForceQuery, base.RawQuery
			}
		case ref.path[0] == '/':
			t.hasAuthority, t.authority = true, refBaseAuthority(base)
			t.path, t.hasQuery, t.query = ref.path, ref.hasQuery, ref.query
		default:
			t.hasAuthority, t.authority = true, refBaseAuthority(base)
			bpath := basePath()
			t.path = bpath[:strings.LastIndexByte(bpath, '/')+1] + ref.path
			t.hasQuery, t.query = ref.hasQuery, ref.query
		}
	}
	return n.refBuild(t, s)
}

// baseAuthority returns the authority of base as it appears in a URL string.
func refBaseAuthority(base *url.URL) string {
	if base.User != nil {
		return base.User.String() + "@" + base.Host
	}
	return base.Host
}

// build canonicalises the absolute components t. s is the cleaned input, for
// error messages.
func (n *Normalizer) refBuild(t components, s string) (*url.URL, string, error) {
	u := &url.URL{Scheme: t.scheme}
	userinfo, hostport, hasUser := cutLast(t.authority, '@')
	if !hasUser {
		hostport, userinfo = userinfo, ""
	}
	host, port, err := canonicalHost(hostport)
	if err != nil {
		return nil, "", fmt.Errorf("cannot parse %s: %w", short(s), err)
	}
	if (t.scheme == "http" && port == "80") || (t.scheme == "https" && port == "443") {
		port = ""
	}
	u.Host = host
	if port != "" {
		u.Host += ":" + port
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
	str := u.String()
	if l := len(str); l > MaxLength {
		return nil, "", fmt.Errorf("cannot use %s: canonical form is %d bytes: %w", short(s), l, ErrTooLong)
	}
	return u, str, nil
}

// refRemoveDotSegments is removeDotSegments before its precise shortcut
// (hasDotSegment): any "/." took the slow path.
func refRemoveDotSegments(p string) string {
	if !strings.Contains(p, "/.") {
		return p
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

// refClean is clean before its shortcut for plain references.
func refClean(raw string) string {
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
