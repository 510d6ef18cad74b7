// Package fill gives tests values in which every exported field, at every
// depth, holds a distinct non-zero value, so a converter or codec that
// drops a field cannot pass a round trip by accident. The values depend
// only on the type and the seed.
package fill

import (
	"fmt"
	"reflect"
	"strings"
	"time"
)

// New returns a filled T; seed offsets every value, so two seeds give two
// different values of one type.
func New[T any](seed int) *T {
	return NewWithout[T](seed, nil)
}

// NewWithout is New leaving the fields skip names zero, as if their types
// did not have them: the values a type had before fields were added, for
// golden data written then.
func NewWithout[T any](seed int, skip func(owner reflect.Type, f reflect.StructField) bool) *T {
	v := new(T)
	f := filler{skip: skip}
	f.fillValue(reflect.ValueOf(v).Elem(), &seed)
	return v
}

type filler struct {
	skip func(owner reflect.Type, f reflect.StructField) bool
}

// fillValue sets every exported field reachable from v to a distinct
// non-zero value: strings "s<n>", numbers n (floats n+0.5), bools true,
// two elements per slice and map, pointers allocated, times n seconds
// after 2001-09-09.
func (f filler) fillValue(v reflect.Value, n *int) {
	*n++
	switch v.Kind() {
	case reflect.String:
		v.SetString(fmt.Sprintf("s%d", *n))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(*n))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(*n))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(*n) + 0.5)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		f.fillValue(v.Elem(), n)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range 2 {
			f.fillValue(v.Index(i), n)
		}
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		for range 2 {
			k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			f.fillValue(k, n)
			f.fillValue(e, n)
			v.SetMapIndex(k, e)
		}
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.Unix(1_000_000_000+int64(*n), 0).UTC()))
			return
		}
		f.fillFields(v, v.Type(), n)
	default:
		panic("fill: unsupported kind " + v.Kind().String())
	}
}

// fillFields fills a struct's fields; owner is the struct whose fields
// they count as (itself, or the one an inline struct is embedded in).
func (f filler) fillFields(v reflect.Value, owner reflect.Type, n *int) {
	for i := range v.NumField() {
		sf := v.Type().Field(i)
		switch {
		case !sf.IsExported():
		case sf.Tag.Get("row") == "inline":
			// Its fields are the outer struct's in every encoding, so they
			// are filled (or skipped) as if they were: golden data written
			// before they moved behind the pointer still matches.
			fv := v.Field(i)
			fv.Set(reflect.New(sf.Type.Elem()))
			f.fillFields(fv.Elem(), owner, n)
		case f.skip != nil && f.skip(owner, sf):
		case wasValue(sf):
			fv := v.Field(i)
			fv.Set(reflect.New(sf.Type.Elem()))
			f.fillValue(fv.Elem(), n)
		default:
			f.fillValue(v.Field(i), n)
		}
	}
}

// wasValue reports a pointer field that held its struct by value before
// (row tag option v1value, fsm/rowcodec_compile.go): it is filled as the
// value was, so golden data written from the value still matches.
func wasValue(sf reflect.StructField) bool {
	_, opt, _ := strings.Cut(sf.Tag.Get("row"), ",")
	return opt == "v1value" && sf.Type.Kind() == reflect.Pointer
}

// Zeros lists the paths of exported fields of v (a struct or a pointer to
// one) that hold their zero value, at any depth: what a conversion left
// unset.
func Zeros(v any) []string {
	var out []string
	zeros(reflect.ValueOf(v), "", &out)
	return out
}

func zeros(v reflect.Value, path string, out *[]string) {
	if v.IsZero() {
		*out = append(*out, path)
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		zeros(v.Elem(), path, out)
	case reflect.Slice:
		for i := range v.Len() {
			zeros(v.Index(i), fmt.Sprintf("%s[%d]", path, i), out)
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			zeros(it.Value(), fmt.Sprintf("%s[%v]", path, it.Key()), out)
		}
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			return
		}
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() {
				zeros(v.Field(i), path+"."+f.Name, out)
			}
		}
	}
}
