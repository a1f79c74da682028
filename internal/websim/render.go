package websim

// render appends the HTML of d (as UTF-8; charset pages are encoded by the caller). For
// docLarge pages padAt is the offset where the padding must be inserted; otherwise -1.
func (w *Web) render(dst []byte, d *doc) (out []byte, padAt int) {
	padAt = -1
	if d.kind == docFrameset {
		dst = append(dst, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>"...)
		dst = append(dst, d.bytes(d.title)...)
		dst = append(dst, "</title></head>\n<frameset cols=\"50%,50%\">\n"...)
		for _, l := range d.links {
			if l.tag == tagFrame {
				dst = append(dst, "<frame src=\""...)
				dst = appendAttr(dst, d.bytes(l.href))
				dst = append(dst, "\">\n"...)
			}
		}
		return append(dst, "</frameset>\n</html>\n"...), padAt
	}
	if d.kind == docMalformed {
		return w.renderMalformed(dst, d), padAt
	}
	print := d.kind == docPrint
	dst = append(dst, "<!DOCTYPE html>\n<html lang=\""...)
	switch {
	case d.kind == docCharset && d.charset == csSJIS:
		dst = append(dst, "ja"...)
	default:
		dst = append(dst, pick(d.zh, "en", "zh")...)
	}
	dst = append(dst, "\"><head>\n"...)
	switch {
	case d.kind != docCharset:
		dst = append(dst, "<meta charset=\"utf-8\">\n"...)
	case d.meta:
		dst = append(dst, "<meta charset=\""...)
		dst = append(dst, charsetNames[d.charset]...)
		dst = append(dst, "\">\n"...)
	}
	dst = append(dst, "<title>"...)
	dst = append(dst, d.bytes(d.title)...)
	dst = append(dst, "</title>\n"...)
	if d.base.n > 0 && !print {
		dst = append(dst, "<base href=\""...)
		dst = appendAttr(dst, d.bytes(d.base))
		dst = append(dst, "\">\n"...)
	}
	if !print {
		for _, l := range d.links {
			if l.block != blockHead {
				continue
			}
			switch l.tag {
			case tagRefresh:
				dst = append(dst, "<meta http-equiv=\"refresh\" content=\"0; url="...)
				dst = appendAttr(dst, d.bytes(l.href))
				dst = append(dst, "\">\n"...)
			case tagLink:
				dst = append(dst, "<link rel=\""...)
				dst = append(dst, relNames[l.rel]...)
				dst = append(dst, "\" href=\""...)
				dst = appendAttr(dst, d.bytes(l.href))
				dst = append(dst, "\">\n"...)
			case tagScript:
				dst = append(dst, "<script src=\""...)
				dst = appendAttr(dst, d.bytes(l.href))
				dst = append(dst, "\"></script>\n"...)
			}
		}
	}
	if d.canonical.n > 0 {
		dst = append(dst, "<link rel=\"canonical\" href=\""...)
		dst = appendAttr(dst, d.bytes(d.canonical))
		dst = append(dst, "\">\n"...)
	}
	dst = append(dst, "</head>\n<body>\n"...)
	if !print && d.model {
		dst = w.renderTop(dst, d)
	} else if !print {
		dst = w.renderBlock(dst, d, blockNav, "<div class=\"nav\">", " | ", "</div>\n")
	}
	dst = append(dst, "<h1 id=\"top\">"...)
	dst = append(dst, d.bytes(d.title)...)
	dst = append(dst, "</h1>\n<div class=\"content\">\n"...)
	if d.dateLine.n > 0 {
		dst = append(dst, "<p class=\"date\">"...)
		dst = append(dst, d.bytes(d.dateLine)...)
		dst = append(dst, "</p>\n"...)
	}
	dst = w.renderParas(dst, d, print)
	if d.model && !print {
		dst = w.renderContentModel(dst, d)
	}
	if d.kind == docLarge {
		padAt = len(dst)
	}
	dst = append(dst, "</div>\n"...)
	if !print {
		dst = w.renderMedia(dst, d)
		dst = w.renderBlock(dst, d, blockFarm, "<table class=\"links\"><tr><td>", " ", "</td></tr></table>\n")
		if d.model {
			dst = w.renderBottom(dst, d)
		} else {
			dst = w.renderBlock(dst, d, blockFooter, "<div class=\"footer\"><p>© 2026", " · ", "</p></div>\n")
		}
		dst = append(dst, "<p id=\"comments\"></p>\n"...)
	}
	return append(dst, "</body>\n</html>\n"...), padAt
}

// renderBlock writes the <a> links of one block between open and close.
func (w *Web) renderBlock(dst []byte, d *doc, blk block, open, sep, close string) []byte {
	n := 0
	for _, l := range d.links {
		if l.block != blk || l.tag != tagA {
			continue
		}
		if n == 0 {
			dst = append(dst, open...)
			if blk == blockFooter {
				dst = append(dst, sep...)
			}
		} else {
			dst = append(dst, sep...)
		}
		dst = appendAnchor(dst, d, &l)
		n++
	}
	if n > 0 {
		dst = append(dst, close...)
	}
	return dst
}

func (w *Web) renderMedia(dst []byte, d *doc) []byte {
	areas := 0
	for _, l := range d.links {
		if l.block != blockMedia {
			continue
		}
		switch l.tag {
		case tagImg:
			dst = append(dst, "<img src=\""...)
			dst = appendAttr(dst, d.bytes(l.href))
			dst = append(dst, "\" alt=\""...)
			dst = append(dst, d.bytes(l.text)...)
			dst = append(dst, "\">\n"...)
		case tagIframe:
			dst = append(dst, "<iframe src=\""...)
			dst = appendAttr(dst, d.bytes(l.href))
			dst = append(dst, "\"></iframe>\n"...)
		case tagArea:
			if areas == 0 {
				dst = append(dst, "<map name=\"m\">"...)
			}
			areas++
			dst = append(dst, "<area shape=\"rect\" coords=\"0,0,10,10\" href=\""...)
			dst = appendAttr(dst, d.bytes(l.href))
			dst = append(dst, "\" alt=\""...)
			dst = append(dst, d.bytes(l.text)...)
			dst = append(dst, "\">"...)
		}
	}
	if areas > 0 {
		dst = append(dst, "</map>\n"...)
	}
	return dst
}

func appendAnchor(dst []byte, d *doc, l *link) []byte {
	dst = append(dst, "<a href=\""...)
	dst = appendAttr(dst, d.bytes(l.href))
	if l.rel == relNofollow {
		dst = append(dst, "\" rel=\"nofollow"...)
	}
	dst = append(dst, "\">"...)
	dst = append(dst, d.bytes(l.text)...)
	return append(dst, "</a>"...)
}

// appendAttr appends s escaped for a double-quoted attribute value.
func appendAttr(dst, s []byte) []byte {
	for _, c := range s {
		switch c {
		case '&':
			dst = append(dst, "&amp;"...)
		case '"':
			dst = append(dst, "&quot;"...)
		case '<':
			dst = append(dst, "&lt;"...)
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

// renderParas writes the content paragraphs with their inline links (as plain text in
// print views).
func (w *Web) renderParas(dst []byte, d *doc, print bool) []byte {
	li := 0 // content links are stored in paragraph order
	for pi := range d.paras {
		for li < len(d.links) && (d.links[li].block != blockContent || int(d.links[li].para) < pi) {
			li++
		}
		end := li
		for end < len(d.links) && (d.links[end].block != blockContent || int(d.links[end].para) == pi) {
			end++
		}
		dst = append(dst, "<p>"...)
		dst = w.writeWords(dst, d, &d.paras[pi], d.links[li:end], pi, print)
		dst = append(dst, "</p>\n"...)
		li = end
	}
	return dst
}

// writeWords writes paragraph p (index pi) of d, putting each of its content links
// (taken from links) before the word at the link's position.
func (w *Web) writeWords(dst []byte, d *doc, p *para, links []link, pi int, print bool) []byte {
	// The paragraph's links sorted by position (layout puts at most two in a paragraph).
	var store [4]*link
	sel := store[:0]
	for j := range links {
		l := &links[j]
		if l.block == blockContent && int(l.para) == pi {
			sel = append(sel, l)
			for k := len(sel) - 1; k > 0 && sel[k].pos < sel[k-1].pos; k-- {
				sel[k], sel[k-1] = sel[k-1], sel[k]
			}
		}
	}
	r := newRNG(p.key)
	zh := p.zh
	var list []string // a charset page's phrase list
	if d.kind == docCharset {
		switch d.charset {
		case csBig5:
			list = phrasesBig5
		case csSJIS:
			list = phrasesSJIS
		}
	}
	nt := int(max(p.nt, 1))
	sentence, written, next := 0, 0, 0
	for i := range int(p.words) {
		for next < len(sel) && int(sel[next].pos) <= i {
			if !zh && written > 0 {
				dst = append(dst, ' ')
			}
			if print {
				dst = append(dst, d.bytes(sel[next].text)...)
			} else {
				dst = appendAnchor(dst, d, sel[next])
			}
			next++
			sentence++
			written++
		}
		var word string
		switch {
		case list != nil:
			word = list[r.intn(len(list))]
		case r.chance(0.3):
			word = pickList(zh, stopEN, stopZH, &r)
		default:
			t := p.topics[r.intn(nt)]
			word = pickList(zh, vocabEN[t], vocabZH[t], &r)
		}
		if !zh && written > 0 {
			dst = append(dst, ' ')
		}
		written++
		if !zh && sentence == 0 && word[0] >= 'a' && word[0] <= 'z' {
			dst = append(dst, word[0]-'a'+'A')
			dst = append(dst, word[1:]...)
		} else {
			dst = append(dst, word...)
		}
		sentence++
		last := i == int(p.words)-1
		if last || (sentence >= 8 && r.chance(0.15)) {
			if zh {
				dst = append(dst, "。"...)
			} else {
				dst = append(dst, '.')
			}
			sentence = 0
		} else if zh && r.chance(0.12) {
			dst = append(dst, "，"...)
		}
	}
	return dst
}

func pickList(zh bool, en, chinese []string, r *rng) string {
	if zh {
		return chinese[r.intn(len(chinese))]
	}
	return en[r.intn(len(en))]
}

// renderMalformed writes d as broken HTML: unclosed tags, thousands of nested divs and
// invalid UTF-8 bytes. Its links stay well-formed <a href="…"> tags.
func (w *Web) renderMalformed(dst []byte, d *doc) []byte {
	dst = append(dst, "<html><head><title>"...)
	dst = append(dst, d.bytes(d.title)...)
	dst = append(dst, "</title>\n<body>\n<p>unclosed <b>bold <i>italic <span class=x>\n"...)
	const depth = 3000
	for range depth {
		dst = append(dst, "<div>"...)
	}
	for pi := range d.paras {
		dst = append(dst, "<p>"...)
		dst = w.writeWords(dst, d, &d.paras[pi], d.links, pi, false)
		dst = append(dst, "\n<td>\xff\xfe broken \xc3\x28 bytes \xe2\x82 <li>"...)
	}
	return append(dst, "\n<table><tr><td>never closed <a name=x>\n"...)
}
