package raftstore

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// ErrInUse marks a data directory that another process holds open: a
// server already running on it. It is not damage, and wiping it would
// destroy that server's Raft state.
var ErrInUse = errors.New("data directory in use")

// checkNotInUse asks for the shared lock a reader of raft.db takes without
// waiting: bbolt holds an exclusive flock while a server has it open, so a
// second server would otherwise wait for it, then report a timeout.
func checkNotInUse(dataDir, db string) error {
	f, err := os.Open(db)
	if err != nil {
		return nil // the checks that follow report it
	}
	defer func() { _ = f.Close() }()
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return fmt.Errorf("%w: %s is locked by another process (a server running on --data-dir %s?): "+
			"stop it first, or give this server a data directory of its own", ErrInUse, db, dataDir)
	}
	if err == nil {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	}
	return nil
}
