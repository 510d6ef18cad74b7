package gossip

import (
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"
)

// hooks implements memberlist's Delegate, EventDelegate, AliveDelegate and
// PingDelegate. memberlist calls most of them with its node lock held, so
// they copy what they need and return; none calls back into memberlist.
type hooks struct {
	table  *table
	logger *slog.Logger

	mu   sync.Mutex
	meta []byte // our encoded metadata, always <= MaxMetaSize
}

var (
	_ memberlist.Delegate      = (*hooks)(nil)
	_ memberlist.EventDelegate = (*hooks)(nil)
	_ memberlist.AliveDelegate = (*hooks)(nil)
	_ memberlist.PingDelegate  = (*hooks)(nil)
)

func (h *hooks) setMeta(b []byte) {
	h.mu.Lock()
	h.meta = b
	h.mu.Unlock()
}

// NodeMeta returns our metadata. It was size-checked when set; the check
// here only guards memberlist's panic should a caller lower the limit.
func (h *hooks) NodeMeta(limit int) []byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.meta) > limit {
		h.logger.Error("gossip metadata exceeds memberlist limit; advertising none", "size", len(h.meta), "limit", limit)
		return nil
	}
	return h.meta
}

// Unused parts of Delegate and PingDelegate: we send no messages or state.
func (h *hooks) NotifyMsg([]byte)                  {}
func (h *hooks) GetBroadcasts(_, _ int) [][]byte   { return nil }
func (h *hooks) LocalState(bool) []byte            { return nil }
func (h *hooks) MergeRemoteState(_ []byte, _ bool) {}
func (h *hooks) AckPayload() []byte                { return nil }

// EventDelegate: join (new or back from dead/left), update (new meta) and
// leave (dead or left: memberlist does not say which).
func (h *hooks) NotifyJoin(n *memberlist.Node)   { h.table.joined(h.member(n)) }
func (h *hooks) NotifyUpdate(n *memberlist.Node) { h.table.updated(h.member(n)) }
func (h *hooks) NotifyLeave(n *memberlist.Node)  { h.table.left(h.member(n)) }

// suspectFromLog is the logBridge hook: our own probe of name failed.
func (h *hooks) suspectFromLog(name string) { h.table.suspect(name) }

// NotifyPingComplete reports a direct probe ack, which ends a suspicion.
func (h *hooks) NotifyPingComplete(n *memberlist.Node, _ time.Duration, _ []byte) {
	h.table.acked(n.Name)
}

var errForeignMeta = errors.New("gossip: rejecting node with undecodable metadata")

// NotifyAlive sees every alive message before memberlist applies it. It keeps
// nodes whose metadata we cannot decode (another cluster, an incompatible
// version) out of the member list, and catches a leave announcement that
// memberlist will discard because the leave itself overtook it.
func (h *hooks) NotifyAlive(n *memberlist.Node) error {
	m, err := DecodeMeta(n.Meta)
	if err != nil {
		h.logger.Warn("ignoring gossip member", "node", n.Name, "addr", n.Address(), "err", err)
		return errForeignMeta
	}
	if m.Leaving {
		h.table.intent(n.Name)
	}
	return nil
}

// member copies a memberlist node; n is only valid during the callback.
func (h *hooks) member(n *memberlist.Node) Member {
	m := Member{Name: n.Name, Addr: n.Addr.String(), Port: int(n.Port)}
	meta, err := DecodeMeta(n.Meta)
	if err != nil {
		// NotifyAlive filters these; a dead notice can still carry old bytes.
		h.logger.Warn("undecodable gossip metadata", "node", n.Name, "err", err)
	}
	m.Meta = meta
	return m
}
