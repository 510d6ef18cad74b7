package scheduler

// Deterministic hashing for tie-breaks and scan rotations. The leader passes
// the Raft index as the seed, so a dry run at the same index reproduces the
// real decision; nothing here touches a global random source.

import "github.com/amserver/amserver/fsm"

// mix64 is the splitmix64 finaliser: cheap, stable across platforms and well
// distributed even for consecutive inputs.
func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// hashString is 64-bit FNV-1a.
func hashString(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// derive folds parts into seed, giving an independent stream per decision
// (bundle, replica slot, group, tier) from one batch seed.
func derive(seed uint64, parts ...uint64) uint64 {
	h := mix64(seed)
	for _, p := range parts {
		h = mix64(h ^ p)
	}
	return h
}

// bundleSeed is the seed of every search for one bundle. An unplaceable
// bundle is searched with the index of its recorded failure instead of the
// batch's: which dead end a search explains depends on its seed, so with
// the Raft index a bundle re-read against the same cluster could explain
// itself differently and commit a new record, a Raft entry, though nothing
// about it changed. Its record then follows the cluster, not the index it
// happens to be read at.
func (b *Batch) bundleSeed(bundle *fsm.Bundle) uint64 {
	seed := b.seed
	if bundle.State == fsm.StateUnplaceable {
		seed = bundle.AttemptIndex
	}
	return derive(seed, hashString(bundle.ID()))
}
