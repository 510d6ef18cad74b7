package testcluster_test

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/artifact"
	"github.com/amserver/amserver/internal/poll"
	"github.com/amserver/amserver/internal/testcluster"
)

func composeTar(t *testing.T, image string) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	body := fmt.Sprintf("services:\n  app:\n    image: %s\n", image)
	if err := tw.WriteHeader(&tar.Header{Name: "compose.yaml", Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	_, _ = tw.Write([]byte(body))
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestTemplateThroughAFollower: a template pushed through a follower is
// kept by every server; a bundle created (through a follower too) with a
// template launch stores the digest its name resolved to, which a later
// push does not change; the template cannot be deleted while the bundle
// lives, and can once it is gone.
func TestTemplateThroughAFollower(t *testing.T) {
	c := testcluster.New(t, 3)
	leader := c.Leader()
	follower := c.Followers(leader)[0]
	fc := c.Client(follower)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()

	v1 := composeTar(t, "app:1")
	pushed, err := fc.PutTemplate(ctx, "web", bytes.NewReader(v1))
	if err != nil || pushed.Digest != artifact.Digest(v1) || pushed.Runtime != "compose" {
		t.Fatalf("push through %s: %+v, %v", follower.NodeID(), pushed, err)
	}
	for _, s := range c.Servers() {
		poll.Eventually(t, 10*time.Second, s.NodeID()+" to keep the archive", func() error {
			b := s.FSM().State().Blob(pushed.Digest)
			return poll.Check(b != nil && bytes.Equal(b.Data, v1), "%s lacks blob %s", s.NodeID(), pushed.Digest)
		})
	}
	if _, err := fc.PutPool(ctx, api.Pool{Name: "live"}); err != nil {
		t.Fatal(err)
	}
	spec := api.BundleSpec{ID: "channel-1", Pool: "live", Jobs: []api.Job{{Name: "stack",
		Launch: api.Launch{Kind: api.LaunchProductTemplate, Ref: "web", Parameters: map[string]string{"CHANNEL": "1"}}}}}
	created, err := fc.CreateBundle(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	pinned := "web@" + pushed.Digest
	if ref := created.Bundle.Jobs[0].Launch.Ref; ref != pinned {
		t.Fatalf("created with ref %q, want %q", ref, pinned)
	}
	if _, err := fc.PutTemplate(ctx, "web", bytes.NewReader(composeTar(t, "app:2"))); err != nil {
		t.Fatal(err)
	}
	got, _, err := fc.Bundle(ctx, "channel-1", nil)
	if err != nil || got.Jobs[0].Launch.Ref != pinned {
		t.Fatalf("after a new push the bundle reads %+v, %v; want ref %s", got, err, pinned)
	}
	if err := fc.DeleteTemplate(ctx, "web"); !api.IsCode(err, api.CodeInUse) || !strings.Contains(err.Error(), "channel-1") {
		t.Fatalf("delete while the bundle lives: %v", err)
	}
	if _, err := fc.DeleteBundle(ctx, "channel-1"); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 30*time.Second, "the bundle to be purged", func() error {
		_, _, err := fc.Bundle(ctx, "channel-1", nil)
		return poll.Check(api.IsCode(err, api.CodeNotFound), "bundle still there: %v", err)
	})
	if err := fc.DeleteTemplate(ctx, "web"); err != nil {
		t.Fatalf("delete once the bundle is gone: %v", err)
	}
	if _, _, err := fc.Template(ctx, "web", nil); !api.IsCode(err, api.CodeNotFound) {
		t.Fatalf("deleted template: %v", err)
	}
}
