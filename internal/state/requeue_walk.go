package state

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"runtime/debug"
)

// bbolt's on-disk layout, as far as walkBolt needs it (go.etcd.io/bbolt
// internal/common): a page starts with id u64, flags u16, count u16,
// overflow u32; branch elements are pos u32, ksize u32, pgid u64; leaf
// elements are flags u32, pos u32, ksize u32, vsize u32, with pos counted
// from the element itself; a bucket value starts with root pgid u64 and
// sequence u64, followed by the inline page when root is 0.
const (
	boltPageHeader   = 16
	boltElement      = 16
	boltBranch       = 0x01
	boltLeaf         = 0x02
	boltFreelist     = 0x10
	boltBucketLeaf   = 0x01
	boltBucketHeader = 16
	boltNoFreelist   = ^uint64(0)
)

// boltMeta is the meta page walkBolt starts from.
type boltMeta struct {
	pageSize uint32
	root     uint64 // root bucket's page
	freelist uint64
	pgid     uint64 // pages in use: every page id is below it
}

// walkBoltFile validates the page structure of the bbolt file at path the
// way bbolt's reads rely on it, with every access bounds-checked: the meta
// page, every page reachable from the root bucket (nested and inline
// buckets included) inside the file and referenced once, every element's
// key and value inside its page, the freelist inside its page. bbolt reads
// its file through a memory map without such checks, and tx.Check runs in
// a goroutine of its own, where a fault on a damaged file kills the
// process; Inspect therefore runs tx.Check only on a file walkBolt passed.
// The file is mapped, not read into memory (Open checks it every time, and
// a state of 10 M URLs is hundreds of MB); a fault on the mapping (a file
// cut while being walked) becomes a panic that walkBolt turns into an error.
func walkBoltFile(path string) error {
	data, unmap, err := mapBoltFile(path)
	if err != nil {
		return err
	}
	defer unmap()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	return walkBolt(data)
}

// walkBolt is walkBoltFile on the file's bytes.
func walkBolt(data []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("page structure is damaged (%v)", r)
		}
	}()
	m, err := newestMeta(data)
	if err != nil {
		return err
	}
	w := boltWalker{data: data, m: m, seen: map[uint64]bool{}}
	if err := w.tree(m.root, 0); err != nil {
		return err
	}
	if m.freelist != boltNoFreelist {
		p, err := w.page(m.freelist)
		if err != nil {
			return fmt.Errorf("freelist: %w", err)
		}
		if binary.LittleEndian.Uint16(p[8:]) != boltFreelist {
			return fmt.Errorf("freelist page %d is not a freelist page", m.freelist)
		}
		n, first := uint64(binary.LittleEndian.Uint16(p[10:])), uint64(boltPageHeader)
		if n == 0xFFFF {
			n, first = binary.LittleEndian.Uint64(p[boltPageHeader:]), boltPageHeader+8
		}
		if first+n*8 > uint64(len(p)) {
			return fmt.Errorf("freelist page %d lists %d pages, more than it holds", m.freelist, n)
		}
		for i := range n {
			if id := binary.LittleEndian.Uint64(p[first+i*8:]); id >= m.pgid {
				return fmt.Errorf("freelist names page %d, beyond the %d pages in use", id, m.pgid)
			}
		}
	}
	return nil
}

// newestMeta returns the valid meta page with the larger transaction id.
func newestMeta(data []byte) (boltMeta, error) {
	read := func(off uint64) (boltMeta, uint64, bool) {
		if off+boltPageHeader+64 > uint64(len(data)) {
			return boltMeta{}, 0, false
		}
		mb := data[off+boltPageHeader : off+boltPageHeader+64]
		if binary.LittleEndian.Uint32(mb[0:]) != 0xED0CDAED || binary.LittleEndian.Uint32(mb[4:]) != 2 ||
			fnv64a(mb[:56]) != binary.LittleEndian.Uint64(mb[56:]) {
			return boltMeta{}, 0, false
		}
		return boltMeta{pageSize: binary.LittleEndian.Uint32(mb[8:]), root: binary.LittleEndian.Uint64(mb[16:]),
			freelist: binary.LittleEndian.Uint64(mb[32:]), pgid: binary.LittleEndian.Uint64(mb[40:])}, binary.LittleEndian.Uint64(mb[48:]), true
	}
	m0, tx0, ok0 := read(0)
	ps := uint64(m0.pageSize)
	if !ok0 {
		for _, try := range []uint64{4096, 8192, 16384, 65536} {
			if m, _, ok := read(try); ok && uint64(m.pageSize) == try {
				ps = try
				break
			}
		}
	}
	m1, tx1, ok1 := read(ps)
	ok1 = ok1 && uint64(m1.pageSize) == ps
	var m boltMeta
	switch {
	case ok0 && (!ok1 || tx0 >= tx1):
		m = m0
	case ok1:
		m = m1
	default:
		return m, errors.New("neither bbolt meta page is valid")
	}
	if m.pageSize < 512 || m.pageSize > 1<<20 {
		return m, fmt.Errorf("meta page says pages of %d bytes", m.pageSize)
	}
	if m.pgid > uint64(len(data))/uint64(m.pageSize) {
		return m, fmt.Errorf("meta page says %d pages of %d bytes, the file holds %d bytes (truncated)", m.pgid, m.pageSize, len(data))
	}
	return m, nil
}

type boltWalker struct {
	data []byte
	m    boltMeta
	seen map[uint64]bool
}

// page returns page id with its overflow pages.
func (w *boltWalker) page(id uint64) ([]byte, error) {
	if id < 2 || id >= w.m.pgid {
		return nil, fmt.Errorf("page %d is outside the %d pages in use", id, w.m.pgid)
	}
	ps := uint64(w.m.pageSize)
	off := id * ps
	overflow := uint64(binary.LittleEndian.Uint32(w.data[off+12:]))
	if id+overflow >= w.m.pgid {
		return nil, fmt.Errorf("page %d with %d overflow pages runs past the %d pages in use", id, overflow, w.m.pgid)
	}
	if binary.LittleEndian.Uint64(w.data[off:]) != id {
		return nil, fmt.Errorf("page %d says it is page %d", id, binary.LittleEndian.Uint64(w.data[off:]))
	}
	return w.data[off : off+(overflow+1)*ps], nil
}

// tree walks the B+tree whose root is page id.
func (w *boltWalker) tree(id uint64, depth int) error {
	if depth > 64 {
		return errors.New("bucket trees nest deeper than 64 levels")
	}
	if w.seen[id] {
		return fmt.Errorf("page %d is referenced twice", id)
	}
	w.seen[id] = true
	p, err := w.page(id)
	if err != nil {
		return err
	}
	return w.node(p, depth, false)
}

// node checks one branch or leaf page p (an inline page when inline).
func (w *boltWalker) node(p []byte, depth int, inline bool) error {
	if len(p) < boltPageHeader {
		return errors.New("page shorter than its header")
	}
	flags, count := binary.LittleEndian.Uint16(p[8:]), uint64(binary.LittleEndian.Uint16(p[10:]))
	if boltPageHeader+count*boltElement > uint64(len(p)) {
		return fmt.Errorf("page %d holds %d elements, more than fit", binary.LittleEndian.Uint64(p), count)
	}
	// bbolt takes any page that is not exactly a leaf for a branch, and
	// reads a branch's first element even when it has none.
	switch {
	case flags == boltLeaf:
	case flags == boltBranch && !inline && count > 0:
	default:
		return fmt.Errorf("page %d has flags %#x and %d elements where a branch or leaf page was expected", binary.LittleEndian.Uint64(p), flags, count)
	}
	for i := range count {
		e := boltPageHeader + i*boltElement
		switch {
		case flags == boltBranch:
			pos, ksize := uint64(binary.LittleEndian.Uint32(p[e:])), uint64(binary.LittleEndian.Uint32(p[e+4:]))
			if e+pos+ksize > uint64(len(p)) {
				return fmt.Errorf("branch page %d: key %d runs past the page", binary.LittleEndian.Uint64(p), i)
			}
			if err := w.tree(binary.LittleEndian.Uint64(p[e+8:]), depth+1); err != nil {
				return err
			}
		default: // leaf
			ef := binary.LittleEndian.Uint32(p[e:])
			pos, ksize, vsize := uint64(binary.LittleEndian.Uint32(p[e+4:])), uint64(binary.LittleEndian.Uint32(p[e+8:])), uint64(binary.LittleEndian.Uint32(p[e+12:]))
			if e+pos+ksize+vsize > uint64(len(p)) {
				return fmt.Errorf("leaf page %d: element %d runs past the page", binary.LittleEndian.Uint64(p), i)
			}
			if ef&boltBucketLeaf == 0 {
				continue
			}
			v := p[e+pos+ksize : e+pos+ksize+vsize]
			if len(v) < boltBucketHeader {
				return fmt.Errorf("leaf page %d: bucket %d has a %d-byte header", binary.LittleEndian.Uint64(p), i, len(v))
			}
			if root := binary.LittleEndian.Uint64(v); root != 0 {
				if err := w.tree(root, depth+1); err != nil {
					return err
				}
			} else if err := w.node(v[boltBucketHeader:], depth+1, true); err != nil {
				return err
			}
		}
	}
	return nil
}

// CheckFile validates the page structure of the state file in dir
// (dir/state.db) without bbolt, reading it once: every page reachable from
// its newest meta page lies inside the file and every element inside its
// page. A file that passes can be opened and read by bbolt without the
// memory faults a damaged file causes (which kill the process when they
// happen in one of bbolt's goroutines). The error wraps ErrDamaged and
// says what is wrong; a missing file wraps fs.ErrNotExist.
func CheckFile(dir string) error {
	path := filepath.Join(dir, DBFile)
	if err := walkBoltFile(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("cannot check crawl state: %w", err)
		}
		return fmt.Errorf("crawl state %s: %w: %w", path, err, ErrDamaged)
	}
	return nil
}
