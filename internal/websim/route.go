package websim

import (
	"strconv"
	"strings"
)

// routeKind names every URL shape the synthetic web serves.
type routeKind uint8

const (
	rNone routeKind = iota
	rIndex
	rSection  // /s/N/            a=N
	rArticle  // /s/N/a/M.html    a=N b=M
	rAbout    // /about.html
	rContact  // /contact.html
	rFrames   // /frames.html
	rOld      // /old/N.html      a=N (meta refresh to /s/N/)
	rUser     // /user/K/         a=K (only behind rel=nofollow)
	rHidden   // /hidden/K.html   a=K (only linked from pages a crawler must not parse)
	rPrint    // /print/s/N/a/M.html
	rTrap     // /trap/1/2/…/n/   a=n
	rCalendar // /calendar/Y/MM/  a=Y b=M
	rBeacon   // /beacon
	rSitemap  // /sitemap.xml
	rRobots   // /robots.txt
	rRobotsReal
	rCSS       // /static/site.css
	rJS        // /static/app.js
	rPNG       // /img/K.png
	rJPG       // /img/K.jpg
	rGIF       // /img/K.gif
	rPDF       // /doc/K.pdf
	rRedirect  // /x/r/CODE/HOPS/ID a=code b=hops c=id
	rLoop      // /x/loop/K/a|b    a=K b=side
	rGone      // /x/gone/K
	rError     // /x/error/K
	rBusy      // /x/busy/K
	rHang      // /x/hang/K
	rReset     // /x/reset/K
	rPlain     // /x/plain/K
	rBin       // /x/bin/K
	rCharset   // /x/cs/CS/WHERE/K a=charset b=where c=K
	rMalformed // /x/malformed/K
	rLarge     // /x/large/K
	rBomb      // /x/bomb/K
	rNews      // /s/N/new/K.html a=N b=K (Config.PublishEvery)
	rLenHuge   // /x/len-huge/K   (Config.LyingLength)
	rLenStall  // /x/len-stall/K  (Config.LyingLength)
	rLenCap    // /x/len-cap/K    (Config.LyingLength)
	rMirror    // /mirror/s/N/a/M.html (Config.NearDups, duplicates.go)
	rDated     // /dated/s/N/a/M.html  (Config.NearDups)
)

// route is a parsed path.
type route struct {
	kind    routeKind
	a, b, c int
}

// Charsets of the charset pages, in URL order.
const (
	csGBK = iota
	csBig5
	csSJIS
	numCharsets
)

var (
	charsetSlugs = [numCharsets]string{"gbk", "big5", "sjis"}
	charsetNames = [numCharsets]string{"gbk", "big5", "shift_jis"}
	whereSlugs   = [2]string{"header", "meta"}
)

var redirectCodes = [4]int{301, 302, 307, 308}

// maxRedirectHops bounds the hop count of /x/r/ URLs.
const maxRedirectHops = 20

// maxTrapDepth bounds /trap/ URLs (about 20 KB of path).
const maxTrapDepth = 5000

// shape holds the dimensions a path is validated against.
type shape struct {
	pages    int // pages per host
	sections int // sections per host
}

func newShape(pages int) shape {
	s := 0
	if pages > 1 {
		s = isqrt(pages - 1)
		s = max(1, min(s, pages-1))
	}
	return shape{pages: pages, sections: s}
}

func isqrt(n int) int {
	r := 0
	for (r+1)*(r+1) <= n {
		r++
		if r > 1<<20 {
			break
		}
	}
	return r
}

// articles is the number of article pages per host.
func (s shape) articles() int { return s.pages - 1 - s.sections }

// pageRoute maps a page id (0 ≤ id < pages) to its route.
func (s shape) pageRoute(id int) route {
	switch {
	case id == 0:
		return route{kind: rIndex}
	case id <= s.sections:
		return route{kind: rSection, a: id}
	}
	j := id - s.sections - 1
	return route{kind: rArticle, a: j%s.sections + 1, b: j/s.sections + 1}
}

// pageID maps index, section and article routes back to their page id (-1 otherwise).
func (s shape) pageID(r route) int {
	switch r.kind {
	case rIndex:
		return 0
	case rSection:
		return r.a
	case rArticle:
		return s.sections + 1 + (r.b-1)*s.sections + (r.a - 1)
	}
	return -1
}

func (s shape) validArticle(n, m int) bool {
	if n < 1 || n > s.sections || m < 1 {
		return false
	}
	j := (m-1)*s.sections + (n - 1)
	return j < s.articles()
}

// stripSession removes a trailing ";jsessionid=HEX" path parameter.
func stripSession(p string) (string, bool) {
	i := strings.LastIndex(p, ";jsessionid=")
	if i < 0 {
		return p, false
	}
	id := p[i+len(";jsessionid="):]
	if id == "" || !isHex(id) {
		return p, false
	}
	return p[:i], true
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// num parses a canonical decimal (no sign, no leading zero, at most 9 digits).
func num(s string) (int, bool) {
	if s == "" || len(s) > 9 || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// numSuffix parses "K"+suffix.
func numSuffix(s, suffix string) (int, bool) {
	if !strings.HasSuffix(s, suffix) {
		return 0, false
	}
	return num(s[:len(s)-len(suffix)])
}

// parsePath parses a request path (without query) into a route. It reports false for
// every path the web does not serve (a 404). Page paths are validated against sh.
func parsePath(p string, sh shape) (route, bool) {
	if p == "" || p[0] != '/' {
		return route{}, false
	}
	if p == "/" {
		return route{kind: rIndex}, true
	}
	seg := strings.Split(p[1:], "/")
	last := seg[len(seg)-1]
	n := len(seg)
	switch seg[0] {
	case "s":
		return parseSection(seg, sh)
	case "about.html", "contact.html", "frames.html", "beacon", "sitemap.xml", "robots.txt", "robots-real.txt":
		if n != 1 {
			return route{}, false
		}
		return route{kind: singleKinds[seg[0]]}, true
	case "old":
		if k, ok := numSuffix(last, ".html"); ok && n == 2 && k >= 1 && k <= sh.sections {
			return route{kind: rOld, a: k}, true
		}
	case "user":
		if k, ok := num(seg[min(1, n-1)]); ok && n == 3 && last == "" {
			return route{kind: rUser, a: k}, true
		}
	case "hidden":
		if k, ok := numSuffix(last, ".html"); ok && n == 2 {
			return route{kind: rHidden, a: k}, true
		}
	case "mirror", "dated":
		if n >= 2 {
			if r, ok := parseSection(seg[1:], sh); ok && r.kind == rArticle {
				r.kind = rMirror
				if seg[0] == "dated" {
					r.kind = rDated
				}
				return r, true
			}
		}
	case "print":
		if n >= 2 {
			if r, ok := parseSection(seg[1:], sh); ok && r.kind == rArticle {
				r.kind = rPrint
				return r, true
			}
		}
	case "trap":
		if n < 3 || last != "" || n-2 > maxTrapDepth {
			return route{}, false
		}
		for i := 1; i < n-1; i++ {
			if k, ok := num(seg[i]); !ok || k != i {
				return route{}, false
			}
		}
		return route{kind: rTrap, a: n - 2}, true
	case "calendar":
		if n != 4 || last != "" || len(seg[1]) != 4 || len(seg[2]) != 2 {
			return route{}, false
		}
		y, ok1 := num(seg[1])
		m, ok2 := num(strings.TrimPrefix(seg[2], "0"))
		if ok1 && ok2 && y >= 1900 && y <= 9999 && m >= 1 && m <= 12 && (m >= 10) == (seg[2][0] != '0') {
			return route{kind: rCalendar, a: y, b: m}, true
		}
	case "static":
		if n == 2 && last == "site.css" {
			return route{kind: rCSS}, true
		}
		if n == 2 && last == "app.js" {
			return route{kind: rJS}, true
		}
	case "img":
		if n == 2 {
			for i, suf := range imageSuffixes {
				if k, ok := numSuffix(last, suf); ok {
					return route{kind: rPNG + routeKind(i), a: k}, true
				}
			}
		}
	case "doc":
		if k, ok := numSuffix(last, ".pdf"); ok && n == 2 {
			return route{kind: rPDF, a: k}, true
		}
	case "x":
		return parseSpecial(seg, sh)
	}
	return route{}, false
}

func parseSection(seg []string, sh shape) (route, bool) {
	// seg[0] == "s"
	if len(seg) < 3 || seg[0] != "s" {
		return route{}, false
	}
	sec, ok := num(seg[1])
	if !ok || sec < 1 || sec > sh.sections {
		return route{}, false
	}
	switch {
	case len(seg) == 3 && seg[2] == "":
		return route{kind: rSection, a: sec}, true
	case len(seg) == 4 && seg[2] == "new":
		if k, ok := numSuffix(seg[3], ".html"); ok && k >= 1 {
			return route{kind: rNews, a: sec, b: k}, true
		}
	case len(seg) == 4 && seg[2] == "a":
		m, ok := numSuffix(seg[3], ".html")
		if ok && sh.validArticle(sec, m) {
			return route{kind: rArticle, a: sec, b: m}, true
		}
	}
	return route{}, false
}

var singleKinds = map[string]routeKind{
	"about.html": rAbout, "contact.html": rContact, "frames.html": rFrames, "beacon": rBeacon,
	"sitemap.xml": rSitemap, "robots.txt": rRobots, "robots-real.txt": rRobotsReal,
}

// imageSuffixes are in the order rPNG, rJPG, rGIF.
var imageSuffixes = [3]string{".png", ".jpg", ".gif"}

// specialNames is the inverse of specialKinds.
var specialNames = func() map[routeKind]string {
	m := make(map[routeKind]string, len(specialKinds))
	for name, kind := range specialKinds {
		m[kind] = name
	}
	return m
}()

var specialKinds = map[string]routeKind{
	"gone": rGone, "error": rError, "busy": rBusy, "hang": rHang, "reset": rReset,
	"plain": rPlain, "bin": rBin, "malformed": rMalformed, "large": rLarge, "bomb": rBomb,
	"len-huge": rLenHuge, "len-stall": rLenStall, "len-cap": rLenCap,
}

func parseSpecial(seg []string, sh shape) (route, bool) {
	n := len(seg)
	if n < 3 {
		return route{}, false
	}
	switch seg[1] {
	case "r":
		if n != 5 {
			return route{}, false
		}
		code, ok1 := num(seg[2])
		hops, ok2 := num(seg[3])
		id, ok3 := num(seg[4])
		if !ok1 || !ok2 || !ok3 || hops < 1 || hops > maxRedirectHops || id >= sh.pages {
			return route{}, false
		}
		for _, c := range redirectCodes {
			if c == code {
				return route{kind: rRedirect, a: code, b: hops, c: id}, true
			}
		}
	case "loop":
		k, ok := num(seg[2])
		if ok && n == 4 && (seg[3] == "a" || seg[3] == "b") {
			side := 0
			if seg[3] == "b" {
				side = 1
			}
			return route{kind: rLoop, a: k, b: side}, true
		}
	case "cs":
		if n != 5 {
			return route{}, false
		}
		k, ok := num(seg[4])
		cs := indexOf(charsetSlugs[:], seg[2])
		where := indexOf(whereSlugs[:], seg[3])
		if ok && cs >= 0 && where >= 0 {
			return route{kind: rCharset, a: cs, b: where, c: k}, true
		}
	default:
		kind, known := specialKinds[seg[1]]
		k, ok := num(seg[2])
		if known && ok && n == 3 {
			return route{kind: kind, a: k}, true
		}
	}
	return route{}, false
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

// appendPath appends the canonical path of r (the inverse of parsePath).
func appendPath(dst []byte, r route) []byte {
	itoa := func(n int) { dst = strconv.AppendInt(dst, int64(n), 10) }
	switch r.kind {
	case rIndex:
		dst = append(dst, '/')
	case rSection:
		dst = append(dst, "/s/"...)
		itoa(r.a)
		dst = append(dst, '/')
	case rArticle, rPrint, rMirror, rDated:
		switch r.kind {
		case rPrint:
			dst = append(dst, "/print"...)
		case rMirror:
			dst = append(dst, "/mirror"...)
		case rDated:
			dst = append(dst, "/dated"...)
		}
		dst = append(dst, "/s/"...)
		itoa(r.a)
		dst = append(dst, "/a/"...)
		itoa(r.b)
		dst = append(dst, ".html"...)
	case rNews:
		dst = append(dst, "/s/"...)
		itoa(r.a)
		dst = append(dst, "/new/"...)
		itoa(r.b)
		dst = append(dst, ".html"...)
	case rAbout:
		dst = append(dst, "/about.html"...)
	case rContact:
		dst = append(dst, "/contact.html"...)
	case rFrames:
		dst = append(dst, "/frames.html"...)
	case rOld:
		dst = append(dst, "/old/"...)
		itoa(r.a)
		dst = append(dst, ".html"...)
	case rUser:
		dst = append(dst, "/user/"...)
		itoa(r.a)
		dst = append(dst, '/')
	case rHidden:
		dst = append(dst, "/hidden/"...)
		itoa(r.a)
		dst = append(dst, ".html"...)
	case rTrap:
		dst = append(dst, "/trap/"...)
		for i := 1; i <= r.a; i++ {
			itoa(i)
			dst = append(dst, '/')
		}
	case rCalendar:
		dst = append(dst, "/calendar/"...)
		itoa(r.a)
		dst = append(dst, '/')
		if r.b < 10 {
			dst = append(dst, '0')
		}
		itoa(r.b)
		dst = append(dst, '/')
	case rBeacon:
		dst = append(dst, "/beacon"...)
	case rSitemap:
		dst = append(dst, "/sitemap.xml"...)
	case rRobots:
		dst = append(dst, "/robots.txt"...)
	case rRobotsReal:
		dst = append(dst, "/robots-real.txt"...)
	case rCSS:
		dst = append(dst, "/static/site.css"...)
	case rJS:
		dst = append(dst, "/static/app.js"...)
	case rPNG, rJPG, rGIF:
		dst = append(dst, "/img/"...)
		itoa(r.a)
		dst = append(dst, imageSuffixes[r.kind-rPNG]...)
	case rPDF:
		dst = append(dst, "/doc/"...)
		itoa(r.a)
		dst = append(dst, ".pdf"...)
	case rRedirect:
		dst = append(dst, "/x/r/"...)
		itoa(r.a)
		dst = append(dst, '/')
		itoa(r.b)
		dst = append(dst, '/')
		itoa(r.c)
	case rLoop:
		dst = append(dst, "/x/loop/"...)
		itoa(r.a)
		dst = append(dst, "/a"...)
		if r.b == 1 {
			dst[len(dst)-1] = 'b'
		}
	case rCharset:
		dst = append(dst, "/x/cs/"...)
		dst = append(dst, charsetSlugs[r.a]...)
		dst = append(dst, '/')
		dst = append(dst, whereSlugs[r.b]...)
		dst = append(dst, '/')
		itoa(r.c)
	default:
		if name, ok := specialNames[r.kind]; ok {
			dst = append(dst, "/x/"...)
			dst = append(dst, name...)
			dst = append(dst, '/')
			itoa(r.a)
		}
	}
	return dst
}
