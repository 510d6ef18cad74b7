package raftstore

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"go.etcd.io/bbolt"

	"github.com/amserver/amserver/fsm"
)

// populatedDataDir runs a one-server store on disk until it has taken a
// snapshot and logged past it, then shuts it down.
func populatedDataDir(t *testing.T, kind LogStore) string {
	t.Helper()
	dir := t.TempDir()
	_, tr := raft.NewInmemTransport("s1")
	cfg := Config{NodeID: "s1", DataDir: dir, Transport: tr, TimeoutScale: 0.2, SnapshotThreshold: 4, TrailingLogs: 2, LogStore: kind}
	s, err := Open(cfg, fsm.New(fsm.Config{}))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Bootstrap(map[string]string{"s1": "s1"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	leading := make(chan struct{})
	go s.RunLeadership(ctx, Term{Run: func(ctx context.Context) { close(leading); <-ctx.Done() }})
	select {
	case <-leading:
	case <-ctx.Done():
		t.Fatal("the one server never led")
	}
	for i := range 8 {
		if _, err := s.Apply(ctx, fsm.UpsertPoolType, &fsm.UpsertPoolRequest{Pool: fsm.Pool{Name: "p" + string(rune('a'+i))}}); err != nil {
			t.Fatalf("apply: %v", err)
		}
	}
	if err := s.Raft().Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Apply(ctx, fsm.UpsertPoolType, &fsm.UpsertPoolRequest{Pool: fsm.Pool{Name: "after"}}); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := s.Shutdown(); err != nil {
		t.Fatal(err)
	}
	s.Close()
	return dir
}

func snapshotDirs(t *testing.T, dataDir string) []string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(dataDir, "raft", "snapshots", "*"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no snapshot in %s: %v", dataDir, err)
	}
	return dirs
}

// TestDamagedDataDirFailsClearly: every damage gives an error that names
// the file and the recovery, and opening never reaches bbolt or Raft.
func TestDamagedDataDirFailsClearly(t *testing.T) {
	for _, kind := range []LogStore{LogStoreWAL, LogStoreBolt} {
		t.Run(string(kind), func(t *testing.T) { testDamagedDataDir(t, kind) })
	}
}

func testDamagedDataDir(t *testing.T, kind LogStore) {
	cases := []struct {
		name   string
		damage func(t *testing.T, dir string) string // returns the file the error must name
		want   string
	}{
		{"truncated log store", func(t *testing.T, dir string) string {
			db := logStoreFile(dir, kind)
			fi, _ := os.Stat(db)
			if err := os.Truncate(db, fi.Size()/2); err != nil {
				t.Fatal(err)
			}
			return db
		}, "truncated"},
		{"garbage header", func(t *testing.T, dir string) string {
			db := logStoreFile(dir, kind)
			f, err := os.OpenFile(db, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			junk := make([]byte, 8192)
			for i := range junk {
				junk[i] = byte(i * 7)
			}
			if _, err := f.WriteAt(junk, 0); err != nil {
				t.Fatal(err)
			}
			return db
		}, "not a valid log store"},
		{"missing meta.json", func(t *testing.T, dir string) string {
			meta := filepath.Join(snapshotDirs(t, dir)[0], "meta.json")
			if err := os.Remove(meta); err != nil {
				t.Fatal(err)
			}
			return meta
		}, "metadata unreadable"},
		{"garbled meta.json", func(t *testing.T, dir string) string {
			meta := filepath.Join(snapshotDirs(t, dir)[0], "meta.json")
			if err := os.WriteFile(meta, []byte("{\"ID\": 12"), 0o600); err != nil {
				t.Fatal(err)
			}
			return meta
		}, "not valid"},
		{"corrupt state.bin", func(t *testing.T, dir string) string {
			state := filepath.Join(snapshotDirs(t, dir)[0], "state.bin")
			raw, err := os.ReadFile(state)
			if err != nil {
				t.Fatal(err)
			}
			raw[len(raw)/2] ^= 0xff
			if err := os.WriteFile(state, raw, 0o600); err != nil {
				t.Fatal(err)
			}
			return state
		}, "checksum"},
		{"empty log store next to snapshots", func(t *testing.T, dir string) string {
			db := logStoreFile(dir, kind)
			if err := os.Truncate(db, 0); err != nil {
				t.Fatal(err)
			}
			return db
		}, "term and vote are lost"},
		{"missing log store next to snapshots", func(t *testing.T, dir string) string {
			raftDir := filepath.Join(dir, "raft")
			if err := os.RemoveAll(map[LogStore]string{LogStoreBolt: boltFile(raftDir), LogStoreWAL: walDir(raftDir)}[kind]); err != nil {
				t.Fatal(err)
			}
			return raftDir
		}, "term and vote are lost"},
		{"truncated log segment", func(t *testing.T, dir string) string {
			if kind != LogStoreWAL {
				t.Skip("only the WAL keeps segments")
			}
			segs, err := filepath.Glob(filepath.Join(dir, "raft", "wal", "*.wal"))
			if err != nil || len(segs) == 0 {
				t.Fatalf("no segment: %v", err)
			}
			if err := os.Truncate(segs[len(segs)-1], 100); err != nil {
				t.Fatal(err)
			}
			return segs[len(segs)-1]
		}, "truncated"},
		{"log segments without their list", func(t *testing.T, dir string) string {
			if kind != LogStoreWAL {
				t.Skip("only the WAL keeps segments")
			}
			meta := logStoreFile(dir, kind)
			if err := os.Remove(meta); err != nil {
				t.Fatal(err)
			}
			return meta
		}, "log segments"},
		{"both log stores", func(t *testing.T, dir string) string {
			raftDir := filepath.Join(dir, "raft")
			other := map[LogStore]string{LogStoreBolt: walDir(raftDir), LogStoreWAL: boltFile(raftDir)}[kind]
			if err := os.WriteFile(other, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			return raftDir
		}, "two Raft log stores"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := populatedDataDir(t, kind)
			file := tc.damage(t, dir)
			_, tr := raft.NewInmemTransport("s1")
			_, err := Open(Config{NodeID: "s1", DataDir: dir, Transport: tr}, fsm.New(fsm.Config{}))
			if !errors.Is(err, ErrDamaged) {
				t.Fatalf("open: %v, want a damaged data directory", err)
			}
			msg := err.Error()
			for _, want := range []string{file, tc.want, "amserver operator data-dir check", "re-sync"} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not say %q", msg, want)
				}
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("error spans lines: %q", msg)
			}
		})
	}
}

// TestRecoverAcceptsLostVote: --recover opens a directory whose log store
// was emptied, and the state comes back from the snapshot.
func TestRecoverAcceptsLostVote(t *testing.T) {
	dir := populatedDataDir(t, LogStoreBolt)
	if err := os.Truncate(filepath.Join(dir, "raft", "raft.db"), 0); err != nil {
		t.Fatal(err)
	}
	if err := CheckDataDir(dir, true); err != nil {
		t.Fatalf("with recover: %v", err)
	}
	_, tr := raft.NewInmemTransport("s1")
	f := fsm.New(fsm.Config{})
	s, err := Open(Config{NodeID: "s1", DataDir: dir, Transport: tr, Recover: true}, f)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Shutdown(); s.Close() }()
	if f.State().Pool("pa") == nil {
		t.Fatal("the snapshot's state did not come back")
	}
}

// TestSoundDataDirIsPrivate: a healthy directory passes, and every file
// and directory in it is for its owner only.
func TestSoundDataDirIsPrivate(t *testing.T) {
	dir := populatedDataDir(t, LogStoreAuto)
	if err := CheckDataDir(dir, false); err != nil {
		t.Fatalf("a sound directory: %v", err)
	}
	err := filepath.WalkDir(filepath.Join(dir, "raft"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if want := privateMode(d.IsDir()); fi.Mode().Perm() != want {
			t.Errorf("%s is %v, want %v", path, fi.Mode().Perm(), want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestDataDirInUseIsNotDamage: a second server on a running server's data
// directory is refused as such, without the advice to wipe it (that would
// destroy the running server's Raft state), and the check says the same.
func TestDataDirInUseIsNotDamage(t *testing.T) {
	for _, kind := range []LogStore{LogStoreWAL, LogStoreBolt} {
		t.Run(string(kind), func(t *testing.T) { testDataDirInUse(t, kind) })
	}
}

func testDataDirInUse(t *testing.T, kind LogStore) {
	dir := populatedDataDir(t, kind)
	if kind == LogStoreBolt {
		// A WAL beside the running server's raft.db (it downgraded)
		// must not turn its data directory into damage to wipe.
		if err := os.MkdirAll(walDir(filepath.Join(dir, "raft")), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	db, err := bbolt.Open(logStoreFile(dir, kind), 0o600, nil) // as a running server holds it
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	_, tr := raft.NewInmemTransport("s2")
	_, openErr := Open(Config{NodeID: "s2", DataDir: dir, Transport: tr}, fsm.New(fsm.Config{}))
	for name, err := range map[string]error{"open": openErr, "check": CheckDataDir(dir, false)} {
		if !errors.Is(err, ErrInUse) || errors.Is(err, ErrDamaged) {
			t.Fatalf("%s: %v, want a data directory in use", name, err)
		}
		if msg := err.Error(); !strings.Contains(msg, "another process") || strings.Contains(msg, "wipe") {
			t.Errorf("%s: error %q must say another process holds it, and not advise a wipe", name, msg)
		}
	}
}

// logStoreFile is the bbolt file of kind's store in dataDir, the one that
// holds the stored term and vote.
func logStoreFile(dataDir string, kind LogStore) string {
	f, _ := voteFile(filepath.Join(dataDir, "raft"), kind)
	return f
}
