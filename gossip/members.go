package gossip

import (
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Status is a member's reachability as seen from the local node.
type Status string

// Statuses.
const (
	StatusAlive   Status = "alive"
	StatusSuspect Status = "suspect"
	StatusDead    Status = "dead"
	StatusLeft    Status = "left"
)

// Member is the local view of one node.
type Member struct {
	Name     string
	Addr     string // IP
	Port     int
	Meta     Meta
	Status   Status
	Since    time.Time // when Status last changed
	LastSeen time.Time // last evidence of life: join, update or a direct probe ack
}

// Address is the member's gossip address, host:port.
func (m Member) Address() string { return net.JoinHostPort(m.Addr, strconv.Itoa(m.Port)) }

// EventType says what changed.
type EventType int

// Event types.
const (
	MemberJoin    EventType = iota + 1 // new, or back from dead/left
	MemberUpdate                       // metadata changed
	MemberSuspect                      // a local probe failed
	MemberAlive                        // recovered from suspect
	MemberDead
	MemberLeft
)

func (t EventType) String() string {
	switch t {
	case MemberJoin:
		return "join"
	case MemberUpdate:
		return "update"
	case MemberSuspect:
		return "suspect"
	case MemberAlive:
		return "alive"
	case MemberDead:
		return "dead"
	case MemberLeft:
		return "left"
	}
	return "unknown(" + strconv.Itoa(int(t)) + ")"
}

// Event reports a member's state after a transition. Events are coalesced per
// member when the consumer falls behind: Member is always the latest state,
// Type the latest transition (a pending join absorbs later updates and
// suspicions so that consumers still learn the member is new), and Coalesced
// counts the transitions folded into this one. Consumers should upsert by
// Member.Name rather than replay transitions.
type Event struct {
	Type      EventType
	Member    Member
	Coalesced int
}

// table is the local membership view plus the queue of undelivered events.
// memberlist's callbacks write it (they must never block), the pump reads the
// queue. It never calls into memberlist, so it cannot deadlock with it.
type table struct {
	mu      sync.Mutex
	local   string
	members map[string]*Member
	queue   []string // names with a pending event, oldest first
	pending map[string]Event
	notify  chan struct{} // capacity 1: "queue is non-empty"
}

func newTable(local string) *table {
	return &table{
		local:   local,
		members: make(map[string]*Member),
		pending: make(map[string]Event),
		notify:  make(chan struct{}, 1),
	}
}

// joined records a node memberlist reports as new or back from dead/left.
func (t *table) joined(m Member) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	m.Status, m.Since, m.LastSeen = StatusAlive, now, now
	if old, ok := t.members[m.Name]; ok && !gone(old.Status) {
		m.Since = old.Since // duplicate join: treat as an update
		t.storeLocked(m, MemberUpdate)
		return
	}
	t.storeLocked(m, MemberJoin)
}

// updated records new metadata; an alive message also ends any suspicion.
func (t *table) updated(m Member) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	m.Status, m.Since, m.LastSeen = StatusAlive, now, now
	if old, ok := t.members[m.Name]; ok && old.Status == StatusAlive {
		m.Since = old.Since
	}
	t.storeLocked(m, MemberUpdate)
}

// left records memberlist's NotifyLeave, which covers both failure and
// graceful leave; the Leaving flag in the node's last accepted metadata tells
// them apart.
func (t *table) left(m Member) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if old, ok := t.members[m.Name]; ok {
		m.LastSeen = old.LastSeen
	}
	m.Since = time.Now()
	if m.Meta.Leaving {
		m.Status = StatusLeft
		t.storeLocked(m, MemberLeft)
		return
	}
	m.Status = StatusDead
	t.storeLocked(m, MemberDead)
}

// intent sees an alive message announcing a graceful leave, before
// memberlist decides whether to apply it. If the member is already dead,
// gossip delivered the leave before the announcement and memberlist will
// discard the latter as stale, so the dead member is upgraded to left here.
// For a live member nothing is recorded: a current announcement arrives via
// updated(), and a stale one must not turn a later crash into a "left".
func (t *table) intent(name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if m, ok := t.members[name]; ok && m.Status == StatusDead {
		c := *m
		c.Status, c.Meta.Leaving = StatusLeft, true
		t.storeLocked(c, MemberLeft)
	}
}

// suspect records a failed local probe; only an alive member can become suspect.
func (t *table) suspect(name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	m, ok := t.members[name]
	if !ok || name == t.local || m.Status != StatusAlive {
		return
	}
	c := *m
	c.Status, c.Since = StatusSuspect, time.Now()
	t.storeLocked(c, MemberSuspect)
}

// acked records a successful direct probe, which ends a suspicion.
func (t *table) acked(name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	m, ok := t.members[name]
	if !ok || gone(m.Status) {
		return
	}
	now := time.Now()
	m.LastSeen = now
	if m.Status == StatusSuspect {
		c := *m
		c.Status, c.Since = StatusAlive, now
		t.storeLocked(c, MemberAlive)
	}
}

func gone(s Status) bool { return s == StatusDead || s == StatusLeft }

// storeLocked saves m and queues (or coalesces) its event.
func (t *table) storeLocked(m Member, typ EventType) {
	t.members[m.Name] = &m
	ev := Event{Type: typ, Member: m}
	if prev, ok := t.pending[m.Name]; ok {
		ev.Coalesced = prev.Coalesced + 1
		if prev.Type == MemberJoin && !gone(m.Status) {
			ev.Type = MemberJoin
		}
	} else {
		t.queue = append(t.queue, m.Name)
	}
	t.pending[m.Name] = ev
	select {
	case t.notify <- struct{}{}:
	default:
	}
}

// next pops the oldest pending event.
func (t *table) next() (Event, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.queue) == 0 {
		return Event{}, false
	}
	name := t.queue[0]
	t.queue[0] = ""
	t.queue = t.queue[1:]
	ev := t.pending[name]
	delete(t.pending, name)
	return ev, true
}

func (t *table) get(name string) (Member, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	m, ok := t.members[name]
	if !ok {
		return Member{}, false
	}
	return t.viewLocked(m), true
}

func (t *table) list() []Member {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]Member, 0, len(t.members))
	for _, m := range t.members {
		out = append(out, t.viewLocked(m))
	}
	slices.SortFunc(out, func(a, b Member) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// viewLocked copies m (tags included, so callers cannot alias our state).
func (t *table) viewLocked(m *Member) Member {
	c := *m
	if m.Meta.Tags != nil {
		c.Meta.Tags = make(map[string]string, len(m.Meta.Tags))
		for k, v := range m.Meta.Tags {
			c.Meta.Tags[k] = v
		}
	}
	if c.Name == t.local && c.Status == StatusAlive {
		c.LastSeen = time.Now()
	}
	return c
}

func (t *table) live() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, m := range t.members {
		if !gone(m.Status) {
			n++
		}
	}
	return n
}

// reap forgets dead and left members older than age and returns the address
// of a random remaining dead or left member to reconnect to ("" if none).
func (t *table) reap(age time.Duration) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var dead []string
	for name, m := range t.members {
		switch {
		case !gone(m.Status) || name == t.local:
		case time.Since(m.Since) > age:
			delete(t.members, name)
		default: // dead, or left: a member restarted gracefully comes back at its address
			dead = append(dead, m.Address())
		}
	}
	if len(dead) == 0 {
		return ""
	}
	return dead[rand.IntN(len(dead))]
}
