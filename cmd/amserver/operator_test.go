package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/amserver/amserver/api"
)

// TestListPeersWithoutLeader: when quorum is lost the server asked answers
// with its own Raft configuration; list-peers prints it, says plainly that
// there is no leader and that the view is that server's own, and exits 1
// (as status does), in either format.
func TestListPeersWithoutLeader(t *testing.T) {
	local := sampleRaft()
	local.Leader, local.State = nil, "candidate"
	local.Servers[0].Leader = false
	for _, tc := range []struct {
		name string
		args []string
		want []string // in stdout
	}{
		{"table", nil, []string{"s1  10.0.0.1:7071", "s2  10.0.0.2:7071", "answered by s2, candidate",
			"no leader: this is s2's own view of the Raft configuration"}},
		{"json", []string{"--json"}, []string{`"serverId": "s2"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t)
			f.reply("GET /v1/operator/raft", http.StatusOK, local)
			r := runCLI(t, f.srv.URL, "", append([]string{"operator", "raft", "list-peers"}, tc.args...)...)
			if r.code != exitFailure || !strings.Contains(r.stderr, "the cluster has no leader") {
				t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stdout, w) {
					t.Errorf("stdout lacks %q:\n%s", w, r.stdout)
				}
			}
			if tc.name == "json" {
				var rc api.RaftConfiguration
				if err := json.Unmarshal([]byte(r.stdout), &rc); err != nil || rc.Leader != nil || len(rc.Servers) != 2 {
					t.Errorf("json = %+v, %v", rc, err)
				}
			}
		})
	}
}
