package index

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// ManifestFile names the index's list of live segments, in the index
// directory. It is replaced atomically (write, fsync, rename) on every
// change, so a reader sees either the old or the new list.
const ManifestFile = "MANIFEST"

// lockFile is taken by the one writer of an index directory.
const lockFile = "LOCK"

const manifestVersion = 1

// manifest is the index's root: its segments, oldest first (a newer
// segment's documents and deletions override older ones), and the
// incremental build's checkpoint.
type manifest struct {
	Version     int           `json:"version"`
	Generation  uint64        `json:"generation"`
	NextSegment uint64        `json:"next_segment"`
	Segments    []segmentMeta `json:"segments"`
	// RecordsOffset is how many bytes of DATA/records.jsonl are indexed.
	RecordsOffset int64 `json:"records_offset"`
	// Source says how the index was built: "embedded" (incremental from
	// DATA/records.jsonl) or "distributed" (a full build over Redis).
	Source string `json:"source,omitempty"`
	// Fields are the BM25F field weights the segments were built with
	// (absent: none committed yet).
	Fields *FieldWeights `json:"fields,omitempty"`
}

// segmentMeta describes one segment file.
type segmentMeta struct {
	Name  string `json:"name"`
	Docs  int    `json:"docs"`
	Terms int    `json:"terms"`
	Tombs int    `json:"deletions"`
	Bytes int64  `json:"bytes"`
}

// readManifest reads dir/MANIFEST. A missing file yields an empty manifest
// and exists=false.
func readManifest(dir string) (m manifest, exists bool, err error) {
	b, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if errors.Is(err, fs.ErrNotExist) {
		return manifest{Version: manifestVersion, NextSegment: 1}, false, nil
	}
	if err != nil {
		return m, false, fmt.Errorf("cannot read the index manifest: %w", err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, true, fmt.Errorf("cannot read the index manifest %s: %v; run spider fsck --data DIR --repair (it resets the index), then spider index: %w",
			filepath.Join(dir, ManifestFile), err, ErrCorrupt)
	}
	if m.Version != manifestVersion {
		return m, true, fmt.Errorf("index manifest has version %d, this spider reads version %d; rebuild the index: %w",
			m.Version, manifestVersion, ErrCorrupt)
	}
	for _, s := range m.Segments {
		if s.Name == "" || filepath.Base(s.Name) != s.Name {
			return m, true, fmt.Errorf("index manifest names segment %q, which is not a plain file name: %w", s.Name, ErrCorrupt)
		}
	}
	return m, true, nil
}

// writeManifest replaces dir/MANIFEST atomically.
func writeManifest(dir string, m manifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("cannot encode the index manifest: %w", err)
	}
	b = append(b, '\n')
	if _, err := createFile(dir, ManifestFile, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	}); err != nil {
		return err
	}
	return syncDir(dir)
}

// syncDir makes created, renamed and removed names in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("cannot sync directory %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("cannot sync directory %s: %w", dir, err)
	}
	return nil
}
