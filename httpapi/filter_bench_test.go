package httpapi

import (
	"context"
	"reflect"
	"testing"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/ledger"
)

// BenchmarkFilterMatch: what a filter costs per entry, and its parts.
func BenchmarkFilterMatch(b *testing.B) {
	bd := &fsm.Bundle{Spec: fsm.BundleSpec{ID: "channel-000123", Pool: "main", Priority: "silver",
		Jobs: []fsm.Job{{Name: "enc", Requirements: ledger.Request{Capacity: 500}, Launch: fsm.Launch{Driver: "exec", Command: []string{"/usr/bin/encoder", "--channel", "x"}}},
			{Name: "mux", Requirements: ledger.Request{Capacity: 250}, CoLocateWith: []string{"enc"}, Launch: fsm.Launch{Driver: "exec", Command: []string{"/usr/bin/muxer"}}}},
		Tags: map[string]string{"team": "video", "channel": "x"}},
		State: "placed", Epoch: 1, Replicas: []fsm.Replica{{Role: "primary", State: "placed", Jobs: []fsm.JobPlacement{{Name: "enc", NodeID: "n1"}, {Name: "mux", NodeID: "n1"}}}}}
	f, err := compileFilter("bundle", `bundle.id.endsWith("7")`)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("convert", func(b *testing.B) {
		for b.Loop() {
			_ = bundleToAPI(bd)
		}
	})
	b.Run("native", func(b *testing.B) {
		v := bundleToAPI(bd)
		for b.Loop() {
			_ = jsonNative(reflect.ValueOf(v))
		}
	})
	b.Run("match", func(b *testing.B) {
		for b.Loop() {
			_, _ = f.match(context.Background(), bundleToAPI(bd))
		}
	})
}
