package httpapi

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
)

// A filter sees an entry's JSON form, but encoding every entry to JSON and
// decoding it into maps cost ~45 µs a bundle, most of a filtered page. An
// apiObject reads the API struct itself instead, as encoding/json would
// write it (json tags, omitempty and omitzero, embedded structs flattened,
// numbers as doubles, times as RFC 3339 strings), and only the fields the
// expression touches. jsonNative builds the whole JSON form, for the rare
// operations that need it (equality with a literal, conversion).

// jsonField is one JSON field of a struct type.
type jsonField struct {
	name      string
	index     []int
	omitEmpty bool
	omitZero  bool
}

var fieldCache = sync.Map{} // reflect.Type → []jsonField

// fieldsOf lists t's JSON fields as encoding/json does for the API types:
// tagged names, untagged fields by Go name, anonymous structs flattened.
func fieldsOf(t reflect.Type) []jsonField {
	if f, ok := fieldCache.Load(t); ok {
		return f.([]jsonField)
	}
	var out []jsonField
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		switch {
		case name == "-" || !sf.IsExported() && !sf.Anonymous:
			continue
		case sf.Anonymous && name == "" && sf.Type.Kind() == reflect.Struct:
			for _, inner := range fieldsOf(sf.Type) {
				inner.index = append([]int{i}, inner.index...)
				out = append(out, inner)
			}
			continue
		case name == "":
			name = sf.Name
		}
		out = append(out, jsonField{name: name, index: []int{i},
			omitEmpty: strings.Contains(","+opts+",", ",omitempty,"), omitZero: strings.Contains(","+opts+",", ",omitzero,")})
	}
	fieldCache.Store(t, out)
	return out
}

// omitted says whether encoding/json leaves the field out.
func (f jsonField) omitted(v reflect.Value) bool {
	if f.omitZero && v.IsZero() {
		return true
	}
	if !f.omitEmpty {
		return false
	}
	switch v.Kind() {
	case reflect.Slice, reflect.Map, reflect.String, reflect.Array:
		return v.Len() == 0
	case reflect.Pointer, reflect.Interface:
		return v.IsNil()
	}
	return v.IsZero()
}

// celValue is v's JSON form as a CEL value: structs and their slices stay
// lazy, everything else is converted at once.
func celValue(v reflect.Value) ref.Val {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return types.NullValue
		}
		v = v.Elem()
	}
	switch {
	case v.Type() == reflect.TypeFor[time.Time]():
		return types.String(v.Interface().(time.Time).Format(time.RFC3339Nano))
	case v.Kind() == reflect.Struct:
		return apiObject{v: v}
	case v.Kind() == reflect.Slice && v.IsNil():
		return types.NullValue
	case v.Kind() == reflect.Slice:
		elems := make([]ref.Val, v.Len())
		for i := range elems {
			elems[i] = celValue(v.Index(i))
		}
		return types.NewRefValList(types.DefaultTypeAdapter, elems)
	}
	return types.DefaultTypeAdapter.NativeToValue(jsonNative(v))
}

// jsonNative is v as encoding/json then a decode into any would make it.
func jsonNative(v reflect.Value) any {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Struct:
		if t, ok := v.Interface().(time.Time); ok {
			return t.Format(time.RFC3339Nano)
		}
		out := map[string]any{}
		for _, f := range fieldsOf(v.Type()) {
			if fv := v.FieldByIndex(f.index); !f.omitted(fv) {
				out[f.name] = jsonNative(fv)
			}
		}
		return out
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.IsNil() {
			return nil
		}
		out := make([]any, v.Len())
		for i := range out {
			out[i] = jsonNative(v.Index(i))
		}
		return out
	case reflect.Map:
		if v.IsNil() {
			return nil
		}
		out := make(map[string]any, v.Len())
		for it := v.MapRange(); it.Next(); {
			out[fmt.Sprint(it.Key().Interface())] = jsonNative(it.Value())
		}
		return out
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return float64(v.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return float64(v.Uint())
	case reflect.Float32, reflect.Float64:
		return v.Float()
	}
	return v.Interface() // string, bool
}

// apiObject is a struct of the API seen as its JSON object (a CEL map).
type apiObject struct{ v reflect.Value }

var (
	_ traits.Mapper = apiObject{}
)

func (o apiObject) field(name string) (reflect.Value, bool) {
	for _, f := range fieldsOf(o.v.Type()) {
		if f.name == name {
			fv := o.v.FieldByIndex(f.index)
			return fv, !f.omitted(fv)
		}
	}
	return reflect.Value{}, false
}

func (o apiObject) Find(key ref.Val) (ref.Val, bool) {
	k, ok := key.(types.String)
	if !ok {
		return nil, false
	}
	fv, ok := o.field(string(k))
	if !ok {
		return nil, false
	}
	return celValue(fv), true
}

func (o apiObject) Get(key ref.Val) ref.Val {
	if v, ok := o.Find(key); ok {
		return v
	}
	return types.NewErr("no such key: %v", key)
}

func (o apiObject) Contains(key ref.Val) ref.Val {
	_, ok := o.Find(key)
	return types.Bool(ok)
}

func (o apiObject) keys() []string {
	var out []string
	for _, f := range fieldsOf(o.v.Type()) {
		if !f.omitted(o.v.FieldByIndex(f.index)) {
			out = append(out, f.name)
		}
	}
	return out
}

func (o apiObject) Iterator() traits.Iterator {
	return types.NewStringList(types.DefaultTypeAdapter, o.keys()).(traits.Iterable).Iterator()
}

func (o apiObject) Size() ref.Val { return types.Int(len(o.keys())) }

// native is the whole object in its JSON form, as a CEL map.
func (o apiObject) native() ref.Val { return types.DefaultTypeAdapter.NativeToValue(jsonNative(o.v)) }

func (o apiObject) ConvertToNative(t reflect.Type) (any, error) { return o.native().ConvertToNative(t) }

func (o apiObject) ConvertToType(t ref.Type) ref.Val {
	switch t {
	case types.MapType:
		return o
	case types.TypeType:
		return types.MapType
	}
	return types.NewErr("type conversion error from map to %v", t)
}

func (o apiObject) Equal(other ref.Val) ref.Val { return o.native().Equal(other) }
func (o apiObject) Type() ref.Type              { return types.MapType }
func (o apiObject) Value() any                  { return jsonNative(o.v) }
