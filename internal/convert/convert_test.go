package convert

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/amserver/amserver/internal/fill"
)

type shared struct {
	Labels []string          `json:"labels"`
	Env    map[string]string `json:"env"`
}

type wirePart struct {
	Cap float64 `json:"totalCap"`
}

type wireThing struct {
	Name     string              `json:"name"`
	Size     float64             `json:"size"`
	At       string              `json:"at"`
	When     time.Time           `json:"when"`
	Every    string              `json:"every"`
	Parts    []wirePart          `json:"parts"`
	ByName   map[string]wirePart `json:"byName"`
	Opt      *wirePart           `json:"opt"`
	Shared   shared              `json:"shared"`
	Computed int                 `json:"computed"`
	RO       uint64              `json:"ro"`
}

type fsmPart struct {
	Capacity int64 `unit:"milli" api:"Cap"`
}

type fsmThing struct {
	Name     string
	Size     int64 `unit:"milli"`
	At       int64 `unit:"instant"`
	When     int64 `unit:"instant"`
	Every    int64 `unit:"duration"`
	Parts    []fsmPart
	ByName   map[string]fsmPart
	Opt      *fsmPart
	Shared   shared
	Internal int `api:"-"`
	RO       uint64
}

var thingPair = MustPair[wireThing, fsmThing](Skip("Computed"), ReadOnly("RO"))

// TestPairRoundTrip: every field of a filled FSM value reaches the API
// value, and comes back, except what the API never sets.
func TestPairRoundTrip(t *testing.T) {
	in := fill.New[fsmThing](0)
	var wire wireThing
	thingPair.ToAPI(&wire, in)
	if z := fill.Zeros(&wire); !slices.Equal(z, []string{".Computed"}) {
		t.Fatalf("API fields left zero: %v", z)
	}
	var back fsmThing
	if p := thingPair.ToFSM(&back, &wire); p != nil {
		t.Fatalf("problems: %v", p)
	}
	want := *in
	want.Internal, want.RO = 0, 0 // FSM-only; read-only
	if !reflect.DeepEqual(back, want) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", back, want)
	}
	var again wireThing
	thingPair.ToAPI(&again, &back)
	again.RO = wire.RO
	if !reflect.DeepEqual(again, wire) {
		t.Fatalf("API → FSM → API lost something:\n got %+v\nwant %+v", again, wire)
	}
}

// TestPairCopiesDeeply: the FSM value shares no memory with the request.
func TestPairCopiesDeeply(t *testing.T) {
	var wire wireThing
	thingPair.ToAPI(&wire, fill.New[fsmThing](0))
	var got fsmThing
	thingPair.ToFSM(&got, &wire)
	before := fill.New[fsmThing](0)
	before.Internal, before.RO = 0, 0
	wire.Shared.Labels[0], wire.Shared.Env["x"], wire.Parts[0].Cap = "changed", "added", 99
	wire.Opt.Cap = 98
	if !reflect.DeepEqual(&got, before) {
		t.Fatal("changing the request changed the converted value")
	}
}

// TestPairReportsProblems: every bad quantity, time and duration is a
// problem under the API's field path, and the rest still converts.
func TestPairReportsProblems(t *testing.T) {
	wire := wireThing{Name: "n", Size: -1, At: "yesterday", When: time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC), Every: "-1s",
		Parts: []wirePart{{Cap: 1}, {Cap: 1e-5}}, Opt: &wirePart{Cap: 1e300}}
	var got fsmThing
	var msgs []string
	for _, p := range thingPair.ToFSM(&got, &wire) {
		msgs = append(msgs, p.Error())
	}
	want := []string{
		"size must not be negative", `at "yesterday" is not an RFC 3339 time`,
		"when 1960-01-01T00:00:00Z must be after 1970 and before 2262", `every "-1s" must not be negative`,
		"parts[1].totalCap is below the resolution of 0.001", "opt.totalCap must be at most 9000000000000",
	}
	if !slices.Equal(msgs, want) {
		t.Fatalf("problems:\n got %q\nwant %q", msgs, want)
	}
	if got.Name != "n" || got.Parts[0].Capacity != 1000 {
		t.Fatalf("good fields not converted: %+v", got)
	}
}

// TestPairRefusesUnmapped: a field added to either side without a
// counterpart, a stale option, or a conversion no tag explains does not
// compile; a deliberately incomplete pair proves the check works.
func TestPairRefusesUnmapped(t *testing.T) {
	type wireExtra struct {
		wireThing
		Added string `json:"added"`
	}
	type fsmExtra struct {
		fsmThing
		Added2 string
	}
	type wrongKind struct {
		Name int
	}
	type badUnit struct {
		Name int64 `unit:"milli"`
	}
	cases := map[string]struct {
		err  error
		want string
	}{
		"api field":      {Check[wireExtra, fsmThing](Skip("Computed"), ReadOnly("RO")), "Added has no counterpart"},
		"fsm field":      {Check[wireThing, fsmExtra](Skip("Computed"), ReadOnly("RO")), "Added2 has no counterpart"},
		"computed":       {Check[wireThing, fsmThing](ReadOnly("RO")), "Computed has no counterpart"},
		"stale skip":     {Check[wireThing, fsmThing](Skip("Computed", "Gone")), "Skip names Gone"},
		"stale readonly": {Check[wireThing, fsmThing](Skip("Computed"), ReadOnly("Gone")), "ReadOnly names Gone"},
		"kinds":          {Check[struct{ Name string }, wrongKind](), "kinds differ"},
		"unit":           {Check[struct{ Name string }, badUnit](), `unit "milli" cannot convert`},
	}
	for name, c := range cases {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", name, c.err, c.want)
		}
	}
}

type wireRuled struct {
	Name  string   `json:"name"`
	Rules []string `json:"rules"`
	Cap   float64  `json:"cap"`
}

type fsmRules struct {
	Rules []string
	Cap   int64 `unit:"milli"`
}

type fsmRuled struct {
	Name string
	*fsmRules
}

// TestEmbeddedPointerFields: an embedded struct pointer's fields pair with
// the API struct's own; an API value without any leaves the pointer nil
// (what the FSM saves by the pointer), one with any allocates it, and a
// nil pointer reads back as zero fields even over a reused API value.
func TestEmbeddedPointerFields(t *testing.T) {
	pair := MustPair[wireRuled, fsmRuled]()
	var bare fsmRuled
	if p := pair.ToFSM(&bare, &wireRuled{Name: "a"}); len(p) != 0 || bare.fsmRules != nil {
		t.Fatalf("no rules: pointer %v, problems %v", bare.fsmRules, p)
	}
	var ruled fsmRuled
	if p := pair.ToFSM(&ruled, &wireRuled{Name: "b", Rules: []string{"r"}, Cap: 1.5}); len(p) != 0 ||
		ruled.fsmRules == nil || !slices.Equal(ruled.Rules, []string{"r"}) || ruled.Cap != 1500 {
		t.Fatalf("rules: got %+v %+v, problems %v", ruled, ruled.fsmRules, p)
	}
	if p := pair.ToFSM(&fsmRuled{}, &wireRuled{Cap: -1}); len(p) != 1 || Field(p[0].Path) != "cap" {
		t.Fatalf("a problem behind the pointer: %v", p)
	}
	out := wireRuled{Name: "stale", Rules: []string{"stale"}, Cap: 9}
	pair.ToAPI(&out, &bare)
	if !reflect.DeepEqual(out, wireRuled{Name: "a"}) {
		t.Fatalf("nil pointer to API: %+v", out)
	}
	pair.ToAPI(&out, &ruled)
	if !reflect.DeepEqual(out, wireRuled{Name: "b", Rules: []string{"r"}, Cap: 1.5}) {
		t.Fatalf("rules to API: %+v", out)
	}
}

// TestViewShares: a view's ToAPI gives what a copying pair gives, sharing
// the lists and maps of common types instead of copying them.
func TestViewShares(t *testing.T) {
	view := MustPair[wireThing, fsmThing](Skip("Computed"), ReadOnly("RO"), View())
	in := fill.New[fsmThing](3)
	var copied, shown wireThing
	thingPair.ToAPI(&copied, in)
	view.ToAPI(&shown, in)
	if !reflect.DeepEqual(copied, shown) {
		t.Fatalf("view %+v, copy %+v", shown, copied)
	}
	if &shown.Shared.Labels[0] != &in.Shared.Labels[0] || reflect.ValueOf(shown.Shared.Env).UnsafePointer() != reflect.ValueOf(in.Shared.Env).UnsafePointer() {
		t.Fatal("the view copied a common list or map")
	}
	if &copied.Shared.Labels[0] == &in.Shared.Labels[0] {
		t.Fatal("the copying pair shares a list")
	}
	var back fsmThing
	if view.ToFSM(&back, &shown); &back.Shared.Labels[0] == &in.Shared.Labels[0] {
		t.Fatal("a view's ToFSM shares a list")
	}
}
