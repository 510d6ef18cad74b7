package fsm

import (
	"fmt"
	"maps"
	"math/bits"
	"reflect"
	"slices"
	"unsafe"
)

// Value encodings of the row codec. The pointer p points at a value of the
// codec's type (a struct field or a list element).

// sliceHeader is the runtime layout of a slice, read to find a list's
// elements without knowing their type at compile time.
type sliceHeader struct {
	data unsafe.Pointer
	len  int
	cap  int
}

// isNil is the zero test of slices, maps and pointers: their first word.
func isNil(p unsafe.Pointer) bool { return *(*unsafe.Pointer)(p) == nil }

func scalarCodec(t reflect.Type, intern bool) *valueCodec {
	var v *valueCodec
	switch t {
	case reflect.TypeFor[string]():
		v = stringCodec(intern)
	case reflect.TypeFor[bool]():
		v = &valueCodec{
			enc:    func(e *rowEnc, p unsafe.Pointer) { e.bool(*(*bool)(p)) },
			dec:    func(d *rowDec, p unsafe.Pointer) { *(*bool)(p) = d.bool() },
			isZero: func(p unsafe.Pointer) bool { return !*(*bool)(p) },
		}
	case reflect.TypeFor[int]():
		v = &valueCodec{
			enc:    func(e *rowEnc, p unsafe.Pointer) { e.int(int64(*(*int)(p))) },
			dec:    func(d *rowDec, p unsafe.Pointer) { *(*int)(p) = int(d.int()) },
			isZero: func(p unsafe.Pointer) bool { return *(*int)(p) == 0 },
		}
	case reflect.TypeFor[int64]():
		v = &valueCodec{
			enc:    func(e *rowEnc, p unsafe.Pointer) { e.int(*(*int64)(p)) },
			dec:    func(d *rowDec, p unsafe.Pointer) { *(*int64)(p) = d.int() },
			isZero: func(p unsafe.Pointer) bool { return *(*int64)(p) == 0 },
		}
	case reflect.TypeFor[uint64]():
		v = &valueCodec{
			enc:    func(e *rowEnc, p unsafe.Pointer) { e.uint(*(*uint64)(p)) },
			dec:    func(d *rowDec, p unsafe.Pointer) { *(*uint64)(p) = d.uint() },
			isZero: func(p unsafe.Pointer) bool { return *(*uint64)(p) == 0 },
		}
	default:
		v = collectionCodec(t, intern)
		if v == nil {
			return nil
		}
	}
	v.decV1 = v.dec // scalars and lists of them are written alike in both layouts
	return v
}

// collectionCodec covers the lists and maps of scalars rows hold.
func collectionCodec(t reflect.Type, intern bool) *valueCodec {
	switch t {
	case reflect.TypeFor[[]string]():
		read := (*rowDec).str
		if intern {
			read = (*rowDec).name
		}
		return &valueCodec{
			enc: func(e *rowEnc, p unsafe.Pointer) { e.strs(*(*[]string)(p)) },
			dec: func(d *rowDec, p unsafe.Pointer) {
				*(*[]string)(p) = rowListDec(d, func(d *rowDec, s *string) { *s = read(d) })
			},
			isZero: isNil,
		}
	case reflect.TypeFor[[]int]():
		return &valueCodec{
			enc:    func(e *rowEnc, p unsafe.Pointer) { e.ints(*(*[]int)(p)) },
			dec:    func(d *rowDec, p unsafe.Pointer) { *(*[]int)(p) = d.ints() },
			isZero: isNil,
		}
	case reflect.TypeFor[map[string]string]():
		return &valueCodec{
			enc:    func(e *rowEnc, p unsafe.Pointer) { e.strMap(*(*map[string]string)(p)) },
			dec:    func(d *rowDec, p unsafe.Pointer) { *(*map[string]string)(p) = d.strMap() },
			isZero: isNil,
		}
	case reflect.TypeFor[map[string]int]():
		return &valueCodec{
			enc:    func(e *rowEnc, p unsafe.Pointer) { encIntMap(e, *(*map[string]int)(p)) },
			dec:    func(d *rowDec, p unsafe.Pointer) { *(*map[string]int)(p) = decIntMap(d) },
			isZero: isNil,
		}
	}
	return nil
}

func stringCodec(intern bool) *valueCodec {
	v := &valueCodec{
		enc:    func(e *rowEnc, p unsafe.Pointer) { e.str(*(*string)(p)) },
		dec:    func(d *rowDec, p unsafe.Pointer) { *(*string)(p) = d.str() },
		isZero: func(p unsafe.Pointer) bool { return *(*string)(p) == "" },
	}
	if intern {
		v.dec = func(d *rowDec, p unsafe.Pointer) { *(*string)(p) = d.name() }
	}
	return v
}

func encIntMap(e *rowEnc, m map[string]int) {
	if m == nil {
		e.uint(0)
		return
	}
	e.count(len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		e.str(k)
		e.int(int64(m[k]))
	}
}

func decIntMap(d *rowDec) map[string]int {
	n, isNil := d.count()
	if isNil {
		return nil
	}
	m := make(map[string]int, n)
	for range n {
		k := d.name()
		m[k] = int(d.int())
	}
	return m
}

// pointerCodec: in the current layout a nil pointer is an omitted field;
// v1 wrote a presence byte.
func pointerCodec(sc *structCodec) *valueCodec {
	return &valueCodec{
		enc: func(e *rowEnc, p unsafe.Pointer) { sc.enc(e, *(*unsafe.Pointer)(p)) },
		dec: func(d *rowDec, p unsafe.Pointer) {
			v := reflect.New(sc.typ)
			sc.dec(d, v.UnsafePointer())
			*(*unsafe.Pointer)(p) = v.UnsafePointer()
		},
		decV1: func(d *rowDec, p unsafe.Pointer) {
			if !d.present() {
				return
			}
			v := reflect.New(sc.typ)
			sc.decV1(d, v.UnsafePointer())
			*(*unsafe.Pointer)(p) = v.UnsafePointer()
		},
		isZero: isNil,
		elem:   sc,
	}
}

// structSliceCodec: a list's length+1 (0 for nil), then each element.
func structSliceCodec(t reflect.Type, sc *structCodec) *valueCodec {
	size := t.Elem().Size()
	decode := func(d *rowDec, p unsafe.Pointer, each func(*rowDec, unsafe.Pointer)) {
		n, isNil := d.count()
		if isNil {
			return
		}
		// Grow allocates the elements in place; MakeSlice would also box
		// a slice header, an allocation per list.
		s := reflect.NewAt(t, p).Elem()
		if n == 0 {
			s.Set(reflect.MakeSlice(t, 0, 0)) // empty, not nil: Grow(0) allocates nothing
			return
		}
		s.Grow(n)
		s.SetLen(n)
		base := s.UnsafePointer()
		for i := range n {
			each(d, unsafe.Add(base, uintptr(i)*size))
		}
	}
	return &valueCodec{
		enc: func(e *rowEnc, p unsafe.Pointer) {
			h := (*sliceHeader)(p)
			if h.data == nil {
				e.uint(0)
				return
			}
			e.count(h.len)
			for i := range h.len {
				sc.enc(e, unsafe.Add(h.data, uintptr(i)*size))
			}
		},
		dec:    func(d *rowDec, p unsafe.Pointer) { decode(d, p, sc.dec) },
		decV1:  func(d *rowDec, p unsafe.Pointer) { decode(d, p, sc.decV1) },
		isZero: isNil,
		elem:   sc,
	}
}

// enc writes a mask of the fields that are not zero (bit N-1 for field
// N), then their values in number order. Equal values therefore encode
// equally, and an empty field costs nothing.
func (sc *structCodec) enc(e *rowEnc, p unsafe.Pointer) {
	var mask uint64
	for i := range sc.fields {
		f := &sc.fields[i]
		if !f.val.isZero(unsafe.Add(p, f.off)) {
			mask |= 1 << (f.num - 1)
		}
	}
	e.uint(mask)
	for i := range sc.fields {
		if f := &sc.fields[i]; mask&(1<<(f.num-1)) != 0 {
			f.val.enc(e, unsafe.Add(p, f.off))
		}
	}
}

// dec reads what enc wrote into a zero struct. A field this server does
// not know means a newer writer, and is refused rather than skipped.
func (sc *structCodec) dec(d *rowDec, p unsafe.Pointer) {
	mask := d.uint()
	if unknown := mask &^ sc.known; unknown != 0 {
		d.fail(fmt.Errorf("%s: unknown field %d", sc.typ.Name(), bits.TrailingZeros64(unknown)+1))
		return
	}
	for ; mask != 0 && d.err == nil; mask &= mask - 1 {
		f := sc.byNum[bits.TrailingZeros64(mask)+1]
		f.val.dec(d, unsafe.Add(p, f.off))
	}
}

// decV1 reads the positional layout: every v1 field in order, nested
// structs inline.
func (sc *structCodec) decV1(d *rowDec, p unsafe.Pointer) {
	for _, f := range sc.v1 {
		f.val.decV1(d, unsafe.Add(p, f.off))
	}
}
