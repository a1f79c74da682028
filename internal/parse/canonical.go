package parse

import "strings"

// Canonical returns the href of the page's first <link rel="canonical">
// (cleaned as CleanHref does, not resolved: resolve it against Page.Base),
// or "" when there is none. A canonical link is also among Page.Links (Tag
// "link", Rel holding "canonical").
func (p *Page) Canonical() string {
	for i := range p.Links {
		l := &p.Links[i]
		if l.Tag == "link" && hasToken(l.Rel, "canonical") {
			if l.URL != nil {
				return l.URL.String()
			}
			return cleanHref(l.Raw)
		}
	}
	return ""
}

// maxLinkHeader bounds the bytes of Link header values LinkHeaderCanonical
// reads; a longer header is read up to it.
const maxLinkHeader = 64 << 10

// LinkHeaderCanonical returns the target of the first link with relation
// type "canonical" in HTTP Link header values (RFC 8288:
// `<https://example.org/a>; rel="canonical"`, several links separated by
// commas, several header lines allowed), unresolved (resolve it against the
// URL of the response), or "" when there is none or the header does not
// parse there. rel may be quoted or not and may list several types
// ("canonical alternate"); relation types compare case-insensitively. It
// reads at most 64 KiB of header and never fails.
func LinkHeaderCanonical(values []string) string {
	budget := maxLinkHeader
	for _, v := range values {
		if len(v) > budget {
			v = v[:budget]
		}
		budget -= len(v)
		if t := linkHeaderCanonical(v); t != "" {
			return t
		}
		if budget <= 0 {
			break
		}
	}
	return ""
}

func linkHeaderCanonical(v string) string {
	i := 0
	for i < len(v) {
		// A link-value: "<" URI-Reference ">" *( OWS ";" OWS link-param )
		for i < len(v) && (v[i] == ' ' || v[i] == '\t' || v[i] == ',') {
			i++
		}
		if i >= len(v) || v[i] != '<' {
			return "" // not a link-value: give up rather than guess
		}
		end := strings.IndexByte(v[i+1:], '>')
		if end < 0 {
			return ""
		}
		target := v[i+1 : i+1+end]
		i += end + 2
		canonical := false
		// Parameters up to the next comma outside quotes.
		for i < len(v) {
			for i < len(v) && (v[i] == ' ' || v[i] == '\t') {
				i++
			}
			if i >= len(v) || v[i] == ',' {
				break
			}
			if v[i] != ';' {
				return ""
			}
			i++
			for i < len(v) && (v[i] == ' ' || v[i] == '\t') {
				i++
			}
			start := i
			for i < len(v) && v[i] != '=' && v[i] != ';' && v[i] != ',' && v[i] != ' ' && v[i] != '\t' {
				i++
			}
			name := strings.ToLower(v[start:i])
			for i < len(v) && (v[i] == ' ' || v[i] == '\t') {
				i++
			}
			var val string
			if i < len(v) && v[i] == '=' {
				i++
				for i < len(v) && (v[i] == ' ' || v[i] == '\t') {
					i++
				}
				if i < len(v) && v[i] == '"' {
					var b strings.Builder
					i++
					for i < len(v) && v[i] != '"' {
						if v[i] == '\\' && i+1 < len(v) {
							i++
						}
						b.WriteByte(v[i])
						i++
					}
					if i >= len(v) {
						return "" // unterminated quoted string
					}
					i++
					val = b.String()
				} else {
					start := i
					for i < len(v) && v[i] != ';' && v[i] != ',' && v[i] != ' ' && v[i] != '\t' {
						i++
					}
					val = v[start:i]
				}
			}
			if name == "rel" {
				for _, t := range strings.Fields(val) {
					if strings.EqualFold(t, "canonical") {
						canonical = true
					}
				}
			}
		}
		if canonical {
			return cleanHref(target)
		}
	}
	return ""
}
