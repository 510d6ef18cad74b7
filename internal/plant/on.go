//go:build plantbugs

package plant

import (
	"os"
	"strings"
	"sync"
)

// Enabled reports whether this binary can plant bugs at all.
const Enabled = true

var (
	mu     sync.RWMutex
	active = map[Bug]bool{}
)

func init() {
	for _, name := range strings.Split(os.Getenv(EnvVar), ",") {
		if name = strings.TrimSpace(name); name != "" {
			active[Bug(name)] = true
		}
	}
}

// Active reports whether bug b is planted.
func Active(b Bug) bool {
	mu.RLock()
	defer mu.RUnlock()
	return active[b]
}

// Set plants exactly the given bugs (none: the correct program).
func Set(bugs ...Bug) {
	mu.Lock()
	defer mu.Unlock()
	active = map[Bug]bool{}
	for _, b := range bugs {
		active[b] = true
	}
}
