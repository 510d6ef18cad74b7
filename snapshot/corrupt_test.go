package snapshot_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"runtime"
	"testing"

	"github.com/amserver/amserver/snapshot"
)

// mustFail reads data both ways and requires a sentinel error from each.
func mustFail(t *testing.T, data []byte, want error) {
	t.Helper()
	_, _, err := readAll(bytes.NewReader(data))
	if err == nil || !isSentinel(err) || (want != nil && !errors.Is(err, want)) {
		t.Fatalf("read: err = %v, want %v", err, want)
	}
	if _, err := snapshot.Inspect(bytes.NewReader(data)); err == nil || !isSentinel(err) {
		t.Fatalf("Inspect: err = %v", err)
	}
}

func TestHeaderCorruption(t *testing.T) {
	h, secs := smallSecs()
	valid := encode(t, h, secs)
	patch := func(off int, b ...byte) []byte {
		out := bytes.Clone(valid)
		copy(out[off:], b)
		return out
	}
	cases := []struct {
		name string
		data []byte
		want error
	}{
		{"empty", nil, snapshot.ErrCorrupt},
		{"bad magic", patch(0, 'X'), snapshot.ErrBadMagic},
		{"short bad magic", []byte("AMX"), snapshot.ErrCorrupt},
		{"version 0", patch(6, 0, 0), snapshot.ErrUnsupportedVersion},
		{"version 2", patch(6, 0, 2), snapshot.ErrUnsupportedVersion},
		{"header length too large", patch(8, 0xff, 0xff, 0xff, 0xff), snapshot.ErrTooLarge},
		{"header length too short", patch(8, 0, 0, 0, 3), snapshot.ErrCorrupt},
		{"meta keys unsorted", patch(12+24+1+1, 'c'), snapshot.ErrCorrupt}, // "a" becomes "c" > "b"
		{"meta count too large", patch(12+24, 100), snapshot.ErrCorrupt},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { mustFail(t, tc.data, tc.want) })
	}
}

func TestTruncationAtEveryOffset(t *testing.T) {
	h, secs := smallSecs()
	valid := encode(t, h, secs)
	for n := range len(valid) {
		_, _, err := readAll(bytes.NewReader(valid[:n]))
		if !errors.Is(err, snapshot.ErrCorrupt) {
			t.Fatalf("truncated to %d of %d bytes: err = %v, want ErrCorrupt", n, len(valid), err)
		}
		if _, err := snapshot.Inspect(bytes.NewReader(valid[:n])); !errors.Is(err, snapshot.ErrCorrupt) {
			t.Fatalf("Inspect truncated to %d: err = %v", n, err)
		}
	}
}

func TestBitFlipAtEveryOffset(t *testing.T) {
	h, secs := smallSecs()
	valid := encode(t, h, secs)
	for off := range len(valid) {
		for bit := range 8 {
			data := bytes.Clone(valid)
			data[off] ^= 1 << bit
			_, _, err := readAll(bytes.NewReader(data))
			if err == nil || !isSentinel(err) {
				t.Fatalf("bit %d of byte %d flipped: err = %v", bit, off, err)
			}
		}
	}
}

func TestTrailingData(t *testing.T) {
	h, secs := smallSecs()
	mustFail(t, append(encode(t, h, secs), 0), snapshot.ErrCorrupt)
}

// sectionStart is the offset just after the header, where sections begin
// (an empty snapshot is the header plus a 13-byte trailer).
func sectionStart(t *testing.T, h snapshot.Header) []byte {
	empty := encode(t, h, nil)
	return bytes.Clone(empty[:len(empty)-13])
}

// craft builds a snapshot from raw section bytes with a correct trailer, so
// the structural checks are reached rather than the checksum.
func craft(t *testing.T, body []byte, records uint64) []byte {
	data := append(sectionStart(t, snapshot.Header{Index: 1}), body...)
	data = append(data, 'E')
	data = binary.BigEndian.AppendUint64(data, records)
	return reseal(append(data, 0, 0, 0, 0))
}

func TestStructuralCorruption(t *testing.T) {
	tooBig := binary.AppendUvarint([]byte{'S', 1, 1, 's'}, snapshot.MaxRecordSize+2)
	cases := []struct {
		name    string
		body    []byte
		records uint64
		want    error
	}{
		{"valid control", []byte{'S', 1, 1, 's', 2, 'x', 0}, 1, nil},
		{"oversized length prefix", append(tooBig, 0), 1, snapshot.ErrTooLarge},
		{"overlong varint", []byte{'S', 1, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}, 1, snapshot.ErrTooLarge},
		{"non-minimal varint", []byte{'S', 1, 0, 0x82, 0x00, 'x', 0}, 1, snapshot.ErrCorrupt},
		{"unknown tag", []byte{'Q'}, 0, snapshot.ErrCorrupt},
		{"record count mismatch", []byte{'S', 1, 0, 2, 'x', 0}, 2, snapshot.ErrCorrupt},
		{"record runs past end", []byte{'S', 1, 0, 20, 'x', 0}, 1, snapshot.ErrCorrupt},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			data := craft(t, tc.body, tc.records)
			if tc.want == nil {
				if _, recs, err := readAll(bytes.NewReader(data)); err != nil || len(recs) != 1 {
					t.Fatalf("control: %d records, err = %v", len(recs), err)
				}
				return
			}
			mustFail(t, data, tc.want)
		})
	}
}

// TestHostileLengthBoundsAllocation checks that a length prefix near the
// limit in a short file does not allocate what it claims.
func TestHostileLengthBoundsAllocation(t *testing.T) {
	body := binary.AppendUvarint([]byte{'S', 1, 0}, snapshot.MaxRecordSize)
	data := append(sectionStart(t, snapshot.Header{}), append(body, "short"...)...)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, _, err := readAll(bytes.NewReader(data))
	runtime.ReadMemStats(&after)
	if !errors.Is(err, snapshot.ErrCorrupt) {
		t.Fatalf("err = %v, want ErrCorrupt", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Errorf("a %d-byte file made the reader allocate %d bytes", len(data), grew)
	}
}
