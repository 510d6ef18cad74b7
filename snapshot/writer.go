package snapshot

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

const bufSize = 64 << 10

// Writer streams a snapshot. It is not safe for concurrent use.
//
// Limit violations (ErrTooLarge) reject only the offending call and leave the
// Writer usable; an I/O error is sticky and returned by every later call.
type Writer struct {
	bw        *bufio.Writer
	crc       uint32
	scratch   [2 + binary.MaxVarintLen64]byte
	inSection bool
	sections  int
	records   uint64
	err       error // sticky I/O error
	closed    bool
	closeErr  error
}

var errClosed = errors.New("snapshot: writer is closed")

// NewWriter writes the magic and header to w (buffered) and returns a Writer
// ready for BeginSection. h.Version must be 0 or Version.
func NewWriter(w io.Writer, h Header) (*Writer, error) {
	hdr, err := appendHeader(make([]byte, 0, preambleSize+fixedHdrSize+64), h)
	if err != nil {
		return nil, err
	}
	sw := &Writer{bw: bufio.NewWriterSize(w, bufSize)}
	sw.write(hdr)
	if sw.err != nil {
		return nil, sw.err
	}
	return sw, nil
}

// write hashes and buffers p, remembering the first error.
func (w *Writer) write(p []byte) {
	if w.err != nil {
		return
	}
	w.crc = crc32.Update(w.crc, castagnoli, p)
	if _, err := w.bw.Write(p); err != nil {
		w.err = fmt.Errorf("snapshot: write: %w", err)
	}
}

func (w *Writer) check() error {
	if w.closed {
		return errClosed
	}
	return w.err
}

// endSection writes the terminator of the open section, if any.
func (w *Writer) endSection() {
	if w.inSection {
		w.scratch[0] = 0
		w.write(w.scratch[:1])
		w.inSection = false
	}
}

// BeginSection ends the open section, if any, and starts a new one. Kind and
// name are free for the caller; name is for humans and must be ≤ MaxNameLen bytes.
func (w *Writer) BeginSection(kind uint8, name string) error {
	if err := w.check(); err != nil {
		return err
	}
	if len(name) > MaxNameLen {
		return fmt.Errorf("%w: section name of %d bytes (max %d)", ErrTooLarge, len(name), MaxNameLen)
	}
	if w.sections >= MaxSections {
		return fmt.Errorf("%w: more than %d sections", ErrTooLarge, MaxSections)
	}
	w.endSection()
	w.scratch[0], w.scratch[1], w.scratch[2] = tagSection, kind, uint8(len(name))
	w.write(w.scratch[:3])
	w.write([]byte(name))
	w.inSection = true
	w.sections++
	return w.err
}

// Record appends one record to the open section. b is not retained.
func (w *Writer) Record(b []byte) error {
	if err := w.check(); err != nil {
		return err
	}
	if !w.inSection {
		return errors.New("snapshot: Record before BeginSection")
	}
	if len(b) > MaxRecordSize {
		return fmt.Errorf("%w: record of %d bytes (max %d)", ErrTooLarge, len(b), MaxRecordSize)
	}
	n := binary.PutUvarint(w.scratch[:], uint64(len(b))+1)
	w.write(w.scratch[:n])
	w.write(b)
	w.records++
	return w.err
}

// Close ends the open section, writes the trailer and checksum and flushes.
// It does not close the underlying writer. Later calls return the first result.
func (w *Writer) Close() error {
	if w.closed {
		return w.closeErr
	}
	w.closed = true
	w.endSection()
	trailer := make([]byte, 0, 1+8+4)
	trailer = append(trailer, tagEnd)
	trailer = binary.BigEndian.AppendUint64(trailer, w.records)
	w.write(trailer)
	// The checksum covers everything before it, so it is not itself hashed.
	if w.err == nil {
		if _, err := w.bw.Write(binary.BigEndian.AppendUint32(nil, w.crc)); err != nil {
			w.err = fmt.Errorf("snapshot: write: %w", err)
		}
	}
	if w.err == nil {
		if err := w.bw.Flush(); err != nil {
			w.err = fmt.Errorf("snapshot: flush: %w", err)
		}
	}
	w.closeErr = w.err
	return w.closeErr
}
