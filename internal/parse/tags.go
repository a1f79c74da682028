package parse

// tagFlags describe how the walker treats an element.
type tagFlags uint16

const (
	tRaw     tagFlags = 1 << iota // the tokenizer returns its contents as raw text
	tRawSkip                      // raw contents that are not visible text
	tHead                         // may appear in <head> without ending it
	tBreak                        // separates words in text
	tAttrs                        // its attributes are read
	tNested                       // handled inside a re-read <noscript>
	tBlock                        // starts a block (Blocks)
	tClosesP                      // its start ends an open <p>, as in HTML
)

type tagInfo struct {
	name  string
	flags tagFlags
}

// tagTable holds every element the walker cares about; others are ignored
// without allocating their names.
var tagTable = func() map[string]tagInfo {
	m := map[string]tagInfo{}
	add := func(f tagFlags, names ...string) {
		for _, n := range names {
			ti := m[n]
			ti.name = n
			ti.flags |= f
			m[n] = ti
		}
	}
	add(tRaw, "script", "style", "noscript", "iframe", "noembed", "noframes", "title", "textarea", "xmp", "plaintext")
	add(tRawSkip, "script", "style", "noscript", "iframe", "noembed", "noframes")
	add(tHead, "title", "meta", "link", "base", "style", "script", "noscript", "template", "basefont", "bgsound", "head", "html")
	add(tBreak, "address", "article", "aside", "blockquote", "body", "br", "button", "caption", "dd", "details",
		"dialog", "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4",
		"h5", "h6", "header", "hgroup", "hr", "img", "input", "legend", "li", "main", "nav", "ol", "option", "p",
		"pre", "section", "select", "summary", "table", "tbody", "td", "textarea", "tfoot", "th", "thead", "title",
		"tr", "ul")
	add(tAttrs, "html", "base", "meta", "a", "area", "link", "img", "iframe", "frame", "script", "embed")
	add(tNested, "a", "area", "link", "img", "iframe", "frame", "script", "embed", "meta")
	add(tBlock, "td", "th", "p", "div", "li", "ul", "ol", "table", "nav", "header", "footer", "section", "article", "aside",
		"h1", "h2", "h3", "h4", "h5", "h6")
	add(tClosesP, "p", "div", "ul", "ol", "table", "nav", "header", "footer", "section", "article", "aside",
		"h1", "h2", "h3", "h4", "h5", "h6")
	add(0, "head", "body", "template", "a")
	return m
}()

// maxTagName is longer than every name in tagTable.
const maxTagName = 16

// tagOf returns the interned name and flags of the tag token whose raw
// bytes are raw ("<name ...>" or "</name ...>"); unknown tags give "" and 0.
// It reads the name from the raw bytes because Tokenizer.TagName allocates
// a copy for every tag.
func tagOf(raw []byte) tagInfo {
	var buf [maxTagName]byte
	i := 1
	if i < len(raw) && raw[i] == '/' {
		i++
	}
	n := 0
	for ; i < len(raw); i++ {
		c := raw[i]
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '/' || c == '>' {
			break
		}
		if n == maxTagName {
			return tagInfo{}
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[n] = c
		n++
	}
	return lookupTag(buf[:n])
}

// tagIndex holds tagTable's entries by first letter and length: a lookup
// compares a name with the one to three entries of its slot instead of
// hashing it (tagOf runs for every tag of every page).
var tagIndex = func() (idx [26][maxTagName + 1][]tagInfo) {
	for name, ti := range tagTable {
		c := name[0] - 'a'
		idx[c][len(name)] = append(idx[c][len(name)], ti)
	}
	return idx
}()

// lookupTag returns tagTable[string(name)] (name lower-case, at most
// maxTagName bytes) without hashing.
func lookupTag[T string | []byte](name T) tagInfo {
	if len(name) == 0 || name[0] < 'a' || name[0] > 'z' {
		return tagInfo{}
	}
	for _, ti := range tagIndex[name[0]-'a'][len(name)] {
		if ti.name == string(name) {
			return ti
		}
	}
	return tagInfo{}
}
