package fetch

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/andybalholm/brotli"
)

// contentEncode returns body content-coded with ce ("gzip", "br", "gzip, br":
// applied in order).
func contentEncode(t *testing.T, body []byte, ce string) []byte {
	t.Helper()
	for _, c := range strings.Split(ce, ",") {
		var out bytes.Buffer
		var w io.WriteCloser
		switch strings.TrimSpace(c) {
		case "gzip":
			w = gzip.NewWriter(&out)
		case "br":
			w = brotli.NewWriter(&out)
		case "":
			continue
		default:
			t.Fatalf("no encoder for %q", c)
		}
		if _, err := w.Write(body); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		body = out.Bytes()
	}
	return body
}

// TestPooledDecoders: readBody's pooled gzip, brotli and bufio readers and
// scratch buffers give every body exactly, body after body, when bodies of
// different codings and sizes alternate and when a corrupt or truncated
// stream leaves a pooled reader in an error state (fails if a reader is
// not reset, or a scratch buffer's old bytes leak into a later body).
func TestPooledDecoders(t *testing.T) {
	page := func(i int) []byte {
		return bytes.Repeat([]byte(fmt.Sprintf("<p>page %d, line of text</p>\n", i)), 1+i*i*40)
	}
	type tc struct {
		ce      string
		wire    []byte
		want    []byte
		wantErr bool
	}
	var cases []tc
	for i := range 12 {
		body := page(i)
		for _, ce := range []string{"gzip", "br", "", "gzip, br", "identity"} {
			cases = append(cases, tc{ce: ce, wire: contentEncode(t, body, strings.ReplaceAll(ce, "identity", "")), want: body})
		}
		gz := contentEncode(t, body, "gzip")
		cases = append(cases,
			tc{ce: "gzip", wire: gz[:len(gz)/2], wantErr: true},                           // cut short
			tc{ce: "gzip", wire: append([]byte{0x1f, 0x8b, 9}, gz[3:]...), wantErr: true}, // bad header
			tc{ce: "br", wire: []byte("not brotli at all"), wantErr: true},
			tc{ce: "gzip", wire: nil, want: []byte{}}) // empty body
	}
	for round := range 3 {
		for i, c := range cases {
			resp := &http.Response{Header: http.Header{}, ContentLength: int64(len(c.wire))}
			if c.ce != "" {
				resp.Header.Set("Content-Encoding", c.ce)
			}
			for _, keepRaw := range []bool{false, true} {
				body, rr, err := readBody(bytes.NewReader(c.wire), resp, 1<<30, keepRaw)
				if c.wantErr {
					if err == nil {
						t.Fatalf("round %d case %d (%s): no error for a corrupt body", round, i, c.ce)
					}
					continue
				}
				if err != nil || !bytes.Equal(body, c.want) || rr.truncated {
					t.Fatalf("round %d case %d (%s, raw %v): %d bytes, truncated %v, %v; want %d bytes",
						round, i, c.ce, keepRaw, len(body), rr.truncated, err, len(c.want))
				}
				if keepRaw && !bytes.Equal(rr.raw, c.wire) {
					t.Fatalf("round %d case %d (%s): raw body of %d bytes; want %d", round, i, c.ce, len(rr.raw), len(c.wire))
				}
			}
		}
	}
}

// errAfter returns its bytes, then err (with the last bytes, as some
// readers do).
type errAfter struct {
	data []byte
	err  error
}

func (e *errAfter) Read(p []byte) (int, error) {
	n := copy(p, e.data)
	e.data = e.data[n:]
	if len(e.data) == 0 {
		return n, e.err
	}
	return n, nil
}

// TestReadCappedEdges: readCapped's answer for bodies at, under and over
// the cap, on readers that end with data and EOF at once, and on a read
// error (the bytes read so far and the error, not truncated), with scratch
// buffers reused in between (fails if a body holds another's bytes or the
// cap is off by one).
func TestReadCappedEdges(t *testing.T) {
	boom := errors.New("boom")
	for range 3 {
		for _, tt := range []struct {
			data      string
			max       int64
			err       error
			want      string
			truncated bool
			wantErr   error
		}{
			{"abcdef", 6, io.EOF, "abcdef", false, nil},
			{"abcdef", 5, io.EOF, "abcde", true, nil},
			{"abcdef", 7, nil, "abcdef", false, nil},
			{"abcdef", 0, io.EOF, "", true, nil},
			{"", 3, io.EOF, "", false, nil},
			{"abc", 10, boom, "abc", false, boom},
			{strings.Repeat("x", 200_000), 150_000, io.EOF, strings.Repeat("x", 150_000), true, nil},
			{strings.Repeat("y", 200_000), 300_000, io.EOF, strings.Repeat("y", 200_000), false, nil},
		} {
			var r io.Reader = &errAfter{data: []byte(tt.data), err: tt.err}
			if tt.err == nil {
				r = strings.NewReader(tt.data)
			}
			body, truncated, err := readCapped(r, tt.max, int64(len(tt.data)))
			if string(body) != tt.want || truncated != tt.truncated || !errors.Is(err, tt.wantErr) || body == nil {
				t.Fatalf("readCapped(%d bytes, max %d, then %v) = %d bytes, %v, %v; want %d bytes, %v, %v",
					len(tt.data), tt.max, tt.err, len(body), truncated, err, len(tt.want), tt.truncated, tt.wantErr)
			}
		}
	}
}

// BenchmarkReadBody reads a 32 KB page gzip-coded as a static server sends
// it (the crawler's common case).
func BenchmarkReadBody(b *testing.B) {
	var page bytes.Buffer
	for i := 0; page.Len() < 32<<10; i++ {
		fmt.Fprintf(&page, "<li><a class=\"toc-link\" href=\"/s/%d/a/%d.html\">s/%d</a></li>\n", i%20, i, i)
	}
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	w.Write(page.Bytes())
	w.Close()
	resp := &http.Response{Header: http.Header{"Content-Encoding": {"gzip"}}, ContentLength: int64(gz.Len())}
	b.SetBytes(int64(page.Len()))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := readBody(bytes.NewReader(gz.Bytes()), resp, 10<<20, false); err != nil {
			b.Fatal(err)
		}
	}
}
