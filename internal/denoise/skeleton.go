package denoise

import (
	"net/url"
	"strings"
)

// Skeleton returns the shape of u compared by the clustering: the path and
// the query keys, lower-cased, with every run of digits and every long
// (≥ 8) hexadecimal run holding a digit replaced by "#", and every query or
// path-parameter value replaced by "#". Scheme and host are left out: URLs
// are clustered within one domain block (S311), where they add only a
// common prefix. "/s/12/a/3.html;jsessionid=9F3A?utm_source=mail" becomes
// "/s/#/a/#.html;jsessionid=#?utm_source=#".
func Skeleton(u *url.URL) string {
	var b strings.Builder
	p := u.EscapedPath()
	if p == "" {
		p = "/"
	}
	for i, seg := range strings.Split(p, "/") {
		if i > 0 {
			b.WriteByte('/')
		}
		name, params, _ := strings.Cut(seg, ";")
		b.WriteString(mask(strings.ToLower(name)))
		if params != "" {
			for kv := range strings.SplitSeq(params, ";") {
				k, _, _ := strings.Cut(kv, "=")
				b.WriteByte(';')
				b.WriteString(mask(strings.ToLower(k)))
				b.WriteString("=#")
			}
		}
	}
	if u.RawQuery != "" {
		sep := byte('?')
		for kv := range strings.SplitSeq(u.RawQuery, "&") {
			if kv == "" {
				continue
			}
			k, _, _ := strings.Cut(kv, "=")
			b.WriteByte(sep)
			sep = '&'
			b.WriteString(mask(strings.ToLower(k)))
			b.WriteString("=#")
		}
	}
	return b.String()
}

// components splits a skeleton into its path segments, path-parameter keys
// and query keys.
func components(skel string, fn func(k Kind, text string)) {
	path, query, _ := strings.Cut(skel, "?")
	for seg := range strings.SplitSeq(path, "/") {
		name, params, _ := strings.Cut(seg, ";")
		if name != "" {
			fn(Segment, name)
		}
		if params != "" {
			for kv := range strings.SplitSeq(params, ";") {
				k, _, _ := strings.Cut(kv, "=")
				fn(Param, k)
			}
		}
	}
	if query != "" {
		for kv := range strings.SplitSeq(query, "&") {
			k, _, _ := strings.Cut(kv, "=")
			fn(Query, k)
		}
	}
}

// mask replaces digit runs, and hexadecimal runs of 8 or more bytes that
// hold a digit, by "#". It runs in one pass over s.
func mask(s string) string {
	var b []byte
	for i := 0; i < len(s); {
		if !isHex(s[i]) {
			if b != nil {
				b = append(b, s[i])
			}
			i++
			continue
		}
		j, digit := i, false
		for j < len(s) && isHex(s[j]) {
			digit = digit || isDigit(s[j])
			j++
		}
		switch {
		case !digit:
			if b != nil {
				b = append(b, s[i:j]...)
			}
		case j-i >= 8:
			b = appendMask(b, s, i)
			b = append(b, '#')
		default: // a short run: mask its digit runs only
			for k := i; k < j; {
				if !isDigit(s[k]) {
					if b != nil {
						b = append(b, s[k])
					}
					k++
					continue
				}
				b = appendMask(b, s, k)
				for k < j && isDigit(s[k]) {
					k++
				}
				b = append(b, '#')
			}
		}
		i = j
	}
	if b == nil {
		return s
	}
	return string(b)
}

// appendMask starts the output buffer lazily: until the first mask, the
// input is returned unchanged without a copy.
func appendMask(b []byte, s string, i int) []byte {
	if b == nil {
		b = append(make([]byte, 0, len(s)), s[:i]...)
	}
	return b
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
func isHex(c byte) bool   { return isDigit(c) || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }
