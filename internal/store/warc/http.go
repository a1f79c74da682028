package warc

import (
	"bytes"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// headerValue makes a header value safe to write on one line, as net/http
// does: CR and LF become spaces.
var headerValue = strings.NewReplacer("\r", " ", "\n", " ")

// requestBlock serialises the HTTP request as sent: the request line, Host,
// User-Agent, the other fields sorted by name, and the blank line.
func requestBlock(u *url.URL, ex *Exchange) []byte {
	var b bytes.Buffer
	method := ex.Method
	if method == "" {
		method = http.MethodGet
	}
	fmt.Fprintf(&b, "%s %s %s\r\n", method, u.RequestURI(), proto(ex))
	host := ex.RequestHeader.Get("Host")
	if host == "" {
		host = u.Host
	}
	fmt.Fprintf(&b, "Host: %s\r\n", headerValue.Replace(host))
	for _, v := range ex.RequestHeader.Values("User-Agent") {
		fmt.Fprintf(&b, "User-Agent: %s\r\n", headerValue.Replace(v))
	}
	keys := make([]string, 0, len(ex.RequestHeader))
	for k := range ex.RequestHeader {
		if ck := http.CanonicalHeaderKey(k); ck != "Host" && ck != "User-Agent" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, v := range ex.RequestHeader[k] {
			fmt.Fprintf(&b, "%s: %s\r\n", k, headerValue.Replace(v))
		}
	}
	b.WriteString("\r\n")
	return b.Bytes()
}

func proto(ex *Exchange) string {
	if ex.Proto == "" {
		return "HTTP/1.1"
	}
	return ex.Proto
}

// headField is one response header field line (with any continuation lines)
// as text, and its lower-case name ("" for a line without a colon).
type headField struct {
	text string
	name string
}

// splitHead splits a raw response header into its status line and fields.
// Lines may end in CRLF or LF; the header ends at the first empty line.
func splitHead(raw []byte) (status string, fields []headField, err error) {
	lines := strings.Split(string(raw), "\n")
	for i := range lines {
		lines[i] = strings.TrimSuffix(lines[i], "\r")
	}
	status = lines[0]
	if !strings.HasPrefix(status, "HTTP/") {
		return "", nil, fmt.Errorf("raw response header starts with %q, not an HTTP status line", truncate([]byte(status)))
	}
	for _, l := range lines[1:] {
		if l == "" {
			break
		}
		if (l[0] == ' ' || l[0] == '\t') && len(fields) > 0 {
			fields[len(fields)-1].text += "\r\n" + l
			continue
		}
		name, _, ok := strings.Cut(l, ":")
		if !ok {
			name = ""
		}
		fields = append(fields, headField{text: l, name: strings.ToLower(strings.TrimSpace(name))})
	}
	return status, fields, nil
}

// synthHead builds the status line and fields from Status and ResponseHeader,
// fields sorted by name.
func synthHead(ex *Exchange) (string, []headField) {
	status := strings.TrimSpace(fmt.Sprintf("%s %03d %s", proto(ex), ex.Status, http.StatusText(ex.Status)))
	keys := make([]string, 0, len(ex.ResponseHeader))
	for k := range ex.ResponseHeader {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var fields []headField
	for _, k := range keys {
		for _, v := range ex.ResponseHeader[k] {
			fields = append(fields, headField{text: k + ": " + headerValue.Replace(v), name: strings.ToLower(k)})
		}
	}
	return status, fields
}

func (f *headField) value() string {
	_, v, _ := strings.Cut(f.text, ":")
	return strings.TrimSpace(v)
}

// consistent makes the fields describe the stored Body (see the package
// documentation): Transfer-Encoding is dropped (Body is always free of the
// chunked coding) and then Content-Length set to len(Body); a
// Content-Length that is not len(Body) is set to it too, unless Body is
// truncated (the server's length stays; WARC-Truncated explains) or the
// answer has no body by definition (1xx, 204, 304: the length is the
// representation's). Content-Encoding is kept: Body is as transferred. It
// reports whether it changed anything.
func consistent(fields []headField, ex *Exchange) ([]headField, bool) {
	changed, needLength := false, false
	kept := fields[:0]
	for _, f := range fields {
		if f.name == "transfer-encoding" {
			changed, needLength = true, true
			continue
		}
		kept = append(kept, f)
	}
	fields = kept
	if ex.Truncated || ex.Status/100 == 1 || ex.Status == http.StatusNoContent || ex.Status == http.StatusNotModified || ex.Revisit != nil {
		return fields, changed
	}
	want := strconv.Itoa(len(ex.Body))
	haveRight := false
	kept = fields[:0]
	for _, f := range fields {
		if f.name == "content-length" {
			if f.value() != want || haveRight {
				changed, needLength = true, true
				continue
			}
			haveRight = true
		}
		kept = append(kept, f)
	}
	fields = kept
	if needLength && !haveRight {
		fields = append(fields, headField{text: "Content-Length: " + want, name: "content-length"})
	}
	return fields, changed
}

// responseHead returns the response header block to store: the raw header
// verbatim when it needs no rewrite and ends in CRLF CRLF, else the
// reserialised (and rewritten) fields with CRLF line ends.
func responseHead(ex *Exchange) ([]byte, error) {
	var (
		status string
		fields []headField
	)
	if ex.RawResponseHeader != nil {
		var err error
		status, fields, err = splitHead(ex.RawResponseHeader)
		if err != nil {
			return nil, err
		}
	} else {
		status, fields = synthHead(ex)
	}
	fields, changed := consistent(fields, ex)
	// Verbatim only with CRLF line ends throughout (a bare LF would end the
	// header early for a reader: "…\n\r\n") and one empty line, its last.
	if raw := ex.RawResponseHeader; raw != nil && !changed && len(raw) >= 4 &&
		bytes.Index(raw, []byte("\r\n\r\n")) == len(raw)-4 && bytes.Count(raw, []byte("\n")) == bytes.Count(raw, []byte("\r\n")) {
		return ex.RawResponseHeader, nil
	}
	var b bytes.Buffer
	b.WriteString(status)
	b.WriteString("\r\n")
	for _, f := range fields {
		b.WriteString(f.text)
		b.WriteString("\r\n")
	}
	b.WriteString("\r\n")
	return b.Bytes(), nil
}
