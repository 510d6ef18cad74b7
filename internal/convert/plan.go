package convert

import (
	"reflect"
	"slices"
	"strings"
	"unsafe"
)

// fieldPlan converts one matched pair of fields, at their offsets.
type fieldPlan struct {
	json     string
	a, f     uintptr
	c        *codec
	readOnly bool
	via      *via         // the FSM field is behind this embedded pointer
	aType    reflect.Type // the API field's, to test and clear it
}

// fsmAt is the FSM field in the struct at dst, allocating the embedded
// pointer it lives behind when alloc is set; nil when that pointer is nil.
func (fp *fieldPlan) fsmAt(dst unsafe.Pointer, alloc bool) unsafe.Pointer {
	if fp.via == nil {
		return unsafe.Add(dst, fp.f)
	}
	pp := (*unsafe.Pointer)(unsafe.Add(dst, fp.via.off))
	if *pp == nil {
		if !alloc {
			return nil
		}
		*pp = reflect.New(fp.via.typ).UnsafePointer()
	}
	return unsafe.Add(*pp, fp.f)
}

// zeroAt reports whether n bytes at p are all zero: an API value that
// needs no FSM struct behind a pointer.
func zeroAt(p unsafe.Pointer, n uintptr) bool {
	for _, b := range unsafe.Slice((*byte)(p), n) {
		if b != 0 {
			return false
		}
	}
	return true
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
	afs, ffs := apiFields(a, 0), fsmFields(f, 0)
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
		if ff.via != nil && ff.via.nested {
			return nil, errorf(a, f, "field %s is behind two embedded pointers", ff.name)
		}
		cd, err := c.codec(af.typ, ff.typ, ff.unit)
		if err != nil {
			return nil, errorf(a, f, "field %s: %v", ff.name, err)
		}
		plan.fields = append(plan.fields, fieldPlan{json: af.json, a: af.off, f: ff.off, c: cd,
			readOnly: o.readOnly[ff.name], via: ff.via, aType: af.typ})
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

func (p *structPlan) toFSM(s *state, dst, src unsafe.Pointer) {
	for i := range p.fields {
		fp := &p.fields[i]
		if fp.readOnly {
			continue
		}
		from := unsafe.Add(src, fp.a)
		if fp.via != nil && zeroAt(from, fp.aType.Size()) && fp.fsmAt(dst, false) == nil {
			continue // nothing to say: the pointer stays nil
		}
		n := len(s.problems)
		fp.c.toFSM(s, fp.fsmAt(dst, true), from)
		if len(s.problems) > n {
			s.note(n, Step{Name: fp.json, Index: -1})
		}
	}
}

func (p *structPlan) toAPI(dst, src unsafe.Pointer) {
	for i := range p.fields {
		fp := &p.fields[i]
		to, from := unsafe.Add(dst, fp.a), fp.fsmAt(src, false)
		if from == nil {
			if !zeroAt(to, fp.aType.Size()) {
				reflect.NewAt(fp.aType, to).Elem().SetZero()
			}
			continue
		}
		fp.c.toAPI(to, from)
	}
}
