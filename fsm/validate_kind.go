package fsm

import (
	"time"

	"github.com/amserver/amserver/api"
)

// Validation codes of the bundle kinds (DESIGN §2.3, §3.8).
const (
	CodeInvalidKind    = api.FindingInvalidKind
	CodeInvalidCount   = api.FindingInvalidCount
	CodeInvalidRestart = api.FindingInvalidRestart
	CodeKindMismatch   = api.FindingKindMismatch
)

// Bounds of the kinds' numbers.
const (
	MaxServiceCount = 10_000
	// maxKindDuration bounds restart.delay and ttlAfterFinished so a
	// deadline computed from them never overflows.
	maxKindDuration = int64(365 * 24 * time.Hour)
)

// normalizeKind stores the default kind as "" and fills the defaults of
// the kind's own fields.
func normalizeKind(spec *BundleSpec) {
	if spec.Kind == KindResilient {
		spec.Kind = ""
	}
	if r := spec.Restart; r != nil && r.Mode == "" {
		r.Mode = RestartFail
	}
	if spec.IsService() && spec.MaxUnavailable == 0 {
		spec.MaxUnavailable = 1
	}
}

// checkKind checks the kind and the fields that belong to one kind only: a
// field set on a bundle of another kind is an error (kindMismatch) rather
// than silently ignored.
func checkKind(c *collector, spec *BundleSpec) {
	if !oneOf(spec.Kind, "", KindResilient, KindService, KindBatch) {
		c.errorf("", CodeInvalidKind, "kind %q must be resilient, service or batch", spec.Kind)
		return
	}
	kind := spec.KindName()
	if spec.IsService() {
		checkService(c, spec)
	} else {
		for _, f := range []struct {
			name string
			set  bool
		}{{"count", spec.Count != 0}, {"maxPerNode", spec.MaxPerNode != 0}, {"maxPerAz", spec.MaxPerAz != 0}, {"maxUnavailable", spec.MaxUnavailable != 0}} {
			if f.set {
				c.errorf("", CodeKindMismatch, "%s is for kind service, the bundle is %s", f.name, kind)
			}
		}
	}
	if spec.Resilience != nil && kind != KindResilient {
		c.errorf("", CodeKindMismatch, "resilience is for kind resilient, the bundle is %s", kind)
	}
	if spec.IsBatch() {
		checkRestart(c, spec)
		return
	}
	if spec.Restart != nil {
		c.errorf("", CodeKindMismatch, "restart is for kind batch, the bundle is %s", kind)
	}
	if spec.TTLAfterFinished != 0 {
		c.errorf("", CodeKindMismatch, "ttlAfterFinished is for kind batch, the bundle is %s", kind)
	}
}

func checkService(c *collector, spec *BundleSpec) {
	if spec.Count < 1 || spec.Count > MaxServiceCount {
		c.errorf("", CodeInvalidCount, "a service's count must be 1..%d, is %d", MaxServiceCount, spec.Count)
	}
	for _, f := range []struct {
		name, zero string
		v          int
	}{{"maxPerNode", "no bound", spec.MaxPerNode}, {"maxPerAz", "no bound", spec.MaxPerAz}, {"maxUnavailable", "the default, 1", spec.MaxUnavailable}} {
		if f.v < 0 || f.v > MaxServiceCount {
			c.errorf("", CodeInvalidCount, "%s must be 0..%d (0: %s), is %d", f.name, MaxServiceCount, f.zero, f.v)
		}
	}
}

func checkRestart(c *collector, spec *BundleSpec) {
	if d := spec.TTLAfterFinished; d < 0 || d > maxKindDuration {
		c.errorf("", CodeInvalidRestart, "ttlAfterFinished must be 0..%s, is %s", time.Duration(maxKindDuration), time.Duration(d))
	}
	r := spec.Restart
	if r == nil {
		return
	}
	if r.Attempts < 0 || r.Attempts > MaxServiceCount {
		c.errorf("", CodeInvalidRestart, "restart.attempts must be 0..%d, is %d", MaxServiceCount, r.Attempts)
	}
	if r.Delay < 0 || r.Delay > maxKindDuration {
		c.errorf("", CodeInvalidRestart, "restart.delay must be 0..%s, is %s", time.Duration(maxKindDuration), time.Duration(r.Delay))
	}
	if !oneOf(r.Mode, "", RestartFail, RestartDelay) {
		c.errorf("", CodeInvalidRestart, "restart.mode %q must be fail or delay", r.Mode)
	}
	if r.Mode == RestartDelay && r.Delay == 0 {
		c.errorf("", CodeInvalidRestart, "restart.mode delay needs a delay above 0, or it restarts without pause")
	}
}
