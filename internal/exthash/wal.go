package exthash

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
)

// The write-ahead log holds the page images of the last commit:
//
//	0..7    magic "EXTHWAL1"
//	8..15   sequence number
//	16..19  n, the number of page images
//	then n× { file (uint8: 0 bucket file, 1 directory file), page (uint32), PageSize bytes }
//	then    CRC-32C of everything before it
//
// A commit writes the log at offset 0 and syncs it before touching the data
// files, then writes the pages in place and syncs the data files. Open
// replays a log whose checksum matches (rewriting pages with the images they
// already hold is harmless) and ignores one that does not: a torn log means
// the data files were not touched by that commit yet. Bytes past the
// checksum (left by a longer earlier log) are ignored.
const (
	walMagic     = "EXTHWAL1"
	walHeader    = 20
	walEntryHead = 5
	fileBuckets  = 0
	fileDir      = 1
)

// pageRef names one page of one data file.
type pageRef struct {
	file uint8
	no   uint32
}

type pageImage struct {
	ref  pageRef
	data []byte
}

func encodeWAL(seq uint64, pages []pageImage) []byte {
	b := make([]byte, walHeader, walHeader+len(pages)*(walEntryHead+PageSize)+4)
	copy(b, walMagic)
	binary.LittleEndian.PutUint64(b[8:], seq)
	binary.LittleEndian.PutUint32(b[16:], uint32(len(pages)))
	for _, p := range pages {
		b = append(b, p.ref.file)
		b = binary.LittleEndian.AppendUint32(b, p.ref.no)
		b = append(b, p.data...)
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// decodeWAL parses a log; ok is false for an empty, torn or foreign log.
// It is a decoder of untrusted bytes (fuzzed by FuzzDecodeWAL).
func decodeWAL(b []byte) (seq uint64, pages []pageImage, ok bool) {
	if len(b) < walHeader+4 || string(b[:8]) != walMagic {
		return 0, nil, false
	}
	seq = binary.LittleEndian.Uint64(b[8:])
	n := binary.LittleEndian.Uint32(b[16:])
	const entry = walEntryHead + PageSize
	if uint64(n) > uint64(len(b)-walHeader-4)/entry {
		return 0, nil, false
	}
	end := walHeader + int(n)*entry
	if binary.LittleEndian.Uint32(b[end:]) != crc32.Checksum(b[:end], castagnoli) {
		return 0, nil, false
	}
	pages = make([]pageImage, n)
	off := walHeader
	for i := range pages {
		f := b[off]
		if f != fileBuckets && f != fileDir {
			return 0, nil, false
		}
		pages[i] = pageImage{
			ref:  pageRef{file: f, no: binary.LittleEndian.Uint32(b[off+1:])},
			data: b[off+walEntryHead : off+entry : off+entry],
		}
		off += entry
	}
	return seq, pages, true
}

// readAll reads a whole file.
func readAll(f File) ([]byte, error) {
	n, err := f.Size()
	if err != nil {
		return nil, err
	}
	b := make([]byte, n)
	if n == 0 {
		return b, nil
	}
	if _, err := f.ReadAt(b, 0); err != nil && err != io.EOF {
		return nil, fmt.Errorf("cannot read log: %w", err)
	}
	return b, nil
}
