//go:build upgrade

package upgrade

import (
	"bytes"
	"testing"
	"time"

	"github.com/amserver/amserver/api"
)

// moveToWAL is docs/operations.md §4.2 after the upgrade, one server at a
// time while the writer runs, followers first: each kept its raft.db
// through the upgrade (the old binary wrote it), stops, has its log moved
// by the new binary's migrate-to-wal, starts on the WAL and rejoins.
func moveToWAL(t *testing.T, r *report, l *layout, w *writer, c *api.Client, newBin string) {
	t.Helper()
	leader := l.healthy(t, 60*time.Second)
	for _, s := range restartOrder(l.servers, leader) {
		r.begin("move " + s.id + " to the WAL (SIGTERM, operator data-dir migrate-to-wal, start)")
		if !bytes.Contains(lastRun(s), []byte("log_store=bolt")) {
			t.Errorf("%s did not keep its raft.db through the upgrade (no %q in its log)", s.id, "log_store=bolt")
		}
		rejoined := restartWith(t, l, s, newBin, "migrate-to-wal")
		if !bytes.Contains(lastRun(s), []byte("log_store=wal")) {
			t.Errorf("%s did not start on the WAL (no %q in its log)", s.id, "log_store=wal")
		}
		w.more(t, 50)
		r.end(rejoined + "; " + w.paused(func() string { return l.digestsAgree(t, 30*time.Second) }) + "; writer " + w.counts())
	}
	checkCreates(t, w, c)
}
