package jsonkeys

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

type inner struct {
	Name  string            `json:"name"`
	Env   map[string]string `json:"env,omitempty"`
	Extra json.RawMessage   `json:"extra,omitempty"`
}

type Embedded struct {
	Zone string `json:"zone"`
}

type outer struct {
	Embedded
	ID     string            `json:"id"`
	Items  []inner           `json:"items"`
	ByName map[string]*inner `json:"byName"`
	Any    any               `json:"any"`
	Ptr    *inner            `json:"ptr"`
	Plain  int               // no tag: the Go name
	Hidden int               `json:"-"`
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		key       string // the CaseError's key; "" for no error
	}{
		{"exact keys", `{"id":"a","zone":"z","Plain":1,"items":[{"name":"x","env":{"A":"1","a":"2"}}]}`, ""},
		{"top-level key in another case", `{"ID":"a"}`, "ID"},
		{"both spellings: the decoder keeps the last", `{"id":"a","Id":"b"}`, "Id"},
		{"embedded field", `{"Zone":"z"}`, "Zone"},
		{"untagged field by its tag-less name", `{"plain":1}`, "plain"},
		{"in an array element", `{"items":[{"name":"x"},{"NAME":"y"}]}`, "NAME"},
		{"through a pointer", `{"ptr":{"Name":"x"}}`, "Name"},
		{"a map value's struct", `{"byName":{"K":{"nAme":"x"}}}`, "nAme"},
		{"map keys are free", `{"byName":{"Name":{"name":"x"},"name":null}}`, ""},
		{"escaped key", `{"\u0049D":"a"}`, "ID"},
		{"long s folds to s", `{"itemſ":[]}`, "itemſ"},
		{"free-form below any and raw", `{"any":{"ID":1},"items":[{"extra":{"Name":1}}]}`, ""},
		{"strings holding braces and quotes", `{"id":"{\"ID\":1}","items":[{"name":"]}"}]}`, ""},
		{"null and scalars", `{"id":null,"ptr":null,"items":null,"Plain":-1.5e3}`, ""},
		{"a kind that does not fit is skipped", `{"id":{"ID":1}}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check([]byte(tc.doc), reflect.TypeOf(&outer{}))
			var ce *CaseError
			switch {
			case tc.key == "" && err != nil:
				t.Fatalf("Check(%s) = %v, want nil", tc.doc, err)
			case tc.key != "" && !errors.As(err, &ce):
				t.Fatalf("Check(%s) = %v, want a CaseError for %q", tc.doc, err, tc.key)
			case tc.key != "" && ce.Key != tc.key:
				t.Fatalf("Check(%s) names %q, want %q", tc.doc, ce.Key, tc.key)
			}
		})
	}
}

// The decoder does accept each refused key: the check only narrows it.
func TestDecoderAcceptsWhatCheckRefuses(t *testing.T) {
	for _, doc := range []string{`{"ID":"a"}`, `{"Zone":"z"}`, `{"items":[{"NAME":"y"}]}`, `{"itemſ":[]}`} {
		dec := json.NewDecoder(strings.NewReader(doc))
		dec.DisallowUnknownFields()
		var o outer
		if err := dec.Decode(&o); err != nil {
			t.Fatalf("the decoder refuses %s (%v): this test's premise is gone", doc, err)
		}
	}
}

func TestCaseErrorMessage(t *testing.T) {
	err := Check([]byte(`{"Id":"a"}`), reflect.TypeOf(outer{}))
	want := `unknown field "Id" (field names are case-sensitive: "id")`
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
}
