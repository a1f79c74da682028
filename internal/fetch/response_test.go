package fetch

import (
	"bytes"
	"net/http"
	"testing"
	"time"
	"unicode/utf8"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/encoding/korean"
	"golang.org/x/text/encoding/simplifiedchinese"
	"golang.org/x/text/encoding/traditionalchinese"
	"golang.org/x/text/encoding/unicode"
)

func encode(t testing.TB, e encoding.Encoding, s string) []byte {
	t.Helper()
	b, err := e.NewEncoder().Bytes([]byte(s))
	if err != nil {
		t.Fatalf("cannot encode %q: %v", s, err)
	}
	return b
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in     string
		want   time.Duration
		wantOK bool
	}{
		{"", 0, false},
		{"120", 120 * time.Second, true},
		{" 0 ", 0, true},
		{"-5", 0, false},
		{"1.5", 0, false},
		{"12abc", 0, false},
		{"99999999999999999999999", maxRetryAfter, true},
		{"31536001", maxRetryAfter, true},
		{"Sun, 01 Mar 2026 13:00:00 GMT", time.Hour, true},
		{"Sunday, 01-Mar-26 12:00:30 GMT", 30 * time.Second, true}, // RFC 850
		{"Sun Mar  1 12:01:00 2026", time.Minute, true},            // asctime
		{"Sun, 01 Mar 2026 11:00:00 GMT", 0, true},                 // in the past
		{"Fri, 01 Mar 2030 12:00:00 GMT", maxRetryAfter, true},
		{"tomorrow", 0, false},
	}
	for _, tt := range tests {
		got, ok := ParseRetryAfter(tt.in, now)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("ParseRetryAfter(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.wantOK)
		}
	}
}

func TestToUTF8(t *testing.T) {
	const zh = "中文网页，简体与繁體"
	const ja = "日本語のページ"
	tests := []struct {
		name, label string
		body        []byte
		want        string
	}{
		{"utf-8 as is", "utf-8", []byte("héllo"), "héllo"},
		{"empty label is utf-8", "", []byte("héllo"), "héllo"},
		{"utf-8 BOM removed", "utf-8", append([]byte{0xEF, 0xBB, 0xBF}, "abc"...), "abc"},
		{"invalid utf-8 replaced", "utf-8", []byte("a\xffb\xc3"), "a\uFFFDb\uFFFD"},
		{"gbk", "gbk", encode(t, simplifiedchinese.GBK, "中文网页"), "中文网页"},
		{"gb2312 label", "gb2312", encode(t, simplifiedchinese.GBK, "简体"), "简体"},
		{"gb18030", "gb18030", encode(t, simplifiedchinese.GB18030, zh), zh},
		{"big5", "big5", encode(t, traditionalchinese.Big5, "繁體中文"), "繁體中文"},
		{"shift_jis", "shift_jis", encode(t, japanese.ShiftJIS, ja), ja},
		{"euc-jp", "euc-jp", encode(t, japanese.EUCJP, ja), ja},
		{"euc-kr", "euc-kr", encode(t, korean.EUCKR, "한국어"), "한국어"},
		{"windows-1252", "windows-1252", []byte("caf\xe9 \x80"), "café €"},
		{"iso-8859-1 is windows-1252", "iso-8859-1", []byte("caf\xe9"), "café"},
		{"iso-8859-2", "iso-8859-2", encode(t, charmap.ISO8859_2, "Łódź"), "Łódź"},
		{"windows-1251", "windows-1251", encode(t, charmap.Windows1251, "Привет"), "Привет"},
		{"utf-16le with BOM", "utf-16le", append([]byte{0xFF, 0xFE}, encode(t, unicode.UTF16(unicode.LittleEndian, unicode.IgnoreBOM), "hi")...), "hi"},
		{"invalid gbk replaced", "gbk", []byte{0x81, 0x20, 'a'}, "\uFFFD a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ToUTF8(tt.body, tt.label)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Fatalf("ToUTF8(%q, %q) = %q, want %q", tt.body, tt.label, got, tt.want)
			}
		})
	}
	if _, err := ToUTF8([]byte("x"), "no-such-charset"); err == nil {
		t.Fatal("unknown charset accepted")
	}
}

func TestDetectCharset(t *testing.T) {
	gbkPage := append([]byte(`<html><head><meta charset="gb2312"><title>`), encode(t, simplifiedchinese.GBK, "中文")...)
	big5Page := append([]byte(`<html><head><meta http-equiv="Content-Type" content="text/html; charset=big5">`), encode(t, traditionalchinese.Big5, "繁體")...)
	sjisPage := append([]byte(`<meta http-equiv=content-type content="text/html;charset=Shift_JIS">`), encode(t, japanese.ShiftJIS, "日本")...)
	tests := []struct {
		name, contentType string
		body              []byte
		want              string
	}{
		{"header", "text/html; charset=GBK", []byte("<p>x"), "gbk"},
		{"header beats meta", "text/html; charset=big5", gbkPage, "big5"},
		{"BOM beats header", "text/html; charset=gbk", append([]byte{0xEF, 0xBB, 0xBF}, "<p>x"...), "utf-8"},
		{"meta gb2312", "text/html", gbkPage, "gbk"},
		{"meta http-equiv big5", "text/html", big5Page, "big5"},
		{"meta unquoted shift_jis", "text/html", sjisPage, "shift_jis"},
		{"sniffed utf-8", "text/html", []byte("<p>中文</p>"), "utf-8"},
		{"ascii defaults to windows-1252", "text/html", []byte("<p>plain</p>"), "windows-1252"},
		{"plain text header", "text/plain; charset=euc-jp", []byte("x"), "euc-jp"},
		{"images have none", "image/png", []byte("\x89PNG"), ""},
	}
	for _, tt := range tests {
		mt := mediaType(tt.contentType, tt.body)
		if got := detectCharset(tt.body, tt.contentType, mt); got != tt.want {
			t.Errorf("%s: detectCharset = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestMediaType(t *testing.T) {
	tests := []struct {
		header string
		body   []byte
		want   string
	}{
		{"text/html; charset=utf-8", nil, "text/html"},
		{"TEXT/HTML", nil, "text/html"},
		{"application/xhtml+xml", nil, "application/xhtml+xml"},
		{"text/html; charset", nil, "text/html"}, // malformed parameters
		{"", []byte("<!DOCTYPE html><html>"), "text/html"},
		{"", []byte("\x89PNG\r\n\x1a\n"), "image/png"},
		{"text/plain", []byte("<html><body>looks like html</body></html>"), "text/plain"},
	}
	for _, tt := range tests {
		if got := mediaType(tt.header, tt.body); got != tt.want {
			t.Errorf("mediaType(%q) = %q, want %q", tt.header, got, tt.want)
		}
	}
	r := &Response{ContentType: "text/plain", Body: []byte("<html></html>")}
	if r.IsHTML() {
		t.Error("text/plain reported as HTML")
	}
	for _, ct := range []string{"text/html", "application/xhtml+xml"} {
		if !(&Response{ContentType: ct}).IsHTML() {
			t.Errorf("%s not reported as HTML", ct)
		}
	}
}

func TestRawHeader(t *testing.T) {
	resp := &http.Response{Proto: "HTTP/1.1", Status: "200 OK", StatusCode: 200,
		Header: http.Header{"Content-Type": {"text/html"}, "Set-Cookie": {"a=1", "b=2"}}}
	want := "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\n\r\n"
	if got := string(rawHeader(resp)); got != want {
		t.Fatalf("rawHeader = %q, want %q", got, want)
	}
	resp.TransferEncoding = []string{"chunked"}
	want = "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\nTransfer-Encoding: chunked\r\n\r\n"
	if got := string(rawHeader(resp)); got != want {
		t.Fatalf("rawHeader of a chunked answer = %q, want %q", got, want)
	}
}

// FuzzCharsetDecode drives the charset detection and decoding path with
// arbitrary bodies and Content-Type values: it must never panic and must
// always produce valid UTF-8.
func FuzzCharsetDecode(f *testing.F) {
	f.Add([]byte(`<meta charset="gbk">`+"\xd6\xd0\xce\xc4"), "text/html")
	f.Add([]byte("\xa4\xa4\xa4\xe5"), "text/html; charset=big5")
	f.Add([]byte("\x93\xfa\x96\x7b"), "text/html; charset=shift_jis")
	f.Add([]byte("\xef\xbb\xbfabc"), "")
	f.Add([]byte("\xff\xfea\x00"), "text/plain")
	f.Add([]byte("\x1b$B"), "text/html; charset=iso-2022-jp")
	f.Add([]byte("a\xffb"), "text/html; charset=utf-8")
	f.Add([]byte("<meta http-equiv=content-type content='text/html;charset=x-user-defined'>\x80"), "text/html")
	f.Fuzz(func(t *testing.T, body []byte, contentType string) {
		mt := mediaType(contentType, body)
		name := detectCharset(body, contentType, mt)
		out, err := ToUTF8(body, name)
		if err != nil {
			t.Fatalf("detected charset %q is not decodable: %v", name, err)
		}
		if !utf8.Valid(out) {
			t.Fatalf("ToUTF8(%q, %q) = %q: not valid UTF-8", body, name, out)
		}
		if name == "utf-8" && utf8.Valid(body) && !bytes.HasPrefix(body, []byte{0xEF, 0xBB, 0xBF}) && !bytes.Equal(out, body) {
			t.Fatalf("valid UTF-8 changed: %q -> %q", body, out)
		}
	})
}
