package fsm

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unsafe"
)

// The row codec is compiled once per row type from its struct fields
// (rowcodec.go says what the bytes are). Every field carries
// `row:"N"` or `row:"N,intern"`: N is its number in the record, never
// reused, so a field can be appended without a new section kind (older
// records read it as zero); intern shares each distinct value of a field that
// repeats across rows (node ids, states, names) during a restore. A field
// without a number stops the program at init: no field is left out of a
// snapshot by accident. `row:"N,v1value"` marks a pointer to a struct
// that earlier servers stored as a struct value: the current layout writes
// both alike (a nil pointer is an omitted field), and the v1 layout, which
// wrote the value inline without a presence byte, is read back into a new
// struct. `row:"inline"` on an embedded pointer to a struct numbers that
// struct's fields among the outer struct's own, as JSON and msgpack promote
// them: the record is the one it was before the fields moved behind the
// pointer (which a nil pointer leaves out and a decoded field allocates).
//
// The compiled code reads and writes fields through their offsets, which
// reflection computed and checked against the field's type, so a row
// costs about what the hand-written codec cost.

// valueCodec encodes one Go type. enc and dec are the current layout;
// decV1 reads the positional layout of section kinds 11 and 12.
type valueCodec struct {
	enc   func(e *rowEnc, p unsafe.Pointer)
	dec   func(d *rowDec, p unsafe.Pointer)
	decV1 func(d *rowDec, p unsafe.Pointer)
	kind  fieldKind    // scalars are handled inline by the row loops
	elem  *structCodec // the struct inside, for structs and lists or pointers of them
}

// rowField is one numbered field of a struct, its value's codec copied in
// so the per-row loops follow no extra pointer.
type rowField struct {
	name  string
	num   uint64
	bit   uint64 // 1 << (num-1), its bit in the struct's mask
	off   uintptr
	kind  fieldKind
	enc   func(e *rowEnc, p unsafe.Pointer)
	dec   func(d *rowDec, p unsafe.Pointer)
	decV1 func(d *rowDec, p unsafe.Pointer)
	elem  *structCodec
	via   *inlineVia // set for a field of an inline embedded struct
}

// inlineVia is the embedded pointer an inline field lives behind.
type inlineVia struct {
	off uintptr      // of the pointer in the outer struct
	typ reflect.Type // the struct it points to
}

// at is the field's address in the struct at p, or nil when it lives
// behind a nil inline pointer (so it is zero).
func (f *rowField) at(p unsafe.Pointer) unsafe.Pointer {
	if f.via == nil {
		return unsafe.Add(p, f.off)
	}
	q := *(*unsafe.Pointer)(unsafe.Add(p, f.via.off))
	if q == nil {
		return nil
	}
	return unsafe.Add(q, f.off)
}

// into is at for a decoder: a nil inline pointer gets a new struct.
func (f *rowField) into(p unsafe.Pointer) unsafe.Pointer {
	if f.via == nil {
		return unsafe.Add(p, f.off)
	}
	pp := (*unsafe.Pointer)(unsafe.Add(p, f.via.off))
	if *pp == nil {
		*pp = reflect.New(f.via.typ).UnsafePointer()
	}
	return unsafe.Add(*pp, f.off)
}

// structCodec is a struct's fields in number order, with a lookup by
// number for decoding, and the positional order of the v1 layout.
type structCodec struct {
	typ    reflect.Type
	fields []rowField
	byNum  []*rowField
	known  uint64 // bit N-1 set for each field number N
	v1     []*rowField
	inline []*inlineVia
}

type rowCompiler struct {
	structs map[reflect.Type]*structCodec
	// v1 is the frozen field order of the positional layout, by type name.
	v1 map[string][]string
}

// compileRow builds the codec of a row type (a struct), or says which
// field it cannot encode.
func compileRow(t reflect.Type, v1 map[string][]string) (*structCodec, error) {
	c := &rowCompiler{structs: map[reflect.Type]*structCodec{}, v1: v1}
	sc, err := c.structOf(t)
	if err != nil {
		return nil, err
	}
	if v1 != nil {
		return sc, checkV1(sc, map[*structCodec]bool{})
	}
	return sc, nil
}

// checkV1 makes sure every struct the v1 layout reaches has a v1 order, so
// the old decoder cannot silently read nothing for one.
func checkV1(sc *structCodec, seen map[*structCodec]bool) error {
	if seen[sc] {
		return nil
	}
	seen[sc] = true
	if sc.v1 == nil {
		return fmt.Errorf("row codec: %s is in v1 records but has no v1 field order", sc.typ)
	}
	for _, f := range sc.v1 {
		if f.elem != nil {
			if err := checkV1(f.elem, seen); err != nil {
				return err
			}
		}
	}
	return nil
}

func mustCompileRow[T any](v1 map[string][]string) *structCodec {
	sc, err := compileRow(reflect.TypeFor[T](), v1)
	if err != nil {
		panic(err)
	}
	return sc
}

func (c *rowCompiler) structOf(t reflect.Type) (*structCodec, error) {
	if sc, ok := c.structs[t]; ok {
		return sc, nil
	}
	sc := &structCodec{typ: t}
	c.structs[t] = sc // before the fields, so a recursive type finds itself
	for sf := range t.Fields() {
		if sf.Tag.Get("row") == "inline" {
			fs, err := c.inlineFields(t, sf)
			if err != nil {
				return nil, err
			}
			sc.fields = append(sc.fields, fs...)
			sc.inline = append(sc.inline, fs[0].via)
			continue
		}
		f, err := c.field(t, sf)
		if err != nil {
			return nil, err
		}
		sc.fields = append(sc.fields, f)
	}
	slices.SortFunc(sc.fields, func(a, b rowField) int { return int(a.num) - int(b.num) })
	if n := len(sc.fields); n > 0 {
		sc.byNum = make([]*rowField, sc.fields[n-1].num+1)
	}
	for i := range sc.fields {
		f := &sc.fields[i]
		if sc.byNum[f.num] != nil {
			return nil, fmt.Errorf("row codec: %s.%s and %s share number %d", t, f.name, sc.byNum[f.num].name, f.num)
		}
		sc.byNum[f.num] = f
		sc.known |= f.bit
	}
	return sc, c.layoutV1(sc)
}

func (c *rowCompiler) field(t reflect.Type, sf reflect.StructField) (rowField, error) {
	tag, ok := sf.Tag.Lookup("row")
	if !ok || !sf.IsExported() {
		return rowField{}, fmt.Errorf("row codec: %s.%s has no row tag: give it the next free number", t, sf.Name)
	}
	numText, opt, _ := strings.Cut(tag, ",")
	num, err := strconv.ParseUint(numText, 10, 8)
	if err != nil || num == 0 || num > 64 || (opt != "" && opt != "intern" && opt != "v1value") {
		return rowField{}, fmt.Errorf("row codec: %s.%s: bad row tag %q (want N, N,intern or N,v1value with N in 1..64)", t, sf.Name, tag)
	}
	val, err := c.value(sf.Type, opt == "intern")
	if err != nil {
		return rowField{}, fmt.Errorf("row codec: %s.%s: %w", t, sf.Name, err)
	}
	if opt == "v1value" {
		if val.kind != kindRef || val.elem == nil || sf.Type.Kind() != reflect.Pointer {
			return rowField{}, fmt.Errorf("row codec: %s.%s: v1value is for a pointer to a struct", t, sf.Name)
		}
		val = inlineV1(val)
	}
	return rowField{name: sf.Name, num: num, bit: 1 << (num - 1), off: sf.Offset, kind: val.kind,
		enc: val.enc, dec: val.dec, decV1: val.decV1, elem: val.elem}, nil
}

// inlineFields compiles the fields of an inline embedded struct pointer as
// fields of t reached through it.
func (c *rowCompiler) inlineFields(t reflect.Type, sf reflect.StructField) ([]rowField, error) {
	if !sf.Anonymous || sf.Type.Kind() != reflect.Pointer || sf.Type.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("row codec: %s.%s: inline is for an embedded pointer to a struct", t, sf.Name)
	}
	via := &inlineVia{off: sf.Offset, typ: sf.Type.Elem()}
	if via.typ.NumField() == 0 {
		return nil, fmt.Errorf("row codec: %s.%s: an inline struct needs fields", t, sf.Name)
	}
	var out []rowField
	for isf := range via.typ.Fields() {
		if isf.Tag.Get("row") == "inline" {
			return nil, fmt.Errorf("row codec: %s.%s: an inline struct cannot hold another", t, isf.Name)
		}
		f, err := c.field(via.typ, isf)
		if err != nil {
			return nil, err
		}
		f.via = via
		out = append(out, f)
	}
	return out, nil
}

// layoutV1 resolves the positional order of the v1 layout, for the types
// that had one.
func (c *rowCompiler) layoutV1(sc *structCodec) error {
	names, ok := c.v1[sc.typ.Name()]
	if !ok {
		return nil
	}
	for _, n := range names {
		i := slices.IndexFunc(sc.fields, func(f rowField) bool { return f.name == n })
		if i < 0 {
			return fmt.Errorf("row codec: %s lost field %s, which v1 snapshots hold", sc.typ, n)
		}
		sc.v1 = append(sc.v1, &sc.fields[i])
	}
	return nil
}

func (c *rowCompiler) value(t reflect.Type, intern bool) (*valueCodec, error) {
	if v := scalarCodec(t, intern); v != nil {
		return v, nil
	}
	switch t.Kind() {
	case reflect.Struct:
		sc, err := c.structOf(t)
		if err != nil {
			return nil, err
		}
		// A struct value is always written (a terminator at least), so
		// its emptiness costs no deep test.
		return &valueCodec{enc: sc.enc, dec: sc.dec, decV1: sc.decV1, kind: kindStruct, elem: sc}, nil
	case reflect.Pointer:
		if t.Elem().Kind() != reflect.Struct {
			break
		}
		sc, err := c.structOf(t.Elem())
		if err != nil {
			return nil, err
		}
		return pointerCodec(sc), nil
	case reflect.Slice:
		if t.Elem().Kind() != reflect.Struct {
			break
		}
		sc, err := c.structOf(t.Elem())
		if err != nil {
			return nil, err
		}
		return structSliceCodec(t, sc), nil
	}
	return nil, fmt.Errorf("no row encoding for %s", t)
}
