package httpapi

import (
	"testing"
	"time"

	"github.com/amserver/amserver/raftstore"
)

// TestHealthPeersAreNeverOld: health reuses a peer count for a second at
// most. A count taken while the server bootstrapped (no configuration
// yet) and kept for an hour is read again, not answered, and a count
// taken a moment ago is answered as it is.
func TestHealthPeersAreNeverOld(t *testing.T) {
	e := newEnv(t, newTestBackend("s1"))
	three := []raftstore.Peer{{ID: "s1"}, {ID: "s2"}, {ID: "s3"}}
	for _, tc := range []struct {
		name    string
		sampled int
		age     time.Duration
		want    int
	}{
		{"an hour-old count from the bootstrap", 0, time.Hour, 3},
		{"a count two seconds old", 5, 2 * time.Second, 3},
		{"a count taken just now", 7, 0, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.b.set(func(b *testBackend) { b.servers = three })
			e.s.peers.Store(&peerSample{n: tc.sampled, at: time.Now().Add(-tc.age)})
			h, err := e.c.Health(ctx(t))
			if err != nil {
				t.Fatal(err)
			}
			if h.Peers != tc.want {
				t.Fatalf("health says %d peers, want %d", h.Peers, tc.want)
			}
		})
	}
}
