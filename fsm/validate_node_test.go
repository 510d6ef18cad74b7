package fsm

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/amserver/amserver/ledger"
)

// valCheck runs a table of edits against a valid value; want is a
// fragment of the error message ("" for valid).
func valCheck[T any](t *testing.T, valid func() *T, validate func(*T) error, cases map[string]struct {
	edit func(*T)
	want string
}) {
	t.Helper()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			v := valid()
			tc.edit(v)
			err := validate(v)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.want != "" && err == nil:
				t.Fatalf("no error, want one naming %q", tc.want)
			case tc.want != "" && (!errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want ErrInvalid naming %q", err, tc.want)
			}
		})
	}
	if err := validate(nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("nil input: %v", err)
	}
}

type valNodeCase = struct {
	edit func(*Node)
	want string
}

func TestValidateNode(t *testing.T) {
	valid := func() *Node {
		n := valNode("n1", "edge", "aws", 8000, 8)
		n.UtilizationCap = 800
		n.Taints = []string{"gpu"}
		n.GPUs = []ledger.GPU{{Index: 0, Model: "a100", Capacity: 1000}, {Index: 1, Model: "a100", Capacity: 1000}}
		n.Capabilities = []ledger.Capability{{Name: "st2110", Count: 2}, {Name: "ptp", Count: 0}}
		return n
	}
	cases := map[string]valNodeCase{
		"valid":                {func(n *Node) {}, ""},
		"no labels or gpus":    {func(n *Node) { n.Labels, n.GPUs, n.Capabilities, n.TotalCores = nil, nil, nil, 0 }, ""},
		"empty id":             {func(n *Node) { n.ID = "" }, "id"},
		"bad id":               {func(n *Node) { n.ID = "N1" }, "id"},
		"empty pool":           {func(n *Node) { n.Pool = "" }, "pool"},
		"bad pool":             {func(n *Node) { n.Pool = "a b" }, "pool"},
		"zero capacity":        {func(n *Node) { n.TotalCapacity = 0 }, "totalCapacity"},
		"runtimes and aliases": {func(n *Node) { n.Runtimes = []string{"EXEC", "wasmtime", "Container", "compose"} }, ""},
		"unknown runtime":      {func(n *Node) { n.Runtimes = []string{"exec", "podman"} }, `runtime "podman"`},
		"pve without proxmox":  {func(n *Node) { n.Runtimes = []string{"pve-vm"} }, "kind proxmox"},
		"pve on proxmox":       {func(n *Node) { n.Runtimes, n.Kind = []string{"pve-vm", "pve-ct", "exec"}, "proxmox" }, ""},
		"unknown kind":         {func(n *Node) { n.Kind = "vmware" }, "kind"},
		"too many runtimes":    {func(n *Node) { n.Runtimes = strings.Split(strings.Repeat("exec,", 17), ",")[:17] }, "runtimes"},
		"absurd capacity":      {func(n *Node) { n.TotalCapacity = 1e9 + 1 }, "totalCapacity"},
		"zero utilizationCap":  {func(n *Node) { n.UtilizationCap = 0 }, "utilizationCap"},
		"utilizationCap > 1":   {func(n *Node) { n.UtilizationCap = 1001 }, "utilizationCap"},
		"negative cores":       {func(n *Node) { n.TotalCores = -1 }, "totalCores"},
		"absurd cores":         {func(n *Node) { n.TotalCores = 4097 }, "totalCores"},
		"memory":               {func(n *Node) { n.TotalMemoryMiB = 65536 }, ""},
		"negative memory":      {func(n *Node) { n.TotalMemoryMiB = -1 }, "totalMemoryMiB"},
		"absurd memory":        {func(n *Node) { n.TotalMemoryMiB = 1<<30 + 1 }, "totalMemoryMiB"},
		"duplicate gpu index":  {func(n *Node) { n.GPUs[1].Index = 0 }, "gpus"},
		"negative gpu index":   {func(n *Node) { n.GPUs[0].Index = -1 }, "gpus"},
		"zero gpu capacity":    {func(n *Node) { n.GPUs[0].Capacity = 0 }, "gpus"},
		"65 gpus": {func(n *Node) {
			n.GPUs = nil
			for i := range 65 {
				n.GPUs = append(n.GPUs, ledger.GPU{Index: i, Capacity: 1000})
			}
		}, "gpus"},
		"duplicate capability": {func(n *Node) { n.Capabilities[1].Name = "st2110" }, "capabilities"},
		"empty capability":     {func(n *Node) { n.Capabilities[0].Name = "" }, "capabilities"},
		"negative capability":  {func(n *Node) { n.Capabilities[0].Count = -1 }, "capabilities"},
		"empty label key":      {func(n *Node) { n.Labels[""] = "x" }, "label"},
		"long label key":       {func(n *Node) { n.Labels[strings.Repeat("k", 64)] = "x" }, "label"},
		"long label value":     {func(n *Node) { n.Labels["k"] = strings.Repeat("v", 257) }, "label"},
		"65 labels": {func(n *Node) {
			for i := range 65 {
				n.Labels[fmt.Sprint("k", i)] = "v"
			}
		}, "labels"},
		"empty taint": {func(n *Node) { n.Taints = []string{""} }, "taint"},
		"long taint":  {func(n *Node) { n.Taints = []string{strings.Repeat("t", 64)} }, "taint"},
	}
	valCheck(t, valid, ValidateNode, cases)
}

type valPoolCase = struct {
	edit func(*Pool)
	want string
}

func TestValidatePool(t *testing.T) {
	valid := func() *Pool {
		return &Pool{Name: "burst", Kind: PoolElastic, Scoring: ScoringSpread,
			Tiers:    []Tier{{Name: "cheap", Cloud: "aws"}, {Name: "dear", Cloud: "gcp"}},
			Caps:     ledger.PoolCaps{MaxCapacity: 100000, MaxCores: 64},
			Defaults: PoolDefaults{Capacity: 1000, Cores: 1},
			InstanceTypes: []InstanceType{{Name: "small", TotalCapacity: 4000, TotalCores: 4},
				{Name: "gpu", TotalCapacity: 16000, GPUs: []ledger.GPU{{Index: 0, Capacity: 1000}}}},
			Provisioner: &Provisioner{Command: []string{"/bin/spawn"}},
			MinNodes:    1, MaxNodes: 10, Warm: 1, IdleTimeout: 60e9, SpawnTimeout: 120e9}
	}
	cluster := func(p *Pool) { p.Kind, p.InstanceTypes, p.Provisioner = PoolCluster, nil, nil }
	cases := map[string]valPoolCase{
		"valid elastic":           {func(p *Pool) {}, ""},
		"valid cluster":           {cluster, ""},
		"unbounded maxNodes":      {func(p *Pool) { p.MaxNodes = 0 }, ""},
		"bad name":                {func(p *Pool) { p.Name = "" }, "name"},
		"empty kind":              {func(p *Pool) { p.Kind = "" }, "kind"},
		"unknown kind":            {func(p *Pool) { p.Kind = "cloud" }, "kind"},
		"unknown scoring":         {func(p *Pool) { p.Scoring = "random" }, "scoring"},
		"negative caps":           {func(p *Pool) { p.Caps.MaxCores = -1 }, "caps"},
		"negative defaults":       {func(p *Pool) { p.Defaults.Capacity = -1 }, "defaults.capacity"},
		"absurd default cores":    {func(p *Pool) { p.Defaults.Cores = 4097 }, "defaults.cores"},
		"memory cap and default":  {func(p *Pool) { p.Caps.MaxMemoryMiB, p.Defaults.MemoryMiB = 1<<20, 512 }, ""},
		"negative memory cap":     {func(p *Pool) { p.Caps.MaxMemoryMiB = -1 }, "caps"},
		"absurd memory cap":       {func(p *Pool) { p.Caps.MaxMemoryMiB = 1<<40 + 1 }, "maxMemoryMiB"},
		"negative memory default": {func(p *Pool) { p.Defaults.MemoryMiB = -1 }, "defaults.memoryMiB"},
		"instance memory":         {func(p *Pool) { p.InstanceTypes[0].TotalMemoryMiB = 4096 }, ""},
		"instance bad memory":     {func(p *Pool) { p.InstanceTypes[0].TotalMemoryMiB = -1 }, "totalMemoryMiB"},
		"duplicate tier":          {func(p *Pool) { p.Tiers[1].Name = "cheap" }, "tiers"},
		"tier without cloud":      {func(p *Pool) { p.Tiers[0].Cloud = "" }, "tiers"},
		"tier without name":       {func(p *Pool) { p.Tiers[0].Name = "" }, "tiers"},
		"instance types cluster":  {func(p *Pool) { cluster(p); p.InstanceTypes = []InstanceType{{Name: "x", TotalCapacity: 1}} }, "instanceTypes"},
		"provisioner cluster":     {func(p *Pool) { cluster(p); p.Provisioner = &Provisioner{URL: "http://x"} }, "provisioner"},
		"provisioner both":        {func(p *Pool) { p.Provisioner.URL = "http://x" }, "provisioner"},
		"provisioner neither":     {func(p *Pool) { p.Provisioner = &Provisioner{} }, "provisioner"},
		"instance without name":   {func(p *Pool) { p.InstanceTypes[0].Name = "" }, "instanceTypes"},
		"duplicate instance":      {func(p *Pool) { p.InstanceTypes[1].Name = "small" }, "instanceTypes"},
		"instance no capacity":    {func(p *Pool) { p.InstanceTypes[0].TotalCapacity = 0 }, "totalCapacity"},
		"instance bad cores":      {func(p *Pool) { p.InstanceTypes[0].TotalCores = -1 }, "totalCores"},
		"instance bad gpu":        {func(p *Pool) { p.InstanceTypes[1].GPUs[0].Capacity = 0 }, "gpus"},
		"instance runtimes":       {func(p *Pool) { p.InstanceTypes[0].Runtimes = []string{"wasm", "docker"} }, ""},
		"instance bad runtime":    {func(p *Pool) { p.InstanceTypes[0].Runtimes = []string{"jvm"} }, `runtime "jvm"`},
		"instance bad kind":       {func(p *Pool) { p.InstanceTypes[0].Kind = "esx" }, "kind"},
		"instance labels, taints": {func(p *Pool) {
			p.InstanceTypes[1].Labels, p.InstanceTypes[1].Taints = map[string]string{"gpu": "t4"}, []string{"gpu"}
		}, ""},
		"instance empty label key": {func(p *Pool) { p.InstanceTypes[0].Labels = map[string]string{"": "x"} }, "label"},
		"instance empty taint":     {func(p *Pool) { p.InstanceTypes[0].Taints = []string{""} }, "taint"},
		"min > max":                {func(p *Pool) { p.MinNodes = 11 }, "minNodes"},
		"negative warm":            {func(p *Pool) { p.Warm = -1 }, "warm"},
		"negative idleTimeout":     {func(p *Pool) { p.IdleTimeout = -1 }, "idleTimeout"},
		"negative spawnTimeout":    {func(p *Pool) { p.SpawnTimeout = -1 }, "spawnTimeout"},
	}
	valCheck(t, valid, ValidatePool, cases)
}

func TestNormalizePool(t *testing.T) {
	p := &Pool{Name: "p"}
	NormalizePool(p)
	if p.Kind != PoolCluster || p.Scoring != ScoringBinpack {
		t.Fatalf("normalized %+v", p)
	}
	p = &Pool{Name: "p", Kind: PoolElastic, Scoring: ScoringSpread}
	NormalizePool(p)
	if p.Kind != PoolElastic || p.Scoring != ScoringSpread {
		t.Fatalf("normalize overwrote %+v", p)
	}
	NormalizePool(nil)
}

type valServiceCase = struct {
	edit func(*NodeService)
	want string
}

func TestValidateService(t *testing.T) {
	valid := func() *NodeService {
		s := &NodeService{ID: "ptp", Pools: []string{"edge", "burst"},
			Consumes: []ledger.CapabilityRequest{{Name: "nic", Count: 1, AttributeMatches: map[string]string{"ptp": "yes"}}},
			Provides: []ledger.Capability{{Name: "ptp-clock", Count: 1}},
			Launch:   Launch{Driver: DriverExec, Command: []string{"/bin/ptpd"}}}
		NormalizeService(s)
		return s
	}
	cases := map[string]valServiceCase{
		"valid":             {func(s *NodeService) {}, ""},
		"nothing consumed":  {func(s *NodeService) { s.Consumes, s.Launch = nil, Launch{Driver: DriverNone} }, ""},
		"bad id":            {func(s *NodeService) { s.ID = "_x" }, "id"},
		"no pools":          {func(s *NodeService) { s.Pools = nil }, "pools"},
		"bad pool":          {func(s *NodeService) { s.Pools[1] = "" }, "pools"},
		"unknown lifecycle": {func(s *NodeService) { s.Lifecycle = "sometimes" }, "lifecycle"},
		"lazy":              {func(s *NodeService) { s.Lifecycle = LifecycleLazy }, ""},
		"constrained, charged": {func(s *NodeService) {
			s.Constraints, s.Requirements = []string{`node.labels["x"] == "y"`}, ServiceRequirements{Capacity: 500, Cores: 2}
		}, ""},
		"lazy, provides nothing": {func(s *NodeService) { s.Lifecycle = LifecycleLazy; s.Provides = nil }, "provides nothing"},
		"negative capacity":      {func(s *NodeService) { s.Requirements.Capacity = -1 }, "capacity"},
		"too many cores":         {func(s *NodeService) { s.Requirements.Cores = maxCores + 1 }, "cores"},
		"negative memory":        {func(s *NodeService) { s.Requirements.MemoryMiB = -1 }, "memoryMiB"},
		"empty constraint":       {func(s *NodeService) { s.Constraints = []string{" "} }, "constraint"},
		"33 constraints":         {func(s *NodeService) { s.Constraints = slices.Repeat([]string{"true"}, 33) }, "constraints"},
		"empty lifecycle":        {func(s *NodeService) { s.Lifecycle = "" }, "lifecycle"},
		"consume without name":   {func(s *NodeService) { s.Consumes[0].Name = "" }, "consumes"},
		"consume zero":           {func(s *NodeService) { s.Consumes[0].Count = 0 }, "consumes"},
		"provide without name":   {func(s *NodeService) { s.Provides[0].Name = "" }, "provides"},
		"provide zero":           {func(s *NodeService) { s.Provides[0].Count = 0 }, "provides"},
		"provide twice":          {func(s *NodeService) { s.Provides = append(s.Provides, s.Provides[0]) }, "provides"},
		"unknown driver":         {func(s *NodeService) { s.Launch.Job.Driver = "podman" }, "launch"},
		"docker without image":   {func(s *NodeService) { s.Launch.Job.Driver = "docker" }, "image"},
		"mixed shapes":           {func(s *NodeService) { s.Launch.Driver = "exec" }, "mixes"},
		"template launch": {func(s *NodeService) {
			s.Launch = Launch{Kind: LaunchProductTemplate, Ref: "web"}
		}, "legacy launches only"},
		"exec without command": {func(s *NodeService) { s.Launch.Job.Command = nil }, "launch"},
	}
	valCheck(t, valid, ValidateService, cases)
}

// TestLazyServiceProvidingNothingHasItsCode: the finding carries its own
// code, which the API answers with.
func TestLazyServiceProvidingNothingHasItsCode(t *testing.T) {
	s := &NodeService{ID: "idle", Pools: []string{"p"}, Lifecycle: LifecycleLazy}
	NormalizeService(s)
	var fe *FindingError
	if err := ValidateService(s); !errors.As(err, &fe) || fe.Finding.Code != CodeLazyProvidesNothing {
		t.Fatalf("%v, want a %s finding", err, CodeLazyProvidesNothing)
	}
}

func TestNormalizeService(t *testing.T) {
	s := &NodeService{ID: "x"}
	NormalizeService(s)
	if s.Lifecycle != LifecycleEager || s.Launch.Kind != LaunchLegacy || s.Launch.Job == nil || s.Launch.Job.Driver != DriverNone {
		t.Fatalf("normalized %+v", s)
	}
	NormalizeService(nil)
}
