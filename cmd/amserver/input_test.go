package main

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/amserver/amserver/api"
)

const bundleYAML = `# an encoder with a backup in another AZ
id: enc-7
pool: live
priority: gold
jobs:
  - name: encoder
    requirements:
      capacity: 2.5
      cores: 4
      capabilities:
        - {name: st2110-nic, count: 1, attributeMatches: {speed: 25g}}
    constraints: ['node.labels.rack != "r7"']
    launch: {driver: exec, command: [/bin/enc, --live]}
  - name: packager
    requirements: {capacity: 0.5}
    coLocateWith: [encoder]
resilience: {sameAz: forbid}
tags: {team: sports}
`

const bundleJSON = `{
  "id": "enc-7", "pool": "live", "priority": "gold",
  "jobs": [
    {"name": "encoder",
     "requirements": {"capacity": 2.5, "cores": 4,
       "capabilities": [{"name": "st2110-nic", "count": 1, "attributeMatches": {"speed": "25g"}}]},
     "constraints": ["node.labels.rack != \"r7\""],
     "launch": {"driver": "exec", "command": ["/bin/enc", "--live"]}},
    {"name": "packager", "requirements": {"capacity": 0.5}, "coLocateWith": ["encoder"]}
  ],
  "resilience": {"sameAz": "forbid"},
  "tags": {"team": "sports"}
}`

func wantSpec() api.BundleSpec {
	return api.BundleSpec{ID: "enc-7", Pool: "live", Priority: "gold",
		Jobs: []api.Job{
			{Name: "encoder", Requirements: api.Requirements{Capacity: 2.5, Cores: 4,
				Capabilities: []api.CapabilityRequest{{Name: "st2110-nic", Count: 1, AttributeMatches: map[string]string{"speed": "25g"}}}},
				// The older launch shape in the file is sent in the union's legacy form.
				Constraints: []string{`node.labels.rack != "r7"`}, Launch: legacyLaunch("exec", "/bin/enc", "--live")},
			{Name: "packager", Requirements: api.Requirements{Capacity: 0.5}, CoLocateWith: []string{"encoder"}},
		},
		Resilience: &api.Resilience{SameAz: "forbid"}, Tags: map[string]string{"team": "sports"}}
}

// TestBundleFiles: YAML and JSON files (and stdin) give the same spec on
// the wire.
func TestBundleFiles(t *testing.T) {
	f := newFake(t)
	b := sampleBundle()
	b.ID, b.State = "enc-7", api.StatePending
	f.reply("POST /v1/bundles", http.StatusCreated, api.CreateResponse{Bundle: b})
	dir := t.TempDir()
	tests := []struct {
		name, stdin string
		args        []string
	}{
		{"yaml", "", []string{"bundle", "submit", writeFile(t, dir, "b.yaml", bundleYAML)}},
		{"json", "", []string{"bundle", "submit", writeFile(t, dir, "b.json", bundleJSON)}},
		{"json without extension", "", []string{"bundle", "submit", writeFile(t, dir, "b.spec", bundleJSON)}},
		{"yaml on stdin", bundleYAML, []string{"bundle", "submit", "-"}},
		{"json on stdin", bundleJSON, []string{"bundle", "submit", "-"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCLI(t, f.srv.URL, tt.stdin, tt.args...)
			if r.code != exitOK {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			if !strings.Contains(r.stdout, `bundle "enc-7" submitted (state pending, index 9)`) {
				t.Errorf("stdout = %q", r.stdout)
			}
			var got api.BundleSpec
			if err := json.Unmarshal(f.last("POST", "/v1/bundles").body, &got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, wantSpec()) {
				t.Errorf("sent %+v\nwant %+v", got, wantSpec())
			}
		})
	}
}

// TestBadFiles: every malformed file is exit 2, names the problem, and
// sends nothing.
func TestBadFiles(t *testing.T) {
	f := newFake(t)
	dir := t.TempDir()
	tests := []struct {
		name, file, content, want string
	}{
		{"unknown field yaml", "a.yaml", strings.Replace(bundleYAML, "cores: 4", "corez: 4", 1), `unknown field "corez"`},
		{"unknown field json", "a.json", strings.Replace(bundleJSON, `"priority"`, `"prio"`, 1), `unknown field "prio"`},
		{"unknown top-level", "b.yaml", "id: x\npool: live\njobs: []\nresilliance: {}\n", `unknown field "resilliance"`},
		{"wrong type", "c.yaml", "pool: live\njobs:\n  - name: a\n    requirements: {cores: many}\n",
			`field "jobs.requirements.cores" must be a whole number, not string`},
		{"wrong type json line", "c.json", "{\n\"pool\": \"live\",\n\"jobs\": 3\n}", `field "jobs" must be a list, not number (line 3)`},
		{"duplicate key", "d.yaml", "pool: a\npool: b\n", `already set`},
		// encoding/json would take "Pool" for "pool", and keep one of the two.
		{"key in another case yaml", "k.yaml", "pool: a\nPool: b\njobs: [{name: x}]\n", `unknown field "Pool"`},
		{"key in another case json", "k.json", strings.Replace(bundleJSON, `"cores"`, `"Cores"`, 1), `unknown field "Cores"`},
		{"two documents", "e.yaml", "pool: a\n---\npool: b\n", "more than one YAML document"},
		{"empty", "f.yaml", " \n", "it is empty"},
		{"only comments", "g.yaml", "# nothing\n", "holds no document"},
		{"json null", "n.json", " null\n", "holds no document"},
		{"yaml null", "n.yaml", "null\n", "holds no document"},
		{"not yaml", "h.yaml", "pool: [unclosed\n", "yaml:"},
		{"trailing json", "i.json", `{"pool": "a"} {"pool": "b"}`, "unexpected data after the first JSON value"},
		{"a list", "j.yaml", "- pool: a\n", "the document must be an object, not array"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, dir, tt.file, tt.content)
			r := runCLI(t, f.srv.URL, "", "bundle", "submit", path)
			if r.code != exitUsage || !strings.Contains(r.stderr, tt.want) || !strings.Contains(r.stderr, "invalid bundle file") {
				t.Errorf("exit %d, stderr %q; want exit 2 with %q", r.code, r.stderr, tt.want)
			}
		})
	}
	if n := len(f.seen()); n != 0 {
		t.Errorf("%d requests sent for invalid files", n)
	}
}
