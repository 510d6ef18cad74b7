// Package convert turns API (wire) values into FSM values and back, from the
// types alone. A pair of struct types is matched field by field by Go field
// name; a quantity or a time is declared once, by a `unit` tag on the FSM
// field, and converted the same way wherever it appears:
//
//	unit:"milli"     int64 milli-units      ↔ float64 units (2.5 ↔ 2500)
//	unit:"instant"   int64 unix nanos, 0    ↔ RFC 3339 string or time.Time, zero
//	unit:"duration"  int64 nanos            ↔ Go duration string ("10m")
//
// Other FSM-side tags: api:"Name" names a counterpart with another name,
// api:"-" marks a field the API never shows, api:",inline" matches a struct
// field's own fields against the API struct (as an embedded struct would).
// Fields of the same type on both sides are deep-copied, so the FSM never
// shares memory with a request.
//
// Compiling a pair fails when a field on either side has no counterpart and
// is not marked, so a field added to one side cannot be silently dropped.
// Compilation happens once (package init); a conversion then only walks the
// compiled plan.
package convert

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unsafe"
)

// Step is one element of a field path: a JSON field name, or (Index >= 0) a
// list element of the previous step.
type Step struct {
	Name  string
	Index int
}

// Problem is an API value that has no FSM form: a negative quantity, a bad
// time. Path names the field as a client wrote it.
type Problem struct {
	Path []Step
	Err  error
}

// Field renders a path as "gpus[1].totalCapacity".
func Field(path []Step) string {
	var b strings.Builder
	for _, s := range path {
		if s.Index >= 0 {
			b.WriteString("[" + strconv.Itoa(s.Index) + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(s.Name)
	}
	return b.String()
}

func (p Problem) Error() string { return Field(p.Path) + " " + p.Err.Error() }

// Option adjusts the top level of one pair.
type Option func(*options)

type options struct {
	skip     map[string]bool
	readOnly map[string]bool
	view     bool
}

// Skip names fields, on either side, that have no counterpart in this pair:
// the caller computes or sets them.
func Skip(names ...string) Option {
	return func(o *options) {
		for _, n := range names {
			o.skip[n] = true
		}
	}
}

// ReadOnly names fields the API shows but a request cannot set: converted to
// the API, left zero from it.
func ReadOnly(names ...string) Option {
	return func(o *options) {
		for _, n := range names {
			o.readOnly[n] = true
		}
	}
}

// View makes ToAPI share, instead of copy, the values of types both sides
// have in common (lists, maps, pointers): for an API value that is encoded
// and dropped while the FSM state it reads stays as it is, such as a list
// page's entry, which otherwise copied every tag map and command line it
// showed. What ToAPI gives must then be read only, at every depth that is
// not the API's own. ToFSM still copies.
func View() Option {
	return func(o *options) { o.view = true }
}

// Pair converts between an API type A and an FSM type F.
type Pair[A, F any] struct {
	plan *structPlan
}

// NewPair compiles the conversion between A and F, or says which field has
// no counterpart.
func NewPair[A, F any](opts ...Option) (*Pair[A, F], error) {
	o := options{skip: map[string]bool{}, readOnly: map[string]bool{}}
	for _, opt := range opts {
		opt(&o)
	}
	c := compiler{done: map[key]*codec{}, view: o.view}
	plan, err := c.structPlan(reflect.TypeFor[A](), reflect.TypeFor[F](), o)
	if err != nil {
		return nil, err
	}
	return &Pair[A, F]{plan: plan}, nil
}

// MustPair is NewPair for package variables: a type that gained an
// unmapped field stops the program (and every test) at init.
func MustPair[A, F any](opts ...Option) *Pair[A, F] {
	p, err := NewPair[A, F](opts...)
	if err != nil {
		panic(err)
	}
	return p
}

// ToFSM converts src into dst. Skipped and read-only fields of dst are left
// as they were; problems are reported in field order.
func (p *Pair[A, F]) ToFSM(dst *F, src *A) []Problem {
	s := states.Get().(*state)
	p.plan.toFSM(s, unsafe.Pointer(dst), unsafe.Pointer(src))
	problems := s.problems
	s.problems = nil
	states.Put(s)
	for _, pr := range problems {
		slices.Reverse(pr.Path) // built innermost first
	}
	return problems
}

// ToAPI converts src into dst; skipped fields of dst are left as they were.
func (p *Pair[A, F]) ToAPI(dst *A, src *F) {
	p.plan.toAPI(unsafe.Pointer(dst), unsafe.Pointer(src))
}

// states recycles ToFSM's working state.
var states = sync.Pool{New: func() any { return &state{} }}

// state collects one ToFSM call's problems. A problem's path is built as
// the conversion returns from it, innermost step first, so a conversion
// without problems spends nothing on paths.
type state struct {
	problems []Problem
}

func (s *state) fail(err error) { s.problems = append(s.problems, Problem{Err: err}) }

// note adds step to the paths of the problems from index since on, as the
// conversion leaves the field or element they were found in.
func (s *state) note(since int, step Step) {
	for i := since; i < len(s.problems); i++ {
		s.problems[i].Path = append(s.problems[i].Path, step)
	}
}

// Check compiles the pair without keeping it, for tests of the rules.
func Check[A, F any](opts ...Option) error {
	_, err := NewPair[A, F](opts...)
	return err
}

func errorf(a, f reflect.Type, format string, args ...any) error {
	return fmt.Errorf("convert %s ↔ %s: %s", a, f, fmt.Sprintf(format, args...))
}
