// Package scheduler is amserver's placement engine (DESIGN §3): a pure
// function from a read-only state view and a bundle to a plan the FSM can
// re-check and commit.
//
// The moving parts, cheapest first:
//
//   - an index per state snapshot (index.go; refreshed rather than rebuilt
//     when only usage changed, refresh.go) buckets every pool's placeable
//     nodes by tier, failure domain (AZ × cloud), capability name and GPU
//     presence, so a decision only looks at nodes that could hold a job;
//   - a chain of small feasibility stages (stage_*.go) in the order of
//     DESIGN §3.1, whose names are the explain keys of §7;
//   - scorers (score.go): the pool's binpack/spread policy, affinity weights,
//     a same-AZ bonus, and a tie-break seeded from the caller's seed (the
//     Raft index), so a dry run reproduces the leader's decision;
//   - a backtracking search that places one replica as a gang (gang.go,
//     scan.go), then the resilience ladder for the backup (resilience.go),
//     healing (heal.go), explanations (explain.go), and batches of bundles
//     placed against one ledger overlay so nothing is double-booked
//     (batch.go).
//
// # Search and its bounds
//
// A replica's jobs form co-location groups; the search assigns a node to one
// group after another (pinned and most constrained groups first) and
// backtracks on failure, with conflict-directed backjumping: a group that
// fits nowhere reports which earlier choices contributed (the groups on a
// node whose capacity it lacked, a group it must be separate from, the
// groups counted against a pool cap), and the search jumps straight back to
// the latest of them, or gives up at once when the failure depends on no
// choice at all. The search is therefore complete: it reports a replica
// unplaceable only when no assignment satisfies every hard rule (checked
// against brute force on random small clusters), unless its budget runs out.
//
// Each group's candidates are scanned tier by tier (the cost cascade) in a
// seeded rotation; a scan stops after k feasible nodes, k = max(2·⌈log2 n⌉,
// Options.SampleFloor) for a candidate list of n nodes (lists of up to
// Options.ExhaustiveBelow nodes are scanned whole), and the best of them is
// tried first. When every sampled node fails deeper, the scan resumes where
// it stopped, so sampling changes which feasible node is tried first, never
// whether one is found.
//
// Options.SearchBudget (default 50,000, and never less than 4 × the pool's
// node count) bounds the node evaluations of one replica search; beyond it
// the replica is reported unplaceable with GangResult.BudgetExhausted set
// and the explanation of the deepest point reached. A bundle runs at most
// two searches for its primary (sameAz soft tries one AZ first) and one per
// ladder rung for its backup.
//
// Nothing here reads a clock or a global random source, and no result
// depends on map iteration order: the same view, bundle and seed give the
// same plan.
package scheduler
