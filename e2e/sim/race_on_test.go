//go:build race

package sim

// raceEnabled: the race detector slows everything ~5×, so fewer seeds run.
const raceEnabled = true
