package fsm

import (
	"fmt"
	"unsafe"
)

// The rows the codec stores, compiled at init from their types' row tags.
var (
	bundleRows     = mustCompileRow[Bundle](rowLayoutV1)
	assignmentRows = mustCompileRow[Assignment](rowLayoutV1)
)

// rowLayoutV1 is the positional layout of section kinds 11 and 12, frozen
// as servers wrote it: each type's fields in this order, nested structs
// inline, a presence byte before a pointer. Only restore reads it.
var rowLayoutV1 = map[string][]string{
	"Bundle": {"Spec", "State", "Epoch", "Replicas", "Degradations", "Explain", "SubmitTime", "Deleting",
		"DeleteTime", "AttemptIndex", "CreateIndex", "ModifyIndex"},
	"BundleSpec":        {"ID", "Pool", "Priority", "Jobs", "Placement", "Resilience", "StartAt", "StopAt", "Tags"},
	"Job":               {"Name", "Requirements", "CoLocateWith", "SeparateFrom", "Tolerations", "Constraints", "Affinities", "Launch"},
	"Request":           {"Capacity", "Cores", "GPUCapacity", "GPUModel", "ExclusiveGPUs", "Capabilities"},
	"CapabilityRequest": {"Name", "Count", "AttributeMatches"},
	"Affinity":          {"Expression", "Weight"},
	"Launch":            {"Driver", "Command", "Env"},
	"Placement":         {"SameNodeDefault", "SameAz"},
	"Resilience":        {"Pool", "SameNode", "SameAz", "SameCloud"},
	"Replica":           {"Slot", "Role", "State", "Jobs"},
	"JobPlacement":      {"Name", "NodeID", "Grant", "Status"},
	"Grant":             {"Capacity", "Cores", "GPU", "ExclusiveGPUs", "Capabilities"},
	"GPUShare":          {"Index", "Capacity"},
	"CapabilityCount":   {"Name", "Count"},
	"Degradation":       {"Code", "Message", "Since"},
	"Explain":           {"NodesEvaluated", "Filtered", "NearestMiss"},
	"NearestMiss":       {"NodeID", "Stage", "Detail"},
	"Assignment": {"ID", "BundleID", "Replica", "Job", "NodeID", "Role", "Epoch", "Desired", "Status", "Message",
		"Grant", "Launch", "ServiceID", "CreateIndex", "ModifyIndex"},
}

func encodeBundleRow(dst []byte, b *Bundle) []byte {
	e := &rowEnc{b: dst}
	bundleRows.enc(e, unsafe.Pointer(b))
	return e.b
}

func decodeBundleRow(d *rowDec) (*Bundle, error) {
	b := &Bundle{}
	bundleRows.dec(d, unsafe.Pointer(b))
	return b, d.done("bundle")
}

func decodeBundleRowV1(d *rowDec) (*Bundle, error) {
	b := &Bundle{}
	bundleRows.decV1(d, unsafe.Pointer(b))
	return b, d.done("bundle")
}

func encodeAssignmentRow(dst []byte, a *Assignment) []byte {
	e := &rowEnc{b: dst}
	assignmentRows.enc(e, unsafe.Pointer(a))
	return e.b
}

func decodeAssignmentRow(d *rowDec) (*Assignment, error) {
	a := &Assignment{}
	assignmentRows.dec(d, unsafe.Pointer(a))
	return a, d.done("assignment")
}

func decodeAssignmentRowV1(d *rowDec) (*Assignment, error) {
	a := &Assignment{}
	assignmentRows.decV1(d, unsafe.Pointer(a))
	return a, d.done("assignment")
}

// done checks that the row was read whole and without error.
func (d *rowDec) done(what string) error {
	if d.err == nil && len(d.b) > 0 {
		d.err = fmt.Errorf("%d bytes after the row", len(d.b))
	}
	if d.err != nil {
		return fmt.Errorf("decode %s row: %w", what, d.err)
	}
	return nil
}
