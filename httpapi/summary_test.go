package httpapi

import (
	"testing"

	"github.com/amserver/amserver/api"
)

// TestNodeSummaryGPU: reservedGpu is what is held of gpuCapacity. An
// exclusive hold books no share (its reserved capacity reads 0) but takes
// the whole device, so it counts at the device's capacity: a node whose
// GPUs were all held exclusively read 0/2 in node list.
func TestNodeSummaryGPU(t *testing.T) {
	gpus := []api.GPU{{Index: 0, Model: "a100", TotalCapacity: 1}, {Index: 3, Model: "a100", TotalCapacity: 2}}
	tests := []struct {
		name     string
		reserved []api.GPUReserved
		want     float64
	}{
		{"idle", nil, 0},
		{"shares", []api.GPUReserved{{Index: 0, Capacity: 0.5}, {Index: 3, Capacity: 0.25}}, 0.75},
		{"both exclusive", []api.GPUReserved{{Index: 0, Exclusive: true}, {Index: 3, Exclusive: true}}, 3},
		{"one exclusive, one shared", []api.GPUReserved{{Index: 0, Capacity: 0.5}, {Index: 3, Exclusive: true}}, 2.5},
	}
	for _, tt := range tests {
		n := &api.Node{NodeSpec: api.NodeSpec{ID: "n1", GPUs: gpus}, Reserved: api.Reserved{GPUs: tt.reserved}}
		if s := nodeSummary(n); s.GPUCapacity != 3 || s.ReservedGPU != tt.want {
			t.Errorf("%s: gpu %v/%v, want %v/3", tt.name, s.ReservedGPU, s.GPUCapacity, tt.want)
		}
	}
}
