package gossip

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"unicode/utf8"

	"github.com/hashicorp/memberlist"
)

// Role is what a member does in the cluster.
type Role string

// Roles.
const (
	RoleServer Role = "server"
	RoleWorker Role = "worker"
)

// ProtocolVersion is the amserver gossip protocol version a node advertises.
const ProtocolVersion = 1

// MaxMetaSize is memberlist's hard limit on node metadata; memberlist panics
// beyond it, so every encoder path checks it first.
const MaxMetaSize = memberlist.MetaMaxSize

// Meta is what a node publishes about itself in its memberlist metadata.
type Meta struct {
	Role     Role
	RaftAddr string // servers only
	HTTPAddr string
	Pool     string
	AZ       string
	Cloud    string
	Version  int               // protocol version; 0 is replaced by ProtocolVersion by Gossip
	Tags     map[string]string // optional, small; decoded as nil when empty
	// Leaving is set by Gossip.Leave so that peers can tell a graceful leave
	// from a failure (memberlist v0.5.4 does not expose that distinction).
	// Gossip overrides whatever the caller puts here.
	Leaving bool
	// Keyring lists the fingerprints (KeyFingerprint) of the gossip keys
	// this member has installed, the primary (encrypting) key first, so that
	// an operator can tell when a key rotation step has reached everyone.
	// Gossip maintains it; whatever the caller puts here is overridden.
	Keyring []string
	// FSMLevel is the level of replicated commands a server applies
	// (fsm.CommandLevel). 0, from a server older than the field, means 1.
	FSMLevel int
}

// A worker whose registration the servers refuse sets TagRegistration to
// RegistrationRefused until a registration succeeds: it runs nothing new
// while refused, and gossip is how the leader learns that its node, alive
// as it is, must not be given work (leader/reconcile.go).
const (
	TagRegistration     = "registration"
	RegistrationRefused = "refused"
)

// Codec errors.
var (
	ErrMetaTooLarge = errors.New("gossip: metadata too large")
	ErrInvalidMeta  = errors.New("gossip: invalid metadata")
)

// Wire format (hand-rolled so that decoding bounded, untrusted input cannot
// allocate more than the input or panic):
//
//	magic 0xA5, format 1, role byte, flags byte, uvarint version,
//	5 × (uvarint len, bytes): raft, http, pool, az, cloud,
//	uvarint tag count, count × (key, value) with keys strictly ascending,
//	then, only when the keyring is not empty or a level follows, uvarint
//	count × fingerprint, then, only when FSMLevel > 0, uvarint FSMLevel.
//
// Unknown flag bits and trailing bytes are ignored so that a newer node can
// append fields without being rejected by older ones during a rolling upgrade
// (a release without FSMLevel reads the keyring and stops there).
const (
	metaMagic    = 0xA5
	metaFormat   = 1
	flagLeaving  = 1 << 0
	roleByteSrv  = 1
	roleByteWork = 2
)

// EncodeMeta encodes m deterministically (tags sorted by key). It returns an
// error wrapping ErrMetaTooLarge when the result exceeds MaxMetaSize.
func EncodeMeta(m Meta) ([]byte, error) {
	rb, err := roleByte(m.Role)
	if err != nil {
		return nil, err
	}
	if m.Version < 0 || m.Version > math.MaxInt32 {
		return nil, fmt.Errorf("%w: version %d out of range", ErrInvalidMeta, m.Version)
	}
	if m.FSMLevel < 0 || m.FSMLevel > math.MaxInt32 {
		return nil, fmt.Errorf("%w: fsm level %d out of range", ErrInvalidMeta, m.FSMLevel)
	}
	var flags byte
	if m.Leaving {
		flags |= flagLeaving
	}
	b := make([]byte, 0, 128)
	b = append(b, metaMagic, metaFormat, rb, flags)
	b = binary.AppendUvarint(b, uint64(m.Version))
	for _, s := range []string{m.RaftAddr, m.HTTPAddr, m.Pool, m.AZ, m.Cloud} {
		if b, err = appendString(b, s); err != nil {
			return nil, err
		}
	}
	keys := make([]string, 0, len(m.Tags))
	for k := range m.Tags {
		if k == "" {
			return nil, fmt.Errorf("%w: empty tag key", ErrInvalidMeta)
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = binary.AppendUvarint(b, uint64(len(keys)))
	for _, k := range keys {
		if b, err = appendString(b, k); err != nil {
			return nil, err
		}
		if b, err = appendString(b, m.Tags[k]); err != nil {
			return nil, err
		}
	}
	if len(m.Keyring) > 0 || m.FSMLevel > 0 {
		b = binary.AppendUvarint(b, uint64(len(m.Keyring)))
		for _, fp := range m.Keyring {
			if b, err = appendString(b, fp); err != nil {
				return nil, err
			}
		}
	}
	if m.FSMLevel > 0 {
		b = binary.AppendUvarint(b, uint64(m.FSMLevel))
	}
	if len(b) > MaxMetaSize {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrMetaTooLarge, len(b), MaxMetaSize)
	}
	return b, nil
}

func appendString(b []byte, s string) ([]byte, error) {
	if !utf8.ValidString(s) {
		return nil, fmt.Errorf("%w: string %q is not UTF-8", ErrInvalidMeta, s)
	}
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...), nil
}

func roleByte(r Role) (byte, error) {
	switch r {
	case RoleServer:
		return roleByteSrv, nil
	case RoleWorker:
		return roleByteWork, nil
	}
	return 0, fmt.Errorf("%w: unknown role %q", ErrInvalidMeta, string(r))
}

// metaReader walks an encoded Meta; the first error sticks so that the
// decoder reads straight through and checks once per field group.
type metaReader struct {
	b   []byte
	err error
}

func (r *metaReader) uvarint(what string) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = fmt.Errorf("%w: bad %s", ErrInvalidMeta, what)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *metaReader) str(what string) string {
	n := r.uvarint(what)
	if r.err != nil {
		return ""
	}
	if n > uint64(len(r.b)) {
		r.err = fmt.Errorf("%w: %s overruns input", ErrInvalidMeta, what)
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	if !utf8.ValidString(s) {
		r.err = fmt.Errorf("%w: %s is not UTF-8", ErrInvalidMeta, what)
	}
	return s
}

// DecodeMeta decodes metadata produced by EncodeMeta. It never panics and
// rejects anything it does not understand, including an unknown role.
func DecodeMeta(b []byte) (Meta, error) {
	if len(b) > MaxMetaSize {
		return Meta{}, fmt.Errorf("%w: %d bytes", ErrMetaTooLarge, len(b))
	}
	if len(b) < 4 || b[0] != metaMagic || b[1] != metaFormat {
		return Meta{}, fmt.Errorf("%w: not amserver metadata (format 1)", ErrInvalidMeta)
	}
	var m Meta
	switch b[2] {
	case roleByteSrv:
		m.Role = RoleServer
	case roleByteWork:
		m.Role = RoleWorker
	default:
		return Meta{}, fmt.Errorf("%w: unknown role byte %d", ErrInvalidMeta, b[2])
	}
	m.Leaving = b[3]&flagLeaving != 0
	r := &metaReader{b: b[4:]}
	v := r.uvarint("version")
	if r.err == nil && v > math.MaxInt32 {
		r.err = fmt.Errorf("%w: version %d out of range", ErrInvalidMeta, v)
	}
	m.Version = int(v)
	m.RaftAddr = r.str("raft address")
	m.HTTPAddr = r.str("http address")
	m.Pool = r.str("pool")
	m.AZ = r.str("az")
	m.Cloud = r.str("cloud")
	m.Tags = r.tags()
	if r.err == nil && len(r.b) > 0 {
		m.Keyring = r.strings("keyring")
	}
	if r.err == nil && len(r.b) > 0 {
		lvl := r.uvarint("fsm level")
		if r.err == nil && lvl > math.MaxInt32 {
			r.err = fmt.Errorf("%w: fsm level %d out of range", ErrInvalidMeta, lvl)
		}
		m.FSMLevel = int(lvl)
	}
	if r.err != nil {
		return Meta{}, r.err
	}
	return m, nil
}

// strings reads a counted list of strings.
func (r *metaReader) strings(what string) []string {
	n := r.uvarint(what + " count")
	if r.err != nil || n == 0 {
		return nil
	}
	if n > uint64(len(r.b)) { // each takes at least its length byte
		r.err = fmt.Errorf("%w: %s count %d overruns input", ErrInvalidMeta, what, n)
		return nil
	}
	out := make([]string, 0, n)
	for i := uint64(0); i < n && r.err == nil; i++ {
		out = append(out, r.str(what))
	}
	return out
}

func (r *metaReader) tags() map[string]string {
	n := r.uvarint("tag count")
	if r.err != nil || n == 0 {
		return nil
	}
	// Each tag takes at least two bytes, which bounds the allocation.
	if n > uint64(len(r.b)/2) {
		r.err = fmt.Errorf("%w: tag count %d overruns input", ErrInvalidMeta, n)
		return nil
	}
	tags := make(map[string]string, n)
	prev := ""
	for i := uint64(0); i < n && r.err == nil; i++ {
		k := r.str("tag key")
		val := r.str("tag value")
		if r.err == nil && (k == "" || (i > 0 && k <= prev)) {
			r.err = fmt.Errorf("%w: tag keys not strictly ascending", ErrInvalidMeta)
		}
		tags[k], prev = val, k
	}
	return tags
}
