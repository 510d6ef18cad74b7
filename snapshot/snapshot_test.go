package snapshot_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/amserver/amserver/snapshot"
)

func TestRoundTrip(t *testing.T) {
	big := randomBytes(1, 3<<20+7) // several growth steps of the reader's buffer
	cases := []struct {
		name string
		h    snapshot.Header
		secs []section
	}{
		{name: "no sections", h: snapshot.Header{Index: 1, Term: 1}},
		{name: "one empty section", h: snapshot.Header{Index: 9}, secs: []section{{kind: 4, name: "x"}}},
		{name: "empty and large records", h: snapshot.Header{
			Index: 1 << 40, Term: 3, CreatedUnixNano: -5,
			Meta: map[string]string{"server": "s1", "go": "1.26", "": "empty key"},
		}, secs: []section{
			{kind: 1, name: "nodes", records: [][]byte{[]byte("a"), {}, randomBytes(2, 1024)}},
			{kind: 2, name: "empty"},
			{kind: 2, name: "empty"}, // repeated kind and name stay two sections
			{kind: 255, name: strings.Repeat("n", snapshot.MaxNameLen), records: [][]byte{big, {}}},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "snap")
			f, err := os.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := write(f, tc.h, tc.secs); err != nil {
				t.Fatalf("write: %v", err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if want := encode(t, tc.h, tc.secs); !bytes.Equal(data, want) {
				t.Fatal("encoding is not deterministic")
			}
			f, err = os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			h, recs, err := readAll(f)
			if err != nil {
				t.Fatalf("read: %v", err)
			}
			wantH := tc.h
			wantH.Version = snapshot.Version
			if !reflect.DeepEqual(h, wantH) {
				t.Errorf("header = %+v, want %+v", h, wantH)
			}
			if want := flatten(tc.secs); !equalRecs(recs, want) {
				t.Errorf("read %d records, want %d (or contents differ)", len(recs), len(want))
			}
			checkInfo(t, data, tc.h, tc.secs)
		})
	}
}

func equalRecs(a, b []rec) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].kind != b[i].kind || a[i].name != b[i].name || !bytes.Equal(a[i].data, b[i].data) {
			return false
		}
	}
	return true
}

func checkInfo(t *testing.T, data []byte, h snapshot.Header, secs []section) {
	t.Helper()
	info, err := snapshot.Inspect(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("Inspect: %v", err)
	}
	want := []snapshot.SectionInfo{}
	total := 0
	for _, s := range secs {
		si := snapshot.SectionInfo{Kind: s.kind, Name: s.name, Records: len(s.records)}
		for _, r := range s.records {
			si.Bytes += int64(len(r))
		}
		total += len(s.records)
		want = append(want, si)
	}
	got := append([]snapshot.SectionInfo{}, info.Sections...)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("sections = %+v, want %+v", got, want)
	}
	if info.Records != total || info.Bytes != int64(len(data)) {
		t.Errorf("records, bytes = %d, %d; want %d, %d", info.Records, info.Bytes, total, len(data))
	}
	if sum := binary.BigEndian.Uint32(data[len(data)-4:]); info.Checksum != sum {
		t.Errorf("checksum = %#x, want %#x", info.Checksum, sum)
	}
	if info.Header.Index != h.Index || info.Header.Term != h.Term {
		t.Errorf("info header = %+v, want index %d term %d", info.Header, h.Index, h.Term)
	}
}

func TestWriteTable(t *testing.T) {
	h, secs := smallSecs()
	secs = append(secs, section{kind: 9, name: "evil\x1b[2J\tname"})
	info, err := snapshot.Inspect(bytes.NewReader(encode(t, h, secs)))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := info.WriteTable(&out); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{"Index", "42", "Term", "nodes", "empty", `"evil\x1b[2J\tname"`,
		"KIND", "RECORDS", "Meta a", "Checksum"} {
		if !strings.Contains(s, want) {
			t.Errorf("table lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "\x1b") {
		t.Errorf("table contains a raw escape byte:\n%s", s)
	}
	if err := info.WriteTable(failWriter{}); err == nil {
		t.Error("WriteTable to a failing writer returned nil")
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriterErrors(t *testing.T) {
	var buf bytes.Buffer
	if _, err := snapshot.NewWriter(&buf, snapshot.Header{Version: 2}); !errors.Is(err, snapshot.ErrUnsupportedVersion) {
		t.Errorf("version 2: err = %v", err)
	}
	longKey := map[string]string{strings.Repeat("k", snapshot.MaxNameLen+1): ""}
	if _, err := snapshot.NewWriter(&buf, snapshot.Header{Meta: longKey}); !errors.Is(err, snapshot.ErrTooLarge) {
		t.Errorf("long meta key: err = %v", err)
	}
	bigMeta := map[string]string{"k": strings.Repeat("v", snapshot.MaxHeaderSize)}
	if _, err := snapshot.NewWriter(&buf, snapshot.Header{Meta: bigMeta}); !errors.Is(err, snapshot.ErrTooLarge) {
		t.Errorf("big meta: err = %v", err)
	}

	buf.Reset()
	w, err := snapshot.NewWriter(&buf, snapshot.Header{Index: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Record([]byte("x")); err == nil {
		t.Error("Record before BeginSection succeeded")
	}
	if err := w.BeginSection(1, strings.Repeat("n", snapshot.MaxNameLen+1)); !errors.Is(err, snapshot.ErrTooLarge) {
		t.Errorf("long name: err = %v", err)
	}
	if err := w.BeginSection(1, "s"); err != nil {
		t.Fatal(err)
	}
	if err := w.Record(make([]byte, snapshot.MaxRecordSize+1)); !errors.Is(err, snapshot.ErrTooLarge) {
		t.Errorf("huge record: err = %v", err)
	}
	// A refused record leaves the writer usable and the file valid.
	if err := w.Record([]byte("ok")); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close = %v, want the first result (nil)", err)
	}
	if err := w.Record([]byte("late")); err == nil {
		t.Error("Record after Close succeeded")
	}
	if _, recs, err := readAll(&buf); err != nil || len(recs) != 1 || string(recs[0].data) != "ok" {
		t.Errorf("read back %v, %v", recs, err)
	}
}

func TestWriterIOError(t *testing.T) {
	w, err := snapshot.NewWriter(failWriter{}, snapshot.Header{})
	if err != nil {
		t.Fatal(err) // buffered: nothing reaches the writer yet
	}
	if err := w.BeginSection(1, "s"); err != nil {
		t.Fatal(err)
	}
	big := make([]byte, 128<<10) // larger than the buffer, so it hits the writer
	if err := w.Record(big); err == nil {
		t.Fatal("Record to a failing writer returned nil")
	}
	if err := w.Record([]byte("x")); err == nil {
		t.Error("error is not sticky")
	}
	if err := w.Close(); err == nil {
		t.Error("Close after a write error returned nil")
	}
}

// TestReaderAllocations guards the hot restore path: Next must reuse its buffer.
func TestReaderAllocations(t *testing.T) {
	const n = 10000
	recs := make([][]byte, n)
	for i := range recs {
		recs[i] = randomBytes(uint64(i), 1024)
	}
	data := encode(t, snapshot.Header{Index: 1}, []section{{kind: 1, name: "bundles", records: recs}})
	allocs := testing.AllocsPerRun(3, func() {
		if _, err := drain(bytes.NewReader(data)); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 100 {
		t.Errorf("reading %d records made %.0f allocations", n, allocs)
	}
}

// drain reads all records without copying them and returns how many there were.
func drain(r io.Reader) (int, error) {
	sr, err := snapshot.NewReader(r)
	if err != nil {
		return 0, err
	}
	for n := 0; ; n++ {
		if _, _, _, err := sr.Next(); err != nil {
			if errors.Is(err, io.EOF) {
				return n, nil
			}
			return n, err
		}
	}
}
