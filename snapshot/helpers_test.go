package snapshot_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/amserver/amserver/snapshot"
)

// section is a test's description of one section's content.
type section struct {
	kind    uint8
	name    string
	records [][]byte
}

// rec is one record as Next returns it.
type rec struct {
	kind uint8
	name string
	data []byte
}

func encode(t testing.TB, h snapshot.Header, secs []section) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := write(&buf, h, secs); err != nil {
		t.Fatalf("encode: %v", err)
	}
	return buf.Bytes()
}

func write(w io.Writer, h snapshot.Header, secs []section) error {
	sw, err := snapshot.NewWriter(w, h)
	if err != nil {
		return err
	}
	for _, s := range secs {
		if err := sw.BeginSection(s.kind, s.name); err != nil {
			return err
		}
		for _, r := range s.records {
			if err := sw.Record(r); err != nil {
				return err
			}
		}
	}
	return sw.Close()
}

// readAll reads every record with NewReader+Next, copying each one because
// Next reuses its buffer. A clean end returns a nil error.
func readAll(r io.Reader) (snapshot.Header, []rec, error) {
	sr, err := snapshot.NewReader(r)
	if err != nil {
		return snapshot.Header{}, nil, err
	}
	var out []rec
	for {
		kind, name, data, err := sr.Next()
		if errors.Is(err, io.EOF) {
			return sr.Header(), out, nil
		}
		if err != nil {
			return sr.Header(), out, err
		}
		out = append(out, rec{kind, name, bytes.Clone(data)})
	}
}

// flatten lists the records of secs in the order Next returns them.
func flatten(secs []section) []rec {
	var out []rec
	for _, s := range secs {
		for _, r := range s.records {
			out = append(out, rec{s.kind, s.name, r})
		}
	}
	return out
}

// reseal recomputes the trailing checksum, so a test can reach the checks
// that sit behind it.
func reseal(data []byte) []byte {
	out := bytes.Clone(data)
	if len(out) < 4 {
		return out
	}
	body := out[:len(out)-4]
	binary.BigEndian.PutUint32(out[len(body):], crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)))
	return out
}

func isSentinel(err error) bool {
	for _, s := range []error{snapshot.ErrBadMagic, snapshot.ErrUnsupportedVersion,
		snapshot.ErrChecksum, snapshot.ErrCorrupt, snapshot.ErrTooLarge} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

func randomBytes(seed uint64, n int) []byte {
	rng := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// smallSecs is a compact snapshot that still has every structural element,
// used where tests loop over every byte.
func smallSecs() (snapshot.Header, []section) {
	h := snapshot.Header{Index: 42, Term: 7, CreatedUnixNano: 1, Meta: map[string]string{"a": "1", "b": ""}}
	return h, []section{
		{kind: 1, name: "nodes", records: [][]byte{[]byte("n1"), {}, []byte("node-two")}},
		{kind: 2, name: "empty"},
		{kind: 3, name: "", records: [][]byte{bytes.Repeat([]byte{0x80}, 130)}},
	}
}
