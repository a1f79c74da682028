package exthash

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"sync"

	"github.com/cespare/xxhash/v2"
)

// File names inside a table's directory.
const (
	BucketFile    = "buckets"
	DirectoryFile = "directory"
	LogFile       = "wal"
)

// Errors returned (wrapped) by Table methods.
var (
	// ErrCorrupt reports a file whose content is not a valid table.
	ErrCorrupt = errors.New("extendible hash table is corrupt")
	// ErrTooLarge reports a key and value longer than MaxRecord bytes, or an
	// empty key.
	ErrTooLarge = errors.New("record does not fit")
	// ErrFull reports a bucket at MaxGlobalDepth that is full while the
	// cache bucket is full too (many keys with equal hash bits).
	ErrFull = errors.New("extendible hash table is full")
	// ErrClosed is returned after Close.
	ErrClosed = errors.New("extendible hash table is closed")
	// ErrBroken is returned after a commit failed half-way: the files are
	// consistent (the log decides), but this Table's memory may not match
	// them. Close it and Open the directory again.
	ErrBroken = errors.New("extendible hash table must be reopened after a failed write")
)

// Options configure Open. The zero value is usable.
type Options struct {
	// FS is the file layer. Default OSFS.
	FS FS
	// NoSync skips fsync: a process crash still leaves a consistent table
	// (every write reaches the OS in log-then-data order), an operating
	// system crash or power loss may not. For benchmarks and tests.
	NoSync bool
	// MaxGlobalDepth bounds GL, hence the directory at 2^MaxGlobalDepth
	// entries. Default 20 (4 MiB of directory), at most 30.
	MaxGlobalDepth int
}

// Table is a cache-based extendible hash table on disk (SPEC §4); see the
// package documentation. It is safe for concurrent use; writers are
// serialised.
type Table struct {
	mu     sync.RWMutex
	dir    string
	opts   Options
	bf, df File // bucket file, directory file
	wal    File

	hdr   header
	table []uint32          // the directory: 2^GL bucket numbers
	cache map[string][]byte // the cache bucket, memory-resident
	cused int               // encoded bytes of the cache bucket's records

	splits, doublings int64 // since Open
	closed            bool
	err               error // sticky: ErrBroken after a failed commit
}

// Stats describes a table.
type Stats struct {
	GlobalDepth  int   // GL
	Buckets      int   // pages in the bucket file
	Records      int64 // live records (buckets and cache bucket)
	CacheRecords int   // records in the cache bucket
	Directory    int   // directory entries, 2^GL
	Splits       int64 // bucket splits since Open
	Doublings    int64 // directory doublings since Open
	DiskBytes    int64 // bytes of the bucket, directory and log files
}

// hashKey is the pseudo-key: a well-mixed 64-bit string hash whose low GL
// bits index the directory (the paper's ASCII-sum formula is lost; SPEC §4
// asks for a well-mixed hash).
func hashKey(key []byte) uint64 { return xxhash.Sum64(key) }

// Open opens (creating when missing) the table stored in directory dir:
// it replays a complete write-ahead log left by a crash, then loads the
// header, directory and cache bucket. It fails with ErrCorrupt when the
// files are not a valid table. Only one Table may have dir open at a time.
func Open(dir string, opts Options) (*Table, error) {
	if opts.FS == nil {
		opts.FS = OSFS{}
	}
	if opts.MaxGlobalDepth == 0 {
		opts.MaxGlobalDepth = 20
	}
	if opts.MaxGlobalDepth < 1 || opts.MaxGlobalDepth > maxDepthLimit {
		return nil, fmt.Errorf("cannot open extendible hash table: MaxGlobalDepth %d out of range 1..%d", opts.MaxGlobalDepth, maxDepthLimit)
	}
	if err := opts.FS.MkdirAll(dir); err != nil {
		return nil, fmt.Errorf("cannot create extendible hash directory: %w", err)
	}
	t := &Table{dir: dir, opts: opts}
	var err error
	open := func(name string) File {
		if err != nil {
			return nil
		}
		var f File
		f, err = opts.FS.OpenFile(filepath.Join(dir, name))
		return f
	}
	t.bf, t.df, t.wal = open(BucketFile), open(DirectoryFile), open(LogFile)
	if err == nil {
		err = opts.FS.SyncDir(dir)
	}
	if err == nil {
		err = t.load()
	}
	if err != nil {
		t.closeFiles()
		return nil, fmt.Errorf("cannot open extendible hash table %s: %w", dir, err)
	}
	return t, nil
}

func (t *Table) closeFiles() error {
	var errs []error
	for _, f := range []File{t.bf, t.df, t.wal} {
		if f != nil {
			errs = append(errs, f.Close())
		}
	}
	return errors.Join(errs...)
}

// load replays the log and reads the header, directory and cache bucket,
// creating an empty table in empty files.
func (t *Table) load() error {
	raw, err := readAll(t.wal)
	if err != nil {
		return err
	}
	if _, pages, ok := decodeWAL(raw); ok {
		if err := t.writePages(pages); err != nil {
			return fmt.Errorf("cannot replay log: %w", err)
		}
	}
	size, err := t.df.Size()
	if err != nil {
		return err
	}
	if size == 0 {
		return t.create()
	}
	p, err := t.readPage(t.df, hdrPage)
	if err != nil {
		return err
	}
	if t.hdr, err = decodeHeader(p); err != nil {
		return err
	}
	if int(t.hdr.gl) > t.opts.MaxGlobalDepth {
		t.opts.MaxGlobalDepth = int(t.hdr.gl)
	}
	n := 1 << t.hdr.gl
	t.table = make([]uint32, n)
	for pg := 0; pg*dirPerPage < n; pg++ {
		p, err := t.readPage(t.df, uint32(firstDirPage+pg))
		if err != nil {
			return err
		}
		for i := 0; i < dirPerPage && pg*dirPerPage+i < n; i++ {
			v := binary.LittleEndian.Uint32(p[4*i:])
			if v >= t.hdr.nbuckets {
				return fmt.Errorf("directory entry %d points to bucket %d of %d: %w", pg*dirPerPage+i, v, t.hdr.nbuckets, ErrCorrupt)
			}
			t.table[pg*dirPerPage+i] = v
		}
	}
	p, err = t.readPage(t.df, cachePage)
	if err != nil {
		return err
	}
	cb, err := decodeBucket(p)
	if err != nil {
		return fmt.Errorf("cache bucket: %w", err)
	}
	t.cache = make(map[string][]byte, len(cb.recs))
	for _, r := range cb.recs {
		t.cache[string(r.key)] = bytes.Clone(r.val)
	}
	t.cused = cb.used
	return nil
}

// create writes an empty table: GL 0, one empty bucket, directory [0].
func (t *Table) create() error {
	t.hdr = header{gl: 0, nbuckets: 1}
	t.table = []uint32{0}
	t.cache = map[string][]byte{}
	tx := t.begin()
	tx.putBucket(0, &bucket{})
	tx.dirtyDir(0)
	tx.cacheDirty = true
	return t.commit(tx)
}

// readPage reads page no of f.
func (t *Table) readPage(f File, no uint32) ([]byte, error) {
	p := make([]byte, PageSize)
	n, err := f.ReadAt(p, int64(no)*PageSize)
	if err != nil && !(err == io.EOF && n == PageSize) {
		if err == io.EOF || n < PageSize {
			return nil, fmt.Errorf("page %d is missing: %w", no, ErrCorrupt)
		}
		return nil, err
	}
	return p, nil
}

// writePages writes page images in place and syncs the files touched.
func (t *Table) writePages(pages []pageImage) error {
	touched := [2]bool{}
	for _, p := range pages {
		f := t.bf
		if p.ref.file == fileDir {
			f = t.df
		}
		if _, err := f.WriteAt(p.data, int64(p.ref.no)*PageSize); err != nil {
			return err
		}
		touched[p.ref.file] = true
	}
	if t.opts.NoSync {
		return nil
	}
	if touched[fileBuckets] {
		if err := t.bf.Sync(); err != nil {
			return err
		}
	}
	if touched[fileDir] {
		if err := t.df.Sync(); err != nil {
			return err
		}
	}
	return nil
}

// tx collects the pages one operation changes. In-memory structures
// (header, directory, cache) are changed directly; commit makes the pages
// durable atomically.
type tx struct {
	buckets    map[uint32]*bucket // after-images of changed buckets
	dirPages   map[uint32]bool    // directory pages (index from 0) changed
	cacheDirty bool
}

func (t *Table) begin() *tx {
	return &tx{buckets: map[uint32]*bucket{}, dirPages: map[uint32]bool{}}
}

func (x *tx) putBucket(no uint32, b *bucket) { x.buckets[no] = b }

func (x *tx) dirtyDir(entry int) { x.dirPages[uint32(entry/dirPerPage)] = true }

// bucket returns bucket no as this transaction sees it.
func (t *Table) bucket(x *tx, no uint32) (*bucket, error) {
	if b, ok := x.buckets[no]; ok {
		return b, nil
	}
	p, err := t.readPage(t.bf, no)
	if err != nil {
		return nil, err
	}
	b, err := decodeBucket(p)
	if err != nil {
		return nil, fmt.Errorf("bucket %d: %w", no, err)
	}
	return b, nil
}

// commit logs then writes every page x changed, with the header.
func (t *Table) commit(x *tx) error {
	t.hdr.seq++
	pages := make([]pageImage, 0, len(x.buckets)+len(x.dirPages)+2)
	nos := make([]uint32, 0, len(x.buckets))
	for no := range x.buckets {
		nos = append(nos, no)
	}
	sort.Slice(nos, func(i, j int) bool { return nos[i] < nos[j] })
	for _, no := range nos {
		pages = append(pages, pageImage{pageRef{fileBuckets, no}, x.buckets[no].encode()})
	}
	pages = append(pages, pageImage{pageRef{fileDir, hdrPage}, t.hdr.encode()})
	if x.cacheDirty {
		pages = append(pages, pageImage{pageRef{fileDir, cachePage}, t.encodeCache()})
	}
	dps := make([]uint32, 0, len(x.dirPages))
	for pg := range x.dirPages {
		dps = append(dps, pg)
	}
	sort.Slice(dps, func(i, j int) bool { return dps[i] < dps[j] })
	for _, pg := range dps {
		p := make([]byte, PageSize)
		for i := 0; i < dirPerPage && int(pg)*dirPerPage+i < len(t.table); i++ {
			binary.LittleEndian.PutUint32(p[4*i:], t.table[int(pg)*dirPerPage+i])
		}
		pages = append(pages, pageImage{pageRef{fileDir, firstDirPage + pg}, p})
	}
	if _, err := t.wal.WriteAt(encodeWAL(t.hdr.seq, pages), 0); err != nil {
		return t.broken(fmt.Errorf("cannot write log: %w", err))
	}
	if !t.opts.NoSync {
		if err := t.wal.Sync(); err != nil {
			return t.broken(fmt.Errorf("cannot sync log: %w", err))
		}
	}
	if err := t.writePages(pages); err != nil {
		return t.broken(fmt.Errorf("cannot write pages: %w", err))
	}
	return nil
}

func (t *Table) broken(err error) error {
	t.err = fmt.Errorf("%w: %w", ErrBroken, err)
	return t.err
}

// encodeCache encodes the cache bucket in key order (deterministic pages).
func (t *Table) encodeCache() []byte {
	keys := make([]string, 0, len(t.cache))
	for k := range t.cache {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	cb := &bucket{}
	for _, k := range keys {
		cb.add(record{key: []byte(k), val: t.cache[k]})
	}
	return cb.encode()
}

func (t *Table) usable() error {
	if t.closed {
		return ErrClosed
	}
	return t.err
}

func checkRecord(key, val []byte) error {
	if len(key) == 0 {
		return fmt.Errorf("cannot store an empty key: %w", ErrTooLarge)
	}
	if len(key)+len(val) > MaxRecord {
		return fmt.Errorf("cannot store %d-byte key and %d-byte value: at most %d bytes together: %w", len(key), len(val), MaxRecord, ErrTooLarge)
	}
	return nil
}

func mask(gl uint8) uint64 { return 1<<gl - 1 }

// home returns the directory index and bucket of a hash.
func (t *Table) home(h uint64) (int, uint32) {
	i := int(h & mask(t.hdr.gl))
	return i, t.table[i]
}

// Get returns the value stored under key (a copy the caller owns). Look-up
// follows SPEC §4: hash → GL low bits → directory → bucket; when the key is
// not in the bucket and the bucket's BNP flag is set, the cache bucket.
func (t *Table) Get(key []byte) (val []byte, ok bool, err error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if err := t.usable(); err != nil {
		return nil, false, err
	}
	_, no := t.home(hashKey(key))
	p, err := t.readPage(t.bf, no)
	if err != nil {
		return nil, false, err
	}
	b, err := decodeBucket(p)
	if err != nil {
		return nil, false, fmt.Errorf("bucket %d: %w", no, err)
	}
	if i := b.find(key); i >= 0 {
		return bytes.Clone(b.recs[i].val), true, nil
	}
	if b.bnp {
		if v, ok := t.cache[string(key)]; ok {
			return bytes.Clone(v), true, nil
		}
	}
	return nil, false, nil
}

// Op is one change of Apply: Put when Delete is false.
type Op struct {
	Key, Value []byte
	Delete     bool
}

// Put stores value under key (replacing any value), durably once it
// returns (unless Options.NoSync). It fails with ErrTooLarge for an empty
// key or a record over MaxRecord, ErrFull when the table cannot grow.
func (t *Table) Put(key, value []byte) error { return t.Apply([]Op{{Key: key, Value: value}}) }

// Delete removes key; it reports whether the key was present. Buckets are
// never merged and the directory never shrinks.
func (t *Table) Delete(key []byte) (bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.usable(); err != nil {
		return false, err
	}
	x := t.begin()
	found, err := t.del(x, key)
	if err != nil || !found {
		return found, err
	}
	return true, t.commit(x)
}

// Apply performs ops in order as one atomic, durable commit: after a crash
// the table holds all of them or none. Nothing is applied when an op is
// invalid (ErrTooLarge); ErrFull leaves the table as before the call.
func (t *Table) Apply(ops []Op) error {
	for _, op := range ops {
		if !op.Delete {
			if err := checkRecord(op.Key, op.Value); err != nil {
				return err
			}
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.usable(); err != nil {
		return err
	}
	x := t.begin()
	for _, op := range ops {
		var err error
		if op.Delete {
			_, err = t.del(x, op.Key)
		} else {
			err = t.put(x, bytes.Clone(op.Key), bytes.Clone(op.Value))
		}
		if err != nil {
			// The in-memory structures may have changed (a split): reload
			// them from the files, which this call has not touched.
			t.reload()
			return err
		}
	}
	return t.commit(x)
}

// reload re-reads the committed state after an aborted operation.
func (t *Table) reload() {
	if err := t.load(); err != nil {
		t.broken(err)
	}
}

// put inserts or replaces key (SPEC §4 insert): into its bucket while it
// fits; a full bucket with LL < GL (LG = 0) is split; a full bucket with
// LL = GL (LG = 1) sends the record to the cache bucket, deferring the
// directory doubling; when the cache bucket is full too, the directory
// doubles and the bucket splits.
func (t *Table) put(x *tx, key, val []byte) error {
	h := hashKey(key)
	r := record{key: key, val: val}
	for {
		idx, no := t.home(h)
		b, err := t.bucket(x, no)
		if err != nil {
			return err
		}
		if i := b.find(key); i >= 0 {
			b.remove(i)
			t.hdr.records--
			x.putBucket(no, b)
		} else if old, ok := t.cache[string(key)]; ok && b.bnp {
			delete(t.cache, string(key))
			t.cused -= recHeader + len(key) + len(old)
			t.hdr.records--
			x.cacheDirty = true
			t.fixBNP(x, no, b)
		}
		switch {
		case b.fits(r.size()):
			b.add(r)
			x.putBucket(no, b)
			t.hdr.records++
			return nil
		case b.ll < t.hdr.gl:
			if err := t.split(x, idx, no, b); err != nil {
				return err
			}
		case t.cused+r.size() <= pageRoom:
			t.cache[string(key)] = val
			t.cused += r.size()
			t.hdr.records++
			x.cacheDirty = true
			if !b.bnp {
				b.bnp = true
				x.putBucket(no, b)
			}
			return nil
		case int(t.hdr.gl) < t.opts.MaxGlobalDepth:
			t.double(x)
			idx, _ = t.home(h)
			if err := t.split(x, idx, no, b); err != nil {
				return err
			}
		default:
			return fmt.Errorf("cannot store key %q: bucket %d is full at the maximum global depth %d and the cache bucket is full: %w", key, no, t.hdr.gl, ErrFull)
		}
	}
}

// del removes key from its bucket or the cache bucket.
func (t *Table) del(x *tx, key []byte) (bool, error) {
	_, no := t.home(hashKey(key))
	b, err := t.bucket(x, no)
	if err != nil {
		return false, err
	}
	if i := b.find(key); i >= 0 {
		b.remove(i)
		x.putBucket(no, b)
		t.hdr.records--
		return true, nil
	}
	if old, ok := t.cache[string(key)]; ok && b.bnp {
		delete(t.cache, string(key))
		t.cused -= recHeader + len(key) + len(old)
		t.hdr.records--
		x.cacheDirty = true
		t.fixBNP(x, no, b)
		return true, nil
	}
	return false, nil
}

// fixBNP clears bucket no's BNP flag when the cache holds none of its records.
func (t *Table) fixBNP(x *tx, no uint32, b *bucket) {
	for k := range t.cache {
		if _, home := t.home(hashKey([]byte(k))); home == no {
			return
		}
	}
	if b.bnp {
		b.bnp = false
		x.putBucket(no, b)
	}
}

// double doubles the directory: GL+1, entry i+2^GL copies entry i.
func (t *Table) double(x *tx) {
	n := len(t.table)
	t.table = append(t.table, t.table...)
	t.hdr.gl++
	for i := 0; i < 2*n; i += dirPerPage {
		x.dirtyDir(i)
	}
	t.doublings++
}

// split splits bucket no (local depth LL < GL, reached from directory index
// idx) into itself and a new bucket of local depth LL+1: records whose hash
// has bit LL set move to the new bucket, the directory entries with that
// bit set are pointed at it, and the cache bucket's records of the two
// buckets go back into them where they fit.
func (t *Table) split(x *tx, idx int, no uint32, b *bucket) error {
	ll := b.ll
	newNo := t.hdr.nbuckets
	t.hdr.nbuckets++
	nb := &bucket{ll: ll + 1}
	b.ll = ll + 1
	kept := b.recs[:0:0]
	used := 0
	for _, r := range b.recs {
		if hashKey(r.key)>>ll&1 == 1 {
			nb.add(r)
		} else {
			kept = append(kept, r)
			used += r.size()
		}
	}
	b.recs, b.used = kept, used
	low := idx & (1<<ll - 1)
	for j := 0; j < 1<<(t.hdr.gl-ll); j++ {
		i := low | j<<ll
		if i>>ll&1 == 1 {
			t.table[i] = newNo
			x.dirtyDir(i)
		}
	}
	b.bnp, nb.bnp = false, false
	if len(t.cache) > 0 {
		keys := make([]string, 0, len(t.cache))
		for k := range t.cache {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			_, home := t.home(hashKey([]byte(k)))
			var hb *bucket
			switch home {
			case no:
				hb = b
			case newNo:
				hb = nb
			default:
				continue
			}
			v := t.cache[k]
			r := record{key: []byte(k), val: v}
			if hb.fits(r.size()) {
				hb.add(r)
				delete(t.cache, k)
				t.cused -= r.size()
				x.cacheDirty = true
			} else {
				hb.bnp = true
			}
		}
	}
	x.putBucket(no, b)
	x.putBucket(newNo, nb)
	t.splits++
	return nil
}

// Len returns the number of records.
func (t *Table) Len() int64 {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.hdr.records
}

// Range calls fn for every record (buckets in file order, then the cache
// bucket) until fn returns false. The slices are valid only during the call.
// It holds a read lock: fn must not call the table's writing methods.
func (t *Table) Range(fn func(key, value []byte) bool) error {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if err := t.usable(); err != nil {
		return err
	}
	for no := uint32(0); no < t.hdr.nbuckets; no++ {
		p, err := t.readPage(t.bf, no)
		if err != nil {
			return err
		}
		b, err := decodeBucket(p)
		if err != nil {
			return fmt.Errorf("bucket %d: %w", no, err)
		}
		for _, r := range b.recs {
			if !fn(r.key, r.val) {
				return nil
			}
		}
	}
	for k, v := range t.cache {
		if !fn([]byte(k), v) {
			return nil
		}
	}
	return nil
}

// Stats returns the table's shape.
func (t *Table) Stats() Stats {
	t.mu.RLock()
	defer t.mu.RUnlock()
	s := Stats{
		GlobalDepth: int(t.hdr.gl), Buckets: int(t.hdr.nbuckets), Records: t.hdr.records,
		CacheRecords: len(t.cache), Directory: len(t.table), Splits: t.splits, Doublings: t.doublings,
	}
	for _, f := range []File{t.bf, t.df, t.wal} {
		if f == nil {
			continue
		}
		if n, err := f.Size(); err == nil {
			s.DiskBytes += n
		}
	}
	return s
}

// Check verifies the table's invariants and returns the first violation
// (wrapping ErrCorrupt): GL = max LL; a bucket of local depth LL is pointed
// to by exactly 2^(GL−LL) directory entries, all equal in their low LL
// bits; every record's hash leads to the bucket holding it; every cache
// record's bucket has BNP set; no key is stored twice; the record count
// matches.
func (t *Table) Check() error {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if err := t.usable(); err != nil {
		return err
	}
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%s: %w", fmt.Sprintf(format, a...), ErrCorrupt)
	}
	refs := make([]int, t.hdr.nbuckets)
	first := make([]int, t.hdr.nbuckets)
	for i, no := range t.table {
		if refs[no] == 0 {
			first[no] = i
		}
		refs[no]++
	}
	lls := make([]uint8, t.hdr.nbuckets)
	var total int64
	var maxLL uint8
	seen := map[string]bool{}
	bnp := make([]bool, t.hdr.nbuckets)
	for no := uint32(0); no < t.hdr.nbuckets; no++ {
		p, err := t.readPage(t.bf, no)
		if err != nil {
			return err
		}
		b, err := decodeBucket(p)
		if err != nil {
			return fmt.Errorf("bucket %d: %w", no, err)
		}
		bnp[no] = b.bnp
		maxLL = max(maxLL, b.ll)
		if b.ll > t.hdr.gl {
			return bad("bucket %d has local depth %d > global depth %d", no, b.ll, t.hdr.gl)
		}
		if want := 1 << (t.hdr.gl - b.ll); refs[no] != want {
			return bad("bucket %d (LL %d) has %d directory pointers, want %d", no, b.ll, refs[no], want)
		}
		lls[no] = b.ll
		for _, r := range b.recs {
			if _, home := t.home(hashKey(r.key)); home != no {
				return bad("key %q is in bucket %d but hashes to bucket %d", r.key, no, home)
			}
			if seen[string(r.key)] {
				return bad("key %q is stored twice", r.key)
			}
			seen[string(r.key)] = true
			total++
		}
	}
	for i, no := range t.table {
		if ll := lls[no]; uint64(i)&mask(ll) != uint64(first[no])&mask(ll) {
			return bad("bucket %d is pointed to by entries %d and %d that differ in their low %d bits", no, first[no], i, ll)
		}
	}
	if maxLL != t.hdr.gl && t.hdr.gl > 0 {
		return bad("global depth %d is not the largest local depth %d", t.hdr.gl, maxLL)
	}
	for k := range t.cache {
		_, home := t.home(hashKey([]byte(k)))
		if !bnp[home] {
			return bad("cache record %q belongs to bucket %d whose BNP flag is clear", k, home)
		}
		if seen[k] {
			return bad("key %q is in its bucket and in the cache bucket", k)
		}
		total++
	}
	if total != t.hdr.records {
		return bad("header counts %d records, found %d", t.hdr.records, total)
	}
	return nil
}

// Close closes the files; later calls return ErrClosed. It is safe to call
// more than once.
func (t *Table) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil
	}
	t.closed = true
	return t.closeFiles()
}
