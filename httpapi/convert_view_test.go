package httpapi

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/internal/fill"
)

// viewBundles are bundles a view must show as a copy does: every field
// set (fill), and the cases the converter edits after converting: an
// explanation without filter counts, reserved tags, no jobs.
func viewBundles(seed int) []*fsm.Bundle {
	full := fill.New[fsm.Bundle](seed)
	noFiltered := fill.New[fsm.Bundle](seed + 1)
	noFiltered.Explain.Filtered = nil
	reserved := fill.New[fsm.Bundle](seed + 2)
	reserved.Spec.Tags[fsm.ReservedTagPrefix+"x"] = "y"
	reserved.Spec.Jobs[0].Launch.Tags = map[string]string{fsm.ReservedTagPrefix + "only": "z"}
	bare := &fsm.Bundle{Spec: fsm.BundleSpec{ID: "bare"}}
	return []*fsm.Bundle{full, noFiltered, reserved, bare, full}
}

// TestBundleViewAsCopy: a list page's view of a bundle encodes as the
// bundle's copy does, rendered one after another into one value as a page
// renders them, and leaves the state's bundle as it was.
func TestBundleViewAsCopy(t *testing.T) {
	var view api.Bundle
	for seed := range 4 {
		bundles, pristine := viewBundles(seed*100), viewBundles(seed*100)
		for i, b := range bundles {
			want, err := json.Marshal(bundleToAPI(b))
			if err != nil {
				t.Fatal(err)
			}
			bundleViewInto(&view, b)
			got, err := json.Marshal(&view)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Fatalf("seed %d bundle %d: view\n%s\ncopy\n%s", seed, i, got, want)
			}
			if !reflect.DeepEqual(b, pristine[i]) {
				t.Fatalf("seed %d bundle %d: rendering a view changed the state's bundle", seed, i)
			}
		}
	}
}
