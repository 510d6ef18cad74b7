package convert

import (
	"maps"
	"reflect"
	"slices"
	"strings"
)

// fieldPlan converts one matched pair of fields.
type fieldPlan struct {
	json     string
	a, f     []int
	c        *codec
	readOnly bool
}

// structPlan converts a struct field by field, in the FSM type's field
// order (so problems come in the order the fields are declared).
type structPlan struct {
	fields []fieldPlan
}

func (c *compiler) structPlan(a, f reflect.Type, o options) (*structPlan, error) {
	if a.Kind() != reflect.Struct || f.Kind() != reflect.Struct {
		return nil, errorf(a, f, "a pair must be two structs")
	}
	afs, ffs := apiFields(a, nil), fsmFields(f, nil)
	if err := checkOptions(a, f, afs, ffs, o); err != nil {
		return nil, err
	}
	plan := &structPlan{}
	for _, ff := range ffs {
		if o.skip[ff.name] {
			continue
		}
		j := slices.IndexFunc(afs, func(af field) bool { return af.name == ff.name })
		if j < 0 {
			return nil, errorf(a, f, "%s has no counterpart in %s: tag it api:\"-\" if only the FSM keeps it", ff.name, a)
		}
		af := &afs[j]
		af.matched = true
		cd, err := c.codec(af.typ, ff.typ, ff.unit)
		if err != nil {
			return nil, errorf(a, f, "field %s: %v", ff.name, err)
		}
		plan.fields = append(plan.fields, fieldPlan{json: af.json, a: af.index, f: ff.index, c: cd, readOnly: o.readOnly[ff.name]})
	}
	var missing []string
	for _, af := range afs {
		if !af.matched && !o.skip[af.name] {
			missing = append(missing, af.name)
		}
	}
	if len(missing) > 0 {
		return nil, errorf(a, f, "%s has no counterpart in %s: compute it and name it in Skip", strings.Join(missing, ", "), f)
	}
	return plan, nil
}

// checkOptions refuses option names that are no field, so an option cannot
// outlive the field it was written for.
func checkOptions(a, f reflect.Type, afs, ffs []field, o options) error {
	inA := func(n string) bool { return slices.ContainsFunc(afs, func(x field) bool { return x.name == n }) }
	inF := func(n string) bool { return slices.ContainsFunc(ffs, func(x field) bool { return x.name == n }) }
	for n := range o.skip {
		if !inA(n) && !inF(n) {
			return errorf(a, f, "Skip names %s, which is no field of either type", n)
		}
	}
	for n := range o.readOnly {
		if !inA(n) || !inF(n) || o.skip[n] {
			return errorf(a, f, "ReadOnly names %s, which is not a field of both types", n)
		}
	}
	return nil
}

func at(v reflect.Value, index []int) reflect.Value {
	if len(index) == 1 {
		return v.Field(index[0])
	}
	return v.FieldByIndex(index)
}

func (p *structPlan) toFSM(s *state, dst, src reflect.Value) {
	for i := range p.fields {
		fp := &p.fields[i]
		if fp.readOnly {
			continue
		}
		s.push(fp.json, -1)
		fp.c.toFSM(s, at(dst, fp.f), at(src, fp.a))
		s.pop()
	}
}

func (p *structPlan) toAPI(dst, src reflect.Value) {
	for i := range p.fields {
		fp := &p.fields[i]
		fp.c.toAPI(at(dst, fp.a), at(src, fp.f))
	}
}

// cloneCodec deep-copies a type that both sides share, so the FSM keeps no
// reference into a request (or a response into the FSM's state).
func cloneCodec(cd *codec, t reflect.Type) error {
	clone, err := cloner(t)
	if err != nil {
		return err
	}
	cd.toFSM = func(_ *state, dst, src reflect.Value) { clone(dst, src) }
	cd.toAPI = clone
	return nil
}

func cloner(t reflect.Type) (func(dst, src reflect.Value), error) {
	if !hasPointers(t) {
		return func(dst, src reflect.Value) { dst.Set(src) }, nil
	}
	switch t.Kind() {
	case reflect.Slice:
		elem, err := cloner(t.Elem())
		if err != nil {
			return nil, err
		}
		flat := !hasPointers(t.Elem())
		return func(dst, src reflect.Value) {
			if src.IsNil() {
				dst.SetZero()
				return
			}
			out := makeSlice(dst, src.Len())
			if flat {
				reflect.Copy(out, src)
				return
			}
			for i := range src.Len() {
				elem(out.Index(i), src.Index(i))
			}
		}, nil
	case reflect.Map:
		return mapCloner(t)
	case reflect.Pointer:
		elem, err := cloner(t.Elem())
		if err != nil {
			return nil, err
		}
		return func(dst, src reflect.Value) {
			if src.IsNil() {
				dst.SetZero()
				return
			}
			out := reflect.New(t.Elem())
			elem(out.Elem(), src.Elem())
			dst.Set(out)
		}, nil
	case reflect.Struct:
		return structCloner(t)
	}
	return nil, errorf(t, t, "cannot copy a %s", t.Kind())
}

func mapCloner(t reflect.Type) (func(dst, src reflect.Value), error) {
	if hasPointers(t.Key()) {
		return nil, errorf(t, t, "map keys must be plain values")
	}
	if t == reflect.TypeFor[map[string]string]() { // the common case, without reflection per entry
		return func(dst, src reflect.Value) {
			if src.IsNil() {
				dst.SetZero()
				return
			}
			dst.Set(reflect.ValueOf(maps.Clone(src.Interface().(map[string]string))))
		}, nil
	}
	elem, err := cloner(t.Elem())
	if err != nil {
		return nil, err
	}
	return func(dst, src reflect.Value) {
		if src.IsNil() {
			dst.SetZero()
			return
		}
		out := reflect.MakeMapWithSize(t, src.Len())
		v := reflect.New(t.Elem()).Elem()
		for it := src.MapRange(); it.Next(); {
			elem(v, it.Value())
			out.SetMapIndex(it.Key(), v)
		}
		dst.Set(out)
	}, nil
}

func structCloner(t reflect.Type) (func(dst, src reflect.Value), error) {
	type part struct {
		i     int
		clone func(dst, src reflect.Value)
	}
	var parts []part
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() {
			return nil, errorf(t, t, "unexported field %s cannot be copied", sf.Name)
		}
		clone, err := cloner(sf.Type)
		if err != nil {
			return nil, err
		}
		parts = append(parts, part{i, clone})
	}
	return func(dst, src reflect.Value) {
		for _, p := range parts {
			p.clone(dst.Field(p.i), src.Field(p.i))
		}
	}, nil
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
		for i := range t.NumField() {
			if hasPointers(t.Field(i).Type) {
				return true
			}
		}
	}
	return false
}
