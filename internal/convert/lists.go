package convert

import (
	"math"
	"reflect"
	"unsafe"
)

// sliceHeader is the runtime layout of a slice, read to walk a list whose
// element type is only known at compile time.
type sliceHeader struct {
	data unsafe.Pointer
	len  int
	cap  int
}

// makeSlice sets the list of type t at p to n zero elements and returns
// their address. Grow allocates them in place; MakeSlice and Set would
// also box a slice header, an allocation per list. A list already at p
// with room for n is reused, zeroed: every conversion but one writes into
// a zero value, and that one (a list page's entry, rendered into one value
// per page) owns what it holds.
func makeSlice(t reflect.Type, p unsafe.Pointer, n int) unsafe.Pointer {
	v := reflect.NewAt(t, p).Elem()
	if n == 0 {
		v.Set(reflect.MakeSlice(t, 0, 0)) // empty, not nil
		return nil
	}
	if v.Cap() >= n {
		v.SetLen(n)
		v.Clear()
		return v.UnsafePointer()
	}
	v.SetZero()
	v.Grow(n)
	v.SetLen(n)
	return v.UnsafePointer()
}

func sliceCodec(cd *codec, a, f reflect.Type, elem *codec) {
	aSize, fSize := a.Elem().Size(), f.Elem().Size()
	cd.toFSM = func(s *state, dst, src unsafe.Pointer) {
		h := (*sliceHeader)(src)
		if h.data == nil {
			*(*sliceHeader)(dst) = sliceHeader{}
			return
		}
		out := makeSlice(f, dst, h.len)
		for i := range h.len {
			n := len(s.problems)
			elem.toFSM(s, unsafe.Add(out, uintptr(i)*fSize), unsafe.Add(h.data, uintptr(i)*aSize))
			if len(s.problems) > n {
				s.note(n, Step{Index: i})
			}
		}
	}
	cd.toAPI = func(dst, src unsafe.Pointer) {
		h := (*sliceHeader)(src)
		if h.data == nil {
			*(*sliceHeader)(dst) = sliceHeader{}
			return
		}
		out := makeSlice(a, dst, h.len)
		for i := range h.len {
			elem.toAPI(unsafe.Add(out, uintptr(i)*aSize), unsafe.Add(h.data, uintptr(i)*fSize))
		}
	}
}

func pointerCodec(cd *codec, a, f reflect.Type, elem *codec) {
	cd.toFSM = func(s *state, dst, src unsafe.Pointer) {
		from := *(*unsafe.Pointer)(src)
		if from == nil {
			*(*unsafe.Pointer)(dst) = nil
			return
		}
		out := reflect.New(f.Elem()).UnsafePointer()
		elem.toFSM(s, out, from)
		*(*unsafe.Pointer)(dst) = out
	}
	cd.toAPI = func(dst, src unsafe.Pointer) {
		from := *(*unsafe.Pointer)(src)
		if from == nil {
			*(*unsafe.Pointer)(dst) = nil
			return
		}
		out := reflect.New(a.Elem()).UnsafePointer()
		elem.toAPI(out, from)
		*(*unsafe.Pointer)(dst) = out
	}
}

// sharedCodec pairs an API struct value with an FSM pointer to its
// counterpart: a state row that shares a value another row holds (an
// assignment's launch) instead of copying it. A nil pointer reads as the
// zero value; the API's value always gets a pointer of its own.
func sharedCodec(cd *codec, a, f reflect.Type, elem *codec) {
	cd.toFSM = func(s *state, dst, src unsafe.Pointer) {
		out := reflect.New(f.Elem()).UnsafePointer()
		elem.toFSM(s, out, src)
		*(*unsafe.Pointer)(dst) = out
	}
	cd.toAPI = func(dst, src unsafe.Pointer) {
		from := *(*unsafe.Pointer)(src)
		if from == nil {
			reflect.NewAt(a, dst).Elem().SetZero()
			return
		}
		elem.toAPI(dst, from)
	}
}

// narrowCodec pairs an API int with an FSM int32 (a state field narrowed
// to pack a row): values beyond it are held at the nearest bound.
func narrowCodec(cd *codec) {
	cd.toFSM = func(_ *state, dst, src unsafe.Pointer) {
		*(*int32)(dst) = int32(min(max(*(*int)(src), math.MinInt32), math.MaxInt32))
	}
	cd.toAPI = func(dst, src unsafe.Pointer) { *(*int)(dst) = int(*(*int32)(src)) }
}

// mapCodec pairs maps with string keys and pairable values. No hot path
// has one, so it goes through reflection per entry.
func mapCodec(cd *codec, a, f reflect.Type, elem *codec) {
	convert := func(to, from reflect.Type, dst, src unsafe.Pointer, each func(dst, src unsafe.Pointer, key string)) {
		sv, dv := reflect.NewAt(from, src).Elem(), reflect.NewAt(to, dst).Elem()
		if sv.IsNil() {
			dv.SetZero()
			return
		}
		out := reflect.MakeMapWithSize(to, sv.Len())
		in, v := reflect.New(from.Elem()).Elem(), reflect.New(to.Elem()).Elem()
		for it := sv.MapRange(); it.Next(); {
			in.Set(it.Value()) // map values are not addressable: convert a copy
			v.SetZero()
			each(v.Addr().UnsafePointer(), in.Addr().UnsafePointer(), it.Key().String())
			out.SetMapIndex(it.Key().Convert(to.Key()), v)
		}
		dv.Set(out)
	}
	cd.toFSM = func(s *state, dst, src unsafe.Pointer) {
		convert(f, a, dst, src, func(d, e unsafe.Pointer, key string) {
			n := len(s.problems)
			elem.toFSM(s, d, e)
			if len(s.problems) > n {
				s.note(n, Step{Name: key, Index: -1})
			}
		})
	}
	cd.toAPI = func(dst, src unsafe.Pointer) {
		convert(a, f, dst, src, func(d, e unsafe.Pointer, _ string) { elem.toAPI(d, e) })
	}
}

// scalarCopy copies between two scalar types of one kind (a named string
// and a string, say).
func scalarCopy(a, f reflect.Type) func(dst, src unsafe.Pointer) {
	switch {
	case a.Kind() == reflect.String:
		return func(dst, src unsafe.Pointer) { *(*string)(dst) = *(*string)(src) }
	case isPlain(a) && a.Size() == f.Size() && a.Kind() >= reflect.Bool && a.Kind() <= reflect.Float64:
		return plainCopy(a.Size())
	}
	return nil
}
