package fetch

import (
	"bytes"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/net/html/charset"
	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/transform"
)

// Response is a fetched answer with its body read, decoded and capped. All
// fields are set by Fetch; Response values are not modified afterwards.
type Response struct {
	// URL is the requested URL; FinalURL the one that answered (differs
	// after followed redirects).
	URL, FinalURL *url.URL
	// Status is the HTTP status code of the final answer.
	Status int
	// Header is the final answer's header as parsed by net/http
	// (Content-Encoding and Content-Length still describe the wire body).
	Header http.Header
	// RequestHeader is the header sent on the final hop (the Host is
	// FinalURL's).
	RequestHeader http.Header
	// Proto is "HTTP/1.1", "HTTP/2.0", ...
	Proto string
	// RawHeader is the status line and header block as received, for WARC:
	// rebuilt from the parsed header (canonical names, sorted, one line per
	// value), ending with an empty line; a chunked answer's
	// "Transfer-Encoding: chunked" (which net/http takes out of Header) is
	// its last field. Content-Encoding is kept: it describes Raw, not Body.
	RawHeader []byte
	// Body is the payload after content decoding, in its original charset,
	// at most Config.MaxBodyBytes long.
	Body []byte
	// Truncated is true when the decoded body was longer than the cap.
	Truncated bool
	// Raw is the body as it was transferred, for WARC: still content-coded
	// (gzip, br, deflate bytes) when the server used a Content-Encoding,
	// free of the chunked transfer coding (net/http removes it; RawHeader
	// then says Transfer-Encoding: chunked). Without a content coding Raw
	// is Body itself (the same slice, not a copy); with one, it is kept
	// only with Config.KeepRaw (else nil), capped like Body at
	// Config.MaxBodyBytes, so the two together hold at most twice the cap;
	// a gzip bomb's Raw is small.
	Raw []byte
	// RawTruncated is true when Raw is not the whole transferred body: cut
	// at the cap, or left unread once Body reached the cap.
	RawTruncated bool
	// ContentType is the lower-case media type without parameters, e.g.
	// "text/html"; sniffed from the body when the header is missing.
	ContentType string
	// Charset is the body's charset name as golang.org/x/net/html/charset
	// knows it ("utf-8", "gbk", "shift_jis", "windows-1252", ...), from the
	// BOM, the Content-Type header, a <meta> in the first 1024 bytes, or
	// sniffed; "" for non-text media types.
	Charset string
	// Location is the Location header of a 3xx resolved against FinalURL;
	// nil when absent or unparseable, and for other statuses.
	Location *url.URL
	// RetryAfter is the Retry-After header (delta seconds or HTTP-date)
	// as a wait from now; 0 when absent, invalid or in the past.
	RetryAfter time.Duration
	// Redirects is the number of redirects followed.
	Redirects int
	// RemoteAddr is the "ip:port" the final answer came from.
	RemoteAddr string
	// Started is when Fetch began; Duration how long it took in total
	// (redirects and body included); TTFB the time from sending the final
	// hop's request to its first response byte.
	Started  time.Time
	Duration time.Duration
	TTFB     time.Duration
}

// IsHTML reports whether the response was served as HTML: Content-Type
// text/html or application/xhtml+xml. A body served as text/plain is not
// HTML however it looks.
func (r *Response) IsHTML() bool {
	return r.ContentType == "text/html" || r.ContentType == "application/xhtml+xml"
}

// UTF8 returns Body converted from Charset to UTF-8 (a leading byte-order
// mark removed, invalid sequences replaced with U+FFFD). An empty Charset
// means UTF-8. The result may share memory with Body when Body is already
// valid UTF-8. It returns an error only for a Charset label unknown to
// golang.org/x/net/html/charset, and never panics.
func (r *Response) UTF8() ([]byte, error) {
	return ToUTF8(r.Body, r.Charset)
}

// ToUTF8 converts body from the charset named label to UTF-8 (see
// Response.UTF8 for the contract).
func ToUTF8(body []byte, label string) ([]byte, error) {
	var dec transform.Transformer = unicode.UTF8.NewDecoder()
	isUTF8 := true
	if label != "" {
		e, name := charset.Lookup(label)
		if e == nil {
			return nil, fmt.Errorf("cannot decode body: unknown charset %q", label)
		}
		if name != "utf-8" {
			dec, isUTF8 = e.NewDecoder(), false
		}
	}
	if isUTF8 && utf8.Valid(body) && !hasBOM(body) {
		return body, nil
	}
	out, _, err := transform.Bytes(unicode.BOMOverride(dec), body)
	if err != nil || !utf8.Valid(out) {
		// x/text decoders replace bad input rather than fail; sanitise
		// whatever came back if one ever does not.
		out = bytes.ToValidUTF8(out, []byte("\uFFFD"))
	}
	return out, nil
}

func hasBOM(b []byte) bool {
	return bytes.HasPrefix(b, []byte{0xEF, 0xBB, 0xBF}) || bytes.HasPrefix(b, []byte{0xFE, 0xFF}) ||
		bytes.HasPrefix(b, []byte{0xFF, 0xFE})
}

// mediaType returns the lower-case media type of a Content-Type header
// value, or of the sniffed body when the header is empty.
func mediaType(header string, body []byte) string {
	if strings.TrimSpace(header) == "" {
		header = http.DetectContentType(body)
	}
	if mt, _, err := mime.ParseMediaType(header); err == nil {
		return mt
	}
	mt, _, _ := strings.Cut(header, ";")
	return strings.ToLower(strings.TrimSpace(mt))
}

// isTextual reports whether a media type carries text whose charset is
// worth detecting.
func isTextual(mt string) bool {
	switch {
	case strings.HasPrefix(mt, "text/"), strings.HasSuffix(mt, "+xml"), strings.HasSuffix(mt, "+json"):
		return true
	}
	switch mt {
	case "application/xml", "application/json", "application/javascript", "application/ecmascript",
		"application/x-javascript":
		return true
	}
	return false
}

// detectCharset applies the HTML encoding-sniffing steps (BOM, Content-Type
// charset, <meta> prescan, UTF-8 validity, windows-1252) to a textual body.
func detectCharset(body []byte, contentType, mt string) string {
	if !isTextual(mt) {
		return ""
	}
	_, name, _ := charset.DetermineEncoding(body, contentType)
	return name
}

// maxRetryAfter keeps Retry-After arithmetic far from overflow.
const maxRetryAfter = 365 * 24 * time.Hour

// ParseRetryAfter parses a Retry-After header value (RFC 9110 §10.2.3):
// delta seconds or an HTTP-date, relative to now. ok is false for an empty
// or invalid value. Dates in the past give 0; waits are capped at a year.
func ParseRetryAfter(v string, now time.Time) (d time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if v[0] >= '0' && v[0] <= '9' {
		secs, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			if ne, isNum := err.(*strconv.NumError); isNum && ne.Err == strconv.ErrRange {
				return maxRetryAfter, true
			}
			return 0, false
		}
		if secs > uint64(maxRetryAfter/time.Second) {
			return maxRetryAfter, true
		}
		return time.Duration(secs) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	d = t.Sub(now)
	switch {
	case d < 0:
		d = 0
	case d > maxRetryAfter:
		d = maxRetryAfter
	}
	return d, true
}

// rawHeader rebuilds the status line and header block of resp.
func rawHeader(resp *http.Response) []byte {
	var b bytes.Buffer
	status := resp.Status
	if status == "" {
		status = strconv.Itoa(resp.StatusCode) + " " + http.StatusText(resp.StatusCode)
	}
	b.WriteString(resp.Proto + " " + status + "\r\n")
	_ = resp.Header.Write(&b) // writes to a bytes.Buffer do not fail
	if len(resp.TransferEncoding) > 0 {
		b.WriteString("Transfer-Encoding: " + strings.Join(resp.TransferEncoding, ", ") + "\r\n")
	}
	b.WriteString("\r\n")
	return b.Bytes()
}
