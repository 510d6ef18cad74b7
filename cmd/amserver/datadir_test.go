package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/amserver/amserver/raftstore"
)

// garbageDataDir is a server data directory whose raft.db is not a log
// store at all (bbolt would refuse it, or worse, fault on a truncated one).
func garbageDataDir(t *testing.T) (dir, db string) {
	t.Helper()
	dir = t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "raft"), 0o700); err != nil {
		t.Fatal(err)
	}
	db = filepath.Join(dir, "raft", "raft.db")
	junk := make([]byte, 16384)
	for i := range junk {
		junk[i] = byte(i*31 + 7)
	}
	if err := os.WriteFile(db, junk, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, db
}

// TestAgentRefusesDamagedDataDir: the server exits 1 with one line naming
// the file and the recovery, instead of crashing inside bbolt.
func TestAgentRefusesDamagedDataDir(t *testing.T) {
	dir, db := garbageDataDir(t)
	r := runCLI(t, "", "", "agent", "--server", "--node-id", "s1", "--data-dir", dir, "--bind", "127.0.0.1",
		"--http-addr", "127.0.0.1:0", "--raft-addr", "127.0.0.1:0", "--gossip-addr", "127.0.0.1:0")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1; stderr %q", r.code, r.stderr)
	}
	msg := strings.TrimSpace(r.stderr)
	for _, want := range []string{db, "operator data-dir check", "re-sync"} {
		if !strings.Contains(msg, want) {
			t.Errorf("stderr %q does not say %q", msg, want)
		}
	}
}

// TestDataDirCheck lists the damage and fails; a sound directory passes.
func TestDataDirCheck(t *testing.T) {
	dir, db := garbageDataDir(t)
	r := runCLI(t, "", "", "operator", "data-dir", "check", "--data-dir", dir)
	if r.code != 1 || !strings.Contains(r.stdout, db) || !strings.Contains(r.stdout, "not a valid log store") {
		t.Fatalf("damaged: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, "", "", "--json", "operator", "data-dir", "check", "--data-dir", dir)
	if r.code != 1 || !strings.Contains(r.stdout, `"ok": false`) {
		t.Fatalf("damaged --json: exit %d, stdout %q", r.code, r.stdout)
	}
	fresh := t.TempDir()
	r = runCLI(t, "", "", "operator", "data-dir", "check", "--data-dir", fresh)
	if r.code != 0 || !strings.Contains(r.stdout, "no damage found") {
		t.Fatalf("fresh: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "no Raft data") {
		t.Errorf("fresh: stdout %q does not say the directory holds no Raft data", r.stdout)
	}
	r = runCLI(t, "", "", "--json", "operator", "data-dir", "check", "--data-dir", fresh)
	if r.code != 0 || !strings.Contains(r.stdout, `"problems": []`) || !strings.Contains(r.stdout, `"empty": true`) {
		t.Errorf("fresh --json: exit %d, stdout %q", r.code, r.stdout)
	}
	// A mistyped path is not a sound data directory.
	r = runCLI(t, "", "", "operator", "data-dir", "check", "--data-dir", filepath.Join(fresh, "typo"))
	if r.code != 2 || !strings.Contains(r.stderr, "not a directory") {
		t.Errorf("missing directory: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, "", "", "operator", "data-dir", "check")
	if r.code != 2 {
		t.Fatalf("without --data-dir: exit %d, want 2 (usage)", r.code)
	}
}

// TestDataDirMigrateToWAL: a bolt data directory moves to the WAL and says
// what it moved; a second run has nothing to do; a directory without Raft
// data or with damage exits 1 saying so; a missing --data-dir is usage.
func TestDataDirMigrateToWAL(t *testing.T) {
	dir := boltDataDir(t)
	r := runCLI(t, "", "", "--json", "operator", "data-dir", "check", "--data-dir", dir)
	if r.code != 0 || !strings.Contains(r.stdout, `"logStore": "bolt"`) {
		t.Errorf("check before the migration: exit %d, stdout %q", r.code, r.stdout)
	}
	r = runCLI(t, "", "", "operator", "data-dir", "migrate-to-wal", "--data-dir", dir)
	if r.code != 0 || !strings.Contains(r.stdout, "to the WAL") || !strings.Contains(r.stdout, "raft.db.pre-wal") {
		t.Fatalf("migrate: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "raft", "wal")); err != nil {
		t.Fatalf("no WAL after the migration: %v", err)
	}
	r = runCLI(t, "", "", "operator", "data-dir", "check", "--data-dir", dir)
	if r.code != 0 || !strings.Contains(r.stdout, "Raft log store: wal") {
		t.Errorf("check after the migration: exit %d, stdout %q", r.code, r.stdout)
	}
	r = runCLI(t, "", "", "--json", "operator", "data-dir", "migrate-to-wal", "--data-dir", dir)
	if r.code != 0 || !strings.Contains(r.stdout, `"alreadyWal": true`) {
		t.Errorf("second run: exit %d, stdout %q", r.code, r.stdout)
	}
	r = runCLI(t, "", "", "operator", "data-dir", "migrate-to-wal", "--data-dir", t.TempDir())
	if r.code != 1 || !strings.Contains(r.stderr, "nothing to migrate") {
		t.Errorf("empty: exit %d, stderr %q", r.code, r.stderr)
	}
	garbage, _ := garbageDataDir(t)
	r = runCLI(t, "", "", "operator", "data-dir", "migrate-to-wal", "--data-dir", garbage)
	if r.code != 1 || !strings.Contains(r.stderr, "damaged") {
		t.Errorf("damaged: exit %d, stderr %q", r.code, r.stderr)
	}
	if r = runCLI(t, "", "", "operator", "data-dir", "migrate-to-wal"); r.code != 2 {
		t.Errorf("without --data-dir: exit %d, want 2", r.code)
	}
}

// boltDataDir is a stopped server's data directory on bolt, with a log.
func boltDataDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	st, err := raftstore.OpenStores(raftstore.Config{NodeID: "s1", DataDir: dir, LogStore: raftstore.LogStoreBolt})
	if err != nil {
		t.Fatal(err)
	}
	logs := []*raft.Log{{Index: 1, Term: 1, Type: raft.LogCommand, Data: []byte("a")}, {Index: 2, Term: 1, Type: raft.LogCommand, Data: []byte("b")}}
	if err := errors.Join(st.Logs.StoreLogs(logs), st.Stable.SetUint64([]byte("CurrentTerm"), 1), st.Close()); err != nil {
		t.Fatal(err)
	}
	return dir
}
