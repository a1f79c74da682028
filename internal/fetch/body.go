package fetch

import (
	"bufio"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/andybalholm/brotli"
)

// maxEncodings bounds the number of stacked Content-Encodings undone.
const maxEncodings = 4

// decoder wraps r so that reading it undoes the Content-Encoding header
// value ce (a comma-separated list, applied in order by the server, so
// undone in reverse). Unknown codings are an error; "identity" and "" are
// no-ops. Decoding is streamed: memory does not depend on the body size.
func decoder(r io.Reader, ce string) (io.Reader, error) {
	codings := strings.Split(strings.ToLower(ce), ",")
	n := 0
	for i := len(codings) - 1; i >= 0; i-- {
		coding := strings.TrimSpace(codings[i])
		if coding == "" || coding == "identity" {
			continue
		}
		if n++; n > maxEncodings {
			return nil, fmt.Errorf("more than %d content codings in %q", maxEncodings, ce)
		}
		br := bufio.NewReader(r)
		if _, err := br.Peek(1); err == io.EOF {
			// An empty body (HEAD-like answers, 204) has nothing to decode.
			return br, nil
		}
		switch coding {
		case "gzip", "x-gzip":
			zr, err := gzip.NewReader(br)
			if err != nil {
				return nil, fmt.Errorf("cannot start gzip decoding: %w", err)
			}
			r = zr
		case "br":
			r = brotli.NewReader(br)
		case "deflate":
			// RFC 9110 says zlib; some servers send raw deflate.
			r = deflateReader(br)
		default:
			return nil, fmt.Errorf("unsupported content coding %q", coding)
		}
	}
	return r, nil
}

// deflateReader reads zlib-wrapped deflate, or raw deflate when the first
// two bytes are not a zlib header.
func deflateReader(br *bufio.Reader) io.Reader {
	h, _ := br.Peek(2)
	if len(h) == 2 && h[0]&0x0f == 8 && (uint16(h[0])<<8|uint16(h[1]))%31 == 0 {
		if zr, err := zlib.NewReader(br); err == nil {
			return zr
		}
	}
	return flate.NewReader(br)
}

// maxPresize caps the buffer allocated ahead of a body's bytes from the
// size the server announced (Content-Length): a server can announce any
// size, so beyond this the buffer only grows as bytes actually arrive.
const maxPresize = 1 << 20

// readCapped reads r until EOF or max bytes, whichever first. truncated is
// true when more than max bytes were available. sizeHint (the server's
// Content-Length, untrusted) pre-sizes the buffer to at most
// min(sizeHint, max, maxPresize) bytes; memory otherwise follows the bytes
// read, never the announced size.
func readCapped(r io.Reader, max, sizeHint int64) (body []byte, truncated bool, err error) {
	var buf bytes.Buffer
	if max < 0 {
		max = 0
	}
	if sizeHint > 0 {
		buf.Grow(int(min(sizeHint, max, maxPresize)) + 1)
	}
	limit := max
	if limit < math.MaxInt64 {
		limit++ // one byte more tells a body of exactly max bytes from a longer one
	}
	n, err := buf.ReadFrom(io.LimitReader(r, limit))
	if err != nil {
		return buf.Bytes(), false, err
	}
	if n > max {
		return buf.Bytes()[:max], true, nil
	}
	return buf.Bytes(), false, nil
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
