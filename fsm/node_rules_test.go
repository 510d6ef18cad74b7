package fsm

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"unsafe"

	"github.com/hashicorp/go-msgpack/v2/codec"

	"github.com/amserver/amserver/ledger"
)

// jobBefore is Job as it was before its node rules moved behind a
// pointer: Raft logs, snapshots and digests written then hold this shape.
type jobBefore struct {
	Name         string              `json:"name" row:"1,intern"`
	Requirements ledger.Request      `json:"requirements" row:"2"`
	CoLocateWith []string            `json:"coLocateWith,omitempty" row:"3,intern"`
	SeparateFrom []string            `json:"separateFrom,omitempty" row:"4,intern"`
	Tolerations  []string            `json:"tolerations,omitempty" row:"5,intern"`
	Constraints  []string            `json:"constraints,omitempty" row:"6"`
	Affinities   []Affinity          `json:"affinities,omitempty" row:"7"`
	Launch       Launch              `json:"launch" row:"8"`
	Runtime      *RuntimeRequirement `json:"runtime,omitempty" row:"9"`
	Priority     string              `json:"priority,omitempty" row:"20,intern"`
}

func (b *jobBefore) now() Job {
	j := Job{Name: b.Name, Requirements: b.Requirements, CoLocateWith: b.CoLocateWith, SeparateFrom: b.SeparateFrom,
		Launch: b.Launch, Runtime: b.Runtime, Priority: b.Priority}
	if b.Tolerations != nil || b.Constraints != nil || b.Affinities != nil {
		j.NodeRules = &NodeRules{Tolerations: b.Tolerations, Constraints: b.Constraints, Affinities: b.Affinities}
	}
	return j
}

// TestNodeRulesKeepTheirEncodings: a job written before the move reads
// back the same from a Raft command (msgpack) and a snapshot row, a job
// without rules keeps a nil pointer (the memory the move saves), and the
// JSON the state digest hashes is byte for byte the one from before, so
// servers on both sides of an upgrade agree.
func TestNodeRulesKeepTheirEncodings(t *testing.T) {
	beforeRows := mustCompileRow[jobBefore](nil)
	cases := map[string]jobBefore{
		"no rules": {Name: "enc", Requirements: ledger.Request{Capacity: 250}, CoLocateWith: []string{"mux"},
			Launch: Launch{Driver: DriverExec, Command: []string{"/bin/enc"}}},
		"every rule": {Name: "mux", Tolerations: []string{"gpu"}, Constraints: []string{`node.id != "x"`},
			Affinities: []Affinity{{Expression: "true", Weight: 5}}, SeparateFrom: []string{"a"},
			Runtime: &RuntimeRequirement{OneOf: []string{"exec"}}, Priority: "gold"},
		"one rule": {Name: "pkg", Constraints: []string{"true"}},
	}
	for name, before := range cases {
		want := before.now()

		var mp []byte
		codec.NewEncoderBytes(&mp, msgpackHandle).MustEncode(&before)
		var fromLog Job
		if err := decode(mp, &fromLog); err != nil || !reflect.DeepEqual(fromLog, want) {
			t.Errorf("%s: msgpack (%v):\n got %#v %+v\nwant %#v", name, err, fromLog, fromLog.NodeRules, want)
		}
		var mpNow []byte
		codec.NewEncoderBytes(&mpNow, msgpackHandle).MustEncode(&want)
		if !bytes.Equal(mpNow, mp) {
			t.Errorf("%s: msgpack of the new shape differs from the old", name)
		}

		e := &rowEnc{}
		beforeRows.enc(e, unsafe.Pointer(&before))
		var fromRow Job
		d := &rowDec{b: e.b}
		jobRows.dec(d, unsafe.Pointer(&fromRow))
		if d.err != nil || len(d.b) != 0 || !reflect.DeepEqual(fromRow, want) {
			t.Errorf("%s: row (%v):\n got %#v\nwant %#v", name, d.err, fromRow, want)
		}
		eNow := &rowEnc{}
		jobRows.enc(eNow, unsafe.Pointer(&want))
		if !bytes.Equal(eNow.b, e.b) {
			t.Errorf("%s: row of the new shape differs from the old", name)
		}

		jb, _ := json.Marshal(&before)
		jn, _ := json.Marshal(&want)
		if !bytes.Equal(jb, jn) {
			t.Errorf("%s: JSON differs:\n got %s\nwant %s", name, jn, jb)
		}
	}
}

// jobRows is the row codec of a Job alone, as bundle rows hold them.
var jobRows = mustCompileRow[Job](nil)

// TestJobShadowsEveryNodeRule: each NodeRules field has a Job method of
// its name, so `job.Field` is the nil-safe method, never a read through
// a nil pointer; a field added without one fails here.
func TestJobShadowsEveryNodeRule(t *testing.T) {
	jobPtr := reflect.TypeFor[*Job]()
	for f := range reflect.TypeFor[NodeRules]().Fields() {
		m, ok := jobPtr.MethodByName(f.Name)
		if !ok || m.Type.NumIn() != 1 || m.Type.NumOut() != 1 || m.Type.Out(0) != f.Type {
			t.Errorf("NodeRules.%s has no method (*Job).%s() %s", f.Name, f.Name, f.Type)
		}
	}
	var j Job
	if j.Tolerations() != nil || j.Constraints() != nil || j.Affinities() != nil {
		t.Fatal("a job without rules reads rules")
	}
	j.EditRules().Constraints = []string{"true"}
	if len(j.Constraints()) != 1 || j.EditRules() != j.NodeRules {
		t.Fatal("EditRules does not edit the job's rules")
	}
}
