package frontier

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Spill files. Each front queue has its own FIFO stream of segment files
// named spill-pQQ-NNNNNNNNNN.seg in the spill directory. A segment is a
// sequence of records: uvarint(len(payload)) followed by payload, the
// Request binary encoding. Appends go to the newest segment through a
// buffered writer; when it reaches segmentBytes a new one is started. Reads
// come from the oldest segment; a fully read segment is deleted at once.
const (
	spillPrefix         = "spill-"
	spillSuffix         = ".seg"
	defaultSegmentBytes = 64 << 20
	spillBufferBytes    = 64 << 10
	// maxRecordBytes bounds one record; a longer length prefix means the
	// file is damaged.
	maxRecordBytes = 1 << 20
)

// spiller owns the spill streams of one frontier.
type spiller struct {
	dir          string // "" until first use when Config.SpillDir is empty
	tempDir      bool   // dir was created by us and is removed on close
	segmentBytes int64
	streams      []spillStream
	total        int64
	nextSeg      uint64
	payload      []byte
	hdr          []byte
}

type spillStream struct {
	segs  []*segment // oldest first; the last one is being written
	wf    *os.File
	w     *bufio.Writer
	dirty bool // w holds bytes not yet written to wf
	rf    *os.File
	r     *bufio.Reader
	n     int64 // records in this stream
}

type segment struct {
	path          string
	written, read int64
	size          int64
}

func newSpiller(dir string, queues int) (*spiller, error) {
	sp := &spiller{dir: dir, segmentBytes: defaultSegmentBytes, streams: make([]spillStream, queues)}
	if dir == "" {
		return sp, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("cannot create spill directory: %w", err)
	}
	if err := removeSpillFiles(dir); err != nil {
		return nil, err
	}
	return sp, nil
}

// removeSpillFiles deletes the spill segments left in dir by an earlier run;
// other files are left alone.
func removeSpillFiles(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("cannot list spill directory: %w", err)
	}
	for _, e := range entries {
		name := e.Name()
		if e.Type().IsRegular() && strings.HasPrefix(name, spillPrefix) && strings.HasSuffix(name, spillSuffix) {
			if err := os.Remove(filepath.Join(dir, name)); err != nil {
				return fmt.Errorf("cannot remove stale spill file: %w", err)
			}
		}
	}
	return nil
}

func (sp *spiller) len(q int) int64 { return sp.streams[q].n }

// append writes r at the tail of stream q.
func (sp *spiller) append(q int, r Request) error {
	s := &sp.streams[q]
	if len(s.segs) == 0 || s.segs[len(s.segs)-1].size >= sp.segmentBytes {
		if err := sp.startSegment(q); err != nil {
			return err
		}
	}
	sp.payload, _ = r.AppendBinary(sp.payload[:0])
	sp.hdr = binary.AppendUvarint(sp.hdr[:0], uint64(len(sp.payload)))
	if _, err := s.w.Write(sp.hdr); err != nil {
		return fmt.Errorf("cannot write spill file (is the spill directory's disk full?): %w", err)
	}
	if _, err := s.w.Write(sp.payload); err != nil {
		return fmt.Errorf("cannot write spill file (is the spill directory's disk full?): %w", err)
	}
	seg := s.segs[len(s.segs)-1]
	seg.size += int64(len(sp.hdr) + len(sp.payload))
	seg.written++
	s.n++
	sp.total++
	s.dirty = true
	return nil
}

// startSegment closes the current write segment of stream q, if any, and
// opens a new one.
func (sp *spiller) startSegment(q int) error {
	if sp.dir == "" {
		dir, err := os.MkdirTemp("", "spider-spill-")
		if err != nil {
			return fmt.Errorf("cannot create a temporary spill directory (set Config.SpillDir): %w", err)
		}
		sp.dir, sp.tempDir = dir, true
	}
	s := &sp.streams[q]
	if err := s.closeWriter(); err != nil {
		return err
	}
	sp.nextSeg++
	path := filepath.Join(sp.dir, fmt.Sprintf("%sp%02d-%010d%s", spillPrefix, q, sp.nextSeg, spillSuffix))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("cannot create spill file: %w", err)
	}
	s.wf = f
	if s.w == nil {
		s.w = bufio.NewWriterSize(f, spillBufferBytes)
	} else {
		s.w.Reset(f)
	}
	s.segs = append(s.segs, &segment{path: path})
	return nil
}

func (s *spillStream) closeWriter() error {
	if s.wf == nil {
		return nil
	}
	err := s.w.Flush()
	if cerr := s.wf.Close(); err == nil {
		err = cerr
	}
	s.wf, s.dirty = nil, false
	if err != nil {
		return fmt.Errorf("cannot finish spill file (is the disk full?): %w", err)
	}
	return nil
}

func (s *spillStream) closeReader() {
	if s.rf != nil {
		_ = s.rf.Close()
		s.rf = nil
	}
}

// pop reads the record at the head of stream q, which must not be empty.
func (sp *spiller) pop(q int) (Request, error) {
	s := &sp.streams[q]
	seg := s.segs[0]
	if len(s.segs) == 1 && s.dirty {
		if err := s.w.Flush(); err != nil {
			return Request{}, fmt.Errorf("cannot write spill file (is the disk full?): %w", err)
		}
		s.dirty = false
	}
	if s.rf == nil {
		f, err := os.Open(seg.path)
		if err != nil {
			return Request{}, fmt.Errorf("cannot open spill file: %w", err)
		}
		s.rf = f
		if s.r == nil {
			s.r = bufio.NewReaderSize(f, spillBufferBytes)
		} else {
			s.r.Reset(f)
		}
	}
	var r Request
	var err error
	r, sp.payload, err = readRecord(s.r, sp.payload)
	if err != nil {
		return Request{}, fmt.Errorf("cannot read spill file %s record %d: %w", seg.path, seg.read, err)
	}
	seg.read++
	s.n--
	sp.total--
	if seg.read == seg.written {
		s.closeReader()
		if len(s.segs) == 1 {
			if err := s.closeWriter(); err != nil {
				return Request{}, err
			}
		}
		s.segs[0] = nil
		s.segs = s.segs[1:]
		if err := os.Remove(seg.path); err != nil {
			return r, fmt.Errorf("cannot remove spent spill file: %w", err)
		}
	}
	return r, nil
}

// drop discards stream q after a read error, returning how many records were
// lost.
func (sp *spiller) drop(q int) int64 {
	s := &sp.streams[q]
	lost := s.n
	s.closeReader()
	_ = s.closeWriter()
	for _, seg := range s.segs {
		_ = os.Remove(seg.path)
	}
	s.segs = nil
	sp.total -= s.n
	s.n = 0
	return lost
}

// close deletes every spill file (and the directory if it was temporary).
func (sp *spiller) close() error {
	var errs []error
	for q := range sp.streams {
		s := &sp.streams[q]
		s.closeReader()
		if err := s.closeWriter(); err != nil {
			errs = append(errs, err)
		}
		for _, seg := range s.segs {
			if err := os.Remove(seg.path); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, fmt.Errorf("cannot remove spill file: %w", err))
			}
		}
		s.segs, s.n = nil, 0
	}
	sp.total = 0
	if sp.tempDir {
		if err := os.RemoveAll(sp.dir); err != nil {
			errs = append(errs, fmt.Errorf("cannot remove temporary spill directory: %w", err))
		}
		sp.dir, sp.tempDir = "", false
	}
	return errors.Join(errs...)
}

// readRecord reads one length-prefixed Request from r, using buf as scratch
// space, and returns the (possibly grown) buffer for reuse.
func readRecord(r *bufio.Reader, buf []byte) (Request, []byte, error) {
	n, err := binary.ReadUvarint(r)
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return Request{}, buf, fmt.Errorf("cannot read record length: %w", err)
	}
	if n > maxRecordBytes {
		return Request{}, buf, fmt.Errorf("cannot read record: length %d exceeds %d bytes, the file is damaged: %w", n, maxRecordBytes, ErrBadEncoding)
	}
	if uint64(cap(buf)) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return Request{}, buf, fmt.Errorf("cannot read record body: %w", err)
	}
	var req Request
	if err := req.UnmarshalBinary(buf); err != nil {
		return Request{}, buf, err
	}
	return req, buf, nil
}
