package worker

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/artifact"
)

// TestExamples: the example compose stack is a template the servers
// accept, and the example bundles run templates.
func TestExamples(t *testing.T) {
	root := filepath.Join(moduleRoot(t), "examples")
	files := map[string][]byte{}
	dir := filepath.Join(root, "compose-stack")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = b
	}
	info, err := artifact.Inspect(tarball(t, files))
	if err != nil || info.Runtime != artifact.RuntimeCompose {
		t.Fatalf("compose-stack: %+v %v", info, err)
	}
	for _, name := range []string{"bundle-template.json", "bundle-wasm.json"} {
		raw, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		var spec api.BundleSpec
		if err := dec.Decode(&spec); err != nil || spec.Jobs[0].Launch.Kind != api.LaunchProductTemplate {
			t.Fatalf("%s: %v %+v", name, err, spec)
		}
	}
}
