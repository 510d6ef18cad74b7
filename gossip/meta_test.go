package gossip

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func sampleServerMeta() Meta {
	return Meta{
		Role: RoleServer, RaftAddr: "10.0.0.1:7071", HTTPAddr: "10.0.0.1:7070",
		Pool: "core", AZ: "eu-west-1a", Cloud: "aws", Version: 1,
	}
}

func TestMetaRoundTrip(t *testing.T) {
	cases := map[string]Meta{
		"server":        sampleServerMeta(),
		"worker":        {Role: RoleWorker, HTTPAddr: "[::1]:7070", Pool: "gpu", AZ: "az2", Cloud: "gcp", Version: 1},
		"minimal":       {Role: RoleWorker},
		"leaving":       {Role: RoleServer, Version: 1, Leaving: true},
		"tags":          {Role: RoleWorker, Version: 3, Tags: map[string]string{"rack": "r1", "gpu": "a100", "zz": ""}},
		"unicode":       {Role: RoleWorker, Pool: "pöol-ü", Tags: map[string]string{"clé": "valeur ✓"}},
		"big version":   {Role: RoleServer, Version: 1 << 30},
		"many fields":   {Role: RoleServer, RaftAddr: "a", HTTPAddr: "b", Pool: "c", AZ: "d", Cloud: "e", Version: 2, Tags: map[string]string{"k": "v"}},
		"empty tagmap":  {Role: RoleServer, Tags: map[string]string{}},
		"keyring":       {Role: RoleWorker, Pool: "p", Keyring: []string{"0011223344556677", "8899aabbccddeeff"}},
		"keyring+tags":  {Role: RoleServer, Tags: map[string]string{"a": "b"}, Keyring: []string{"0011223344556677"}},
		"fsm level":     {Role: RoleServer, Version: 1, FSMLevel: 2},
		"level+keyring": {Role: RoleServer, Keyring: []string{"0011223344556677"}, FSMLevel: 1 << 30},
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			b, err := EncodeMeta(in)
			if err != nil {
				t.Fatalf("encode: %v", err)
			}
			out, err := DecodeMeta(b)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			want := in
			if len(want.Tags) == 0 {
				want.Tags = nil // empty tags decode as nil
			}
			if !reflect.DeepEqual(out, want) {
				t.Fatalf("round trip:\n got %+v\nwant %+v", out, want)
			}
		})
	}
}

func TestMetaEncodingIsDeterministic(t *testing.T) {
	m := Meta{Role: RoleWorker, Tags: map[string]string{}}
	for i := range 30 {
		m.Tags[strconv.Itoa(i*7919%1000)] = "v"
	}
	first, err := EncodeMeta(m)
	if err != nil {
		t.Fatal(err)
	}
	for range 20 { // map iteration order varies between calls
		b, err := EncodeMeta(m)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, first) {
			t.Fatal("encoding differs between calls")
		}
	}
}

func TestMetaSizeLimit(t *testing.T) {
	m := Meta{Role: RoleWorker, Tags: map[string]string{"pad": ""}}
	base, err := EncodeMeta(m)
	if err != nil {
		t.Fatal(err)
	}
	// Grow the value to exactly the limit; uvarint lengths >127 take 2 bytes.
	m.Tags["pad"] = strings.Repeat("x", MaxMetaSize-len(base)-1)
	b, err := EncodeMeta(m)
	if err != nil || len(b) != MaxMetaSize {
		t.Fatalf("at limit: len %d, err %v; want %d bytes, no error", len(b), err, MaxMetaSize)
	}
	m.Tags["pad"] += "x"
	_, err = EncodeMeta(m)
	if !errors.Is(err, ErrMetaTooLarge) {
		t.Fatalf("one byte over: err = %v, want ErrMetaTooLarge", err)
	}
	if !strings.Contains(err.Error(), "513 bytes") {
		t.Fatalf("error should state the size: %v", err)
	}
	if _, err := DecodeMeta(make([]byte, MaxMetaSize+1)); !errors.Is(err, ErrMetaTooLarge) {
		t.Fatalf("decode oversize: err = %v", err)
	}
}

func TestEncodeMetaRejectsInvalid(t *testing.T) {
	cases := map[string]Meta{
		"no role":       {},
		"unknown role":  {Role: "client"},
		"neg version":   {Role: RoleServer, Version: -1},
		"neg fsm level": {Role: RoleServer, FSMLevel: -1},
		"empty tag key": {Role: RoleServer, Tags: map[string]string{"": "v"}},
		"bad utf8":      {Role: RoleServer, Pool: "\xff"},
	}
	for name, m := range cases {
		if _, err := EncodeMeta(m); !errors.Is(err, ErrInvalidMeta) {
			t.Errorf("%s: err = %v, want ErrInvalidMeta", name, err)
		}
	}
}

func TestDecodeMetaRejectsGarbage(t *testing.T) {
	valid, err := EncodeMeta(Meta{Role: RoleWorker, Pool: "p", Tags: map[string]string{"a": "1", "b": "2"}})
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string][]byte{
		"nil":              nil,
		"empty":            {},
		"json":             []byte(`{"role":"server"}`),
		"wrong magic":      append([]byte{0x00}, valid[1:]...),
		"wrong format":     append([]byte{metaMagic, 9}, valid[2:]...),
		"unknown role":     append([]byte{metaMagic, metaFormat, 7}, valid[3:]...),
		"huge string len":  {metaMagic, metaFormat, roleByteSrv, 0, 1, 0xff, 0xff, 0xff, 0xff, 0x0f},
		"huge tag count":   {metaMagic, metaFormat, roleByteSrv, 0, 1, 0, 0, 0, 0, 0, 0xff, 0xff, 0x03},
		"unsorted tags":    {metaMagic, metaFormat, roleByteSrv, 0, 1, 0, 0, 0, 0, 0, 2, 1, 'b', 0, 1, 'a', 0},
		"duplicate tags":   {metaMagic, metaFormat, roleByteSrv, 0, 1, 0, 0, 0, 0, 0, 2, 1, 'a', 0, 1, 'a', 0},
		"overlong uvarint": {metaMagic, metaFormat, roleByteSrv, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
		"huge fsm level":   {metaMagic, metaFormat, roleByteSrv, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f},
	}
	// Every field is mandatory, so every strict prefix must fail.
	for i := range len(valid) {
		cases["prefix "+strconv.Itoa(i)] = valid[:i]
	}
	for name, b := range cases {
		if m, err := DecodeMeta(b); !errors.Is(err, ErrInvalidMeta) {
			t.Errorf("%s: got %+v, err %v; want ErrInvalidMeta", name, m, err)
		}
	}
}

func TestDecodeMetaRandomBytesNeverPanic(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	valid, _ := EncodeMeta(sampleServerMeta())
	for range 20000 {
		var b []byte
		if rng.IntN(2) == 0 { // mutate a valid encoding to get past the header
			b = bytes.Clone(valid)
			for range 1 + rng.IntN(4) {
				b[rng.IntN(len(b))] = byte(rng.Uint32())
			}
			b = b[:rng.IntN(len(b)+1)]
		} else {
			b = make([]byte, rng.IntN(64))
			for i := range b {
				b[i] = byte(rng.Uint32())
			}
		}
		checkDecodeReencode(t, b)
	}
}

// checkDecodeReencode: decoding must not panic, and anything accepted must
// survive a re-encode unchanged.
func checkDecodeReencode(t *testing.T, b []byte) {
	t.Helper()
	m, err := DecodeMeta(b)
	if err != nil {
		return
	}
	again, err := EncodeMeta(m)
	if err != nil {
		t.Fatalf("re-encode of decoded %x: %v", b, err)
	}
	m2, err := DecodeMeta(again)
	if err != nil || !reflect.DeepEqual(m, m2) {
		t.Fatalf("re-encode of %x changed meta: %+v vs %+v (%v)", b, m, m2, err)
	}
}

func FuzzDecodeMeta(f *testing.F) {
	for _, m := range []Meta{sampleServerMeta(), {Role: RoleWorker, Tags: map[string]string{"a": "b"}}} {
		b, err := EncodeMeta(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{})
	f.Fuzz(checkDecodeReencode)
}

// TestMetaFSMLevelIsAppended: a server meta without FSMLevel encodes as
// the release before the field did, and FSMLevel only appends to it, after
// an (empty) keyring count: a release without the field reads the keyring
// and ignores the trailing bytes (gossip.DecodeMeta at f783f6f; make
// upgrade-check runs that binary against this one).
func TestMetaFSMLevelIsAppended(t *testing.T) {
	// EncodeMeta(Meta{Role: RoleServer, RaftAddr: "r", Version: 1}) at f783f6f.
	release := []byte{metaMagic, metaFormat, roleByteSrv, 0, 1, 1, 'r', 0, 0, 0, 0, 0}
	cases := []struct {
		name string
		in   Meta
		want []byte
	}{
		{"no level", Meta{Role: RoleServer, RaftAddr: "r", Version: 1}, release},
		{"level 2", Meta{Role: RoleServer, RaftAddr: "r", Version: 1, FSMLevel: 2}, append(slices.Clone(release), 0, 2)},
		{"level 2, keyring", Meta{Role: RoleServer, RaftAddr: "r", Version: 1, FSMLevel: 2, Keyring: []string{"k"}},
			append(slices.Clone(release), 1, 1, 'k', 2)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := EncodeMeta(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(b, tc.want) {
				t.Fatalf("encoded % x, want % x", b, tc.want)
			}
		})
	}
}
