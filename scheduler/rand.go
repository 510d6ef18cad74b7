package scheduler

// Deterministic hashing for tie-breaks and scan rotations. The leader passes
// the Raft index as the seed, so a dry run at the same index reproduces the
// real decision; nothing here touches a global random source.

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
