package index

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// SegmentDamage is one live segment that failed verification.
type SegmentDamage struct {
	Name string // segment file name in the index directory
	Err  error  // what is wrong (wraps ErrCorrupt or fs.ErrNotExist)
}

// Verify checks the index in dir without changing it: MANIFEST must parse
// (else the error wraps ErrCorrupt; a missing MANIFEST yields exists
// false and no error), and every live segment must exist, have the size the
// manifest recorded and pass the checks of opening (magics, version,
// section bounds, every section's CRC-32C). It returns the live segments
// that fail, in manifest order.
func Verify(dir string) (damaged []SegmentDamage, exists bool, err error) {
	m, exists, err := readManifest(dir)
	if err != nil || !exists {
		return nil, exists, err
	}
	return verifySegments(dir, m.Segments), true, nil
}

// verifySegments checks the segments of a manifest (see Verify).
func verifySegments(dir string, segs []segmentMeta) []SegmentDamage {
	var out []SegmentDamage
	for _, meta := range segs {
		path := filepath.Join(dir, meta.Name)
		info, err := os.Stat(path)
		if errors.Is(err, fs.ErrNotExist) {
			out = append(out, SegmentDamage{meta.Name, fmt.Errorf("segment %s named by %s is missing: %w", meta.Name, ManifestFile, err)})
			continue
		}
		if err != nil {
			out = append(out, SegmentDamage{meta.Name, fmt.Errorf("cannot stat segment %s: %w", meta.Name, err)})
			continue
		}
		if meta.Bytes > 0 && info.Size() != meta.Bytes {
			out = append(out, SegmentDamage{meta.Name, fmt.Errorf("segment %s is %d bytes, %s says %d: %w",
				meta.Name, info.Size(), ManifestFile, meta.Bytes, ErrCorrupt)})
			continue
		}
		seg, err := openSegment(dir, meta.Name)
		if err != nil {
			out = append(out, SegmentDamage{meta.Name, err})
			continue
		}
		seg.close()
	}
	return out
}

// ResetDir empties the index in dir (a manifest with no segments and a zero
// checkpoint, the segments removed), under the writer's lock, so that the
// next Build indexes every record again. A directory without an index is
// left alone. A corrupt MANIFEST is replaced.
func ResetDir(dir string) error {
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if _, _, err := readManifest(dir); errors.Is(err, ErrCorrupt) {
		if err := os.Remove(filepath.Join(dir, ManifestFile)); err != nil {
			return fmt.Errorf("cannot remove the damaged index manifest: %w", err)
		}
	}
	w, err := OpenWriter(dir, WriterOptions{})
	if err != nil {
		return err
	}
	if err := w.Reset(w.man.Source); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}
