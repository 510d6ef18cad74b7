package fsm

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"pgregory.net/rapid"

	"github.com/amserver/amserver/internal/fill"
)

// TestRowCodecRoundTrip: any bundle or assignment, whatever its fields hold
// (nil and empty alike), decodes to exactly what was encoded.
func TestRowCodecRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := rapid.Make[Bundle]().Draw(t, "bundle")
		got, err := decodeBundleRow(&rowDec{b: encodeBundleRow(nil, &b)})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, &b) {
			t.Fatalf("bundle round trip:\n got %#v\nwant %#v", got, &b)
		}
		a := rapid.Make[Assignment]().Draw(t, "assignment")
		gotA, err := decodeAssignmentRow(&rowDec{b: encodeAssignmentRow(nil, &a)})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(gotA, &a) {
			t.Fatalf("assignment round trip:\n got %#v\nwant %#v", gotA, &a)
		}
	})
}

// TestRowCodecRejectsDamage: a truncated or extended record is an error,
// never a panic or a silently different row.
func TestRowCodecRejectsDamage(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := rapid.Make[Bundle]().Draw(t, "bundle")
		rec := encodeBundleRow(nil, &b)
		cut := rapid.IntRange(0, len(rec)-1).Draw(t, "cut")
		if _, err := decodeBundleRow(&rowDec{b: rec[:cut]}); err == nil {
			t.Fatalf("record cut at %d of %d decoded without error", cut, len(rec))
		}
		if _, err := decodeBundleRow(&rowDec{b: append(rec, 0)}); err == nil {
			t.Fatal("record with a trailing byte decoded without error")
		}
	})
}

// TestRowCodecFilledRoundTrip: rows whose every field, at every depth,
// holds a distinct non-zero value decode to exactly what was encoded, as do
// zero rows; a field the codec skipped would come back zero.
func TestRowCodecFilledRoundTrip(t *testing.T) {
	for _, b := range []*Bundle{fill.New[Bundle](0), fill.New[Bundle](7), {}} {
		got, err := decodeBundleRow(&rowDec{b: encodeBundleRow(nil, b)})
		if err != nil || !reflect.DeepEqual(got, b) {
			t.Fatalf("bundle round trip (%v):\n got %#v\nwant %#v", err, got, b)
		}
	}
	for _, a := range []*Assignment{fill.New[Assignment](0), {}} {
		got, err := decodeAssignmentRow(&rowDec{b: encodeAssignmentRow(nil, a)})
		if err != nil || !reflect.DeepEqual(got, a) {
			t.Fatalf("assignment round trip (%v):\n got %#v\nwant %#v", err, got, a)
		}
	}
}

// TestRowCodecReadsV1: records written by the positional codec of section
// kinds 11 and 12 decode to the rows they were made from.
// testdata/rows_v1.json holds records that the hand-written codec of
// commit eef47a6 wrote from these same values (fill.New of the types as
// they were then, whose fields the v1 layout lists; emptyBundle). The
// codec reads them as stored; restore then normalizes their launches
// (TestRestoreRowCodecV1Snapshot).
func TestRowCodecReadsV1(t *testing.T) {
	raw, err := os.ReadFile("testdata/rows_v1.json")
	if err != nil {
		t.Fatal(err)
	}
	var rows map[string]string
	if err := json.Unmarshal(raw, &rows); err != nil {
		t.Fatal(err)
	}
	rec := func(k string) []byte {
		b, err := hex.DecodeString(rows[k])
		if err != nil || len(b) == 0 {
			t.Fatalf("%s: %v", k, err)
		}
		return b
	}
	bundles := map[string]*Bundle{"filled": fillV1[Bundle](0), "zero": {}, "empty": emptyBundle(), "filled1000": fillV1[Bundle](1000)}
	for k, want := range bundles {
		got, err := decodeBundleRowV1(&rowDec{b: rec("bundle/" + k)})
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("v1 bundle %s (%v):\n got %#v\nwant %#v", k, err, got, want)
		}
	}
	// v1 wrote an assignment's launch as a value: a zero one reads back
	// as a launch, not as none.
	assigns := map[string]*Assignment{"filled": fillV1[Assignment](0), "zero": {Launch: &Launch{}}, "filled1000": fillV1[Assignment](1000)}
	for k, want := range assigns {
		got, err := decodeAssignmentRowV1(&rowDec{b: rec("assignment/" + k)})
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("v1 assignment %s (%v):\n got %#v\nwant %#v", k, err, got, want)
		}
	}
}

// fillV1 fills the fields the v1 layout knows, leaving those added since
// zero: the values the golden records were written from.
func fillV1[T any](seed int) *T {
	return fill.NewWithout[T](seed, func(owner reflect.Type, f reflect.StructField) bool {
		order, ok := rowLayoutV1[owner.Name()]
		return ok && !slices.Contains(order, f.Name)
	})
}

// emptyBundle has lists and maps that are empty rather than nil.
func emptyBundle() *Bundle {
	return &Bundle{
		Spec:     BundleSpec{Jobs: []Job{{CoLocateWith: []string{}, Launch: Launch{Command: []string{}, Env: map[string]string{}}}}, Tags: map[string]string{}},
		Replicas: []Replica{{Jobs: []JobPlacement{}}}, Degradations: []Degradation{}, Explain: &Explain{Filtered: map[string]int{}},
	}
}

// TestRowCodecNeedsEveryField: a field without a row number cannot be
// compiled, so no field is left out of a snapshot by accident; nor can two
// fields share a number.
func TestRowCodecNeedsEveryField(t *testing.T) {
	type untagged struct {
		A int    `row:"1"`
		B string // added without a number
	}
	if _, err := compileRow(reflect.TypeFor[untagged](), nil); err == nil || !strings.Contains(err.Error(), "B has no row tag") {
		t.Fatalf("untagged field compiled: %v", err)
	}
	type shared struct {
		A int    `row:"1"`
		B string `row:"1"`
	}
	if _, err := compileRow(reflect.TypeFor[shared](), nil); err == nil {
		t.Fatal("two fields with one number compiled")
	}
	type inner struct {
		C []float64 `row:"1"`
	}
	type outer struct {
		I inner `row:"1"`
	}
	if _, err := compileRow(reflect.TypeFor[outer](), nil); err == nil {
		t.Fatal("a type the codec cannot encode compiled")
	}
}

// TestRowCodecAppendedField: a record written before a field was appended
// reads back with that field zero; a record from a newer writer, with a
// number this reader does not know, is refused rather than misread.
func TestRowCodecAppendedField(t *testing.T) {
	type before struct {
		A string `row:"1"`
		B int64  `row:"2"`
	}
	type after struct {
		A string   `row:"1"`
		B int64    `row:"2"`
		C []string `row:"3"`
	}
	old, cur := mustCompileRow[before](nil), mustCompileRow[after](nil)
	e := &rowEnc{}
	old.enc(e, unsafe.Pointer(&before{A: "a", B: -3}))
	var got after
	d := &rowDec{b: e.b}
	cur.dec(d, unsafe.Pointer(&got))
	if err := d.done("after"); err != nil || !reflect.DeepEqual(got, after{A: "a", B: -3}) {
		t.Fatalf("old record read as %+v, %v", got, err)
	}
	e = &rowEnc{}
	cur.enc(e, unsafe.Pointer(&after{A: "a", C: []string{"x"}}))
	var back before
	d = &rowDec{b: e.b}
	old.dec(d, unsafe.Pointer(&back))
	if err := d.done("before"); err == nil {
		t.Fatalf("a newer record was read as %+v", back)
	}
}

// TestRowCodecNeverPanics: arbitrary bytes decode to an error or a row, in
// both layouts, never a panic.
func TestRowCodecNeverPanics(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		rec := rapid.SliceOfN(rapid.Byte(), 0, 64).Draw(t, "record")
		_, _ = decodeBundleRow(&rowDec{b: rec})
		_, _ = decodeBundleRowV1(&rowDec{b: rec})
		_, _ = decodeAssignmentRow(&rowDec{b: rec})
		_, _ = decodeAssignmentRowV1(&rowDec{b: rec})
	})
}
