package parse

import "strings"

// parseRefresh implements the HTML "shared declarative refresh steps" on a
// <meta http-equiv="refresh"> content value: "5", "0; url=/next",
// "0;URL='/next'", "3, url = \"x\"", "0; /next" are all accepted. It returns
// the URL part ("" when the refresh reloads the page itself) and ok=false
// when the value is not a refresh at all.
func parseRefresh(content string) (target string, ok bool) {
	s := strings.TrimLeft(content, asciiSpace)
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 && (len(s) == 0 || s[0] != '.') {
		return "", false
	}
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
		i++
	}
	s = s[i:]
	if s == "" {
		return "", true
	}
	if c := s[0]; c != ';' && c != ',' && !isASCIISpace(c) {
		return "", false
	}
	s = strings.TrimLeft(s, asciiSpace)
	if s != "" && (s[0] == ';' || s[0] == ',') {
		s = strings.TrimLeft(s[1:], asciiSpace)
	}
	if s == "" {
		return "", true
	}
	urlString := s
	// Optional "url" "=" prefix; without "=", the whole rest is the URL.
	if len(s) > 0 && (s[0] == 'u' || s[0] == 'U') {
		rest := s[1:]
		if len(rest) >= 2 && (rest[0] == 'r' || rest[0] == 'R') && (rest[1] == 'l' || rest[1] == 'L') {
			rest = strings.TrimLeft(rest[2:], asciiSpace)
			if rest != "" && rest[0] == '=' {
				s = strings.TrimLeft(rest[1:], asciiSpace)
				urlString = unquote(s)
			}
		}
		return urlString, true
	}
	return unquote(s), true
}

// unquote handles the "skip quotes" step: a leading ' or " starts a quoted
// URL that ends at the same quote (or at the end).
func unquote(s string) string {
	if s == "" || (s[0] != '\'' && s[0] != '"') {
		return s
	}
	q := s[0]
	s = s[1:]
	if i := strings.IndexByte(s, q); i >= 0 {
		s = s[:i]
	}
	return s
}

const asciiSpace = " \t\n\f\r"

func isASCIISpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r'
}
