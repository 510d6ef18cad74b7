package convert

import (
	"reflect"
	"strings"
	"time"
	"unsafe"
)

// codec converts one API type to one FSM type and back, between values at
// dst and src. The compiled code reaches fields through offsets that
// reflection computed and checked against each field's type, so a
// conversion costs about what a hand-written one does.
type codec struct {
	toFSM func(s *state, dst, src unsafe.Pointer)
	toAPI func(dst, src unsafe.Pointer)
}

type key struct {
	a, f reflect.Type
	unit string
}

// compiler memoizes codecs, so shared types compile once and a recursive
// type refers to its own (still being filled) codec.
type compiler struct {
	done map[key]*codec
	view bool // ToAPI shares common types (View)
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
		err = cloneCodec(cd, a, c.view)
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
	if a.Kind() == reflect.Struct && f.Kind() == reflect.Pointer && f.Elem().Kind() == reflect.Struct {
		elem, err := c.codec(a, f.Elem(), "")
		if err != nil {
			return err
		}
		sharedCodec(cd, a, f, elem)
		return nil
	}
	if a.Kind() == reflect.Int && f.Kind() == reflect.Int32 {
		narrowCodec(cd)
		return nil
	}
	if a.Kind() != f.Kind() {
		return errorf(a, f, "kinds differ (%s, %s) and no unit tag says how to convert", a.Kind(), f.Kind())
	}
	switch a.Kind() {
	case reflect.Struct:
		if a == timeType || f == timeType {
			break
		}
		plan, err := c.structPlan(a, f, options{})
		if err != nil {
			return err
		}
		cd.toFSM, cd.toAPI = plan.toFSM, plan.toAPI
		return nil
	case reflect.Slice, reflect.Pointer:
		elem, err := c.codec(a.Elem(), f.Elem(), "")
		if err != nil {
			return err
		}
		if a.Kind() == reflect.Slice {
			sliceCodec(cd, a, f, elem)
		} else {
			pointerCodec(cd, a, f, elem)
		}
		return nil
	case reflect.Map:
		if a.Key().Kind() != reflect.String || f.Key().Kind() != reflect.String {
			break
		}
		elem, err := c.codec(a.Elem(), f.Elem(), "")
		if err != nil {
			return err
		}
		mapCodec(cd, a, f, elem)
		return nil
	}
	if conv := scalarCopy(a, f); conv != nil {
		cd.toFSM = func(_ *state, dst, src unsafe.Pointer) { conv(dst, src) }
		cd.toAPI = conv
		return nil
	}
	return errorf(a, f, "cannot pair these types")
}

// field is one (possibly promoted) field of a struct.
type field struct {
	name    string // matching name: the Go name, or the api tag's rename
	json    string // the API's JSON name, for problem paths
	off     uintptr
	typ     reflect.Type
	unit    string
	matched bool
	via     *via // an FSM field of an embedded struct pointer
}

// via is the embedded pointer an FSM field lives behind: a nil pointer
// reads as zero fields, and a non-zero API value allocates it.
type via struct {
	off    uintptr      // of the pointer in the outer struct
	typ    reflect.Type // the struct it points to
	nested bool         // behind a pointer behind a pointer: not supported
}

// apiFields lists A's fields, with embedded structs' fields promoted as JSON
// promotes them.
func apiFields(t reflect.Type, base uintptr) []field {
	var out []field
	for sf := range t.Fields() {
		jsonName, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if sf.Anonymous && sf.Type.Kind() == reflect.Struct && jsonName == "" {
			out = append(out, apiFields(sf.Type, base+sf.Offset)...) // promoted, exported or not
			continue
		}
		if !sf.IsExported() || jsonName == "-" {
			continue
		}
		if jsonName == "" {
			jsonName = sf.Name
		}
		out = append(out, field{name: sf.Name, json: jsonName, off: base + sf.Offset, typ: sf.Type})
	}
	return out
}

// fsmFields lists F's fields that have an API counterpart, with embedded and
// api:",inline" structs' fields promoted, and an embedded pointer's fields
// reached through it (one level: a pointer within is not followed).
func fsmFields(t reflect.Type, base uintptr) []field {
	var out []field
	for sf := range t.Fields() {
		rename, opt, _ := strings.Cut(sf.Tag.Get("api"), ",")
		if rename == "-" {
			continue
		}
		if sf.Type.Kind() == reflect.Struct && (opt == "inline" || sf.Anonymous) {
			out = append(out, fsmFields(sf.Type, base+sf.Offset)...)
			continue
		}
		if sf.Anonymous && sf.Type.Kind() == reflect.Pointer && sf.Type.Elem().Kind() == reflect.Struct {
			v := &via{off: base + sf.Offset, typ: sf.Type.Elem()}
			for _, inner := range fsmFields(v.typ, 0) {
				if inner.via != nil {
					inner.via = &via{nested: true} // refused by structPlan
				} else {
					inner.via = v
				}
				out = append(out, inner)
			}
			continue
		}
		if !sf.IsExported() {
			continue
		}
		name := sf.Name
		if rename != "" {
			name = rename
		}
		out = append(out, field{name: name, off: base + sf.Offset, typ: sf.Type, unit: sf.Tag.Get("unit")})
	}
	return out
}
