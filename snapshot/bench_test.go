package snapshot_test

import (
	"bytes"
	"io"
	"testing"

	"github.com/amserver/amserver/snapshot"
)

// The FSM's expected load: 100,000 bundle records of about 1 KiB.
const (
	benchRecords = 100_000
	benchSize    = 1024
)

func benchRecordSet() [][]byte {
	// Distinct contents so the benchmark does not flatter any caching.
	all := randomBytes(99, benchRecords+benchSize)
	recs := make([][]byte, benchRecords)
	for i := range recs {
		recs[i] = all[i : i+benchSize]
	}
	return recs
}

func BenchmarkWrite100k(b *testing.B) {
	recs := benchRecordSet()
	b.SetBytes(benchRecords * benchSize)
	b.ReportAllocs()
	for b.Loop() {
		w, err := snapshot.NewWriter(io.Discard, snapshot.Header{Index: 1, Term: 1})
		if err != nil {
			b.Fatal(err)
		}
		if err := w.BeginSection(1, "bundles"); err != nil {
			b.Fatal(err)
		}
		for _, r := range recs {
			if err := w.Record(r); err != nil {
				b.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRead100k(b *testing.B) {
	data := encode(b, snapshot.Header{Index: 1, Term: 1},
		[]section{{kind: 1, name: "bundles", records: benchRecordSet()}})
	b.SetBytes(benchRecords * benchSize)
	b.ReportAllocs()
	for b.Loop() {
		n, err := drain(bytes.NewReader(data))
		if err != nil || n != benchRecords {
			b.Fatalf("read %d records: %v", n, err)
		}
	}
}
