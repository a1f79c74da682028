package state

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzInspect: Inspect of any state file content returns an inspection or
// an error wrapping ErrDamaged; it never panics or crashes the process
// (bbolt faults on a damaged memory map, which Inspect must contain).
func FuzzInspect(f *testing.F) {
	// A fixed file, so that a failing input reproduces (a new state's
	// layout varies with how commits were batched). Regenerate it with
	// SPIDER_REGEN_FUZZ_STATE=1.
	seed := filepath.Join("testdata", "inspect-seed.db")
	if os.Getenv("SPIDER_REGEN_FUZZ_STATE") != "" {
		dir := f.TempDir()
		if err := fillState(dir); err != nil {
			f.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dir, DBFile))
		if err != nil {
			f.Fatal(err)
		}
		if err := os.WriteFile(seed, b, 0o644); err != nil {
			f.Fatal(err)
		}
	}
	orig, err := os.ReadFile(seed)
	if err != nil {
		f.Fatal(err)
	}
	// The file is fixed; the fuzzer chooses where to overwrite it and with
	// what (a whole file as input would make every execution slow).
	f.Add(0, []byte{0})
	f.Add(4096+20, []byte{0xff, 0xff})
	f.Add(3*4096+100, []byte{0x10})
	f.Add(len(orig)/2, []byte("garbage"))
	f.Add(-1, []byte{}) // cut the file at the patch's offset
	f.Fuzz(func(t *testing.T, at int, patch []byte) {
		data := append([]byte(nil), orig...)
		at = ((at % len(data)) + len(data)) % len(data)
		if len(patch) == 0 {
			data = data[:at]
		} else {
			copy(data[at:], patch)
		}
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, DBFile), data, 0o600); err != nil {
			t.Fatal(err)
		}
		in, err := Inspect(dir, 0)
		if err != nil && !errors.Is(err, ErrDamaged) {
			t.Fatalf("error %v does not wrap ErrDamaged", err)
		}
		if err == nil && in == nil {
			t.Fatal("no inspection and no error")
		}
	})
}
