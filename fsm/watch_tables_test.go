package fsm

import "testing"

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestWatchKeyringFiresOnlyForTheKeyring: the keyring channel stays open
// through commands that leave the keyring alone (and leaves a follower's
// open transaction open: nothing reads), closes at a keyring change, a
// rejected keyring command closes nothing, and a restore closes it.
func TestWatchKeyringFiresOnlyForTheKeyring(t *testing.T) {
	h := newHarness(t)
	ch := h.fsm.WatchKeyring()
	h.ok(UpsertPoolType, &UpsertPoolRequest{Pool: Pool{Name: "p"}})
	h.ok(CreateBundleType, &CreateBundleRequest{Spec: testBundle("a", "p", testJob("j", 100, 0))})
	if closed(ch) {
		t.Fatal("a pool and a bundle closed the keyring's channel")
	}
	if n := h.fsm.OpenEntries(); n != 2 {
		t.Fatalf("open transaction holds %d entries, want 2: watching the keyring read the state", n)
	}
	h.ok(KeyringType, &KeyringRequest{Op: KeyringInstall, Key: gk(1)})
	if !closed(ch) {
		t.Fatal("installing a key left the keyring's channel open")
	}
	ch = h.fsm.WatchKeyring()
	if again := h.fsm.WatchKeyring(); again != ch {
		t.Fatal("two watchers of one table got different channels")
	}
	if res := h.apply(KeyringType, &KeyringRequest{Op: KeyringUse, Key: gk(9)}); res.Err == nil {
		t.Fatal("using a key never installed succeeded")
	}
	if closed(ch) {
		t.Fatal("a rejected keyring command closed the channel")
	}
	src := newHarness(t)
	restoreInto(t, src.fsm, h.fsm)
	if !closed(ch) {
		t.Fatal("a restore left the keyring's channel open")
	}
}
