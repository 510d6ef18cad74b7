package fsm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/amserver/amserver/ledger"
)

// valState builds a read-only State holding the given rows, without an FSM.
func valState(t testing.TB, pools []*Pool, nodes []*Node, rows ...any) *State {
	t.Helper()
	db := newDB()
	txn := db.Txn(true)
	insert := func(table string, obj any) {
		if err := txn.Insert(table, obj); err != nil {
			t.Fatalf("insert %s: %v", table, err)
		}
	}
	for _, p := range pools {
		insert("pools", p)
	}
	for _, n := range nodes {
		insert("nodes", n)
	}
	for _, r := range rows {
		switch r := r.(type) {
		case *NodeService:
			insert("services", r)
		case *Template:
			insert("templates", r)
		case *TemplateBlob:
			insert("blobs", r)
		default:
			t.Fatalf("valState: no table for %T", r)
		}
	}
	txn.Commit()
	return newState(db)
}

func valNode(id, pool, cloud string, capacity int64, cores int) *Node {
	return &Node{ID: id, Pool: pool, Labels: map[string]string{"cloud": cloud, "az": cloud + "-a"},
		TotalCapacity: capacity, UtilizationCap: 1000, TotalCores: cores, Status: NodeReady}
}

// valFixture has one pool per situation the tests need.
func valFixture(t testing.TB) *State {
	gpuNode := valNode("n1", "edge", "aws", 8000, 8)
	gpuNode.GPUs = []ledger.GPU{{Index: 0, Model: "a100", Capacity: 1000}}
	gpuNode.Capabilities = []ledger.Capability{{Name: "st2110", Count: 2, Attributes: map[string]string{"vendor": "mellanox"}}}
	gpuNode.TotalMemoryMiB = 8192
	cappedNode := valNode("c1", "capped", "aws", 8000, 8)
	cappedNode.TotalMemoryMiB = 8192
	memNode := valNode("md1", "memd", "aws", 8000, 8)
	memNode.TotalMemoryMiB = 2048
	pools := []*Pool{
		{Name: "edge", Kind: PoolCluster, Scoring: ScoringBinpack},
		{Name: "multi", Kind: PoolCluster, Tiers: []Tier{{Name: "t0", Cloud: "aws"}, {Name: "t1", Cloud: "gcp"}}},
		{Name: "split", Kind: PoolCluster},
		{Name: "empty", Kind: PoolCluster},
		{Name: "dflt", Kind: PoolCluster, Defaults: PoolDefaults{Capacity: 9000}},
		{Name: "capped", Kind: PoolCluster, Caps: ledger.PoolCaps{MaxCapacity: 1000, MaxMemoryMiB: 1024}},
		{Name: "memd", Kind: PoolCluster, Defaults: PoolDefaults{MemoryMiB: 4096}},
		{Name: "burst", Kind: PoolElastic, InstanceTypes: []InstanceType{
			{Name: "small", TotalCapacity: 4000, TotalCores: 4, TotalMemoryMiB: 4096},
			{Name: "gpu", TotalCapacity: 16000, TotalCores: 16, GPUs: []ledger.GPU{{Index: 0, Model: "a100", Capacity: 1000}, {Index: 1, Model: "a100", Capacity: 1000}}},
			{Name: "fat", TotalCapacity: 32000, TotalCores: 64},
		}},
		{Name: "svc", Kind: PoolElastic, InstanceTypes: []InstanceType{
			{Name: "plain", TotalCapacity: 8000, TotalCores: 8, Capabilities: []ledger.Capability{{Name: "nic", Count: 1}}},
		}},
		{Name: "void", Kind: PoolElastic},
	}
	nodes := []*Node{gpuNode, valNode("n2", "edge", "aws", 4000, 4), valNode("m1", "multi", "aws", 8000, 8),
		valNode("s1", "split", "aws", 8000, 8), valNode("s2", "split", "gcp", 8000, 8), valNode("d1", "dflt", "aws", 8000, 8),
		cappedNode, memNode}
	licence := &NodeService{ID: "lic", Pools: []string{"svc"}, Lifecycle: LifecycleEager,
		Consumes: []ledger.CapabilityRequest{{Name: "nic", Count: 1}}, Provides: []ledger.Capability{{Name: "licence", Count: 4}}}
	pools = append(pools, valRuntimePools()...)
	nodes = append(nodes, valRuntimeNodes()...)
	return valState(t, pools, nodes, append([]any{licence}, valTemplates()...)...)
}

// valExprs rejects expressions containing "((" and panics on "panic".
type valExprs struct{}

func (valExprs) Check(expr string) error {
	if strings.Contains(expr, "panic") {
		panic("boom")
	}
	if strings.Contains(expr, "((") {
		return errors.New("syntax error")
	}
	return nil
}

// valSpec is a bundle that passes every check against valFixture.
func valSpec() *BundleSpec {
	return &BundleSpec{
		ID: "b1", Pool: "edge", Priority: PriorityGold,
		Placement:  Placement{SameAz: SameAzSoft},
		Resilience: &Resilience{SameNode: Forbid},
		Tags:       map[string]string{"team": "media"},
		StartAt:    100, StopAt: 200,
		Jobs: []Job{
			{Name: "enc", Requirements: ledger.Request{Capacity: 2000, Cores: 2, GPUCapacity: 500, GPUModel: "a100",
				Capabilities: []ledger.CapabilityRequest{{Name: "st2110", Count: 1, AttributeMatches: map[string]string{"vendor": "mellanox"}}}},
				NodeRules: &NodeRules{Constraints: []string{`node.labels.az == "aws-a"`}, Affinities: []Affinity{{Expression: `node.id == "n1"`, Weight: -100}},
					Tolerations: []string{"gpu"}}, Launch: Launch{Driver: DriverExec, Command: []string{"/bin/enc"}}},
			{Name: "pkg", Requirements: ledger.Request{Capacity: 500}, CoLocateWith: []string{"enc"}},
			{Name: "mon", Requirements: ledger.Request{Capacity: 100}, SeparateFrom: []string{"enc"}},
			{Name: "side"},
		},
	}
}

func valJobs(names ...string) []Job {
	jobs := make([]Job, len(names))
	for i, n := range names {
		jobs[i].Name = n
	}
	return jobs
}

func valHugeJob() Job {
	return Job{Name: "huge", Requirements: ledger.Request{Capacity: 50000, Cores: 65, ExclusiveGPUs: 3,
		Capabilities: []ledger.CapabilityRequest{{Name: "sdi", Count: 1}}}}
}

var valUnsatAll = []string{CodeUnsatisfiableCapacity, CodeUnsatisfiableCores, CodeUnsatisfiableGpu, CodeUnsatisfiableCapability}

var valIR = []string{CodeInvalidRequirement}

// valCases edit valSpec and list the exact valCodes expected, in order.
var valCases = []struct {
	name             string
	edit             func(s *BundleSpec)
	errors, warnings []string
}{
	{"valid", func(s *BundleSpec) {}, nil, nil},
	{"valid unnormalized", func(s *BundleSpec) { s.Priority, s.Placement.SameAz, s.Resilience.SameAz = "", "", "" }, nil, nil},
	{"duplicateJobName", func(s *BundleSpec) { s.Jobs = append(s.Jobs, Job{Name: "pkg"}) }, []string{CodeDuplicateJobName}, nil},
	{"unknownJobNameInPlacement", func(s *BundleSpec) { s.Jobs[1].CoLocateWith = []string{"ghost"} }, []string{CodeUnknownJobNameInPlacement}, nil},
	{"selfReferenceInPlacement", func(s *BundleSpec) { s.Jobs[2].SeparateFrom = []string{"mon"} }, []string{CodeSelfReferenceInPlacement}, nil},
	{"contradictory direct", func(s *BundleSpec) { s.Jobs[1].SeparateFrom = []string{"enc"} }, []string{CodeContradictoryPlacement}, nil},
	{"contradictory symmetric pair reported once", func(s *BundleSpec) {
		s.Jobs[1].SeparateFrom = []string{"enc"}
		s.Jobs[0].SeparateFrom = []string{"pkg"}
	}, []string{CodeContradictoryPlacement}, nil},
	{"contradictory transitive", func(s *BundleSpec) {
		s.Jobs = valJobs("a", "b", "c")
		s.Jobs[0].CoLocateWith, s.Jobs[1].CoLocateWith, s.Jobs[0].SeparateFrom = []string{"b"}, []string{"c"}, []string{"c"}
	}, []string{CodeContradictoryPlacement}, nil},
	{"contradictory via sameNodeDefault", func(s *BundleSpec) {
		s.Placement.SameNodeDefault = true
		s.Jobs = valJobs("x", "y", "z")
		s.Jobs[2].CoLocateWith, s.Jobs[2].SeparateFrom = []string{"x"}, []string{"y"}
	}, []string{CodeContradictoryPlacement}, nil},
	{"sameNodeDefault without contradiction", func(s *BundleSpec) {
		s.Placement.SameNodeDefault = true
		s.Jobs = valJobs("x", "y", "z")
		s.Jobs[2].SeparateFrom = []string{"x", "y"}
	}, nil, nil},
	{"emptyPoolList", func(s *BundleSpec) { s.Pool = "" }, []string{CodeEmptyPoolList}, nil},
	{"unknownPoolName", func(s *BundleSpec) { s.Pool = "nope" }, []string{CodeUnknownPoolName}, nil},
	{"unknownResiliencePool", func(s *BundleSpec) { s.Resilience.Pool = "nope" }, []string{CodeUnknownResiliencePool}, nil},
	{"resilienceUnsatisfiable", func(s *BundleSpec) { s.Resilience.SameCloud = Forbid }, []string{CodeResilienceUnsatisfiable}, nil},
	{"resilienceUnsatisfiable explicit same pool", func(s *BundleSpec) { s.Resilience.SameCloud, s.Resilience.Pool = Forbid, "edge" }, []string{CodeResilienceUnsatisfiable}, nil},
	{"resilience backup in another pool", func(s *BundleSpec) { s.Resilience.SameCloud, s.Resilience.Pool = Forbid, "split" }, nil, nil},
	{"resilience clouds from tiers", func(s *BundleSpec) { s.Pool, s.Jobs, s.Resilience.SameCloud = "multi", valJobs("a"), Forbid }, nil, nil},
	{"resilience clouds from node labels", func(s *BundleSpec) { s.Pool, s.Jobs, s.Resilience.SameCloud = "split", valJobs("a"), Forbid }, nil, nil},
	{"invalidExpression empty", func(s *BundleSpec) { s.Jobs[0].EditRules().Constraints = []string{" "} }, []string{CodeInvalidExpression}, nil},
	{"invalidExpression compile", func(s *BundleSpec) { s.Jobs[0].Affinities()[0].Expression = "f((" }, []string{CodeInvalidExpression}, nil},
	{"invalidExpression checker panics", func(s *BundleSpec) { s.Jobs[0].EditRules().Constraints = []string{"panic"} }, []string{CodeInvalidExpression}, nil},
	{"invalidExpression too long", func(s *BundleSpec) { s.Jobs[0].EditRules().Constraints = []string{strings.Repeat("x", 1025)} }, []string{CodeInvalidExpression}, nil},
	{"empty id", func(s *BundleSpec) { s.ID = "" }, valIR, nil},
	{"bad id", func(s *BundleSpec) { s.ID = "B1" }, valIR, nil},
	{"long id", func(s *BundleSpec) { s.ID = strings.Repeat("a", 64) }, valIR, nil},
	{"bad job name", func(s *BundleSpec) { s.Jobs[3].Name = "-side" }, valIR, nil},
	{"no jobs", func(s *BundleSpec) { s.Jobs = nil }, valIR, nil},
	{"65 jobs", func(s *BundleSpec) { s.Jobs = make([]Job, 65) }, valIR, nil},
	{"negative capacity", func(s *BundleSpec) { s.Jobs[1].Requirements.Capacity = -1 }, valIR, nil},
	{"absurd capacity", func(s *BundleSpec) { s.Jobs[1].Requirements.Capacity = 1e9 + 1 }, valIR, nil},
	{"negative cores", func(s *BundleSpec) { s.Jobs[1].Requirements.Cores = -1 }, valIR, nil},
	{"absurd cores", func(s *BundleSpec) { s.Jobs[1].Requirements.Cores = 4097 }, valIR, nil},
	{"negative gpuCapacity", func(s *BundleSpec) { s.Jobs[1].Requirements.GPUCapacity = -1 }, valIR, nil},
	{"absurd gpuCapacity", func(s *BundleSpec) { s.Jobs[0].Requirements.GPUCapacity = 1e9 + 1 }, valIR, nil},
	{"negative memoryMiB", func(s *BundleSpec) { s.Jobs[1].Requirements.MemoryMiB = -1 }, valIR, nil},
	{"negative memoryLimitMiB", func(s *BundleSpec) { s.Jobs[1].Requirements.MemoryLimitMiB = -1 }, valIR, nil},
	{"absurd memoryMiB", func(s *BundleSpec) { s.Jobs[1].Requirements.MemoryMiB = 1<<30 + 1 }, valIR, nil},
	{"memory limit below request", func(s *BundleSpec) {
		s.Jobs[0].Requirements.MemoryMiB, s.Jobs[0].Requirements.MemoryLimitMiB = 2048, 1024
	}, valIR, nil},
	{"memory request and limit fit", func(s *BundleSpec) {
		s.Jobs[0].Requirements.MemoryMiB, s.Jobs[0].Requirements.MemoryLimitMiB = 4096, 16384
	}, nil, nil},
	{"memory limit alone reserves nothing", func(s *BundleSpec) { s.Jobs[1].Requirements.MemoryLimitMiB = 1 << 20 }, nil, nil},
	{"memory over every node warns", func(s *BundleSpec) { s.Jobs[0].Requirements.MemoryMiB = 16384 }, nil, []string{CodeUnsatisfiableMemory}},
	{"memory over every instance type errs", func(s *BundleSpec) {
		s.Pool, s.Jobs = "burst", valJobs("a")
		s.Jobs[0].Requirements.MemoryMiB = 8192
	}, []string{CodeUnsatisfiableMemory}, nil},
	{"pool memory cap bounds one job", func(s *BundleSpec) {
		s.Pool, s.Jobs = "capped", valJobs("a")
		s.Jobs[0].Requirements.MemoryMiB = 2048
	}, nil, []string{CodeUnsatisfiableMemory}},
	{"pool default memory applies", func(s *BundleSpec) { s.Pool, s.Jobs = "memd", valJobs("a") }, nil, []string{CodeUnsatisfiableMemory}},
	{"pool default memory stays within the job's limit", func(s *BundleSpec) {
		s.Pool, s.Jobs = "memd", valJobs("a")
		s.Jobs[0].Requirements.MemoryLimitMiB = 1024
	}, nil, nil},
	{"negative exclusiveGpus", func(s *BundleSpec) { s.Jobs[1].Requirements.ExclusiveGPUs = -1 }, valIR, nil},
	{"absurd exclusiveGpus", func(s *BundleSpec) { s.Jobs[1].Requirements.ExclusiveGPUs = 65 }, valIR, nil},
	{"share and exclusive", func(s *BundleSpec) { s.Jobs[0].Requirements.ExclusiveGPUs = 1 }, valIR, nil},
	{"gpuModel without gpu", func(s *BundleSpec) { s.Jobs[1].Requirements.GPUModel = "a100" }, valIR, nil},
	{"capability without name", func(s *BundleSpec) { s.Jobs[0].Requirements.Capabilities[0].Name = "" }, valIR, nil},
	{"capability count 0", func(s *BundleSpec) { s.Jobs[0].Requirements.Capabilities[0].Count = 0 }, valIR, nil},
	{"capability count negative", func(s *BundleSpec) { s.Jobs[0].Requirements.Capabilities[0].Count = -1 }, valIR, nil},
	{"capability count absurd", func(s *BundleSpec) { s.Jobs[0].Requirements.Capabilities[0].Count = 1e6 + 1 }, valIR, nil},
	{"capability twice", func(s *BundleSpec) {
		r := &s.Jobs[0].Requirements
		r.Capabilities = append(r.Capabilities, r.Capabilities[0])
	}, valIR, nil},
	{"unknown priority", func(s *BundleSpec) { s.Priority = "platinum" }, valIR, nil},
	{"unknown job priority", func(s *BundleSpec) { s.Jobs[0].Priority = "platinum" }, valIR, nil},
	{"job priority gold", func(s *BundleSpec) { s.Jobs[0].Priority = PriorityGold }, nil, nil},
	{"unknown sameAz", func(s *BundleSpec) { s.Placement.SameAz = "maybe" }, valIR, nil},
	{"unknown resilience rule", func(s *BundleSpec) { s.Resilience.SameAz = "sometimes" }, valIR, nil},
	{"unknown driver", func(s *BundleSpec) { s.Jobs[0].Launch.Driver = "podman" }, valIR, nil},
	{"exec without command", func(s *BundleSpec) { s.Jobs[0].Launch.Command = nil }, valIR, nil},
	{"reserved tag is stripped, not refused", func(s *BundleSpec) { s.Tags["__owner"] = "x" }, nil, nil},
	{"empty tag key", func(s *BundleSpec) { s.Tags[""] = "x" }, valIR, nil},
	{"affinity weight", func(s *BundleSpec) { s.Jobs[0].Affinities()[0].Weight = 101 }, valIR, nil},
	{"stopAt before startAt", func(s *BundleSpec) { s.StopAt = s.StartAt }, valIR, nil},
	{"33 constraints", func(s *BundleSpec) { s.Jobs[0].EditRules().Constraints = slices.Repeat([]string{"x"}, 33) }, valIR, nil},
	{"33 affinities", func(s *BundleSpec) {
		s.Jobs[0].EditRules().Affinities = slices.Repeat([]Affinity{{Expression: "x"}}, 33)
	}, valIR, nil},
	{"empty toleration", func(s *BundleSpec) { s.Jobs[0].EditRules().Tolerations = []string{""} }, valIR, nil},
	{"unsatisfiable in cluster pool warns", func(s *BundleSpec) { s.Jobs = []Job{valHugeJob()} }, nil, valUnsatAll},
	{"unsatisfiable in elastic pool errs", func(s *BundleSpec) { s.Pool, s.Jobs = "burst", []Job{valHugeJob()} }, valUnsatAll, nil},
	{"gpu model mismatch", func(s *BundleSpec) { s.Jobs[0].Requirements.GPUModel = "h100" }, nil, []string{CodeUnsatisfiableGpu}},
	{"capability attribute mismatch", func(s *BundleSpec) {
		s.Jobs[0].Requirements.Capabilities[0].AttributeMatches["vendor"] = "intel"
	}, nil, []string{CodeUnsatisfiableCapability}},
	{"pool defaults apply", func(s *BundleSpec) { s.Pool, s.Jobs = "dflt", valJobs("a") }, nil, []string{CodeUnsatisfiableCapacity}},
	{"explicit request overrides defaults", func(s *BundleSpec) {
		s.Pool, s.Jobs = "dflt", valJobs("a")
		s.Jobs[0].Requirements.Capacity = 1000
	}, nil, nil},
	{"pool cap bounds one job", func(s *BundleSpec) {
		s.Pool, s.Jobs = "capped", valJobs("a")
		s.Jobs[0].Requirements.Capacity = 2000
	}, nil, []string{CodeUnsatisfiableCapacity}},
	{"cluster pool without nodes warns", func(s *BundleSpec) { s.Pool, s.Jobs = "empty", valJobs("side") }, nil, []string{CodeUnsatisfiableCapacity}},
	{"elastic pool without profiles errs", func(s *BundleSpec) { s.Pool, s.Jobs = "void", valJobs("side") }, []string{CodeUnsatisfiableCapacity}, nil},
	{"no single profile has everything", func(s *BundleSpec) {
		s.Pool, s.Jobs = "burst", valJobs("a")
		s.Jobs[0].Requirements = ledger.Request{Cores: 32, ExclusiveGPUs: 1}
	}, []string{CodeUnsatisfiableCores}, nil},
	{"service-provided capability", func(s *BundleSpec) {
		s.Pool, s.Jobs = "svc", valJobs("a")
		s.Jobs[0].Requirements.Capabilities = []ledger.CapabilityRequest{{Name: "licence", Count: 4}}
	}, nil, nil},
	{"service-provided capability exceeded", func(s *BundleSpec) {
		s.Pool, s.Jobs = "svc", valJobs("a")
		s.Jobs[0].Requirements.Capabilities = []ledger.CapabilityRequest{{Name: "licence", Count: 5}}
	}, []string{CodeUnsatisfiableCapability}, nil},
}

func TestValidate(t *testing.T) {
	st := valFixture(t)
	for _, tc := range valCases {
		t.Run(tc.name, func(t *testing.T) {
			spec := valSpec()
			tc.edit(spec)
			got := Validate(spec, st, valExprs{})
			if gotErr, gotWarn := valCodes(got.Errors), valCodes(got.Warnings); !slices.Equal(gotErr, tc.errors) || !slices.Equal(gotWarn, tc.warnings) {
				t.Fatalf("errors %v warnings %v, want %v %v\n%+v", gotErr, gotWarn, tc.errors, tc.warnings, got)
			}
			if got.Valid() != (len(tc.errors) == 0) {
				t.Fatalf("Valid() = %v with errors %v", got.Valid(), got.Errors)
			}
		})
	}
}

func valCodes(fs []Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Code)
	}
	return out
}

func TestValidateOrderAndJobs(t *testing.T) {
	spec := valSpec()
	spec.ID = "Bad"
	spec.Jobs = valJobs("x", "y", "z")
	spec.Jobs[0].Requirements.Cores = -1
	spec.Jobs[0].CoLocateWith = []string{"ghost"}
	spec.Jobs[1].EditRules().Constraints = []string{""}
	spec.Jobs[2].Requirements.Capacity = 9000
	got := Validate(spec, valFixture(t), nil)
	want := []Finding{
		{Code: CodeInvalidRequirement},
		{Code: CodeInvalidRequirement, Job: "x"},
		{Code: CodeUnknownJobNameInPlacement, Job: "x"},
		{Code: CodeInvalidExpression, Job: "y"},
	}
	if len(got.Errors) != len(want) {
		t.Fatalf("errors %+v", got.Errors)
	}
	for i, f := range got.Errors {
		if f.Code != want[i].Code || f.Job != want[i].Job || f.Message == "" {
			t.Errorf("error %d = %+v, want code %s job %q", i, f, want[i].Code, want[i].Job)
		}
	}
	if len(got.Warnings) != 1 || got.Warnings[0].Job != "z" || got.Warnings[0].Code != CodeUnsatisfiableCapacity {
		t.Fatalf("warnings %+v", got.Warnings)
	}
}

func TestValidateWithoutStateOrChecker(t *testing.T) {
	spec := valSpec()
	spec.Pool = "nowhere" // unknown, but there is no state to know it
	spec.Jobs[0].EditRules().Constraints = []string{"f(("}
	for _, st := range []*State{nil, {}} {
		if got := Validate(spec, st, nil); !got.Valid() || len(got.Warnings) > 0 {
			t.Fatalf("findings without state: %+v", got)
		}
	}
	if got := Validate(nil, nil, nil); valCodes(got.Errors)[0] != CodeInvalidRequirement {
		t.Fatalf("nil spec: %+v", got)
	}
}

func TestNormalize(t *testing.T) {
	spec := &BundleSpec{Jobs: valJobs("a", "b"), Resilience: &Resilience{SameCloud: Forbid}}
	spec.Jobs[1].Launch.Driver = DriverExec
	Normalize(spec)
	want := &BundleSpec{Priority: PrioritySilver, Placement: Placement{SameAz: SameAzOff}, Jobs: valJobs("a", "b"),
		Resilience: &Resilience{SameNode: Allow, SameAz: Allow, SameCloud: Forbid}}
	want.Jobs[0].Launch = Launch{Kind: LaunchLegacy, Job: &LegacyJob{Driver: DriverNone}}
	want.Jobs[1].Launch = Launch{Kind: LaunchLegacy, Job: &LegacyJob{Driver: DriverExec}}
	if !valEqualJSON(t, spec, want) {
		t.Fatalf("normalized %+v, want %+v", spec, want)
	}
	Normalize(nil)
	noRes := &BundleSpec{}
	Normalize(noRes)
	if noRes.Resilience != nil {
		t.Fatal("Normalize must not add resilience")
	}
}

func valEqualJSON(t testing.TB, a, b any) bool {
	t.Helper()
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	if errA != nil || errB != nil {
		t.Fatalf("marshal: %v %v", errA, errB)
	}
	return bytes.Equal(ja, jb)
}

// Small vocabularies make collisions (duplicate names, references that hit,
// pools that exist) common enough to exercise every path.
var (
	valGenName  = rapid.SampledFrom([]string{"", "a", "b", "c", "A", "-x", "x.y", "__", strings.Repeat("z", 64)})
	valGenPool  = rapid.SampledFrom([]string{"", "edge", "multi", "split", "empty", "dflt", "capped", "burst", "svc", "void", "nope"})
	valGenEnum  = rapid.SampledFrom([]string{"", "gold", "silver", "bronze", "hard", "soft", "off", "allow", "forbid", "exec", "none", "?"})
	valGenQty   = rapid.OneOf(rapid.Int64Range(-2, 20000), rapid.SampledFrom([]int64{1e9, 1e9 + 1, -1 << 63, 1<<63 - 1}))
	valGenCount = rapid.OneOf(rapid.IntRange(-2, 70), rapid.SampledFrom([]int{4097, -1 << 31, 1<<31 - 1}))
	valGenExpr  = rapid.SampledFrom([]string{"", " ", "ok", "f((", "panic", strings.Repeat("y", 1025)})
)

func valGenRequest(t *rapid.T) ledger.Request {
	caps := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) ledger.CapabilityRequest {
		return ledger.CapabilityRequest{Name: rapid.SampledFrom([]string{"", "st2110", "licence", "sdi"}).Draw(t, "cap"),
			Count: valGenQty.Draw(t, "count"), AttributeMatches: rapid.MapOfN(valGenName, valGenName, 0, 2).Draw(t, "attrs")}
	}), 0, 3).Draw(t, "caps")
	return ledger.Request{Capacity: valGenQty.Draw(t, "capacity"), Cores: valGenCount.Draw(t, "cores"),
		GPUCapacity: valGenQty.Draw(t, "gpuCapacity"), GPUModel: rapid.SampledFrom([]string{"", "a100", "h100"}).Draw(t, "model"),
		ExclusiveGPUs: valGenCount.Draw(t, "exclusive"), Capabilities: caps}
}

func valGenJob(t *rapid.T) Job {
	return Job{
		Name: valGenName.Draw(t, "name"), Requirements: valGenRequest(t),
		CoLocateWith: rapid.SliceOfN(valGenName, 0, 3).Draw(t, "co"), SeparateFrom: rapid.SliceOfN(valGenName, 0, 3).Draw(t, "sep"),
		NodeRules: &NodeRules{Tolerations: rapid.SliceOfN(valGenName, 0, 2).Draw(t, "tol"), Constraints: rapid.SliceOfN(valGenExpr, 0, 34).Draw(t, "constraints"),
			Affinities: rapid.SliceOfN(rapid.Custom(func(t *rapid.T) Affinity {
				return Affinity{Expression: valGenExpr.Draw(t, "expr"), Weight: valGenCount.Draw(t, "weight") - 50}
			}), 0, 2).Draw(t, "affinities")},
		Launch:  valGenLaunch(t),
		Runtime: rapid.SampledFrom([]*RuntimeRequirement{nil, nil, {}, {OneOf: []string{"wasm", "Docker"}}, {OneOf: []string{"jvm"}}}).Draw(t, "runtime"),
	}
}

// valGenLaunch draws the older shape, the union's two kinds and mixes.
func valGenLaunch(t *rapid.T) Launch {
	str := func(label string, from ...string) string { return rapid.SampledFrom(from).Draw(t, label) }
	strMap := func(label string, keys ...string) map[string]string {
		return rapid.MapOfN(rapid.SampledFrom(keys), rapid.SampledFrom([]string{"", "v", "a\nb"}), 0, 3).Draw(t, label)
	}
	switch rapid.IntRange(0, 3).Draw(t, "shape") {
	case 0:
		return Launch{Driver: valGenEnum.Draw(t, "driver"), Command: rapid.SliceOfN(valGenName, 0, 2).Draw(t, "cmd")}
	case 1:
		return Launch{Kind: str("kind", "", LaunchLegacy), Job: &LegacyJob{Driver: str("jd", "", "exec", "docker", "none", "?"),
			Command: rapid.SliceOfN(valGenName, 0, 2).Draw(t, "jcmd"), Image: str("image", "", "img")}}
	}
	times := []string{"", "2030-01-01T00:00:00Z", "2031-01-01T00:00:00Z", "soon"}
	l := Launch{Kind: str("tkind", LaunchProductTemplate, "", "vm"), Ref: str("ref", "", "web", "mod", "ghost", "web@"+valDigest(1), "web@"+valDigest(3), "Bad"),
		Parameters: strMap("params", "A", "_b1", "1x", "a-b"), Tags: strMap("tags", "t", "__r", ""),
		StartDateTime: str("start", times...), StopDateTime: str("stop", times...)}
	if rapid.IntRange(0, 5).Draw(t, "mixed") == 0 {
		l.Driver = DriverExec
	}
	return l
}

func valGenSpec(t *rapid.T) *BundleSpec {
	spec := &BundleSpec{
		ID: valGenName.Draw(t, "id"), Pool: valGenPool.Draw(t, "pool"), Priority: valGenEnum.Draw(t, "priority"),
		Jobs:      rapid.SliceOfN(rapid.Custom(valGenJob), 0, 66).Draw(t, "jobs"),
		Placement: Placement{SameNodeDefault: rapid.Bool().Draw(t, "snd"), SameAz: valGenEnum.Draw(t, "sameAz")},
		StartAt:   valGenQty.Draw(t, "start"), StopAt: valGenQty.Draw(t, "stop"),
		Tags: rapid.MapOfN(valGenName, valGenName, 0, 3).Draw(t, "tags"),
	}
	if rapid.Bool().Draw(t, "resilient") {
		spec.Resilience = &Resilience{Pool: valGenPool.Draw(t, "rpool"), SameNode: valGenEnum.Draw(t, "rnode"),
			SameAz: valGenEnum.Draw(t, "raz"), SameCloud: valGenEnum.Draw(t, "rcloud")}
	}
	return spec
}

// TestValidateProperties: Validate never panics, is deterministic, does not
// modify its input, and gives the same findings before and after Normalize.
func TestValidateProperties(t *testing.T) {
	st := valFixture(t)
	rapid.Check(t, func(t *rapid.T) {
		spec := valGenSpec(t)
		state := rapid.SampledFrom([]*State{st, st, nil}).Draw(t, "state")
		exprs := rapid.SampledFrom([]ExprChecker{valExprs{}, nil}).Draw(t, "exprs")
		before, _ := json.Marshal(spec)
		first := Validate(spec, state, exprs)
		if after, _ := json.Marshal(spec); !bytes.Equal(before, after) {
			t.Fatalf("Validate modified its input")
		}
		if second := Validate(spec, state, exprs); !reflect.DeepEqual(first, second) {
			t.Fatalf("not deterministic:\n%+v\n%+v", first, second)
		}
		Normalize(spec)
		if normalized := Validate(spec, state, exprs); !reflect.DeepEqual(first, normalized) {
			t.Fatalf("Normalize changed findings:\n%+v\n%+v", first, normalized)
		}
		for _, f := range append(first.Errors, first.Warnings...) {
			if f.Code == "" || f.Message == "" {
				t.Fatalf("incomplete finding %+v", f)
			}
		}
	})
}

// TestEffectivePriority: a bundle runs at the highest of its own band and
// its jobs'; a bundle that names none takes its highest job's at Normalize.
func TestEffectivePriority(t *testing.T) {
	cases := []struct {
		name       string
		bundle     string
		jobs       []string
		want       string
		normalized string
	}{
		{"nothing set", "", []string{"", ""}, PrioritySilver, PrioritySilver},
		{"bundle only", PriorityBronze, []string{"", ""}, PriorityBronze, PriorityBronze},
		{"a job raises the bundle", PriorityBronze, []string{"", PriorityGold}, PriorityGold, PriorityBronze},
		{"a job cannot lower it", PriorityGold, []string{PriorityBronze}, PriorityGold, PriorityGold},
		{"unset bundle takes its highest job", "", []string{PriorityBronze, PrioritySilver}, PrioritySilver, PrioritySilver},
		{"unset bundle with bronze jobs is bronze", "", []string{PriorityBronze}, PriorityBronze, PriorityBronze},
		{"unknown job band never wins", PriorityBronze, []string{"platinum"}, PriorityBronze, PriorityBronze},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := &BundleSpec{Priority: tc.bundle}
			for i, p := range tc.jobs {
				spec.Jobs = append(spec.Jobs, Job{Name: fmt.Sprintf("j%d", i), Priority: p})
			}
			if got := spec.EffectivePriority(); got != tc.want {
				t.Fatalf("EffectivePriority = %q, want %q", got, tc.want)
			}
			Normalize(spec)
			if spec.Priority != tc.normalized || spec.EffectivePriority() != tc.want {
				t.Fatalf("normalized priority %q effective %q, want %q and %q",
					spec.Priority, spec.EffectivePriority(), tc.normalized, tc.want)
			}
			if spec.EffectiveBand() != Band(tc.want) {
				t.Fatalf("EffectiveBand = %d", spec.EffectiveBand())
			}
		})
	}
}

// TestUnsatisfiableNearestMessage: when no node has all a job needs, the
// warning says what the nearest node cannot offer (the job's whole
// request), not that it "lacks" that much, which read as a shortfall.
func TestUnsatisfiableNearestMessage(t *testing.T) {
	h := newHarness(t)
	small := testNode("a-small", "p", "az1", "c1", 8000, 8)
	small.TotalMemoryMiB, small.Runtimes = 2048, []string{"compose"}
	big := testNode("big", "p", "az1", "c1", 8000, 8)
	big.TotalMemoryMiB, big.Runtimes = 4096, []string{"exec"}
	h.readyNode(small)
	h.readyNode(big)
	h.push("web", composeTar(t, 1))
	spec := templateBundle("b", "web")
	spec.Jobs[0].Requirements.MemoryMiB = 3000
	f := Validate(&spec, h.fsm.State(), nil)
	want := `the nearest, node "a-small", cannot offer 3000 MiB of memory`
	if len(f.Warnings) != 1 || !strings.Contains(f.Warnings[0].Message, want) {
		t.Fatalf("warnings %+v, want one saying %q", f.Warnings, want)
	}
}
