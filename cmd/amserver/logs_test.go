package main

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/amserver/amserver/api"
)

// TestLogsCommand: the command resolves the bundle's job to its
// assignment (primary and first job by default) and prints the text the
// server streams, with the query its flags make.
func TestLogsCommand(t *testing.T) {
	b := sampleBundle()
	for i := range b.Replicas {
		for k := range b.Replicas[i].Jobs {
			j := &b.Replicas[i].Jobs[k]
			if j.NodeID != "" {
				j.AssignmentID = "enc-1:" + string(rune('0'+i)) + ":" + j.Name + "@" + j.NodeID
			}
		}
	}
	f := newFake(t)
	f.reply("GET /v1/bundles/enc-1", http.StatusOK, b)
	f.on("GET /v1/assignments/{id}/logs", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "output of "+r.PathValue("id")+"\n")
		if strings.Contains(r.PathValue("id"), ":1:") && r.URL.Query().Get("follow") == "true" {
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler) // the server cuts the answer short: its worker went away
		}
	})
	f.fail("GET /v1/bundles/ghost", http.StatusNotFound, api.CodeNotFound, `bundle "ghost" not found`)
	cases := []struct {
		name  string
		args  []string
		code  int
		out   string
		query string // the logs request's, when it gets that far
	}{
		{"primary first job", []string{"logs", "enc-1"}, exitOK, "output of " + b.Replicas[0].Jobs[0].AssignmentID + "\n", ""},
		{"named job, follow, tail, stderr", []string{"logs", "enc-1", "packager", "-f", "--tail", "5", "--stderr"}, exitOK,
			"output of " + b.Replicas[0].Jobs[1].AssignmentID + "\n", "follow=true&stream=stderr&tail=5"},
		{"backup", []string{"logs", "enc-1", "--replica", "1"}, exitOK, "output of " + b.Replicas[1].Jobs[0].AssignmentID + "\n", ""},
		{"no such job", []string{"logs", "enc-1", "muxer"}, exitUsage, "", ""},
		{"no such replica", []string{"logs", "enc-1", "--replica", "7"}, exitUsage, "", ""},
		{"bad tail", []string{"logs", "enc-1", "--tail", "-2"}, exitUsage, "", ""},
		{"unknown bundle", []string{"logs", "ghost"}, exitNotFound, "", ""},
		{"cut short", []string{"logs", "enc-1", "--replica", "1", "-f"}, exitFailure, "output of " + b.Replicas[1].Jobs[0].AssignmentID + "\n", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(t, f.srv.URL, "", tc.args...)
			if r.code != tc.code || r.stdout != tc.out {
				t.Fatalf("exit %d stdout %q stderr %q; want %d %q", r.code, r.stdout, r.stderr, tc.code, tc.out)
			}
			if tc.code == exitFailure && !strings.Contains(r.stderr, "broke off") {
				t.Fatalf("stderr %q does not say the logs broke off", r.stderr)
			}
			if tc.query != "" {
				var last recorded
				for _, q := range f.seen() {
					if strings.HasSuffix(q.path, "/logs") {
						last = q
					}
				}
				if enc := url.Values(last.query).Encode(); enc != tc.query {
					t.Fatalf("query %q, want %q", enc, tc.query)
				}
			}
		})
	}
}

// TestServiceLogsCommand: the command finds the service's instance among
// the node's assignments (the running one before a stopping one) and
// prints its output with the query its flags make.
func TestServiceLogsCommand(t *testing.T) {
	f := newFake(t)
	f.reply("GET /v1/nodes/w1/assignments", http.StatusOK, []api.Assignment{
		{ID: "enc-1:0:a@w1", BundleID: "enc-1", Desired: api.DesiredRun},
		{ID: "svc:relay@w1#old", ServiceID: "relay", Desired: api.DesiredStop},
		{ID: "svc:relay@w1", ServiceID: "relay", Desired: api.DesiredRun},
		{ID: "svc:gone@w1", ServiceID: "gone", Desired: api.DesiredStop},
	})
	f.fail("GET /v1/nodes/ghost/assignments", http.StatusNotFound, api.CodeNotFound, `node "ghost" not found`)
	f.on("GET /v1/assignments/{id}/logs", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "output of "+r.PathValue("id")+"?"+r.URL.RawQuery+"\n")
	})
	cases := []struct {
		name string
		args []string
		code int
		out  string
	}{
		{"running instance", []string{"service", "logs", "relay", "w1"}, exitOK, "output of svc:relay@w1?stream=stdout\n"},
		{"stopping instance", []string{"service", "logs", "gone", "w1"}, exitOK, "output of svc:gone@w1?stream=stdout\n"},
		{"flags", []string{"service", "logs", "relay", "w1", "-f", "--tail", "3", "--stderr"}, exitOK,
			"output of svc:relay@w1?follow=true&stream=stderr&tail=3\n"},
		{"no instance there", []string{"service", "logs", "other", "w1"}, exitNotFound, ""},
		{"unknown node", []string{"service", "logs", "relay", "ghost"}, exitNotFound, ""},
		{"bad tail", []string{"service", "logs", "relay", "w1", "--tail", "-5"}, exitUsage, ""},
		{"missing node", []string{"service", "logs", "relay"}, exitUsage, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(t, f.srv.URL, "", tc.args...)
			if r.code != tc.code || r.stdout != tc.out {
				t.Fatalf("exit %d stdout %q stderr %q; want %d %q", r.code, r.stdout, r.stderr, tc.code, tc.out)
			}
			if tc.name == "no instance there" && !strings.Contains(r.stderr, "service other has no instance on node w1") {
				t.Fatalf("stderr %q", r.stderr)
			}
		})
	}
}
