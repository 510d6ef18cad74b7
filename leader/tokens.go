package leader

import (
	"context"
	"fmt"

	"github.com/amserver/amserver/fsm"
)

// Prepare runs once per term, before the leader serves: it writes the
// configured ACL tokens that the state lacks, so the configured management
// token works from the first request a cluster answers. An error gives
// leadership away (raftstore.Term).
func (l *Leader) Prepare(ctx context.Context) error {
	for _, want := range l.tokens.get() {
		if got := l.store.State().ACLTokenBySecretHash(want.SecretHash); got != nil && got.Kind == want.Kind && got.NodeID == want.NodeID {
			continue
		}
		want.CreateTime = l.clock.Now().UnixNano()
		res, err := l.store.Apply(ctx, fsm.UpsertACLTokenType, fsm.UpsertACLTokenRequest{Token: want})
		if err != nil {
			return fmt.Errorf("write configured ACL token %s: %w", want.AccessorID, err)
		}
		if res.Err != nil {
			// Another token holds this secret (created through the API):
			// retrying cannot help, and serving is still safe.
			l.log.Error("configured ACL token refused by the state", "accessor", want.AccessorID, "err", res.Err)
		}
	}
	return nil
}
