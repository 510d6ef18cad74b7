package fsm

import (
	"fmt"
	"maps"
	"math"
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

// fieldKind lets the per-row loops handle scalar fields inline: a switch
// costs less than a call per field, and rows are mostly scalars. Other
// fields go through their codec's functions.
type fieldKind uint8

const (
	kindStruct fieldKind = iota // a struct value: always written
	kindString
	kindName // a string interned on decode
	kindBool
	kindInt
	kindInt64
	kindUint64
	kindInt32
	kindRef // a slice, map or pointer: nil is omitted
)

// isZero reports whether a field at p holds the value a record leaves out.
func isZero(k fieldKind, p unsafe.Pointer) bool {
	switch k {
	case kindString, kindName:
		return len(*(*string)(p)) == 0
	case kindBool:
		return !*(*bool)(p)
	case kindInt:
		return *(*int)(p) == 0
	case kindInt64, kindUint64:
		return *(*uint64)(p) == 0
	case kindInt32:
		return *(*int32)(p) == 0
	case kindRef:
		return *(*unsafe.Pointer)(p) == nil
	}
	return false
}

func scalarCodec(t reflect.Type, intern bool) *valueCodec {
	var v *valueCodec
	switch t {
	case reflect.TypeFor[string]():
		v = stringCodec(intern)
	case reflect.TypeFor[bool]():
		v = &valueCodec{
			enc:  func(e *rowEnc, p unsafe.Pointer) { e.bool(*(*bool)(p)) },
			dec:  func(d *rowDec, p unsafe.Pointer) { *(*bool)(p) = d.bool() },
			kind: kindBool,
		}
	case reflect.TypeFor[int]():
		v = &valueCodec{
			enc:  func(e *rowEnc, p unsafe.Pointer) { e.int(int64(*(*int)(p))) },
			dec:  func(d *rowDec, p unsafe.Pointer) { *(*int)(p) = int(d.int()) },
			kind: kindInt,
		}
	case reflect.TypeFor[int64]():
		v = &valueCodec{
			enc:  func(e *rowEnc, p unsafe.Pointer) { e.int(*(*int64)(p)) },
			dec:  func(d *rowDec, p unsafe.Pointer) { *(*int64)(p) = d.int() },
			kind: kindInt64,
		}
	case reflect.TypeFor[int32](): // written as an int is, so a field may narrow to it
		v = &valueCodec{
			enc: func(e *rowEnc, p unsafe.Pointer) { e.int(int64(*(*int32)(p))) },
			dec: func(d *rowDec, p unsafe.Pointer) {
				*(*int32)(p) = int32(min(max(d.int(), math.MinInt32), math.MaxInt32))
			},
			kind: kindInt32,
		}
	case reflect.TypeFor[uint64]():
		v = &valueCodec{
			enc:  func(e *rowEnc, p unsafe.Pointer) { e.uint(*(*uint64)(p)) },
			dec:  func(d *rowDec, p unsafe.Pointer) { *(*uint64)(p) = d.uint() },
			kind: kindUint64,
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
			kind: kindRef,
		}
	case reflect.TypeFor[[]int]():
		return &valueCodec{
			enc:  func(e *rowEnc, p unsafe.Pointer) { e.ints(*(*[]int)(p)) },
			dec:  func(d *rowDec, p unsafe.Pointer) { *(*[]int)(p) = d.ints() },
			kind: kindRef,
		}
	case reflect.TypeFor[map[string]string]():
		return &valueCodec{
			enc:  func(e *rowEnc, p unsafe.Pointer) { e.strMap(*(*map[string]string)(p)) },
			dec:  func(d *rowDec, p unsafe.Pointer) { *(*map[string]string)(p) = d.strMap() },
			kind: kindRef,
		}
	case reflect.TypeFor[map[string]int]():
		return &valueCodec{
			enc:  func(e *rowEnc, p unsafe.Pointer) { encIntMap(e, *(*map[string]int)(p)) },
			dec:  func(d *rowDec, p unsafe.Pointer) { *(*map[string]int)(p) = decIntMap(d) },
			kind: kindRef,
		}
	}
	return nil
}

func stringCodec(intern bool) *valueCodec {
	v := &valueCodec{
		enc:  func(e *rowEnc, p unsafe.Pointer) { e.str(*(*string)(p)) },
		dec:  func(d *rowDec, p unsafe.Pointer) { *(*string)(p) = d.str() },
		kind: kindString,
	}
	if intern {
		v.dec = func(d *rowDec, p unsafe.Pointer) { *(*string)(p) = d.name() }
		v.kind = kindName
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
		kind: kindRef,
		elem: sc,
	}
}

// inlineV1 reads a pointer field that the v1 layout wrote as a struct value
// (inline, no presence byte); the current layout is the pointer's.
func inlineV1(v *valueCodec) *valueCodec {
	out := *v
	sc := v.elem
	out.decV1 = func(d *rowDec, p unsafe.Pointer) {
		n := reflect.New(sc.typ)
		sc.decV1(d, n.UnsafePointer())
		*(*unsafe.Pointer)(p) = n.UnsafePointer()
	}
	return &out
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
		dec:   func(d *rowDec, p unsafe.Pointer) { decode(d, p, sc.dec) },
		decV1: func(d *rowDec, p unsafe.Pointer) { decode(d, p, sc.decV1) },
		kind:  kindRef,
		elem:  sc,
	}
}

// enc writes a mask of the fields that are not zero (bit N-1 for field
// N), then their values in number order. Equal values therefore encode
// equally, and an empty field costs nothing.
func (sc *structCodec) enc(e *rowEnc, p unsafe.Pointer) {
	var mask uint64
	for i := range sc.fields {
		f := &sc.fields[i]
		if fp := f.at(p); fp != nil && !isZero(f.kind, fp) {
			mask |= f.bit
		}
	}
	e.uint(mask)
	for i := range sc.fields {
		f := &sc.fields[i]
		if mask&f.bit == 0 {
			continue
		}
		fp := f.at(p)
		switch f.kind {
		case kindString, kindName:
			e.str(*(*string)(fp))
		case kindInt:
			e.int(int64(*(*int)(fp)))
		case kindInt64:
			e.int(*(*int64)(fp))
		case kindUint64:
			e.uint(*(*uint64)(fp))
		default:
			f.enc(e, fp)
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
		fp := f.into(p)
		switch f.kind {
		case kindString:
			*(*string)(fp) = d.str()
		case kindName:
			*(*string)(fp) = d.name()
		case kindInt:
			*(*int)(fp) = int(d.int())
		case kindInt64:
			*(*int64)(fp) = d.int()
		case kindUint64:
			*(*uint64)(fp) = d.uint()
		default:
			f.dec(d, fp)
		}
	}
}

// decV1 reads the positional layout: every v1 field in order, nested
// structs inline.
func (sc *structCodec) decV1(d *rowDec, p unsafe.Pointer) {
	for _, f := range sc.v1 {
		f.decV1(d, f.into(p))
	}
	// The positional layout writes zero values too: an inline struct that
	// holds nothing goes back to nil, as the current layout leaves it.
	for _, via := range sc.inline {
		pp := (*unsafe.Pointer)(unsafe.Add(p, via.off))
		if *pp != nil && reflect.NewAt(via.typ, *pp).Elem().IsZero() {
			*pp = nil
		}
	}
}
