// Package plant switches on known bugs so that the fault suite can prove it
// catches them (PITFALLS: a suite that has never caught a bug proves little).
// In a normal build Active is a constant false and the bugs compile away;
// only a binary built with the plantbugs tag can select them, at run time,
// through Set or the AMSERVER_PLANT_BUGS environment variable.
package plant

// Bug names one planted defect.
type Bug string

// The planted bugs, each breaking one guarantee of DESIGN §5.
const (
	// StaleRead serves default reads from local state without verifying
	// leadership: linearizability checking must catch it.
	StaleRead Bug = "stale-read"
	// SkipRecheck commits plan parts without the ledger re-check, so a plan
	// built on a stale snapshot can over-commit a node: the placement
	// invariants must catch it.
	SkipRecheck Bug = "skip-recheck"
	// EarlyAck acknowledges a write before Raft commits it, so a write acked
	// by a deposed leader is lost: unique creates and linearizability must
	// catch it.
	EarlyAck Bug = "early-ack"
)

// All lists every planted bug.
var All = []Bug{StaleRead, SkipRecheck, EarlyAck}

// EnvVar selects planted bugs in a plantbugs build: a comma-separated list.
const EnvVar = "AMSERVER_PLANT_BUGS"
