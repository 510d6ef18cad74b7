// Package snapshot is amserver's snapshot file format: a versioned header
// carrying the Raft index and term, typed sections of opaque length-prefixed
// records, and a trailing CRC-32C over everything before it.
//
// The package knows nothing about what the records mean; the FSM encodes and
// decodes them. It is a leaf and uses only the standard library.
//
// # Layout (version 1)
//
// All fixed-width integers are big-endian. A uvarint is encoding/binary's
// unsigned varint and must be minimally encoded (so that every accepted file
// has exactly one encoding).
//
//	magic      "AMSNAP"                         6 bytes
//	version    uint16                           currently 1
//	hdrLen     uint32                           ≤ MaxHeaderSize
//	header     hdrLen bytes:
//	  index    uint64                           Raft index
//	  term     uint64                           Raft term
//	  created  int64                            Unix nanoseconds, informational
//	  nmeta    uvarint
//	  nmeta ×  uvarint len + key, uvarint len + value
//	                                            keys strictly ascending, ≤ MaxNameLen bytes
//	sections, each:
//	  'S'      tag byte 0x53
//	  kind     uint8
//	  nameLen  uint8, then nameLen bytes        so names are ≤ 255 bytes
//	  records  uvarint (len+1), then len bytes  len ≤ MaxRecordSize
//	  0x00     uvarint 0 ends the section
//	trailer:
//	  'E'      tag byte 0x45
//	  records  uint64                           total number of records
//	  crc      uint32                           CRC-32C (Castagnoli) of every byte above
//
// The file ends right after the checksum; trailing bytes are corruption.
// Sections are self-delimiting, so a streaming writer never needs to know how
// many records a section will hold. Empty sections are allowed and preserved.
//
// # Robustness
//
// A reader never allocates from an unchecked length: lengths are checked
// against the limits first, and record buffers grow geometrically from 64 KiB
// as the bytes actually arrive, so a truncated file claiming a 64 MiB record
// costs at most about twice what it really contains. Every malformed input gives an
// error wrapping one of the sentinels (ErrBadMagic, ErrUnsupportedVersion,
// ErrChecksum, ErrCorrupt, ErrTooLarge); none panics.
package snapshot
