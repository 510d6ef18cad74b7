// Package jsonkeys finds the object keys that encoding/json matches to a
// struct field only by ignoring case. The decoder accepts "Pool" for a field
// named "pool", and with both keys in one object keeps the last, so a body
// that names a field twice in two spellings passes a strict decode and a
// duplicate-key check alike while one of its values is silently dropped.
package jsonkeys

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
)

// CaseError is a key that names a field in another case.
type CaseError struct {
	Key   string // as the document spells it
	Field string // the field's JSON name
}

func (e *CaseError) Error() string {
	return fmt.Sprintf("unknown field %q (field names are case-sensitive: %q)", e.Key, e.Field)
}

// Check walks data, a JSON document that already decoded into a value of
// type t, along t and returns a *CaseError for the first object key that
// matches none of a struct's field names exactly but one of them when case
// is ignored. Maps, interfaces and raw messages are free-form below their
// keys; a part of data whose JSON kind does not fit t is not examined.
// Types with their own UnmarshalJSON are walked by their fields, which holds
// for the API's (a launch decodes into its own fields, strictly).
func Check(data []byte, t reflect.Type) error {
	w := walker{b: data}
	return w.value(t)
}

type walker struct {
	b []byte
	i int
}

func (w *walker) skipSpace() {
	for w.i < len(w.b) {
		switch w.b[w.i] {
		case ' ', '\t', '\n', '\r':
			w.i++
		default:
			return
		}
	}
}

// value reads one value at w.i, checking it against t (nil: unchecked).
func (w *walker) value(t reflect.Type) error {
	w.skipSpace()
	if w.i >= len(w.b) {
		return nil
	}
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch w.b[w.i] {
	case '{':
		return w.object(t)
	case '[':
		return w.array(t)
	case '"':
		w.skipStr()
		return nil
	}
	for w.i < len(w.b) && !strings.ContainsRune(",]} \t\n\r", rune(w.b[w.i])) {
		w.i++ // a number, true, false or null
	}
	return nil
}

func (w *walker) object(t reflect.Type) error {
	var fields map[string]reflect.Type
	var elem reflect.Type
	switch {
	case t == nil:
	case t.Kind() == reflect.Struct:
		fields = fieldsOf(t)
	case t.Kind() == reflect.Map:
		elem = t.Elem()
	}
	w.i++ // {
	for {
		w.skipSpace()
		if w.i >= len(w.b) || w.b[w.i] == '}' {
			w.i++
			return nil
		}
		if w.b[w.i] == ',' {
			w.i++
			continue
		}
		key := w.str()
		w.skipSpace()
		w.i++ // :
		next := elem
		if fields != nil {
			ft, err := lookup(fields, key)
			if err != nil {
				return err
			}
			next = ft
		}
		if err := w.value(next); err != nil {
			return err
		}
	}
}

func (w *walker) array(t reflect.Type) error {
	var elem reflect.Type
	if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) && t.Elem().Kind() != reflect.Uint8 {
		elem = t.Elem()
	}
	w.i++ // [
	for {
		w.skipSpace()
		if w.i >= len(w.b) || w.b[w.i] == ']' {
			w.i++
			return nil
		}
		if w.b[w.i] == ',' {
			w.i++
			continue
		}
		if err := w.value(elem); err != nil {
			return err
		}
	}
}

// skipStr moves past the string at w.i and says whether it has escapes.
func (w *walker) skipStr() (escaped bool) {
	for w.i++; w.i < len(w.b); w.i++ {
		switch w.b[w.i] {
		case '\\':
			escaped = true
			w.i++
		case '"':
			w.i++
			return escaped
		}
	}
	return escaped
}

// str reads the string at w.i and returns it as the decoder reads it.
func (w *walker) str() string {
	start := w.i
	escaped := w.skipStr()
	raw := w.b[start:min(w.i, len(w.b))]
	if !escaped && len(raw) >= 2 {
		return string(raw[1 : len(raw)-1])
	}
	var s string
	_ = json.Unmarshal(raw, &s) // valid: the document decoded
	return s
}

// lookup is a key's field type: nil for a key no field takes (the strict
// decode refused those already), an error for one in the wrong case.
func lookup(fields map[string]reflect.Type, key string) (reflect.Type, error) {
	if ft, ok := fields[key]; ok {
		return ft, nil
	}
	for name := range fields {
		if strings.EqualFold(name, key) {
			return nil, &CaseError{Key: key, Field: name}
		}
	}
	return nil, nil
}

var cache sync.Map // reflect.Type -> map[string]reflect.Type

// fieldsOf maps a struct's JSON keys to their types as encoding/json reads
// them, promoting embedded structs' fields. A name two fields share at the
// same depth maps to nil (the decoder takes neither).
func fieldsOf(t reflect.Type) map[string]reflect.Type {
	if m, ok := cache.Load(t); ok {
		return m.(map[string]reflect.Type)
	}
	m := map[string]reflect.Type{}
	depthOf := map[string]int{}
	collect(t, 0, m, depthOf, map[reflect.Type]bool{})
	cache.Store(t, m)
	return m
}

func collect(t reflect.Type, depth int, m map[string]reflect.Type, depthOf map[string]int, visiting map[reflect.Type]bool) {
	if visiting[t] {
		return
	}
	visiting[t] = true
	defer delete(visiting, t)
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if f.Anonymous && name == "" && ft.Kind() == reflect.Struct {
			collect(ft, depth+1, m, depthOf, visiting)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		switch d, seen := depthOf[name]; {
		case !seen || depth < d:
			m[name], depthOf[name] = f.Type, depth
		case depth == d:
			m[name] = nil
		}
	}
}
