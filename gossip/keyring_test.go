package gossip

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/amserver/amserver/internal/logrec"
	"github.com/amserver/amserver/internal/poll"
)

func testKey(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }

// calmConfig has probe timings that a loaded test machine (2 cores, -race)
// meets without false suspicions, so that any suspicion seen in a test is
// the test's own doing.
func calmConfig(name string, key []byte) Config {
	cfg := loopbackConfig(name)
	cfg.SecretKey = key
	cfg.ProbeInterval, cfg.ProbeTimeout = time.Second, 500*time.Millisecond
	return cfg
}

func startMember(t *testing.T, cfg Config) *Gossip {
	t.Helper()
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Shutdown() })
	return g
}

func TestMemberWithoutKeyCannotJoin(t *testing.T) {
	a := startMember(t, calmConfig("a", testKey(1)))
	b := startMember(t, calmConfig("b", testKey(1)))
	if _, err := b.Join(t.Context(), []string{a.LocalAddr()}); err != nil {
		t.Fatal(err)
	}
	plain := startMember(t, calmConfig("plain", nil))
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	if n, err := plain.Join(ctx, []string{a.LocalAddr()}); err == nil {
		t.Fatalf("a member without the key joined (%d)", n)
	}
	for _, g := range []*Gossip{a, b} {
		if _, ok := g.Member("plain"); ok {
			t.Errorf("%s admitted the member without the key", g.LocalName())
		}
	}
	if plain.EncryptionEnabled() || !a.EncryptionEnabled() {
		t.Error("EncryptionEnabled does not reflect the keyring")
	}
}

// allAliveEverywhere fails the test when any member sees another member as
// anything but alive.
func allAliveEverywhere(t *testing.T, members []*Gossip, step string) {
	t.Helper()
	for _, g := range members {
		for _, other := range members {
			m, ok := g.Member(other.LocalName())
			if !ok || m.Status != StatusAlive {
				t.Fatalf("%s: %s sees %s as %q (known %v)", step, g.LocalName(), other.LocalName(), m.Status, ok)
			}
		}
	}
}

// watchStep applies one keyring step to every member, then keeps checking
// that nobody is suspected while the step settles and its fingerprints
// reach every member's view.
func watchStep(t *testing.T, members []*Gossip, step string, keys [][]byte, primary []byte) {
	t.Helper()
	for _, g := range members {
		if err := g.SetKeyring(t.Context(), keys, primary); err != nil {
			t.Fatalf("%s on %s: %v", step, g.LocalName(), err)
		}
		allAliveEverywhere(t, members, step)
	}
	want := []string{KeyFingerprint(primary)}
	for _, k := range keys {
		if !bytes.Equal(k, primary) {
			want = append(want, KeyFingerprint(k))
		}
	}
	slices.Sort(want[1:])
	// The step has 10 s: the fingerprints must spread in what the settling
	// time leaves of it.
	const settle = 1500 * time.Millisecond
	poll.Eventually(t, 10*time.Second-settle, step+": fingerprints at every member", func() error {
		allAliveEverywhere(t, members, step)
		return poll.Check(everyoneReports(members, want), "not every member reports %v", want)
	})
	// Then nobody may be suspected while the step settles: the time passes
	// on purpose, and the sleep paces the checks.
	for end := time.Now().Add(settle); time.Now().Before(end); {
		allAliveEverywhere(t, members, step)
		time.Sleep(50 * time.Millisecond)
	}
}

func everyoneReports(members []*Gossip, want []string) bool {
	for _, g := range members {
		for _, other := range members {
			m, _ := g.Member(other.LocalName())
			if !slices.Equal(m.Meta.Keyring, want) {
				return false
			}
		}
	}
	return true
}

// TestKeyringRotationKeepsMembersAlive rotates the key of a three-member
// pool in the safe order (install, use, remove) and checks that nobody is
// ever suspected, that the fingerprints are published, and that afterwards
// only the new key admits a newcomer.
func TestKeyringRotationKeepsMembersAlive(t *testing.T) {
	k1, k2 := testKey(1), testKey(2)
	var members []*Gossip
	for i := range 3 {
		g := startMember(t, calmConfig(fmt.Sprintf("m%d", i), k1))
		if i > 0 {
			if _, err := g.Join(t.Context(), []string{members[0].LocalAddr()}); err != nil {
				t.Fatal(err)
			}
		}
		members = append(members, g)
	}
	poll.Eventually(t, 10*time.Second, "the pool to form", func() error {
		for _, g := range members {
			if n := g.NumMembers(); n != 3 {
				return fmt.Errorf("%s sees %d members", g.LocalName(), n)
			}
		}
		return nil
	})
	watchStep(t, members, "install", [][]byte{k1, k2}, k1)
	watchStep(t, members, "use", [][]byte{k1, k2}, k2)
	watchStep(t, members, "remove", [][]byte{k2}, k2)
	for _, g := range members {
		if got := g.Keyring(); len(got) != 1 || !bytes.Equal(got[0], k2) {
			t.Fatalf("%s keyring after rotation: %d keys", g.LocalName(), len(got))
		}
	}

	old := startMember(t, calmConfig("old", k1))
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	if _, err := old.Join(ctx, []string{members[0].LocalAddr()}); err == nil {
		t.Error("a member with the removed key joined")
	}
	fresh := startMember(t, calmConfig("fresh", k2))
	if _, err := fresh.Join(t.Context(), []string{members[0].LocalAddr()}); err != nil {
		t.Errorf("a member with the new key cannot join: %v", err)
	}
}

func TestSetKeyringValidates(t *testing.T) {
	g := startMember(t, calmConfig("a", nil))
	if err := g.SetKeyring(t.Context(), [][]byte{testKey(1)}, testKey(2)); err == nil {
		t.Error("a primary outside the keys was accepted")
	}
	if err := g.SetKeyring(t.Context(), [][]byte{[]byte("short")}, []byte("short")); err == nil {
		t.Error("a key of the wrong length was accepted")
	}
	if err := g.SetKeyring(t.Context(), nil, nil); err != nil || g.EncryptionEnabled() {
		t.Errorf("an empty keyring changed something: %v", err)
	}
	// An unencrypted member turns encryption on when it is given keys.
	if err := g.SetKeyring(t.Context(), [][]byte{testKey(1)}, testKey(1)); err != nil || !g.EncryptionEnabled() {
		t.Errorf("encryption not enabled: %v", err)
	}
	m, _ := g.Member("a")
	if want := []string{KeyFingerprint(testKey(1))}; !slices.Equal(m.Meta.Keyring, want) {
		t.Errorf("own metadata keyring %v, want %v", m.Meta.Keyring, want)
	}
}

// A member whose key the cluster does not hold retries its join for good;
// it must say so where an operator reads, with the reason and what to do,
// and only once for the same reason (it was logged at debug level only).
func TestJoinWithWrongKeyWarnsOnce(t *testing.T) {
	a := startMember(t, calmConfig("a", testKey(1)))
	rec := &logrec.Recorder{}
	cfg := calmConfig("wrong", testKey(2))
	cfg.Logger = slog.New(rec)
	wrong := startMember(t, cfg)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	if n, err := wrong.Join(ctx, []string{a.LocalAddr()}); err == nil {
		t.Fatalf("a member with another key joined (%d)", n)
	}
	warns := rec.At(slog.LevelWarn)
	var joins []string
	for _, w := range warns {
		if strings.HasPrefix(w, "gossip join failed") {
			joins = append(joins, w)
		}
	}
	if len(joins) != 1 || !strings.Contains(joins[0], "decrypt") || !strings.Contains(joins[0], "--encrypt") {
		t.Fatalf("join warnings %q, want one naming the decryption failure and --encrypt", joins)
	}
}
