package raftstore

import (
	"encoding/json"
	"errors"
	"hash/crc64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/snapshot"
)

// TestNewerSnapshotFormatIsNamed: a data directory whose snapshots a newer
// version wrote (sound files, an unknown format) is refused with the file
// and the version, not Raft's "failed to load any existing snapshots", and
// the data-dir check does not call it sound.
func TestNewerSnapshotFormatIsNamed(t *testing.T) {
	dir := populatedDataDir(t, LogStoreAuto)
	for _, snap := range snapshotDirs(t, dir) {
		rewriteVersion(t, snap, snapshot.Version+1)
	}
	_, tr := raft.NewInmemTransport("s1")
	_, openErr := Open(Config{NodeID: "s1", DataDir: dir, Transport: tr}, fsm.New(fsm.Config{}))
	for name, err := range map[string]error{"open": openErr, "check": CheckDataDir(dir, false)} {
		if !errors.Is(err, ErrUnsupportedFormat) || !errors.Is(err, snapshot.ErrUnsupportedVersion) {
			t.Fatalf("%s: %v, want an unsupported format", name, err)
		}
		if msg := err.Error(); !strings.Contains(msg, "state.bin") || !strings.Contains(msg, "version that wrote it") {
			t.Errorf("%s: error %q must name the file and the way out", name, msg)
		}
	}
}

// rewriteVersion sets the format version of snap's state.bin and updates
// its checksum in meta.json, as a newer build would have written them.
func rewriteVersion(t *testing.T, snap string, v uint16) {
	t.Helper()
	statePath, metaPath := filepath.Join(snap, "state.bin"), filepath.Join(snap, "meta.json")
	data, err := os.ReadFile(statePath)
	if err != nil {
		t.Fatal(err)
	}
	data[6], data[7] = byte(v>>8), byte(v) // after the 6-byte magic
	var meta map[string]any
	raw, err := os.ReadFile(metaPath)
	if err != nil || json.Unmarshal(raw, &meta) != nil {
		t.Fatalf("meta.json: %v", err)
	}
	h := crc64.New(crc64.MakeTable(crc64.ECMA))
	h.Write(data)
	meta["CRC"] = h.Sum(nil)
	if raw, err = json.Marshal(meta); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(statePath, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(metaPath, raw, 0o600); err != nil {
		t.Fatal(err)
	}
}
