package robots

import "strings"

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

func isUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}

// keep reports whether c stays unescaped in a normalised path or pattern:
// unreserved and reserved characters of RFC 3986, plus '[' and ']'. '*' and
// '$' are decided by the callers.
func keep(c byte) bool {
	if isUnreserved(c) {
		return true
	}
	switch c {
	case '!', '&', '\'', '(', ')', '+', ',', ';', '=', ':', '@', '/', '?', '[', ']':
		return true
	}
	return false
}

// normalize percent-normalises s for matching (RFC 9309 §2.2.2): "%XX" of an
// unreserved character is decoded, other escapes get upper-case hex, a '%'
// without two hex digits becomes "%25", and bytes that are neither unreserved
// nor reserved (controls, space, '"', '#', '<', '>', '\\', '^', '`', '{', '|',
// '}', non-ASCII) are encoded. In a pattern, '*' is kept as the wildcard and a
// final '$' as the end anchor, while a '$' elsewhere is a literal ("%24"). In
// a path, '*' and '$' are literals and become "%2A" and "%24", so that a
// pattern can match them with "%2A" and "%24" as the RFC recommends.
func normalize(s string, pattern bool) string {
	var b *strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		out, width := "", 1
		switch {
		case c == '%':
			if i+2 < len(s) {
				hi, ok1 := unhex(s[i+1])
				lo, ok2 := unhex(s[i+2])
				if ok1 && ok2 {
					width = 3
					v := hi<<4 | lo
					if isUnreserved(v) {
						out = string(rune(v))
					} else if enc := string([]byte{'%', upperHex[hi], upperHex[lo]}); enc != s[i:i+3] {
						out = enc
					}
					break
				}
			}
			out = "%25"
		case c == '*':
			if !pattern {
				out = "%2A"
			}
		case c == '$':
			if !pattern || i != len(s)-1 {
				out = "%24"
			}
		case !keep(c):
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

// normalizePattern normalises the value of an Allow or Disallow line.
func normalizePattern(v string) string { return normalize(v, true) }

// normalizePath normalises a URL path (with query) for matching; the result
// starts with '/'.
func normalizePath(p string) string {
	p = normalize(p, false)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	return p
}

// matches reports whether the normalised path matches the normalised
// pattern, anchored at the start of path: '*' matches any run of bytes and a
// final '$' matches the end of path. It runs in O(len(path) × len(pattern))
// time in the worst case, like Google's matcher, whose algorithm it follows:
// pos holds the increasing set of path offsets that the pattern prefix read
// so far can end at. *buf is scratch space reused between calls.
func matches(path, pattern string, buf *[]int) bool {
	star := strings.IndexByte(pattern, '*') >= 0
	anchored := strings.HasSuffix(pattern, "$")
	if !star {
		if anchored {
			return path == pattern[:len(pattern)-1]
		}
		return strings.HasPrefix(path, pattern)
	}
	if cap(*buf) < len(path)+1 {
		*buf = make([]int, len(path)+1)
	}
	pos := (*buf)[:len(path)+1]
	pos[0] = 0
	n := 1
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		if c == '$' && i == len(pattern)-1 {
			return pos[n-1] == len(path)
		}
		if c == '*' {
			n = len(path) - pos[0] + 1
			for j := 1; j < n; j++ {
				pos[j] = pos[j-1] + 1
			}
			continue
		}
		m := 0
		for j := 0; j < n; j++ {
			if pos[j] < len(path) && path[pos[j]] == c {
				pos[m] = pos[j] + 1
				m++
			}
		}
		n = m
		if n == 0 {
			return false
		}
	}
	return true
}
