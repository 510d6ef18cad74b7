package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Runtimes a node can advertise and a job can need (DESIGN §3.1). Matching
// is case-insensitive and knows aliases: wasm = wasmtime, docker =
// container; pve-vm and pve-ct fit only nodes of kind proxmox.
const (
	RuntimeExec    = "exec"
	RuntimeWasm    = "wasm"
	RuntimeDocker  = "docker"
	RuntimeCompose = "compose"
	RuntimePVEVM   = "pve-vm"
	RuntimePVECT   = "pve-ct"

	// NodeKindProxmox is the kind of a Proxmox host.
	NodeKindProxmox = "proxmox"
)

// Launch kinds: the seed's LaunchSpec is a union on kind (DESIGN §2.3).
const (
	LaunchProductTemplate = "productTemplate"
	LaunchLegacy          = "legacy"
)

// Drivers of a legacy launch.
const DriverDocker = "docker"

// Template is an artifact the cluster keeps (DESIGN §2.3a): a tar of a
// compose stack or of a WebAssembly module, stored content-addressed.
type Template struct {
	Name string `json:"name"`
	// Digest is "sha256:<hex>" of the archive's bytes, as uploaded.
	Digest string `json:"digest"`
	// Runtime follows from the content: compose or wasm.
	Runtime string `json:"runtime"`
	// Files is the number of regular files in the archive.
	Files int `json:"files"`
	// Size is the archive's size in bytes.
	Size        int64  `json:"size"`
	CreateIndex uint64 `json:"createIndex"`
	// Versions lists every digest kept under the name, oldest first; the
	// last is the latest (GET by name only).
	Versions []TemplateVersion `json:"versions,omitempty"`
}

// TemplateVersion is one upload kept under a template's name.
type TemplateVersion struct {
	Digest      string `json:"digest"`
	Runtime     string `json:"runtime"`
	Files       int    `json:"files"`
	Size        int64  `json:"size"`
	CreateIndex uint64 `json:"createIndex"`
}

// LegacyJob is the job of a legacy launch: what today's drivers run.
type LegacyJob struct {
	Driver  string            `json:"driver,omitempty" row:"1,intern"`
	Command []string          `json:"command,omitempty" row:"2"`
	Image   string            `json:"image,omitempty" row:"3"`
	Env     map[string]string `json:"env,omitempty" row:"4"`
}

// RuntimeRequirement is a job's choice of runtimes; without one, its
// launch implies the runtime.
type RuntimeRequirement struct {
	OneOf []string `json:"oneOf" row:"1"`
}

// launchShape is the hint an unknown launch field gets: the two kinds of
// the union, and where a job's runtime choice goes instead.
const launchShape = `a launch is {"kind": "legacy", "job": {"driver": "exec", "command": [...]}} ` +
	`(driver exec, docker with an "image", or none) or {"kind": "productTemplate", "ref": "<template>"}; ` +
	`the runtimes a job may run on are the job's "runtime": {"oneOf": [...]}, beside its launch`

// UnmarshalJSON reads a launch strictly (unknown fields are an error, as
// everywhere in the API) and turns the older {driver, command, env} shape
// into a legacy launch, so that it reads back in the union's form.
func (l *Launch) UnmarshalJSON(raw []byte) error {
	type plain Launch // no UnmarshalJSON: no recursion
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var p plain
	if err := dec.Decode(&p); err != nil {
		if strings.HasPrefix(err.Error(), "json: unknown field ") {
			// A guessed field ("runtime", "image" beside "driver") says
			// nothing of the real shape; name it, so the fix is one read.
			return fmt.Errorf("launch: %w; %s", err, launchShape)
		}
		return fmt.Errorf("launch: %w", err)
	}
	*l = Launch(p)
	l.Normalize()
	return nil
}

// Normalize moves the older shape's fields into a legacy launch. A launch
// that mixes the two shapes keeps both, for validation to refuse.
func (l *Launch) Normalize() {
	old := l.Driver != "" || l.Command != nil || l.Env != nil
	if !old || (l.Kind != "" && l.Kind != LaunchLegacy) || l.Job != nil {
		return
	}
	l.Kind = LaunchLegacy
	l.Job = &LegacyJob{Driver: l.Driver, Command: l.Command, Env: l.Env}
	l.Driver, l.Command, l.Env = "", nil, nil
}
