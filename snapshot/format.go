package snapshot

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"slices"
)

// Version is the format version this package writes and the only one it reads.
const Version uint16 = 1

// Limits. Writers refuse to exceed them and readers treat excess as corruption.
const (
	MaxRecordSize = 64 << 20 // bytes in one record
	MaxNameLen    = 255      // bytes in a section name or a Meta key
	MaxHeaderSize = 64 << 10 // bytes in the encoded header (index, term, created, Meta)
	MaxSections   = 1 << 16  // sections in one snapshot; bounds the reader's bookkeeping
)

var (
	// ErrBadMagic: the stream is not an amserver snapshot.
	ErrBadMagic = errors.New("snapshot: bad magic")
	// ErrUnsupportedVersion: a snapshot of a format version this build cannot read.
	ErrUnsupportedVersion = errors.New("snapshot: unsupported version")
	// ErrChecksum: the trailing CRC-32C does not match the content.
	ErrChecksum = errors.New("snapshot: checksum mismatch")
	// ErrCorrupt: the stream is malformed or truncated.
	ErrCorrupt = errors.New("snapshot: corrupt")
	// ErrTooLarge: a record, name, header or section count exceeds its limit.
	ErrTooLarge = errors.New("snapshot: too large")
)

const (
	magic        = "AMSNAP"
	tagSection   = 'S'
	tagEnd       = 'E'
	fixedHdrSize = 8 + 8 + 8 // index, term, created
	// preambleSize is magic + version + header length.
	preambleSize = len(magic) + 2 + 4
)

// castagnoli is hardware accelerated on amd64 and arm64, which matters at
// ~100 MB per snapshot.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Header describes a snapshot. Version is set by the reader; a writer accepts
// 0 or Version. CreatedUnixNano is written as given (not defaulted to now) so
// that equal inputs give equal bytes.
type Header struct {
	Version         uint16
	Index, Term     uint64
	CreatedUnixNano int64
	Meta            map[string]string
}

// appendHeader appends magic, version and the length-prefixed header body.
func appendHeader(dst []byte, h Header) ([]byte, error) {
	if h.Version != 0 && h.Version != Version {
		return nil, fmt.Errorf("%w: cannot write version %d", ErrUnsupportedVersion, h.Version)
	}
	dst = append(dst, magic...)
	dst = binary.BigEndian.AppendUint16(dst, Version)
	lenAt := len(dst)
	dst = binary.BigEndian.AppendUint32(dst, 0) // patched below
	dst = binary.BigEndian.AppendUint64(dst, h.Index)
	dst = binary.BigEndian.AppendUint64(dst, h.Term)
	dst = binary.BigEndian.AppendUint64(dst, uint64(h.CreatedUnixNano))
	dst = binary.AppendUvarint(dst, uint64(len(h.Meta)))
	for _, k := range slices.Sorted(maps.Keys(h.Meta)) {
		if len(k) > MaxNameLen {
			return nil, fmt.Errorf("%w: meta key of %d bytes (max %d)", ErrTooLarge, len(k), MaxNameLen)
		}
		dst = appendString(dst, k)
		dst = appendString(dst, h.Meta[k])
	}
	n := len(dst) - lenAt - 4
	if n > MaxHeaderSize {
		return nil, fmt.Errorf("%w: header of %d bytes (max %d)", ErrTooLarge, n, MaxHeaderSize)
	}
	binary.BigEndian.PutUint32(dst[lenAt:], uint32(n))
	return dst, nil
}

func appendString(dst []byte, s string) []byte {
	return append(binary.AppendUvarint(dst, uint64(len(s))), s...)
}

// parseHeader decodes the header body. It accepts exactly what appendHeader
// produces: sorted unique keys, minimal varints and no trailing bytes.
func parseHeader(p []byte) (Header, error) {
	h := Header{Version: Version}
	if len(p) < fixedHdrSize {
		return h, fmt.Errorf("%w: header of %d bytes is too short", ErrCorrupt, len(p))
	}
	h.Index = binary.BigEndian.Uint64(p[0:])
	h.Term = binary.BigEndian.Uint64(p[8:])
	h.CreatedUnixNano = int64(binary.BigEndian.Uint64(p[16:]))
	p = p[fixedHdrSize:]
	count, p, err := cutUvarint(p)
	if err != nil {
		return h, err
	}
	// Each entry takes at least two bytes, so this bounds the map allocation.
	if count > uint64(len(p)/2) {
		return h, fmt.Errorf("%w: header claims %d meta entries in %d bytes", ErrCorrupt, count, len(p))
	}
	if count > 0 {
		h.Meta = make(map[string]string, count)
	}
	var prev string
	for i := range count {
		var k, v string
		if k, p, err = cutString(p, MaxNameLen); err != nil {
			return h, err
		}
		if v, p, err = cutString(p, MaxHeaderSize); err != nil {
			return h, err
		}
		if i > 0 && k <= prev {
			return h, fmt.Errorf("%w: meta keys not strictly ascending at %q", ErrCorrupt, k)
		}
		h.Meta[k], prev = v, k
	}
	if len(p) != 0 {
		return h, fmt.Errorf("%w: %d trailing header bytes", ErrCorrupt, len(p))
	}
	return h, nil
}

// cutUvarint decodes a minimally encoded uvarint from the front of p.
func cutUvarint(p []byte) (uint64, []byte, error) {
	v, n := binary.Uvarint(p)
	if n <= 0 || (n > 1 && p[n-1] == 0) {
		return 0, p, fmt.Errorf("%w: bad varint in header", ErrCorrupt)
	}
	return v, p[n:], nil
}

func cutString(p []byte, limit int) (string, []byte, error) {
	n, p, err := cutUvarint(p)
	if err != nil {
		return "", p, err
	}
	if n > uint64(limit) || n > uint64(len(p)) {
		return "", p, fmt.Errorf("%w: header string of %d bytes", ErrCorrupt, n)
	}
	return string(p[:n]), p[n:], nil
}
