package convert

import (
	"maps"
	"reflect"
	"slices"
	"time"
	"unsafe"
)

// cloneCodec deep-copies a type that both sides share, so the FSM keeps no
// reference into a request (or a response into the FSM's state). A view
// (View) copies the value itself to the API, sharing what it refers to.
func cloneCodec(cd *codec, t reflect.Type, view bool) error {
	clone, err := cloner(t)
	if err != nil {
		return err
	}
	cd.toFSM = func(_ *state, dst, src unsafe.Pointer) { clone(dst, src) }
	cd.toAPI = clone
	if view {
		cd.toAPI = shallowCopy(t)
	}
	return nil
}

// shallowCopy copies a value of type t as an assignment would.
func shallowCopy(t reflect.Type) func(dst, src unsafe.Pointer) {
	switch {
	case isPlain(t):
		return plainCopy(t.Size())
	case t.Kind() == reflect.String:
		return func(dst, src unsafe.Pointer) { *(*string)(dst) = *(*string)(src) }
	case t == reflect.TypeFor[[]string]():
		return func(dst, src unsafe.Pointer) { *(*[]string)(dst) = *(*[]string)(src) }
	case t == reflect.TypeFor[map[string]string]():
		return func(dst, src unsafe.Pointer) { *(*map[string]string)(dst) = *(*map[string]string)(src) }
	}
	return func(dst, src unsafe.Pointer) { reflect.NewAt(t, dst).Elem().Set(reflect.NewAt(t, src).Elem()) }
}

func cloner(t reflect.Type) (func(dst, src unsafe.Pointer), error) {
	switch {
	case isPlain(t):
		return plainCopy(t.Size()), nil
	case t.Kind() == reflect.String:
		return func(dst, src unsafe.Pointer) { *(*string)(dst) = *(*string)(src) }, nil
	case t == timeType: // its location is shared by design
		return func(dst, src unsafe.Pointer) { *(*time.Time)(dst) = *(*time.Time)(src) }, nil
	case t == reflect.TypeFor[[]string](): // strings are immutable: one copy of the list
		return func(dst, src unsafe.Pointer) { *(*[]string)(dst) = slices.Clone(*(*[]string)(src)) }, nil
	case t == reflect.TypeFor[map[string]string]():
		return func(dst, src unsafe.Pointer) { *(*map[string]string)(dst) = maps.Clone(*(*map[string]string)(src)) }, nil
	}
	switch t.Kind() {
	case reflect.Slice:
		return sliceCloner(t)
	case reflect.Map:
		return mapCloner(t)
	case reflect.Pointer:
		elem, err := cloner(t.Elem())
		if err != nil {
			return nil, err
		}
		return func(dst, src unsafe.Pointer) {
			from := *(*unsafe.Pointer)(src)
			if from == nil {
				*(*unsafe.Pointer)(dst) = nil
				return
			}
			out := reflect.New(t.Elem()).UnsafePointer()
			elem(out, from)
			*(*unsafe.Pointer)(dst) = out
		}, nil
	case reflect.Struct:
		return structCloner(t)
	}
	return nil, errorf(t, t, "cannot copy a %s", t.Kind())
}

func sliceCloner(t reflect.Type) (func(dst, src unsafe.Pointer), error) {
	elem, err := cloner(t.Elem())
	if err != nil {
		return nil, err
	}
	size := t.Elem().Size()
	return func(dst, src unsafe.Pointer) {
		h := (*sliceHeader)(src)
		if h.data == nil {
			*(*sliceHeader)(dst) = sliceHeader{}
			return
		}
		out := makeSlice(t, dst, h.len)
		for i := range h.len {
			elem(unsafe.Add(out, uintptr(i)*size), unsafe.Add(h.data, uintptr(i)*size))
		}
	}, nil
}

func mapCloner(t reflect.Type) (func(dst, src unsafe.Pointer), error) {
	if hasPointers(t.Key()) {
		return nil, errorf(t, t, "map keys must be plain values")
	}
	elem, err := cloner(t.Elem())
	if err != nil {
		return nil, err
	}
	return func(dst, src unsafe.Pointer) {
		sv, dv := reflect.NewAt(t, src).Elem(), reflect.NewAt(t, dst).Elem()
		if sv.IsNil() {
			dv.SetZero()
			return
		}
		out := reflect.MakeMapWithSize(t, sv.Len())
		in, v := reflect.New(t.Elem()).Elem(), reflect.New(t.Elem()).Elem()
		for it := sv.MapRange(); it.Next(); {
			in.Set(it.Value())
			elem(v.Addr().UnsafePointer(), in.Addr().UnsafePointer())
			out.SetMapIndex(it.Key(), v)
		}
		dv.Set(out)
	}, nil
}

func structCloner(t reflect.Type) (func(dst, src unsafe.Pointer), error) {
	type part struct {
		off   uintptr
		clone func(dst, src unsafe.Pointer)
	}
	var parts []part
	for sf := range t.Fields() {
		if !sf.IsExported() {
			return nil, errorf(t, t, "unexported field %s cannot be copied", sf.Name)
		}
		clone, err := cloner(sf.Type)
		if err != nil {
			return nil, err
		}
		parts = append(parts, part{sf.Offset, clone})
	}
	return func(dst, src unsafe.Pointer) {
		for _, p := range parts {
			p.clone(unsafe.Add(dst, p.off), unsafe.Add(src, p.off))
		}
	}, nil
}

// isPlain reports whether t holds no pointers at all (strings included),
// so its bytes can be copied as they are.
func isPlain(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return true
	case reflect.Array:
		return isPlain(t.Elem())
	case reflect.Struct:
		for sf := range t.Fields() {
			if !isPlain(sf.Type) {
				return false
			}
		}
		return true
	}
	return false
}

func plainCopy(size uintptr) func(dst, src unsafe.Pointer) {
	switch size {
	case 8:
		return func(dst, src unsafe.Pointer) { *(*uint64)(dst) = *(*uint64)(src) }
	case 1:
		return func(dst, src unsafe.Pointer) { *(*uint8)(dst) = *(*uint8)(src) }
	}
	return func(dst, src unsafe.Pointer) {
		copy(unsafe.Slice((*byte)(dst), size), unsafe.Slice((*byte)(src), size))
	}
}

// hasPointers reports whether a value of t refers to memory a copy would
// share. Strings are immutable, and a time.Time's location is shared by
// design, so both copy as values.
func hasPointers(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Slice, reflect.Map, reflect.Pointer, reflect.Interface, reflect.Chan, reflect.Func, reflect.UnsafePointer:
		return true
	case reflect.Array:
		return hasPointers(t.Elem())
	case reflect.Struct:
		if t == timeType {
			return false
		}
		for sf := range t.Fields() {
			if hasPointers(sf.Type) {
				return true
			}
		}
	}
	return false
}
