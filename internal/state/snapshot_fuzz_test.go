package state

import (
	"bytes"
	"encoding/binary"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/spider-crawler/spider/internal/dedup"
)

// FuzzLoadSnapshot feeds arbitrary snapshot files to Open's snapshot
// reader: it must reject what does not match (returning nil so that Open
// rebuilds), never panic, and always remove the file.
func FuzzLoadSnapshot(f *testing.F) {
	const txid, seen = 7, 3
	valid := func() []byte {
		var buf bytes.Buffer
		hdr := append([]byte(snapshotMagic), make([]byte, 20)...)
		binary.LittleEndian.PutUint32(hdr[4:], snapshotVersion)
		binary.LittleEndian.PutUint64(hdr[8:], txid)
		binary.LittleEndian.PutUint64(hdr[16:], seen)
		buf.Write(hdr)
		b := dedup.NewBloom(100, 1e-3)
		b.Add("a")
		if _, err := b.WriteTo(&buf); err != nil {
			f.Fatal(err)
		}
		return buf.Bytes()
	}()
	f.Add(valid)
	f.Add(valid[:30])
	f.Add([]byte("SPSS"))
	f.Add([]byte{})
	dir := f.TempDir()
	s := &Store{dir: dir, log: slog.New(slog.NewTextHandler(io.Discard, nil)), opt: Options{FPRate: 1e-3}}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, SnapshotFile)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		b := s.loadSnapshot(txid, seen)
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Fatal("snapshot file not removed")
		}
		if b == nil {
			return
		}
		if b.M() == 0 || b.K() == 0 {
			t.Fatal("accepted an empty filter")
		}
		if bytes.Equal(data, valid) && !b.Test("a") {
			t.Fatal("valid snapshot lost its key")
		}
	})
}
