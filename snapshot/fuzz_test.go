package snapshot_test

import (
	"bytes"
	"testing"

	"github.com/amserver/amserver/snapshot"
)

// FuzzReader feeds arbitrary bytes to the reader. Each input is also tried
// with its checksum recomputed, because random mutations almost never keep a
// valid CRC and the structural checks behind it would otherwise go unexplored.
func FuzzReader(f *testing.F) {
	h, secs := smallSecs()
	f.Add(encode(f, h, secs))
	f.Add(encode(f, snapshot.Header{}, nil))
	f.Add(encode(f, snapshot.Header{Index: 5, Term: 2}, []section{{kind: 7, name: "bundles",
		records: [][]byte{randomBytes(3, 300), randomBytes(4, 1)}}}))
	f.Add([]byte("AMSNAP"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		checkInput(t, data)
		if bytes.HasPrefix(data, []byte("AMSNAP")) { // resealing junk only feeds CRC loop coverage
			checkInput(t, reseal(data))
		}
	})
}

func checkInput(t testing.TB, data []byte) {
	h, recs, err := readAll(bytes.NewReader(data))
	info, ierr := snapshot.Inspect(bytes.NewReader(data))
	if (err == nil) != (ierr == nil) {
		t.Fatalf("Next says %v, Inspect says %v", err, ierr)
	}
	if err != nil {
		if !isSentinel(err) || !isSentinel(ierr) {
			t.Fatalf("errors wrap no sentinel: %v / %v", err, ierr)
		}
		return
	}
	if info.Records != len(recs) || info.Bytes != int64(len(data)) {
		t.Fatalf("Inspect counts %d records in %d bytes; read %d records in %d bytes",
			info.Records, info.Bytes, len(recs), len(data))
	}
	// Rebuild the sections from Inspect (which sees empty ones) and the records from Next.
	secs := make([]section, len(info.Sections))
	for i, si := range info.Sections {
		secs[i] = section{kind: si.Kind, name: si.Name}
		for range si.Records {
			r := recs[0]
			recs = recs[1:]
			if r.kind != si.Kind || r.name != si.Name {
				t.Fatalf("record in %d/%q, Inspect says %d/%q", r.kind, r.name, si.Kind, si.Name)
			}
			secs[i].records = append(secs[i].records, r.data)
		}
	}
	if again := encode(t, h, secs); !bytes.Equal(again, data) {
		t.Fatalf("re-encoding differs:\n got %x\nwant %x", again, data)
	}
}
