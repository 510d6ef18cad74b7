package fsm

import (
	"slices"
	"testing"
	"time"
)

// TestValidateKinds: each kind's own fields are checked for range and
// refused on another kind, each with its code; good specs pass.
func TestValidateKinds(t *testing.T) {
	base := func(edit func(*BundleSpec)) BundleSpec {
		s := BundleSpec{ID: "k", Pool: "edge", Jobs: []Job{{Name: "a"}}}
		edit(&s)
		return s
	}
	svc := func(n int) func(*BundleSpec) {
		return func(s *BundleSpec) { s.Kind, s.Count = KindService, n }
	}
	batch := func(edit func(*BundleSpec)) func(*BundleSpec) {
		return func(s *BundleSpec) { s.Kind = KindBatch; edit(s) }
	}
	for _, tc := range []struct {
		name string
		spec BundleSpec
		code string // "" = valid
	}{
		{"resilient by name", base(func(s *BundleSpec) { s.Kind = KindResilient }), ""},
		{"unknown kind", base(func(s *BundleSpec) { s.Kind = "daemon" }), CodeInvalidKind},
		{"service of 3", base(svc(3)), ""},
		{"service of 10000", base(svc(MaxServiceCount)), ""},
		{"service count 0", base(svc(0)), CodeInvalidCount},
		{"service count 10001", base(svc(MaxServiceCount + 1)), CodeInvalidCount},
		{"service count negative", base(svc(-1)), CodeInvalidCount},
		{"negative maxPerNode", base(func(s *BundleSpec) { svc(2)(s); s.MaxPerNode = -1 }), CodeInvalidCount},
		{"negative maxPerAz", base(func(s *BundleSpec) { svc(2)(s); s.MaxPerAz = -1 }), CodeInvalidCount},
		{"negative maxUnavailable", base(func(s *BundleSpec) { svc(2)(s); s.MaxUnavailable = -1 }), CodeInvalidCount},
		{"service with resilience", base(func(s *BundleSpec) { svc(2)(s); s.Resilience = &Resilience{} }), CodeKindMismatch},
		{"count on resilient", base(func(s *BundleSpec) { s.Count = 2 }), CodeKindMismatch},
		{"maxPerNode on resilient", base(func(s *BundleSpec) { s.MaxPerNode = 1 }), CodeKindMismatch},
		{"restart on resilient", base(func(s *BundleSpec) { s.Restart = &RestartPolicy{Attempts: 1} }), CodeKindMismatch},
		{"restart on service", base(func(s *BundleSpec) { svc(2)(s); s.Restart = &RestartPolicy{} }), CodeKindMismatch},
		{"ttl on service", base(func(s *BundleSpec) { svc(2)(s); s.TTLAfterFinished = int64(time.Minute) }), CodeKindMismatch},
		{"batch", base(batch(func(s *BundleSpec) {
			s.Restart = &RestartPolicy{Attempts: 3, Delay: int64(time.Second), Mode: RestartFail}
			s.TTLAfterFinished = int64(time.Hour)
		})), ""},
		{"batch without restart", base(batch(func(*BundleSpec) {})), ""},
		{"batch count", base(batch(func(s *BundleSpec) { s.Count = 2 })), CodeKindMismatch},
		{"batch with resilience", base(batch(func(s *BundleSpec) { s.Resilience = &Resilience{} })), CodeKindMismatch},
		{"negative attempts", base(batch(func(s *BundleSpec) { s.Restart = &RestartPolicy{Attempts: -1} })), CodeInvalidRestart},
		{"negative delay", base(batch(func(s *BundleSpec) { s.Restart = &RestartPolicy{Delay: -1} })), CodeInvalidRestart},
		{"unknown mode", base(batch(func(s *BundleSpec) { s.Restart = &RestartPolicy{Mode: "retry"} })), CodeInvalidRestart},
		{"delay mode without delay", base(batch(func(s *BundleSpec) { s.Restart = &RestartPolicy{Mode: RestartDelay} })), CodeInvalidRestart},
		{"negative ttl", base(batch(func(s *BundleSpec) { s.TTLAfterFinished = -1 })), CodeInvalidRestart},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := Validate(&tc.spec, valFixture(t), nil)
			var got []string
			for _, e := range f.Errors {
				got = append(got, e.Code)
			}
			switch {
			case tc.code == "" && len(got) > 0:
				t.Fatalf("valid spec refused: %+v", f.Errors)
			case tc.code != "" && !slices.Contains(got, tc.code):
				t.Fatalf("want %s, got %+v", tc.code, f.Errors)
			}
		})
	}
}

// TestNormalizeKind: the default kind is stored as "", so a spec that
// names it equals one that does not; a restart's mode defaults to fail and
// a service's maxUnavailable to 1.
func TestNormalizeKind(t *testing.T) {
	a := BundleSpec{ID: "k", Pool: "edge", Kind: KindResilient, Jobs: []Job{{Name: "a"}}}
	b := BundleSpec{ID: "k", Pool: "edge", Jobs: []Job{{Name: "a"}}}
	Normalize(&a)
	Normalize(&b)
	if !specEqual(&a, &b) {
		t.Fatalf("kind resilient and no kind differ: %q vs %q", a.Kind, b.Kind)
	}
	s := BundleSpec{Kind: KindService, Count: 2}
	Normalize(&s)
	if s.MaxUnavailable != 1 {
		t.Fatalf("maxUnavailable %d", s.MaxUnavailable)
	}
	r := BundleSpec{Kind: KindBatch, Restart: &RestartPolicy{Attempts: 1}}
	Normalize(&r)
	if r.Restart.Mode != RestartFail {
		t.Fatalf("mode %q", r.Restart.Mode)
	}
}

// TestValidateServiceBoundMessages: each bound's message says what 0
// means for it: no bound for maxPerNode and maxPerAz, the default of 1 for
// maxUnavailable (a rollout always restarts some replica).
func TestValidateServiceBoundMessages(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*BundleSpec)
		want string
	}{
		{"maxPerNode", func(s *BundleSpec) { s.MaxPerNode = -1 }, "maxPerNode must be 0..10000 (0: no bound), is -1"},
		{"maxPerAz", func(s *BundleSpec) { s.MaxPerAz = -1 }, "maxPerAz must be 0..10000 (0: no bound), is -1"},
		{"maxUnavailable", func(s *BundleSpec) { s.MaxUnavailable = -1 }, "maxUnavailable must be 0..10000 (0: the default, 1), is -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := BundleSpec{ID: "k", Pool: "edge", Kind: KindService, Count: 2, Jobs: []Job{{Name: "a"}}}
			tc.edit(&s)
			f := Validate(&s, valFixture(t), nil)
			if len(f.Errors) != 1 || f.Errors[0].Message != tc.want {
				t.Fatalf("findings %+v, want %q", f.Errors, tc.want)
			}
		})
	}
}
