package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/fsm"
)

// get reads path and returns its index header and body.
func (e *env) get(path string) (uint64, []byte) {
	e.t.Helper()
	resp, raw := e.do(http.MethodGet, path, nil)
	if resp.StatusCode != http.StatusOK {
		e.t.Fatalf("GET %s = %d %s", path, resp.StatusCode, raw)
	}
	idx, err := strconv.ParseUint(resp.Header.Get(api.HeaderIndex), 10, 64)
	if err != nil || idx == 0 {
		e.t.Fatalf("GET %s: index header %q", path, resp.Header.Get(api.HeaderIndex))
	}
	return idx, raw
}

func retag(t *testing.T, b *testBackend, id, team string) {
	t.Helper()
	spec := b.State().Bundle(id).Spec
	spec.Tags = map[string]string{"team": team}
	b.mustApply(t, fsm.ReplaceBundleType, fsm.ReplaceBundleRequest{Spec: spec})
}

func TestBlockingQueryWakesOnChange(t *testing.T) {
	e := leaderEnv(t)
	seedCluster(t, e.b)
	placeBundle(t, e.b, "b1")
	idx, _ := e.get("/v1/bundles/b1")
	type answer struct {
		idx  uint64
		body []byte
	}
	got := make(chan answer, 1)
	go func() {
		i, b := e.get(fmt.Sprintf("/v1/bundles/b1?index=%d&wait=1m", idx))
		got <- answer{i, b}
	}()
	// Whether the change lands before or after the query starts to wait,
	// the answer must show it; a one-minute wait proves it did not time out.
	retag(t, e.b, "b1", "audio")
	a := <-got
	var b api.Bundle
	if err := json.Unmarshal(a.body, &b); err != nil {
		t.Fatal(err)
	}
	if a.idx <= idx || b.Tags["team"] != "audio" || a.idx != b.ModifyIndex {
		t.Fatalf("woke with index %d (was %d), tags %v", a.idx, idx, b.Tags)
	}
}

func TestBlockingQueryTimesOut(t *testing.T) {
	e := leaderEnv(t)
	seedCluster(t, e.b)
	placeBundle(t, e.b, "b1")
	idx, body := e.get("/v1/bundles")
	// A change to another table does not answer a bundles query early, and
	// the answer after the wait carries the same index and body.
	type answer struct {
		idx  uint64
		body []byte
	}
	answered := make(chan answer, 1)
	before := e.b.watches.Load()
	go func() {
		got, again := e.get(fmt.Sprintf("/v1/bundles?index=%d&wait=200ms", idx))
		answered <- answer{got, again}
	}()
	e.b.waitWatching(t, before)
	if _, err := e.b.Apply(context.Background(), fsm.NodeCordonType, fsm.NodeFlagRequest{NodeID: "n1", On: true}); err != nil {
		t.Fatal(err)
	}
	a := <-answered
	if got, again := a.idx, a.body; got != idx || !bytes.Equal(again, body) {
		t.Fatalf("after the wait: index %d body %s, want %d %s", got, again, idx, body)
	}
	// The index never goes below what the client already saw.
	ahead := idx + 1000
	if got, _ := e.get(fmt.Sprintf("/v1/bundles?index=%d&wait=10ms", ahead)); got != ahead {
		t.Fatalf("index went backwards: %d < %d", got, ahead)
	}
}

// A restore to an older snapshot moves the tables' index back; blocked
// readers wake (their data changed) but the header stays at their index.
func TestBlockingQueryAcrossRestore(t *testing.T) {
	e := leaderEnv(t)
	seedCluster(t, e.b)
	placeBundle(t, e.b, "b1")
	var snap bytes.Buffer
	if err := e.b.SaveSnapshot(context.Background(), &snap); err != nil {
		t.Fatal(err)
	}
	retag(t, e.b, "b1", "audio")
	idx, _ := e.get("/v1/bundles/b1")
	got := make(chan uint64, 1)
	before := e.b.watches.Load()
	go func() {
		i, _ := e.get(fmt.Sprintf("/v1/bundles/b1?index=%d&wait=1m", idx))
		got <- i
	}()
	e.b.waitWatching(t, before)
	if err := e.b.RestoreSnapshot(context.Background(), &snap); err != nil {
		t.Fatal(err)
	}
	select {
	case i := <-got:
		if i < idx {
			t.Fatalf("index went backwards across a restore: %d < %d", i, idx)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("restore did not wake the blocked query")
	}
}

func TestClientBlockingAssignments(t *testing.T) {
	e := leaderEnv(t)
	seedCluster(t, e.b)
	list, meta, err := e.c.Assignments(ctx(t), "n1", nil)
	if err != nil || len(list) != 0 || meta.Index < 1 {
		t.Fatalf("initial = %+v %+v, %v", list, meta, err)
	}
	type answer struct {
		list []api.Assignment
		meta api.QueryMeta
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		l, m, err := e.c.Assignments(ctx(t), "n1", &api.QueryOptions{Index: meta.Index, Wait: time.Minute})
		got <- answer{l, m, err}
	}()
	placeBundle(t, e.b, "b1")
	a := <-got
	if a.err != nil || len(a.list) != 1 || a.list[0].BundleID != "b1" || a.meta.Index <= meta.Index {
		t.Fatalf("after placement = %+v %+v, %v", a.list, a.meta, a.err)
	}
}

// Stopping the server answers blocked queries at once.
func TestBlockingQueryEndsOnStop(t *testing.T) {
	e := leaderEnv(t)
	idx, _ := e.get("/v1/pools")
	got := make(chan uint64, 1)
	before := e.b.watches.Load()
	go func() {
		i, _ := e.get(fmt.Sprintf("/v1/pools?index=%d&wait=5m", idx))
		got <- i
	}()
	e.b.waitWatching(t, before)
	e.s.stop()
	select {
	case i := <-got:
		if i != idx {
			t.Fatalf("index %d, want %d", i, idx)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("stop did not end the blocking query")
	}
}
