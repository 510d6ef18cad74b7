package convert

import (
	"reflect"
	"slices"
	"strings"
	"time"
)

// codec converts one API type to one FSM type and back. dst is settable;
// src is read only.
type codec struct {
	toFSM func(s *state, dst, src reflect.Value)
	toAPI func(dst, src reflect.Value)
}

type key struct {
	a, f reflect.Type
	unit string
}

// compiler memoizes codecs, so shared types compile once and a recursive
// type refers to its own (still being filled) codec.
type compiler struct {
	done map[key]*codec
}

var timeType = reflect.TypeFor[time.Time]()

func (c *compiler) codec(a, f reflect.Type, unit string) (*codec, error) {
	k := key{a, f, unit}
	if cd, ok := c.done[k]; ok {
		return cd, nil
	}
	cd := &codec{}
	c.done[k] = cd
	var err error
	switch {
	case unit != "":
		err = unitCodec(cd, a, f, unit)
	case a == f:
		err = cloneCodec(cd, a)
	default:
		err = c.shapeCodec(cd, a, f)
	}
	if err != nil {
		delete(c.done, k)
		return nil, err
	}
	return cd, nil
}

// shapeCodec pairs two different types of the same shape: structs field by
// field, and lists, maps and pointers of pairable elements.
func (c *compiler) shapeCodec(cd *codec, a, f reflect.Type) error {
	switch {
	case a.Kind() != f.Kind():
		return errorf(a, f, "kinds differ (%s, %s) and no unit tag says how to convert", a.Kind(), f.Kind())
	case a.Kind() == reflect.Struct && a != timeType && f != timeType:
		plan, err := c.structPlan(a, f, options{})
		if err != nil {
			return err
		}
		cd.toFSM, cd.toAPI = plan.toFSM, plan.toAPI
		return nil
	case a.Kind() == reflect.Slice:
		elem, err := c.codec(a.Elem(), f.Elem(), "")
		if err != nil {
			return err
		}
		sliceCodec(cd, elem)
		return nil
	case a.Kind() == reflect.Pointer:
		elem, err := c.codec(a.Elem(), f.Elem(), "")
		if err != nil {
			return err
		}
		pointerCodec(cd, elem)
		return nil
	case a.Kind() == reflect.Map && a.Key() == f.Key() && !hasPointers(a.Key()):
		elem, err := c.codec(a.Elem(), f.Elem(), "")
		if err != nil {
			return err
		}
		mapCodec(cd, elem)
		return nil
	case isScalar(a.Kind()):
		cd.toFSM = func(_ *state, dst, src reflect.Value) { dst.Set(src.Convert(dst.Type())) }
		cd.toAPI = func(dst, src reflect.Value) { dst.Set(src.Convert(dst.Type())) }
		return nil
	}
	return errorf(a, f, "cannot pair these types")
}

func isScalar(k reflect.Kind) bool {
	return k == reflect.String || k == reflect.Bool || (k >= reflect.Int && k <= reflect.Float64)
}

func sliceCodec(cd, elem *codec) {
	cd.toFSM = func(s *state, dst, src reflect.Value) {
		if src.IsNil() {
			dst.SetZero()
			return
		}
		out := makeSlice(dst, src.Len())
		for i := range src.Len() {
			s.push("", i)
			elem.toFSM(s, out.Index(i), src.Index(i))
			s.pop()
		}
	}
	cd.toAPI = func(dst, src reflect.Value) {
		if src.IsNil() {
			dst.SetZero()
			return
		}
		out := makeSlice(dst, src.Len())
		for i := range src.Len() {
			elem.toAPI(out.Index(i), src.Index(i))
		}
	}
}

// makeSlice sets dst to a new list of n zero elements and returns it. Grow
// allocates the elements in place; MakeSlice and Set would also box a
// slice header, an allocation per list.
func makeSlice(dst reflect.Value, n int) reflect.Value {
	if n == 0 {
		dst.Set(reflect.MakeSlice(dst.Type(), 0, 0)) // empty, not nil
		return dst
	}
	dst.SetZero()
	dst.Grow(n)
	dst.SetLen(n)
	return dst
}

func pointerCodec(cd, elem *codec) {
	cd.toFSM = func(s *state, dst, src reflect.Value) {
		if src.IsNil() {
			dst.SetZero()
			return
		}
		out := reflect.New(dst.Type().Elem())
		elem.toFSM(s, out.Elem(), src.Elem())
		dst.Set(out)
	}
	cd.toAPI = func(dst, src reflect.Value) {
		if src.IsNil() {
			dst.SetZero()
			return
		}
		out := reflect.New(dst.Type().Elem())
		elem.toAPI(out.Elem(), src.Elem())
		dst.Set(out)
	}
}

func mapCodec(cd, elem *codec) {
	cd.toFSM = func(s *state, dst, src reflect.Value) {
		if src.IsNil() {
			dst.SetZero()
			return
		}
		out := reflect.MakeMapWithSize(dst.Type(), src.Len())
		v := reflect.New(dst.Type().Elem()).Elem()
		for it := src.MapRange(); it.Next(); {
			s.push(it.Key().String(), -1)
			v.SetZero()
			elem.toFSM(s, v, it.Value())
			out.SetMapIndex(it.Key(), v)
			s.pop()
		}
		dst.Set(out)
	}
	cd.toAPI = func(dst, src reflect.Value) {
		if src.IsNil() {
			dst.SetZero()
			return
		}
		out := reflect.MakeMapWithSize(dst.Type(), src.Len())
		v := reflect.New(dst.Type().Elem()).Elem()
		for it := src.MapRange(); it.Next(); {
			v.SetZero()
			elem.toAPI(v, it.Value())
			out.SetMapIndex(it.Key(), v)
		}
		dst.Set(out)
	}
}

// field is one (possibly promoted) field of a struct.
type field struct {
	name    string // matching name: the Go name, or the api tag's rename
	json    string // the API's JSON name, for problem paths
	index   []int
	typ     reflect.Type
	unit    string
	matched bool
}

// apiFields lists A's fields, with embedded structs' fields promoted as JSON
// promotes them.
func apiFields(t reflect.Type, prefix []int) []field {
	var out []field
	for i := range t.NumField() {
		sf := t.Field(i)
		jsonName, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		index := append(slices.Clone(prefix), i)
		if sf.Anonymous && sf.Type.Kind() == reflect.Struct && jsonName == "" {
			out = append(out, apiFields(sf.Type, index)...) // promoted, exported or not
			continue
		}
		if !sf.IsExported() || jsonName == "-" {
			continue
		}
		if jsonName == "" {
			jsonName = sf.Name
		}
		out = append(out, field{name: sf.Name, json: jsonName, index: index, typ: sf.Type})
	}
	return out
}

// fsmFields lists F's fields that have an API counterpart, with embedded and
// api:",inline" structs' fields promoted.
func fsmFields(t reflect.Type, prefix []int) []field {
	var out []field
	for i := range t.NumField() {
		sf := t.Field(i)
		rename, opt, _ := strings.Cut(sf.Tag.Get("api"), ",")
		if rename == "-" {
			continue
		}
		index := append(slices.Clone(prefix), i)
		if sf.Type.Kind() == reflect.Struct && (opt == "inline" || sf.Anonymous) {
			out = append(out, fsmFields(sf.Type, index)...)
			continue
		}
		if !sf.IsExported() {
			continue
		}
		name := sf.Name
		if rename != "" {
			name = rename
		}
		out = append(out, field{name: name, index: index, typ: sf.Type, unit: sf.Tag.Get("unit")})
	}
	return out
}
