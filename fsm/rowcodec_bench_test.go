package fsm

import (
	"testing"

	"github.com/amserver/amserver/ledger"
)

// benchRow is a placed two-job bundle like the snapshot benchmark's.
func benchRow() *Bundle {
	spec := testBundle("b0000001", "p", testJob("enc", 10, 0), testJob("mux", 10, 0))
	spec.Tags = map[string]string{"team": "video", "channel": "b0000001"}
	Normalize(&spec)
	return &Bundle{Spec: spec, State: StatePlaced, Epoch: 1, SubmitTime: 1e18, CreateIndex: 10, ModifyIndex: 11,
		Replicas: []Replica{{Role: RolePrimary, State: StatePlaced, Jobs: []JobPlacement{
			{Name: "enc", NodeID: "n00001", Grant: ledger.Grant{Capacity: 10}, Status: JobRunning},
			{Name: "mux", NodeID: "n00001", Grant: ledger.Grant{Capacity: 10}, Status: JobRunning},
		}}}}
}

func BenchmarkBundleRowEncode(b *testing.B) {
	row := benchRow()
	buf := make([]byte, 0, 1024)
	b.ReportAllocs()
	for b.Loop() {
		buf = encodeBundleRow(buf[:0], row)
	}
	b.ReportMetric(float64(len(buf)), "bytes/row")
}

func BenchmarkBundleRowDecode(b *testing.B) {
	rec := encodeBundleRow(nil, benchRow())
	d := &rowDec{}
	b.ReportAllocs()
	for b.Loop() {
		d.b, d.err = rec, nil
		if _, err := decodeBundleRow(d); err != nil {
			b.Fatal(err)
		}
	}
}
