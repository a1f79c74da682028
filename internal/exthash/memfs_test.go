package exthash

import (
	"errors"
	"io"
	"math/rand/v2"
	"path/filepath"
	"sync"
)

// errCrash is what every call returns once the simulated machine crashed.
var errCrash = errors.New("simulated crash")

// memFS is an in-memory FS that models a disk with a volatile cache: a
// WriteAt is visible to reads at once but durable only after Sync. It can
// crash after a budget of WriteAt/Sync calls (the write that hits the budget
// may be torn); crash then keeps the durable bytes plus a random subset of
// the unsynced writes, each possibly cut at a 512-byte sector boundary —
// what a power loss may leave.
type memFS struct {
	mu      sync.Mutex
	rng     *rand.Rand
	files   map[string]*memFile
	budget  int // calls left before the crash; < 0: never
	crashed bool
}

type pendingWrite struct {
	off  int64
	data []byte
}

type memFile struct {
	fs      *memFS
	durable []byte
	cur     []byte
	pending []pendingWrite
}

func newMemFS(seed uint64) *memFS {
	return &memFS{rng: rand.New(rand.NewPCG(seed, 7)), files: map[string]*memFile{}, budget: -1}
}

func (m *memFS) MkdirAll(string) error { return nil }

func (m *memFS) SyncDir(string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.crashed {
		return errCrash
	}
	return nil
}

func (m *memFS) OpenFile(name string) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.crashed {
		return nil, errCrash
	}
	name = filepath.Clean(name)
	f := m.files[name]
	if f == nil {
		f = &memFile{fs: m}
		m.files[name] = f
	}
	return f, nil
}

// arm makes the FS crash after n more WriteAt/Sync calls.
func (m *memFS) arm(n int) {
	m.mu.Lock()
	m.budget = n
	m.mu.Unlock()
}

// spend counts one call; it reports whether the call hits the crash.
func (m *memFS) spend() (crashNow bool) {
	if m.budget < 0 {
		return false
	}
	m.budget--
	if m.budget == 0 {
		m.crashed = true
		return true
	}
	return false
}

// crash loses what a power failure may lose and makes the FS usable again.
func (m *memFS) crash() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, f := range m.files {
		img := append([]byte(nil), f.durable...)
		for _, w := range f.pending {
			if m.rng.IntN(2) == 0 {
				continue
			}
			data := w.data
			if m.rng.IntN(4) == 0 && len(data) > 512 {
				data = data[:512*m.rng.IntN(len(data)/512)]
			}
			img = writeAt(img, data, w.off)
		}
		f.durable, f.cur, f.pending = img, append([]byte(nil), img...), nil
	}
	m.crashed, m.budget = false, -1
}

func writeAt(b, p []byte, off int64) []byte {
	if end := int(off) + len(p); end > len(b) {
		b = append(b, make([]byte, end-len(b))...)
	}
	copy(b[off:], p)
	return b
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.fs.crashed {
		return 0, errCrash
	}
	if off >= int64(len(f.cur)) {
		return 0, io.EOF
	}
	n := copy(p, f.cur[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.fs.crashed {
		return 0, errCrash
	}
	data := append([]byte(nil), p...)
	if f.fs.spend() {
		// The write in progress at the crash: maybe some sectors made it.
		if k := f.fs.rng.IntN(len(data)/512 + 1); k > 0 {
			f.pending = append(f.pending, pendingWrite{off, data[:min(len(data), 512*k)]})
		}
		return 0, errCrash
	}
	f.cur = writeAt(f.cur, data, off)
	f.pending = append(f.pending, pendingWrite{off, data})
	return len(p), nil
}

func (f *memFile) Sync() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.fs.crashed || f.fs.spend() {
		return errCrash
	}
	f.durable = append(f.durable[:0], f.cur...)
	f.pending = nil
	return nil
}

func (f *memFile) Size() (int64, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	return int64(len(f.cur)), nil
}

func (f *memFile) Close() error { return nil }
