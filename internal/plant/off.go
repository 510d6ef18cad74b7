//go:build !plantbugs

package plant

// Enabled reports whether this binary can plant bugs at all.
const Enabled = false

// Active is always false without the plantbugs build tag.
func Active(Bug) bool { return false }

// Set has no effect without the plantbugs build tag.
func Set(...Bug) {}
