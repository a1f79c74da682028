package graph

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"unicode/utf8"

	"github.com/spider-crawler/spider/internal/store"
)

// File names of the graphs under a data directory, relative to it (in
// store.DataDir.Graph; join with store.DataDir.Join).
const (
	PagesFile = store.GraphDirName + "/pages.csr" // the page graph
	HostsFile = store.GraphDirName + "/hosts.csr" // the host graph
)

// Version is the CSR file format version written by Encode. Decode refuses
// any other version with ErrVersion.
const Version = 1

// magic opens every CSR file.
const magic = "SPDRCSR\x00"

// headerSize is the size of the fixed header, checksum included.
const headerSize = 8 + 4 + 4 + 8 + 8 + 8 + 8 + 4

// Kind tells which graph a file holds.
type Kind uint32

// The kinds of graph file.
const (
	KindPages Kind = 1
	KindHosts Kind = 2
)

// Errors returned (wrapped) by Decode and ReadFile.
var (
	// ErrCorrupt means the file is not a CSR file, is truncated, or fails a
	// checksum or an invariant. Rebuilding it (spider rank --rebuild) fixes it.
	ErrCorrupt = errors.New("corrupt graph file")
	// ErrVersion means the file was written by another format version.
	ErrVersion = errors.New("unsupported graph file version")
)

// castagnoli is the CRC-32C table used for every checksum of the format.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Header is the metadata stored with a graph.
type Header struct {
	Kind Kind
	// SourceSize is the size in bytes of records.jsonl when the graph was
	// built from it; Load rebuilds when the file's size differs.
	SourceSize int64
}

// Encode returns the binary CSR file for g. The layout (little endian) is
//
//	header   magic "SPDRCSR\0", version u32, kind u32, nodes u64, edges u64,
//	         source size u64, name bytes u64, CRC-32C of the above u32
//	offsets  (nodes+1) × u64, then its CRC-32C u32
//	targets  edges × u32, then its CRC-32C u32
//	names    nodes × u32 name lengths, then the name bytes back to back,
//	         then the CRC-32C of both u32
//
// so a reader checks every byte and can size every section from the header
// before allocating.
func Encode(g *Graph, h Header) ([]byte, error) {
	if err := g.Validate(); err != nil {
		return nil, fmt.Errorf("cannot encode graph: %w", err)
	}
	var nameBytes uint64
	for _, s := range g.Names {
		if uint64(len(s)) > math.MaxUint32 {
			return nil, fmt.Errorf("cannot encode graph: a name of %d bytes is too long", len(s))
		}
		nameBytes += uint64(len(s))
	}
	n, m := uint64(g.N()), uint64(g.M())
	size := headerSize + 8*(n+1) + 4 + 4*m + 4 + 4*n + nameBytes + 4
	b := make([]byte, 0, size)
	b = append(b, magic...)
	b = binary.LittleEndian.AppendUint32(b, Version)
	b = binary.LittleEndian.AppendUint32(b, uint32(h.Kind))
	b = binary.LittleEndian.AppendUint64(b, n)
	b = binary.LittleEndian.AppendUint64(b, m)
	b = binary.LittleEndian.AppendUint64(b, uint64(h.SourceSize))
	b = binary.LittleEndian.AppendUint64(b, nameBytes)
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))

	start := len(b)
	for _, o := range g.Offsets {
		b = binary.LittleEndian.AppendUint64(b, o)
	}
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(b[start:], castagnoli))

	start = len(b)
	for _, t := range g.Targets {
		b = binary.LittleEndian.AppendUint32(b, t)
	}
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(b[start:], castagnoli))

	start = len(b)
	for _, s := range g.Names {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(s)))
	}
	for _, s := range g.Names {
		b = append(b, s...)
	}
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(b[start:], castagnoli))
	return b, nil
}

// Decode parses a CSR file produced by Encode. Anything else — wrong magic,
// truncation, trailing bytes, a checksum mismatch, a broken invariant —
// returns an error wrapping ErrCorrupt (or ErrVersion) that says what is
// wrong. The returned graph does not alias b.
func Decode(b []byte) (*Graph, Header, error) {
	var h Header
	if len(b) < headerSize {
		return nil, h, fmt.Errorf("%w: %d bytes is shorter than the %d-byte header (truncated file)", ErrCorrupt, len(b), headerSize)
	}
	if string(b[:8]) != magic {
		return nil, h, fmt.Errorf("%w: bad magic %q: not a spider CSR file", ErrCorrupt, b[:8])
	}
	if got, want := binary.LittleEndian.Uint32(b[headerSize-4:]), crc32.Checksum(b[:headerSize-4], castagnoli); got != want {
		return nil, h, fmt.Errorf("%w: header checksum %08x, want %08x", ErrCorrupt, got, want)
	}
	if v := binary.LittleEndian.Uint32(b[8:]); v != Version {
		return nil, h, fmt.Errorf("%w: version %d (this build reads version %d)", ErrVersion, v, Version)
	}
	h.Kind = Kind(binary.LittleEndian.Uint32(b[12:]))
	n := binary.LittleEndian.Uint64(b[16:])
	m := binary.LittleEndian.Uint64(b[24:])
	src := binary.LittleEndian.Uint64(b[32:])
	nameBytes := binary.LittleEndian.Uint64(b[40:])
	if n > math.MaxUint32 || m > 1<<40 || nameBytes > 1<<40 || src > math.MaxInt64 {
		return nil, h, fmt.Errorf("%w: implausible header (nodes %d, edges %d, name bytes %d)", ErrCorrupt, n, m, nameBytes)
	}
	h.SourceSize = int64(src)
	want := uint64(headerSize) + 8*(n+1) + 4 + 4*m + 4 + 4*n + nameBytes + 4
	if uint64(len(b)) != want {
		kind := "truncated"
		if uint64(len(b)) > want {
			kind = "has trailing bytes"
		}
		return nil, h, fmt.Errorf("%w: file is %d bytes, header says %d (%s)", ErrCorrupt, len(b), want, kind)
	}
	p := b[headerSize:]
	section := func(name string, size uint64) ([]byte, error) {
		sec := p[:size]
		if got, want := binary.LittleEndian.Uint32(p[size:]), crc32.Checksum(sec, castagnoli); got != want {
			return nil, fmt.Errorf("%w: %s checksum %08x, want %08x", ErrCorrupt, name, got, want)
		}
		p = p[size+4:]
		return sec, nil
	}
	offs, err := section("offsets", 8*(n+1))
	if err != nil {
		return nil, h, err
	}
	tgts, err := section("targets", 4*m)
	if err != nil {
		return nil, h, err
	}
	names, err := section("names", 4*n+nameBytes)
	if err != nil {
		return nil, h, err
	}
	g := &Graph{Names: make([]string, n), Offsets: make([]uint64, n+1), Targets: make([]uint32, m)}
	for i := range g.Offsets {
		g.Offsets[i] = binary.LittleEndian.Uint64(offs[8*i:])
	}
	for i := range g.Targets {
		g.Targets[i] = binary.LittleEndian.Uint32(tgts[4*i:])
	}
	text := names[4*n:]
	var at uint64
	for i := range g.Names {
		l := uint64(binary.LittleEndian.Uint32(names[4*i:]))
		if l > uint64(len(text))-at {
			return nil, h, fmt.Errorf("%w: name %d runs past the name table", ErrCorrupt, i)
		}
		g.Names[i] = string(text[at : at+l])
		if !utf8.ValidString(g.Names[i]) {
			return nil, h, fmt.Errorf("%w: name %d is not UTF-8", ErrCorrupt, i)
		}
		at += l
	}
	if at != uint64(len(text)) {
		return nil, h, fmt.Errorf("%w: name lengths sum to %d, header says %d", ErrCorrupt, at, len(text))
	}
	if err := g.Validate(); err != nil {
		return nil, h, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return g, h, nil
}

// WriteFile encodes g and replaces path atomically (temporary file, fsync,
// rename, directory fsync), creating the parent directory.
func WriteFile(path string, g *Graph, h Header) error {
	b, err := Encode(g, h)
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("cannot create directory %s (check permissions): %w", dir, err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("cannot create temporary file in %s (check permissions and free space): %w", dir, err)
	}
	name := tmp.Name()
	fail := func(err error) error {
		tmp.Close()
		os.Remove(name)
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		return fail(fmt.Errorf("cannot write %s (check free space): %w", name, err))
	}
	if err := tmp.Sync(); err != nil {
		return fail(fmt.Errorf("cannot fsync %s: %w", name, err))
	}
	if err := tmp.Close(); err != nil {
		os.Remove(name)
		return fmt.Errorf("cannot close %s: %w", name, err)
	}
	if err := os.Rename(name, path); err != nil {
		os.Remove(name)
		return fmt.Errorf("cannot rename %s to %s: %w", name, path, err)
	}
	if d, err := os.Open(dir); err == nil {
		defer d.Close()
		if err := d.Sync(); err != nil {
			return fmt.Errorf("cannot fsync directory %s: %w", dir, err)
		}
	}
	return nil
}

// ReadFile reads and decodes the CSR file at path. A missing file returns an
// error wrapping fs.ErrNotExist; a damaged one wraps ErrCorrupt.
func ReadFile(path string) (*Graph, Header, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, Header{}, fmt.Errorf("cannot read graph %s: %w", path, err)
		}
		return nil, Header{}, fmt.Errorf("cannot read graph %s (check permissions): %w", path, err)
	}
	g, h, err := Decode(b)
	if err != nil {
		return nil, h, fmt.Errorf("cannot read graph %s (spider rank rebuilds it from records.jsonl; spider fsck --data DIR --repair removes it): %w", path, err)
	}
	return g, h, nil
}
