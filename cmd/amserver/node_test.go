package main

import (
	"testing"
	"time"

	"github.com/amserver/amserver/api"
)

// TestNodeScheduling: the SCHEDULING column says "eligible" only for a
// node placement may use (ready, neither cordoned nor draining); a down or
// suspect node is "ineligible", and the operator's marks show whatever the
// status, since they outlast an outage.
func TestNodeScheduling(t *testing.T) {
	tests := []struct {
		status             string
		cordoned, draining bool
		want               string
	}{
		{api.NodeReady, false, false, "eligible"},
		{api.NodeSuspect, false, false, "ineligible"},
		{api.NodeDown, false, false, "ineligible"},
		{api.NodeLeft, false, false, "ineligible"},
		{api.NodeUnknown, false, false, "ineligible"},
		{api.NodeReady, true, false, "cordoned"},
		{api.NodeDown, true, false, "cordoned"},
		{api.NodeDown, true, true, "draining"},
	}
	for _, tt := range tests {
		n := api.NodeSummary{ID: "w1", Status: tt.status, Cordoned: tt.cordoned, Draining: tt.draining}
		if got := nodeRow(n, time.Now())[3]; got != tt.want {
			t.Errorf("node list, %s cordoned=%v draining=%v: SCHEDULING %q, want %q", tt.status, tt.cordoned, tt.draining, got, tt.want)
		}
		full := api.Node{Status: tt.status, Cordoned: tt.cordoned, Draining: tt.draining}
		if got := scheduling(full); got != tt.want {
			t.Errorf("node status, %s cordoned=%v draining=%v: Scheduling %q, want %q", tt.status, tt.cordoned, tt.draining, got, tt.want)
		}
	}
}
