package main

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// Stats counts what the file system did. Dropped* are filled by Crash.
type Stats struct {
	Writes       int64 `json:"writes"`        // write requests
	WrittenBytes int64 `json:"written_bytes"` // bytes written (to memory)
	Fsyncs       int64 `json:"fsyncs"`        // fsync and fdatasync requests on files
	// FsyncsByFile counts the fsync requests by file (relative to the backing root).
	FsyncsByFile map[string]int64 `json:"fsyncs_by_file,omitempty"`
	SyncedBytes  int64            `json:"synced_bytes"` // dirty bytes applied to the backing files by fsyncs
	// DroppedBytes is the number of bytes a crash lost: for every file, the bytes of its
	// content in memory that differ from the backing file, plus the length difference.
	DroppedBytes int64 `json:"dropped_bytes"`
	// DroppedFiles names the files (relative to the backing root, as last seen) that lost
	// bytes, with how many.
	DroppedFiles map[string]int64 `json:"dropped_files,omitempty"`
	Crashed      bool             `json:"crashed"`
}

// FS is a mounted lazy file system. Create it with Mount.
type FS struct {
	backing string
	mnt     string
	server  *fuse.Server

	crashed                         atomic.Bool
	writes, written, fsyncs, synced atomic.Int64

	mu    sync.Mutex
	files map[uint64]*lazyFile // by the backing file's inode number

	statsMu      sync.Mutex
	fsyncsByFile map[string]int64

	// slow delays every write to a file of that base name before it takes effect (a slow
	// disk: readers see the file without the write meanwhile). Set before serving.
	slow map[string]time.Duration
}

// lazyFile is the content of one backing file as the processes on the mount see it.
type lazyFile struct {
	mu    sync.Mutex
	fd    int    // read-write descriptor of the backing inode, owned
	name  string // path relative to the backing root, for reports (may be stale after a rename)
	data  []byte // the content as written, synced or not
	dirty []span // ranges of data written since the last fsync, sorted, disjoint
	// backingSize is the backing file's size as last synced (or loaded).
	backingSize int64
}

type span struct{ lo, hi int64 }

// Mount mounts a lazy view of backing on mnt (both must be directories) and serves it
// in the background. It needs root (a direct mount(2): no fusermount is required).
//
// slow, if not nil, delays every write to a file of one of its base names by the
// duration given, before the write takes effect.
func Mount(backing, mnt string, slow map[string]time.Duration) (*FS, error) {
	backing, err := filepath.Abs(backing)
	if err != nil {
		return nil, err
	}
	l := &FS{backing: backing, mnt: mnt, files: map[uint64]*lazyFile{}, slow: slow, fsyncsByFile: map[string]int64{}}
	root := &fs.LoopbackRoot{Path: backing}
	var st syscall.Stat_t
	if err := syscall.Stat(backing, &st); err != nil {
		return nil, fmt.Errorf("cannot use %s as the backing directory: %w", backing, err)
	}
	root.Dev = uint64(st.Dev)
	root.NewNode = func(r *fs.LoopbackRoot, _ *fs.Inode, _ string, _ *syscall.Stat_t) fs.InodeEmbedder {
		return &node{LoopbackNode: fs.LoopbackNode{RootData: r}, lfs: l}
	}
	rootNode := root.NewNode(root, nil, "", &st)
	root.RootNode = rootNode
	zero := time.Duration(0)
	srv, err := fs.Mount(mnt, rootNode, &fs.Options{
		EntryTimeout: &zero, AttrTimeout: &zero, NegativeTimeout: &zero,
		MountOptions: fuse.MountOptions{DirectMountStrict: true, FsName: "lazyfs:" + backing, Name: "lazyfs",
			MaxWrite: 1 << 20, DisableXAttrs: true},
	})
	if err != nil {
		return nil, fmt.Errorf("cannot mount lazyfs on %s: %w", mnt, err)
	}
	l.server = srv
	return l, nil
}

// Wait waits until the file system is unmounted.
func (l *FS) Wait() { l.server.Wait() }

// Stats returns the counters so far.
func (l *FS) Stats() Stats {
	l.statsMu.Lock()
	byFile := maps.Clone(l.fsyncsByFile)
	l.statsMu.Unlock()
	return Stats{Writes: l.writes.Load(), WrittenBytes: l.written.Load(), Fsyncs: l.fsyncs.Load(), FsyncsByFile: byFile,
		SyncedBytes: l.synced.Load(), Crashed: l.crashed.Load()}
}

// Crash simulates a power loss: from now on every operation on the mount fails with
// EIO, and every write not yet fsynced is dropped (the backing files keep what the last
// fsync left). It returns the counters with what was dropped. Unmount afterwards.
func (l *FS) Crash() Stats {
	l.crashed.Store(true)
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.Stats()
	st.DroppedFiles = map[string]int64{}
	for ino, f := range l.files {
		f.mu.Lock()
		n := f.lost()
		if n > 0 {
			st.DroppedBytes += n
			st.DroppedFiles[f.name] += n
		}
		syscall.Close(f.fd)
		f.fd = -1
		f.mu.Unlock()
		delete(l.files, ino)
	}
	return st
}

// SyncAll applies every unsynced write to the backing files (a clean shutdown).
func (l *FS) SyncAll() error {
	if l.crashed.Load() {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, f := range l.files {
		f.mu.Lock()
		err := l.syncLocked(f)
		f.mu.Unlock()
		if err != 0 {
			return fmt.Errorf("cannot sync %s: %w", f.name, err)
		}
	}
	return nil
}

// Unmount unmounts the file system (lazily if it is busy).
func (l *FS) Unmount() error {
	if err := l.server.Unmount(); err != nil {
		if err2 := syscall.Unmount(l.mnt, syscall.MNT_DETACH); err2 != nil {
			return fmt.Errorf("cannot unmount %s: %v; lazily: %w", l.mnt, err, err2)
		}
	}
	return nil
}

// lost returns how many bytes of f's content the backing file does not hold.
func (f *lazyFile) lost() int64 {
	var st syscall.Stat_t
	if err := syscall.Fstat(f.fd, &st); err != nil {
		return int64(len(f.data))
	}
	size := st.Size
	n := int64(0)
	if size != int64(len(f.data)) {
		n += abs(size - int64(len(f.data)))
	}
	buf := make([]byte, 64<<10)
	for _, s := range f.dirty {
		for off := s.lo; off < s.hi && off < size; {
			m := min(int64(len(buf)), s.hi-off, size-off)
			k, err := syscall.Pread(f.fd, buf[:m], off)
			if err != nil || k <= 0 {
				n += s.hi - off
				break
			}
			for i := range k {
				if buf[i] != f.data[off+int64(i)] {
					n++
				}
			}
			off += int64(k)
		}
	}
	return n
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// addDirty marks [lo, hi) dirty.
func (f *lazyFile) addDirty(lo, hi int64) {
	if lo >= hi {
		return
	}
	i := sort.Search(len(f.dirty), func(i int) bool { return f.dirty[i].hi >= lo })
	j := i
	for j < len(f.dirty) && f.dirty[j].lo <= hi {
		lo = min(lo, f.dirty[j].lo)
		hi = max(hi, f.dirty[j].hi)
		j++
	}
	f.dirty = append(f.dirty[:i], append([]span{{lo, hi}}, f.dirty[j:]...)...)
}

// resize sets the content's length (truncate or extend with zeros).
func (f *lazyFile) resize(n int64) {
	if n <= int64(len(f.data)) {
		f.data = f.data[:n]
		k := 0
		for _, s := range f.dirty {
			if s.lo < n {
				s.hi = min(s.hi, n)
				f.dirty[k] = s
				k++
			}
		}
		f.dirty = f.dirty[:k]
		return
	}
	old := int64(len(f.data))
	f.data = append(f.data, make([]byte, n-old)...)
	f.addDirty(old, n)
}

// syncLocked writes f's dirty ranges and its size to the backing file and fsyncs it.
func (l *FS) syncLocked(f *lazyFile) syscall.Errno {
	if f.fd < 0 {
		return syscall.EIO
	}
	for _, s := range f.dirty {
		for off := s.lo; off < s.hi; {
			n, err := syscall.Pwrite(f.fd, f.data[off:s.hi], off)
			if err != nil {
				return fs.ToErrno(err)
			}
			off += int64(n)
			l.synced.Add(int64(n))
		}
	}
	f.dirty = f.dirty[:0]
	if f.backingSize != int64(len(f.data)) {
		if err := syscall.Ftruncate(f.fd, int64(len(f.data))); err != nil {
			return fs.ToErrno(err)
		}
		f.backingSize = int64(len(f.data))
	}
	return fs.ToErrno(syscall.Fdatasync(f.fd))
}

// fileFor returns the lazy content of the backing inode open as fd, loading it on first
// use. name is for reports.
func (l *FS) fileFor(fd int, name string) (*lazyFile, syscall.Errno) {
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return nil, fs.ToErrno(err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if f, ok := l.files[st.Ino]; ok {
		f.name = name
		return f, 0
	}
	rw, err := syscall.Open("/proc/self/fd/"+strconv.Itoa(fd), syscall.O_RDWR|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, fs.ToErrno(err)
	}
	data := make([]byte, st.Size)
	for off := int64(0); off < st.Size; {
		n, err := syscall.Pread(rw, data[off:], off)
		if err != nil || n == 0 {
			syscall.Close(rw)
			if err == nil {
				err = syscall.EIO
			}
			return nil, fs.ToErrno(err)
		}
		off += int64(n)
	}
	f := &lazyFile{fd: rw, name: name, data: data, backingSize: st.Size}
	l.files[st.Ino] = f
	return f, 0
}

// lookupIno returns the loaded content of backing inode ino, or nil.
func (l *FS) lookupIno(ino uint64) *lazyFile {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.files[ino]
}

// forget drops the content of inode ino (the file was removed or replaced: its number
// may be reused by a new file).
func (l *FS) forget(ino uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if f, ok := l.files[ino]; ok {
		f.mu.Lock()
		syscall.Close(f.fd)
		f.fd = -1
		f.mu.Unlock()
		delete(l.files, ino)
	}
}

// node is a loopback node whose files are lazy.
type node struct {
	fs.LoopbackNode
	lfs *FS
}

var (
	_ fs.NodeLookuper  = (*node)(nil)
	_ fs.NodeOpener    = (*node)(nil)
	_ fs.NodeCreater   = (*node)(nil)
	_ fs.NodeGetattrer = (*node)(nil)
	_ fs.NodeSetattrer = (*node)(nil)
	_ fs.NodeUnlinker  = (*node)(nil)
	_ fs.NodeRenamer   = (*node)(nil)
	_ fs.NodeMkdirer   = (*node)(nil)
	_ fs.NodeRmdirer   = (*node)(nil)
)

func (n *node) rel() string { return n.Path(n.Root()) }

func (n *node) backingPath(name string) string {
	return filepath.Join(n.RootData.Path, n.rel(), name)
}

func (n *node) wrap(inner fs.FileHandle, name string) (fs.FileHandle, syscall.Errno) {
	pf, ok := inner.(fs.FilePassthroughFder)
	if !ok {
		return nil, syscall.EIO
	}
	fd, _ := pf.PassthroughFd()
	f, errno := n.lfs.fileFor(fd, name)
	if errno != 0 {
		if r, ok := inner.(fs.FileReleaser); ok {
			r.Release(context.Background())
		}
		return nil, errno
	}
	return &handle{inner: inner, fd: fd, f: f, lfs: n.lfs}, 0
}

// Lookup answers the entry with the lazy content's size: the kernel takes a looked-up
// entry's size as the file's, and a smaller one (the backing file's) would cut the page
// cache under a process that maps the file (SIGBUS) or appends to it.
func (n *node) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if n.lfs.crashed.Load() {
		return nil, syscall.EIO
	}
	ch, errno := n.LoopbackNode.Lookup(ctx, name, out)
	if errno != 0 {
		return ch, errno
	}
	var st syscall.Stat_t
	if syscall.Lstat(n.backingPath(name), &st) == nil {
		if f := n.lfs.lookupIno(st.Ino); f != nil {
			f.mu.Lock()
			out.Attr.Size = uint64(len(f.data))
			out.Attr.Blocks = (out.Attr.Size + 511) / 512
			f.mu.Unlock()
		}
	}
	return ch, 0
}

func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if n.lfs.crashed.Load() {
		return nil, 0, syscall.EIO
	}
	trunc := flags&syscall.O_TRUNC != 0
	inner, ff, errno := n.LoopbackNode.Open(ctx, flags&^syscall.O_TRUNC)
	if errno != 0 {
		return nil, 0, errno
	}
	h, errno := n.wrap(inner, n.rel())
	if errno != 0 {
		return nil, 0, errno
	}
	if trunc {
		hh := h.(*handle)
		hh.f.mu.Lock()
		hh.f.resize(0)
		hh.f.mu.Unlock()
	}
	return h, ff &^ fuse.FOPEN_KEEP_CACHE, 0
}

func (n *node) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	if n.lfs.crashed.Load() {
		return nil, nil, 0, syscall.EIO
	}
	var before syscall.Stat_t
	existed := syscall.Lstat(n.backingPath(name), &before) == nil
	ch, inner, ff, errno := n.LoopbackNode.Create(ctx, name, flags&^syscall.O_TRUNC, mode, out)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	if !existed {
		// A new file: any content remembered for its inode number is stale.
		if pf, ok := inner.(fs.FilePassthroughFder); ok {
			fd, _ := pf.PassthroughFd()
			var st syscall.Stat_t
			if syscall.Fstat(fd, &st) == nil {
				n.lfs.forget(st.Ino)
			}
		}
	}
	h, errno := n.wrap(inner, filepath.Join(n.rel(), name))
	if errno != 0 {
		return nil, nil, 0, errno
	}
	hh := h.(*handle)
	hh.f.mu.Lock()
	if flags&syscall.O_TRUNC != 0 {
		hh.f.resize(0)
	}
	out.Attr.Size = uint64(len(hh.f.data))
	hh.f.mu.Unlock()
	return ch, h, ff &^ fuse.FOPEN_KEEP_CACHE, 0
}

func (n *node) Getattr(ctx context.Context, fh fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	if n.lfs.crashed.Load() {
		return syscall.EIO
	}
	if h, ok := fh.(*handle); ok {
		return h.Getattr(ctx, out)
	}
	var st syscall.Stat_t
	if err := syscall.Lstat(filepath.Join(n.RootData.Path, n.rel()), &st); err != nil {
		return fs.ToErrno(err)
	}
	out.FromStat(&st)
	if f := n.lfs.lookupIno(st.Ino); f != nil {
		f.mu.Lock()
		out.Size = uint64(len(f.data))
		out.Blocks = (out.Size + 511) / 512
		f.mu.Unlock()
	}
	return 0
}

func (n *node) Setattr(ctx context.Context, fh fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if n.lfs.crashed.Load() {
		return syscall.EIO
	}
	var inner fs.FileHandle
	if h, ok := fh.(*handle); ok {
		inner = h.inner
	}
	sz, resize := in.GetSize()
	in.Valid &^= fuse.FATTR_SIZE
	if errno := n.LoopbackNode.Setattr(ctx, inner, in, out); errno != 0 {
		return errno
	}
	if resize {
		var f *lazyFile
		if h, ok := fh.(*handle); ok {
			f = h.f
		} else {
			fd, err := syscall.Open(filepath.Join(n.RootData.Path, n.rel()), syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
			if err != nil {
				return fs.ToErrno(err)
			}
			var errno syscall.Errno
			f, errno = n.lfs.fileFor(fd, n.rel())
			syscall.Close(fd)
			if errno != 0 {
				return errno
			}
		}
		f.mu.Lock()
		f.resize(int64(sz))
		f.mu.Unlock()
	}
	return n.Getattr(ctx, fh, out)
}

// removed forgets the content of the file at the backing path p when its last link is
// about to go.
func (n *node) removing(p string) {
	var st syscall.Stat_t
	if syscall.Lstat(p, &st) == nil && st.Nlink <= 1 && st.Mode&syscall.S_IFMT == syscall.S_IFREG {
		n.lfs.forget(st.Ino)
	}
}

func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	if n.lfs.crashed.Load() {
		return syscall.EIO
	}
	n.removing(n.backingPath(name))
	return n.LoopbackNode.Unlink(ctx, name)
}

func (n *node) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	if n.lfs.crashed.Load() {
		return syscall.EIO
	}
	if np, ok := newParent.(*node); ok && flags&unix.RENAME_EXCHANGE == 0 {
		np.removing(np.backingPath(newName))
	}
	return n.LoopbackNode.Rename(ctx, name, newParent, newName, flags)
}

func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if n.lfs.crashed.Load() {
		return nil, syscall.EIO
	}
	return n.LoopbackNode.Mkdir(ctx, name, mode, out)
}

func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno {
	if n.lfs.crashed.Load() {
		return syscall.EIO
	}
	return n.LoopbackNode.Rmdir(ctx, name)
}

// handle is an open lazy file. Reads and writes go to memory; Fsync applies the writes
// to the backing file.
type handle struct {
	inner fs.FileHandle // the loopback handle: owns fd, serves locks and flush
	fd    int
	f     *lazyFile
	lfs   *FS
}

var (
	_ fs.FileReader    = (*handle)(nil)
	_ fs.FileWriter    = (*handle)(nil)
	_ fs.FileFsyncer   = (*handle)(nil)
	_ fs.FileFlusher   = (*handle)(nil)
	_ fs.FileReleaser  = (*handle)(nil)
	_ fs.FileGetattrer = (*handle)(nil)
)

func (h *handle) Read(ctx context.Context, buf []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if h.lfs.crashed.Load() {
		return nil, syscall.EIO
	}
	h.f.mu.Lock()
	defer h.f.mu.Unlock()
	if off >= int64(len(h.f.data)) {
		return fuse.ReadResultData(nil), 0
	}
	n := copy(buf, h.f.data[off:])
	return fuse.ReadResultData(buf[:n]), 0
}

func (h *handle) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	if h.lfs.crashed.Load() {
		return 0, syscall.EIO
	}
	if d := h.lfs.slow[filepath.Base(h.f.name)]; d > 0 {
		time.Sleep(d) // the slow disk: time is the subject
	}
	h.f.mu.Lock()
	defer h.f.mu.Unlock()
	end := off + int64(len(data))
	if end > int64(len(h.f.data)) {
		if end > int64(cap(h.f.data)) {
			grown := make([]byte, len(h.f.data), max(end, 2*int64(cap(h.f.data))))
			copy(grown, h.f.data)
			h.f.data = grown
		}
		old := len(h.f.data)
		h.f.data = h.f.data[:end]
		clear(h.f.data[old:])
	}
	copy(h.f.data[off:], data)
	h.f.addDirty(off, end)
	h.lfs.writes.Add(1)
	h.lfs.written.Add(int64(len(data)))
	return uint32(len(data)), 0
}

func (h *handle) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	if h.lfs.crashed.Load() {
		return syscall.EIO
	}
	h.lfs.fsyncs.Add(1)
	h.f.mu.Lock()
	defer h.f.mu.Unlock()
	h.lfs.statsMu.Lock()
	h.lfs.fsyncsByFile[h.f.name]++
	h.lfs.statsMu.Unlock()
	return h.lfs.syncLocked(h.f)
}

func (h *handle) Flush(ctx context.Context) syscall.Errno {
	if fl, ok := h.inner.(fs.FileFlusher); ok {
		return fl.Flush(ctx)
	}
	return 0
}

func (h *handle) Release(ctx context.Context) syscall.Errno {
	if r, ok := h.inner.(fs.FileReleaser); ok {
		return r.Release(ctx)
	}
	return 0
}

func (h *handle) Getattr(ctx context.Context, out *fuse.AttrOut) syscall.Errno {
	if h.lfs.crashed.Load() {
		return syscall.EIO
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(h.fd, &st); err != nil {
		return fs.ToErrno(err)
	}
	out.FromStat(&st)
	h.f.mu.Lock()
	out.Size = uint64(len(h.f.data))
	out.Blocks = (out.Size + 511) / 512
	h.f.mu.Unlock()
	return 0
}
