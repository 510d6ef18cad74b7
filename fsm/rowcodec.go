package fsm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
)

// A compact binary encoding for the snapshot's two big tables, bundles and
// assignments. Reflective msgpack spent ~8 µs encoding and ~11 µs decoding
// one bundle row, most of a 100,000-bundle snapshot's save and a share of
// its restore. The codec follows from the row types (rowcodec_compile.go):
//
//	struct   a mask of its non-zero fields (uvarint, bit N-1 for field
//	         number N), then their values in number order; a field this
//	         reader does not know is refused
//	integer  zig-zag varint (signed) or uvarint
//	bool     one byte, 0 or 1
//	string   uvarint length, then the bytes
//	list,map uvarint length+1 (0 for nil), then the elements; map keys
//	         sorted, so equal rows encode to equal bytes
//	pointer  the struct it points to; nil is an omitted field
//
// Nil and empty survive a round trip as they do in msgpack (the state
// digest tells them apart). Section kinds 11 and 12 hold the older,
// positional layout (rowLayoutV1), which restore still reads.

var errRowTruncated = errors.New("row truncated")

type rowEnc struct{ b []byte }

func (e *rowEnc) uint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }
func (e *rowEnc) int(v int64)   { e.b = binary.AppendVarint(e.b, v) }
func (e *rowEnc) str(s string)  { e.uint(uint64(len(s))); e.b = append(e.b, s...) }
func (e *rowEnc) count(n int)   { e.uint(uint64(n) + 1) }

func (e *rowEnc) bool(v bool) {
	if v {
		e.b = append(e.b, 1)
	} else {
		e.b = append(e.b, 0)
	}
}

// list writes a slice's length (0 for nil) and then each element.
func rowList[T any](e *rowEnc, s []T, each func(*rowEnc, *T)) {
	if s == nil {
		e.uint(0)
		return
	}
	e.count(len(s))
	for i := range s {
		each(e, &s[i])
	}
}

func (e *rowEnc) strs(s []string) { rowList(e, s, func(e *rowEnc, v *string) { e.str(*v) }) }
func (e *rowEnc) ints(s []int)    { rowList(e, s, func(e *rowEnc, v *int) { e.int(int64(*v)) }) }

func (e *rowEnc) strMap(m map[string]string) {
	if m == nil {
		e.uint(0)
		return
	}
	e.count(len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		e.str(k)
		e.str(m[k])
	}
}

// rowDec reads what rowEnc wrote. The first error sticks and every later
// read returns a zero value, so decoders read straight through and check once.
type rowDec struct {
	b      []byte
	err    error
	intern map[string]string // shared values (node ids, states, names) kept once
}

func (d *rowDec) fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

func (d *rowDec) uint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail(errRowTruncated)
		d.b = nil
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *rowDec) int() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail(errRowTruncated)
		d.b = nil
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *rowDec) bool() bool {
	if len(d.b) == 0 {
		d.fail(errRowTruncated)
		return false
	}
	v := d.b[0]
	d.b = d.b[1:]
	if v > 1 {
		d.fail(fmt.Errorf("bad bool %d", v))
	}
	return v == 1
}

func (d *rowDec) present() bool { return d.bool() }

// raw returns the next length-prefixed bytes, still in the record buffer.
func (d *rowDec) raw() []byte {
	n := d.uint()
	if n > uint64(len(d.b)) {
		d.fail(errRowTruncated)
		d.b = nil
		return nil
	}
	s := d.b[:n]
	d.b = d.b[n:]
	return s
}

func (d *rowDec) str() string { return string(d.raw()) }

// name is str for values that repeat across rows: each distinct one is
// allocated once per restore (the applied state shares them the same way).
func (d *rowDec) name() string {
	b := d.raw()
	if len(b) == 0 {
		return ""
	}
	if s, ok := d.intern[string(b)]; ok { // no allocation for the lookup
		return s
	}
	s := string(b)
	if d.intern == nil {
		d.intern = map[string]string{}
	}
	d.intern[s] = s
	return s
}

// count reads a length written by rowEnc.count; nil reports a nil slice or map.
func (d *rowDec) count() (n int, isNil bool) {
	v := d.uint()
	if v == 0 {
		return 0, true
	}
	if v-1 > uint64(len(d.b)) { // every element takes a byte at least
		d.fail(errRowTruncated)
		d.b = nil
		return 0, true
	}
	return int(v - 1), false
}

func rowListDec[T any](d *rowDec, each func(*rowDec, *T)) []T {
	n, isNil := d.count()
	if isNil {
		return nil
	}
	out := make([]T, n)
	for i := range out {
		each(d, &out[i])
	}
	return out
}

func (d *rowDec) ints() []int { return rowListDec(d, func(d *rowDec, v *int) { *v = int(d.int()) }) }

func (d *rowDec) strMap() map[string]string {
	n, isNil := d.count()
	if isNil {
		return nil
	}
	m := make(map[string]string, n)
	for range n {
		k := d.name()
		m[k] = d.str()
	}
	return m
}
