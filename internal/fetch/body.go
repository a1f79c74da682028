package fetch

import (
	"bufio"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"

	"github.com/andybalholm/brotli"
)

// maxEncodings bounds the number of stacked Content-Encodings undone.
const maxEncodings = 4

// decoder wraps r so that reading it undoes the Content-Encoding header
// value ce (a comma-separated list, applied in order by the server, so
// undone in reverse). Unknown codings are an error; "identity" and "" are
// no-ops. Decoding is streamed: memory does not depend on the body size.
func decoder(r io.Reader, ce string) (io.Reader, error) {
	return decode(r, ce, nil)
}

// decoders holds the pooled readers a decode used, for release once the
// body has been read.
type decoders struct {
	bufs []*bufio.Reader
	gzip []*gzip.Reader
	br   []*brotli.Reader
}

// release returns the readers to their pools (dropping their sources): the
// caller no longer reads the decoder.
func (d *decoders) release() {
	for _, b := range d.bufs {
		b.Reset(nil)
		bufioPool.Put(b)
	}
	for _, z := range d.gzip {
		gzipPool.Put(z)
	}
	for _, z := range d.br {
		z.Reset(nil) //nolint:errcheck // a nil source only drops the old one
		brotliPool.Put(z)
	}
	*d = decoders{}
}

// Pools of the readers decoding a body needs: a gzip or brotli reader
// holds tens of KiB of window and tables, allocated once and reset per
// body instead of per body (readBody; a Stream's readers are not pooled).
var bufioPool, gzipPool, brotliPool sync.Pool

// decode is decoder with the readers taken from the pools and recorded in
// pooled when it is not nil (the caller releases them).
func decode(r io.Reader, ce string, pooled *decoders) (io.Reader, error) {
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
		var br *bufio.Reader
		if b, ok := bufioPool.Get().(*bufio.Reader); ok && pooled != nil {
			b.Reset(r)
			br = b
		} else {
			br = bufio.NewReader(r)
		}
		if pooled != nil {
			pooled.bufs = append(pooled.bufs, br)
		}
		if _, err := br.Peek(1); err == io.EOF {
			// An empty body (HEAD-like answers, 204) has nothing to decode.
			return br, nil
		}
		switch coding {
		case "gzip", "x-gzip":
			var zr *gzip.Reader
			var err error
			if z, ok := gzipPool.Get().(*gzip.Reader); ok && pooled != nil {
				zr, err = z, z.Reset(br)
			} else {
				zr, err = gzip.NewReader(br)
			}
			if pooled != nil && zr != nil {
				pooled.gzip = append(pooled.gzip, zr)
			}
			if err != nil {
				return nil, fmt.Errorf("cannot start gzip decoding: %w", err)
			}
			r = zr
		case "br":
			var zr *brotli.Reader
			if z, ok := brotliPool.Get().(*brotli.Reader); ok && pooled != nil {
				z.Reset(br) //nolint:errcheck // Reset reports no error (it reads nothing)
				zr = z
			} else {
				zr = brotli.NewReader(br)
			}
			if pooled != nil {
				pooled.br = append(pooled.br, zr)
			}
			r = zr
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

// Body bytes are read into a pooled scratch buffer and copied out once,
// exactly sized: not into a buffer that doubles (and is copied) as the
// body arrives. Scratch buffers larger than maxPooledScratch are not kept.
const (
	initialScratch   = 64 << 10
	maxPooledScratch = 4 << 20
)

var scratchPool sync.Pool // *[]byte

// readCapped reads r until EOF or max bytes, whichever first. truncated is
// true when more than max bytes were available. The body is one
// allocation of its size (it is copied out of a pooled scratch buffer);
// sizeHint (the server's Content-Length, untrusted) sizes a new scratch
// buffer to at most min(sizeHint, max, maxPresize) bytes; memory
// otherwise follows the bytes read, never the announced size.
func readCapped(r io.Reader, max, sizeHint int64) (body []byte, truncated bool, err error) {
	if max < 0 {
		max = 0
	}
	limit := max
	if limit < math.MaxInt64 {
		limit++ // one byte more tells a body of exactly max bytes from a longer one
	}
	sp, _ := scratchPool.Get().(*[]byte)
	if sp == nil {
		size := initialScratch
		if sizeHint > 0 {
			if hint := int(min(sizeHint, max, maxPresize)) + 1; hint > size {
				size = hint
			}
		}
		b := make([]byte, 0, size)
		sp = &b
	}
	buf := (*sp)[:0]
	var n int64
	for n < limit {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)] // grow, as bytes arrive
		}
		room := buf[len(buf):cap(buf)]
		if int64(len(room)) > limit-n {
			room = room[:limit-n]
		}
		m, rerr := r.Read(room)
		if m < 0 || m > len(room) {
			rerr = io.ErrShortBuffer // a broken reader: stop here
			m = 0
		}
		buf = buf[:len(buf)+m]
		n += int64(m)
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			err = rerr
			break
		}
	}
	if err == nil && n > max {
		buf, truncated = buf[:max], true
	}
	body = append([]byte{}, buf...)
	if cap(buf) <= maxPooledScratch {
		*sp = buf[:0]
		scratchPool.Put(sp)
	}
	return body, truncated, err
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
