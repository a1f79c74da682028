package warc

import (
	"bufio"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"crypto/sha1"
	"encoding/base32"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"strconv"
	"strings"
)

// Errors returned by the Reader; test for them with errors.Is.
var (
	// ErrMalformed means the input is not a WARC file (or not valid gzip).
	ErrMalformed = errors.New("malformed warc")
	// ErrTruncated means the input ends inside a record or a gzip member:
	// typically the torn tail a crashed writer leaves.
	ErrTruncated = errors.New("truncated warc")
	// ErrDigestMismatch means a block's bytes do not match its
	// WARC-Block-Digest.
	ErrDigestMismatch = errors.New("warc block digest mismatch")
)

// Reader limits: a header line and a whole record header.
const (
	maxLineBytes   = 64 << 10
	maxHeaderBytes = 1 << 20
	maxFields      = 1000
)

// Field is one named WARC header field.
type Field struct {
	Name  string
	Value string
}

// Header is a record's named fields in file order. Names may repeat
// (WARC-Concurrent-To, WARC-Protocol).
type Header []Field

// Get returns the value of the first field called name, compared without
// regard to case, or "" if there is none.
func (h Header) Get(name string) string {
	for _, f := range h {
		if strings.EqualFold(f.Name, name) {
			return f.Value
		}
	}
	return ""
}

// Values returns the values of every field called name, compared without
// regard to case, in file order.
func (h Header) Values(name string) []string {
	var out []string
	for _, f := range h {
		if strings.EqualFold(f.Name, name) {
			out = append(out, f.Value)
		}
	}
	return out
}

// Record is one WARC record as read.
type Record struct {
	Version       string // "WARC/1.1", "WARC/1.0", …
	Header        Header // named fields, in file order
	ContentLength int64  // the Content-Length field: the block size
	// Body reads the record block: exactly ContentLength bytes, then io.EOF
	// once the record trailer (and the block digest, when it is sha1) has
	// been checked. An error instead of io.EOF means the record is invalid.
	// Body is valid until the next call to Next.
	Body io.Reader
}

// Type returns the WARC-Type field ("response", "request", "warcinfo", …).
func (r *Record) Type() string { return r.Header.Get("WARC-Type") }

// Reader reads WARC records from a stream. It is not safe for concurrent use.
type Reader struct {
	br   *bufio.Reader
	body *body
	err  error // sticky
}

// NewReader returns a Reader of r, which may be gzip-compressed (detected by
// its magic bytes; any member layout) or plain WARC. It returns an error
// wrapping ErrMalformed or ErrTruncated when r starts with a broken gzip
// header, and read errors of r wrapped.
func NewReader(r io.Reader) (*Reader, error) {
	src := bufio.NewReaderSize(r, 64<<10)
	magic, err := src.Peek(2)
	if err != nil && err != io.EOF {
		return nil, fmt.Errorf("cannot read warc: %w", err)
	}
	if len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		z, err := gzip.NewReader(src)
		if err != nil {
			return nil, fmt.Errorf("cannot read warc: %w", classify(err))
		}
		return &Reader{br: bufio.NewReaderSize(z, maxLineBytes)}, nil
	}
	return &Reader{br: src}, nil
}

// classify maps decompression and read errors to the package's errors.
func classify(err error) error {
	var corrupt flate.CorruptInputError
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%w: input ends inside a record or gzip member", ErrTruncated)
	case errors.Is(err, gzip.ErrHeader), errors.Is(err, gzip.ErrChecksum), errors.As(err, &corrupt):
		return fmt.Errorf("%w: corrupt gzip data: %w", ErrMalformed, err)
	}
	return err
}

// Next returns the next record, or io.EOF after the last one. It first reads
// what the caller left unread of the previous record's Body and returns that
// record's error if it was invalid. After an error other than io.EOF every
// later call returns the same error.
func (r *Reader) Next() (*Record, error) {
	if r.err != nil {
		return nil, r.err
	}
	if r.body != nil {
		_, err := io.Copy(io.Discard, r.body)
		r.body = nil
		if err != nil {
			r.err = err
			return nil, err
		}
	}
	rec, err := r.next()
	if err != nil {
		r.err = err
	}
	return rec, err
}

func (r *Reader) next() (*Record, error) {
	var line []byte
	var err error
	for { // blank lines between records are tolerated
		line, err = r.readLine()
		if err == io.EOF && line == nil {
			return nil, io.EOF
		}
		if err == io.EOF {
			return nil, fmt.Errorf("cannot read warc: %w: input ends inside a record's version line", ErrTruncated)
		}
		if err != nil {
			return nil, err
		}
		if len(line) > 0 {
			break
		}
	}
	if !bytes.HasPrefix(line, []byte("WARC/")) || len(line) > 16 {
		return nil, fmt.Errorf("cannot read warc: %w: record starts with %q, not a WARC/ version line", ErrMalformed, truncate(line))
	}
	rec := &Record{Version: string(line), ContentLength: -1}
	total := 0
	for {
		line, err = r.readLine()
		if err == io.EOF {
			return nil, fmt.Errorf("cannot read warc: %w: input ends inside a record header", ErrTruncated)
		}
		if err != nil {
			return nil, err
		}
		if len(line) == 0 {
			break
		}
		total += len(line)
		if total > maxHeaderBytes || len(rec.Header) >= maxFields {
			return nil, fmt.Errorf("cannot read warc: %w: record header exceeds %d bytes or %d fields", ErrMalformed, maxHeaderBytes, maxFields)
		}
		if line[0] == ' ' || line[0] == '\t' { // continuation of the previous field
			if len(rec.Header) == 0 {
				return nil, fmt.Errorf("cannot read warc: %w: record header starts with a continuation line", ErrMalformed)
			}
			f := &rec.Header[len(rec.Header)-1]
			f.Value += " " + strings.TrimSpace(string(line))
			continue
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok || len(name) == 0 || bytes.ContainsAny(name, " \t") {
			return nil, fmt.Errorf("cannot read warc: %w: header line %q is not \"Name: value\"", ErrMalformed, truncate(line))
		}
		rec.Header = append(rec.Header, Field{Name: string(name), Value: string(bytes.TrimSpace(value))})
	}
	cl := rec.Header.Get("Content-Length")
	n, err := strconv.ParseInt(cl, 10, 64)
	if err != nil || n < 0 || cl == "" || cl[0] == '+' {
		return nil, fmt.Errorf("cannot read warc: %w: record %s has Content-Length %q, want a non-negative integer",
			ErrMalformed, rec.Header.Get("WARC-Record-ID"), truncate([]byte(cl)))
	}
	rec.ContentLength = n
	b := &body{r: r, remaining: n, id: rec.Header.Get("WARC-Record-ID")}
	if d, ok := strings.CutPrefix(rec.Header.Get("WARC-Block-Digest"), "sha1:"); ok {
		want, derr := decodeSHA1(d)
		if derr != nil {
			return nil, fmt.Errorf("cannot read warc: %w: record %s: WARC-Block-Digest: %w", ErrMalformed, b.id, derr)
		}
		b.want, b.sum = want, sha1.New()
	}
	r.body = b
	rec.Body = b
	return rec, nil
}

// decodeSHA1 decodes a base-32 (or, as some tools write, hex) SHA-1 digest.
func decodeSHA1(s string) ([]byte, error) {
	if len(s) == 2*sha1.Size {
		if out, err := hex.DecodeString(s); err == nil {
			return out, nil
		}
	}
	out, err := base32.StdEncoding.DecodeString(strings.ToUpper(s))
	if err != nil || len(out) != sha1.Size {
		return nil, fmt.Errorf("%q is not a base-32 SHA-1 digest", truncate([]byte(s)))
	}
	return out, nil
}

// truncate shortens b for error messages.
func truncate(b []byte) []byte {
	if len(b) > 64 {
		return b[:64]
	}
	return b
}

// readLine reads one line without its CRLF (a bare LF is tolerated). At a
// clean end of input it returns nil, io.EOF; a final line without its line
// end is returned with io.EOF.
func (r *Reader) readLine() ([]byte, error) {
	line, err := r.br.ReadSlice('\n')
	switch {
	case errors.Is(err, bufio.ErrBufferFull):
		return nil, fmt.Errorf("cannot read warc: %w: header line longer than %d bytes", ErrMalformed, maxLineBytes)
	case err == io.EOF:
		if len(line) == 0 {
			return nil, io.EOF
		}
		return line, io.EOF
	case err != nil:
		return nil, fmt.Errorf("cannot read warc: %w", classify(err))
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}

// body reads one record block and checks its trailer and digest.
type body struct {
	r         *Reader
	id        string
	remaining int64
	sum       hash.Hash
	want      []byte
	err       error
}

func (b *body) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if b.remaining == 0 {
		b.err = b.finish()
		if b.err == nil {
			b.err = io.EOF
		}
		return 0, b.err
	}
	if int64(len(p)) > b.remaining {
		p = p[:b.remaining]
	}
	n, err := b.r.br.Read(p)
	b.remaining -= int64(n)
	if b.sum != nil {
		b.sum.Write(p[:n])
	}
	switch {
	case err == io.EOF && b.remaining > 0:
		b.err = fmt.Errorf("cannot read warc record %s: %w: block ends %d bytes early", b.id, ErrTruncated, b.remaining)
	case err != nil && err != io.EOF:
		b.err = fmt.Errorf("cannot read warc record %s: %w", b.id, classify(err))
	}
	if n > 0 || b.err == nil {
		return n, nil
	}
	return 0, b.err
}

// finish checks the CRLF CRLF that ends every record and the block digest.
func (b *body) finish() error {
	var t [4]byte
	n, err := io.ReadFull(b.r.br, t[:])
	if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("cannot read warc record %s: %w: input ends before the record's CRLF CRLF trailer (%d of 4 bytes)", b.id, ErrTruncated, n)
	}
	if err != nil {
		return fmt.Errorf("cannot read warc record %s: %w", b.id, classify(err))
	}
	if string(t[:]) != "\r\n\r\n" {
		return fmt.Errorf("cannot read warc record %s: %w: block is not followed by CRLF CRLF (found %q); Content-Length is probably wrong", b.id, ErrMalformed, t[:])
	}
	if b.sum != nil && !bytes.Equal(b.sum.Sum(nil), b.want) {
		return fmt.Errorf("cannot read warc record %s: %w", b.id, ErrDigestMismatch)
	}
	return nil
}
