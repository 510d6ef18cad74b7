package main

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/amserver/amserver/api"
)

// TestCapsSetFlags: the flags build the PUT body; a malformed --group, or
// a file with flags, is a usage error that sends nothing.
func TestCapsSetFlags(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want *api.ClusterCaps // nil: usage error
		text string
	}{
		{"cluster only", []string{"--max-capacity", "1000", "--max-cores", "64"}, &api.ClusterCaps{PoolCaps: api.PoolCaps{MaxCapacity: 1000, MaxCores: 64}}, ""},
		{"groups", []string{"--group", "rack-7=200:0", "--group", "spare=0:8"}, &api.ClusterCaps{Groups: map[string]api.CapGroup{
			"rack-7": {PoolCaps: api.PoolCaps{MaxCapacity: 200}}, "spare": {PoolCaps: api.PoolCaps{MaxCores: 8}}}}, ""},
		{"nothing clears every cap", nil, &api.ClusterCaps{}, ""},
		{"memory", []string{"--max-memory-mib", "65536", "--group", "rack-7=0:0:4096"}, &api.ClusterCaps{PoolCaps: api.PoolCaps{MaxMemoryMiB: 65536},
			Groups: map[string]api.CapGroup{"rack-7": {PoolCaps: api.PoolCaps{MaxMemoryMiB: 4096}}}}, ""},
		{"group with a bad memory", []string{"--group", "rack-7=1:1:x"}, nil, "want NAME=CAPACITY:CORES"},
		{"group with four parts", []string{"--group", "rack-7=1:1:1:1"}, nil, "want NAME=CAPACITY:CORES"},
		{"group without cores", []string{"--group", "rack-7=200"}, nil, "want NAME=CAPACITY:CORES"},
		{"group without name", []string{"--group", "=1:1"}, nil, "want NAME=CAPACITY:CORES"},
		{"group twice", []string{"--group", "g=1:1", "--group", "g=2:2"}, nil, "given twice"},
		{"file and flags", []string{"caps.yaml", "--max-cores", "1"}, nil, "either FILE or flags"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t)
			f.reply("PUT /v1/caps", http.StatusOK, sampleCaps())
			r := runCLI(t, f.srv.URL, "", append([]string{"caps", "set"}, tc.args...)...)
			if tc.want == nil {
				if r.code != exitUsage || !strings.Contains(r.stderr, tc.text) || len(f.requests) != 0 {
					t.Fatalf("exit %d, stderr %q, %d requests", r.code, r.stderr, len(f.requests))
				}
				return
			}
			if r.code != exitOK {
				t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
			}
			var got api.ClusterCaps
			if err := json.Unmarshal(f.last("PUT", "/v1/caps").body, &got); err != nil || !reflect.DeepEqual(got, *tc.want) {
				t.Fatalf("body %+v (%v), want %+v", got, err, *tc.want)
			}
		})
	}
}
