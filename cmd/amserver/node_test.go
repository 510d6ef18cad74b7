package main

import (
	"testing"
	"time"

	"github.com/amserver/amserver/api"
)

// TestNodeScheduling: the SCHEDULING column says "eligible" only for a
// node placement may use (ready, neither cordoned nor draining); a down or
// suspect node is "ineligible", and the operator's marks show whatever the
// status, since they outlast an outage. A ready node outside its pool's
// tiers is "ineligible": placement passes it by.
func TestNodeScheduling(t *testing.T) {
	tests := []struct {
		status             string
		cordoned, draining bool
		want               string
		outside            bool
	}{
		{api.NodeReady, false, false, "eligible", false},
		{api.NodeReady, false, false, "ineligible", true},
		{api.NodeReady, true, false, "cordoned", true},
		{api.NodeSuspect, false, false, "ineligible", false},
		{api.NodeDown, false, false, "ineligible", false},
		{api.NodeLeft, false, false, "ineligible", false},
		{api.NodeUnknown, false, false, "ineligible", false},
		{api.NodeReady, true, false, "cordoned", false},
		{api.NodeDown, true, false, "cordoned", false},
		{api.NodeDown, true, true, "draining", false},
	}
	for _, tt := range tests {
		n := api.NodeSummary{ID: "w1", Status: tt.status, Cordoned: tt.cordoned, Draining: tt.draining, OutsideTiers: tt.outside}
		if got := nodeRow(n, time.Now())[3]; got != tt.want {
			t.Errorf("node list, %s cordoned=%v draining=%v: SCHEDULING %q, want %q", tt.status, tt.cordoned, tt.draining, got, tt.want)
		}
		full := api.Node{Status: tt.status, Cordoned: tt.cordoned, Draining: tt.draining, OutsideTiers: tt.outside}
		if got := scheduling(full); got != tt.want {
			t.Errorf("node status, %s cordoned=%v draining=%v: Scheduling %q, want %q", tt.status, tt.cordoned, tt.draining, got, tt.want)
		}
	}
}
