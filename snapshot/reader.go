package snapshot

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"slices"
)

// minChunk is the first step by which a record buffer grows. Later steps
// match what has already arrived, so the buffer stays within about twice the
// bytes really read and a hostile length prefix cannot force a large allocation.
const minChunk = 64 << 10

// source is a buffered reader that hashes and counts every byte it hands out.
// Hashing at this level, not below bufio, keeps read-ahead out of the CRC.
type source struct {
	br  *bufio.Reader
	crc uint32
	off int64
	one [1]byte
}

// fail turns an end of input into ErrCorrupt and wraps other read errors.
func (s *source) fail(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: truncated at offset %d: %w", ErrCorrupt, s.off, io.ErrUnexpectedEOF)
	}
	return fmt.Errorf("snapshot: read at offset %d: %w", s.off, err)
}

func (s *source) readByte() (byte, error) {
	b, err := s.br.ReadByte()
	if err != nil {
		return 0, s.fail(err)
	}
	s.one[0] = b
	s.crc = crc32.Update(s.crc, castagnoli, s.one[:])
	s.off++
	return b, nil
}

// readUvarint reads a minimally encoded uvarint no larger than limit. Five
// bytes (35 bits) cover every limit, so longer encodings are rejected early.
func (s *source) readUvarint(limit uint64) (uint64, error) {
	start := s.off
	var v uint64
	for shift := 0; shift < 35; shift += 7 {
		b, err := s.readByte()
		if err != nil {
			return 0, err
		}
		v |= uint64(b&0x7f) << shift
		if b >= 0x80 {
			continue
		}
		if shift > 0 && b == 0 {
			return 0, fmt.Errorf("%w: non-minimal varint at offset %d", ErrCorrupt, start)
		}
		if v > limit {
			return 0, fmt.Errorf("%w: %w: length %d at offset %d (max %d)", ErrCorrupt, ErrTooLarge, v, start, limit)
		}
		return v, nil
	}
	return 0, fmt.Errorf("%w: %w: varint at offset %d", ErrCorrupt, ErrTooLarge, start)
}

// readN reads exactly n bytes into buf (reusing its capacity) and returns it.
func (s *source) readN(buf []byte, n int) ([]byte, error) {
	buf = buf[:0]
	for len(buf) < n {
		start := len(buf)
		chunk := min(n-start, max(minChunk, start))
		buf = slices.Grow(buf, chunk)[:start+chunk]
		m, err := io.ReadFull(s.br, buf[start:])
		s.crc = crc32.Update(s.crc, castagnoli, buf[start:start+m])
		s.off += int64(m)
		if err != nil {
			return buf[:start+m], s.fail(err)
		}
	}
	return buf, nil
}

// Reader reads a snapshot written by Writer. It is not safe for concurrent use.
type Reader struct {
	src       source
	hdr       Header
	buf       []byte
	inSection bool
	kind      uint8
	name      string
	records   uint64
	sections  []SectionInfo
	checksum  uint32
	err       error // sticky; io.EOF after a verified end
}

// NewReader reads and validates the magic, version and header.
func NewReader(r io.Reader) (*Reader, error) {
	size := bufSize
	// An in-memory source (bytes.Reader, strings.Reader) needs no bigger buffer
	// than its content; this keeps small reads, as in fuzzing, cheap.
	if l, ok := r.(interface{ Len() int }); ok {
		size = min(size, max(l.Len(), 16))
	}
	sr := &Reader{src: source{br: bufio.NewReaderSize(r, size)}}
	pre, err := sr.src.readN(nil, preambleSize)
	if len(pre) >= len(magic) && string(pre[:len(magic)]) != magic {
		return nil, fmt.Errorf("%w: %q", ErrBadMagic, pre[:len(magic)])
	}
	if err != nil {
		return nil, err
	}
	if v := binary.BigEndian.Uint16(pre[len(magic):]); v != Version {
		return nil, fmt.Errorf("%w: %d (this build reads %d)", ErrUnsupportedVersion, v, Version)
	}
	n := binary.BigEndian.Uint32(pre[len(magic)+2:])
	if n > MaxHeaderSize {
		return nil, fmt.Errorf("%w: %w: header of %d bytes (max %d)", ErrCorrupt, ErrTooLarge, n, MaxHeaderSize)
	}
	body, err := sr.src.readN(nil, int(n))
	if err != nil {
		return nil, err
	}
	if sr.hdr, err = parseHeader(body); err != nil {
		return nil, err
	}
	return sr, nil
}

// Header returns the snapshot's header. The Meta map is a copy.
func (r *Reader) Header() Header {
	h := r.hdr
	h.Meta = maps.Clone(h.Meta)
	return h
}

// Next returns the next record and the kind and name of its section. After
// the last record it verifies the trailer and checksum and returns io.EOF; a
// checksum mismatch returns ErrChecksum. Errors are sticky.
//
// The returned slice is only valid until the next call to Next: its backing
// array is reused, so copy or decode it before calling again.
func (r *Reader) Next() (kind uint8, name string, record []byte, err error) {
	for r.err == nil {
		if !r.inSection {
			r.err = r.readTag()
			continue
		}
		n, uerr := r.src.readUvarint(MaxRecordSize + 1)
		if uerr != nil {
			r.err = uerr
			break
		}
		if n == 0 {
			r.inSection = false
			continue
		}
		if r.buf, r.err = r.src.readN(r.buf, int(n-1)); r.err != nil {
			break
		}
		r.records++
		s := &r.sections[len(r.sections)-1]
		s.Records++
		s.Bytes += int64(len(r.buf))
		return r.kind, r.name, r.buf, nil
	}
	return 0, "", nil, r.err
}

// readTag reads a section start or the trailer. At a verified end it returns io.EOF.
func (r *Reader) readTag() error {
	at := r.src.off
	tag, err := r.src.readByte()
	if err != nil {
		return err
	}
	switch tag {
	case tagSection:
		return r.readSectionStart()
	case tagEnd:
		return r.readTrailer()
	default:
		return fmt.Errorf("%w: unknown tag 0x%02x at offset %d", ErrCorrupt, tag, at)
	}
}

func (r *Reader) readSectionStart() error {
	if len(r.sections) >= MaxSections {
		return fmt.Errorf("%w: %w: more than %d sections", ErrCorrupt, ErrTooLarge, MaxSections)
	}
	kind, err := r.src.readByte()
	if err != nil {
		return err
	}
	n, err := r.src.readByte()
	if err != nil {
		return err
	}
	if r.buf, err = r.src.readN(r.buf, int(n)); err != nil {
		return err
	}
	r.kind, r.name, r.inSection = kind, string(r.buf), true
	r.sections = append(r.sections, SectionInfo{Kind: kind, Name: r.name})
	return nil
}

// readTrailer checks the record count and checksum and that nothing follows.
func (r *Reader) readTrailer() error {
	cnt, err := r.src.readN(r.buf, 8)
	if err != nil {
		return err
	}
	count := binary.BigEndian.Uint64(cnt)
	want := r.src.crc
	var sum [4]byte
	if _, err := io.ReadFull(r.src.br, sum[:]); err != nil {
		return r.src.fail(err)
	}
	r.src.off += 4
	r.checksum = binary.BigEndian.Uint32(sum[:])
	if r.checksum != want {
		return fmt.Errorf("%w: stored 0x%08x, computed 0x%08x", ErrChecksum, r.checksum, want)
	}
	if count != r.records {
		return fmt.Errorf("%w: trailer counts %d records, read %d", ErrCorrupt, count, r.records)
	}
	switch _, err := r.src.br.ReadByte(); {
	case err == nil:
		return fmt.Errorf("%w: trailing data after checksum at offset %d", ErrCorrupt, r.src.off)
	case !errors.Is(err, io.EOF):
		return fmt.Errorf("snapshot: read at offset %d: %w", r.src.off, err)
	}
	return io.EOF
}
