package fsm

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/amserver/amserver/ledger"
)

func names(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return out
}

func strMap(n, keyLen, valueLen int) map[string]string {
	m := map[string]string{}
	for i := range n {
		k := fmt.Sprintf("k%d", i)
		if keyLen > 0 {
			k = strings.Repeat("k", keyLen-len(k)) + k
		}
		m[k] = strings.Repeat("v", valueLen)
	}
	return m
}

func boundSpec() BundleSpec {
	return BundleSpec{ID: "b", Pool: "p", Jobs: []Job{{Name: "a"}, {Name: "b"}}}
}

type boundEdit = struct {
	code string
	edit func(s *BundleSpec)
}

// bundleBounds: each bound on a bundle, just at it and just over.
func bundleBounds() map[string]boundEdit {
	out := tagAndListBounds()
	maps.Copy(out, requestAndLaunchBounds())
	return out
}

func firstJob(s *BundleSpec) *Job { return &s.Jobs[0] }

// tagAndListBounds: tags, jobs and a job's lists.
func tagAndListBounds() map[string]boundEdit {
	a := firstJob
	return map[string]boundEdit{
		"64 tags":                 {"", func(s *BundleSpec) { s.Tags = strMap(64, 0, 1) }},
		"65 tags":                 {CodeLimitExceeded, func(s *BundleSpec) { s.Tags = strMap(65, 0, 1) }},
		"tag key of 128 bytes":    {"", func(s *BundleSpec) { s.Tags = strMap(1, 128, 1) }},
		"tag key of 129 bytes":    {CodeLimitExceeded, func(s *BundleSpec) { s.Tags = strMap(1, 129, 1) }},
		"tag value of 1 KiB":      {"", func(s *BundleSpec) { s.Tags = strMap(1, 0, 1024) }},
		"tag value over 1 KiB":    {CodeLimitExceeded, func(s *BundleSpec) { s.Tags = strMap(1, 0, 1025) }},
		"tag key with bidi":       {CodeInvalidText, func(s *BundleSpec) { s.Tags = map[string]string{"ev\u202Eil": "x"} }},
		"tag value with isolate":  {CodeInvalidText, func(s *BundleSpec) { s.Tags = map[string]string{"k": "a\u2066b"} }},
		"tag value with LRM":      {CodeInvalidText, func(s *BundleSpec) { s.Tags = map[string]string{"k": "a\u200Eb"} }},
		"tag value with newline":  {CodeInvalidText, func(s *BundleSpec) { s.Tags = map[string]string{"k": "a\nb"} }},
		"tag key not UTF-8":       {CodeInvalidText, func(s *BundleSpec) { s.Tags = map[string]string{"k\xff": "x"} }},
		"tag value in Japanese":   {"", func(s *BundleSpec) { s.Tags = map[string]string{"名前": "エンコーダー 1"} }},
		"64 jobs":                 {"", func(s *BundleSpec) { s.Jobs = jobsNamed(64) }},
		"65 jobs":                 {CodeInvalidRequirement, func(s *BundleSpec) { s.Jobs = jobsNamed(65) }},
		"64 coLocateWith":         {"", func(s *BundleSpec) { a(s).CoLocateWith = repeat("b", 64) }},
		"65 coLocateWith":         {CodeLimitExceeded, func(s *BundleSpec) { a(s).CoLocateWith = repeat("b", 65) }},
		"64 separateFrom":         {"", func(s *BundleSpec) { a(s).SeparateFrom = repeat("b", 64) }},
		"65 separateFrom":         {CodeLimitExceeded, func(s *BundleSpec) { a(s).SeparateFrom = repeat("b", 65) }},
		"64 tolerations":          {"", func(s *BundleSpec) { a(s).EditRules().Tolerations = names("t", 64) }},
		"65 tolerations":          {CodeLimitExceeded, func(s *BundleSpec) { a(s).EditRules().Tolerations = names("t", 65) }},
		"toleration of 128 bytes": {"", func(s *BundleSpec) { a(s).EditRules().Tolerations = []string{strings.Repeat("t", 128)} }},
		"toleration of 129 bytes": {CodeLimitExceeded, func(s *BundleSpec) { a(s).EditRules().Tolerations = []string{strings.Repeat("t", 129)} }},
		"toleration with bidi":    {CodeInvalidText, func(s *BundleSpec) { a(s).EditRules().Tolerations = []string{"gpu\u202B"} }},
	}
}

// requestAndLaunchBounds: a job's requirements, expressions and launch.
func requestAndLaunchBounds() map[string]boundEdit {
	a := firstJob
	caps := func(n, nameLen int) []ledger.CapabilityRequest {
		var out []ledger.CapabilityRequest
		for i, name := range names("c", n) {
			if nameLen > 0 && i == 0 {
				name = strings.Repeat("c", nameLen)
			}
			out = append(out, ledger.CapabilityRequest{Name: name, Count: 1})
		}
		return out
	}
	attrs := func(m map[string]string) []ledger.CapabilityRequest {
		return []ledger.CapabilityRequest{{Name: "nic", Count: 1, AttributeMatches: m}}
	}
	return map[string]boundEdit{
		"64 capabilities":         {"", func(s *BundleSpec) { a(s).Requirements.Capabilities = caps(64, 0) }},
		"65 capabilities":         {CodeLimitExceeded, func(s *BundleSpec) { a(s).Requirements.Capabilities = caps(65, 0) }},
		"capability of 128 bytes": {"", func(s *BundleSpec) { a(s).Requirements.Capabilities = caps(1, 128) }},
		"capability of 129 bytes": {CodeLimitExceeded, func(s *BundleSpec) { a(s).Requirements.Capabilities = caps(1, 129) }},
		"64 attributeMatches":     {"", func(s *BundleSpec) { a(s).Requirements.Capabilities = attrs(strMap(64, 0, 1)) }},
		"65 attributeMatches":     {CodeLimitExceeded, func(s *BundleSpec) { a(s).Requirements.Capabilities = attrs(strMap(65, 0, 1)) }},
		"attribute key 129 bytes": {CodeLimitExceeded, func(s *BundleSpec) { a(s).Requirements.Capabilities = attrs(strMap(1, 129, 1)) }},
		"attribute value 1 KiB":   {"", func(s *BundleSpec) { a(s).Requirements.Capabilities = attrs(strMap(1, 128, 1024)) }},
		"attribute value >1 KiB":  {CodeLimitExceeded, func(s *BundleSpec) { a(s).Requirements.Capabilities = attrs(strMap(1, 0, 1025)) }},
		"gpuModel of 128 bytes": {"", func(s *BundleSpec) {
			a(s).Requirements.GPUCapacity, a(s).Requirements.GPUModel = 100, strings.Repeat("m", 128)
		}},
		"gpuModel of 129 bytes": {CodeLimitExceeded, func(s *BundleSpec) {
			a(s).Requirements.GPUCapacity, a(s).Requirements.GPUModel = 100, strings.Repeat("m", 129)
		}},
		"128 command arguments": {"", func(s *BundleSpec) { a(s).Launch = Launch{Driver: DriverExec, Command: repeat("x", 128)} }},
		"129 command arguments": {CodeLimitExceeded, func(s *BundleSpec) { a(s).Launch = Launch{Driver: DriverExec, Command: repeat("x", 129)} }},
		"argument of 4 KiB": {"", func(s *BundleSpec) {
			a(s).Launch = Launch{Driver: DriverExec, Command: []string{strings.Repeat("x", 4096)}}
		}},
		"argument over 4 KiB": {CodeLimitExceeded, func(s *BundleSpec) {
			a(s).Launch = Launch{Driver: DriverExec, Command: []string{strings.Repeat("x", 4097)}}
		}},
		"argument with NUL":      {CodeInvalidText, func(s *BundleSpec) { a(s).Launch = Launch{Driver: DriverExec, Command: []string{"a\x00b"}} }},
		"128 env entries":        {"", func(s *BundleSpec) { a(s).Launch.Env = strMap(128, 0, 1) }},
		"129 env entries":        {CodeLimitExceeded, func(s *BundleSpec) { a(s).Launch.Env = strMap(129, 0, 1) }},
		"env key of 129 bytes":   {CodeLimitExceeded, func(s *BundleSpec) { a(s).Launch.Env = strMap(1, 129, 1) }},
		"env value of 4 KiB":     {"", func(s *BundleSpec) { a(s).Launch.Env = strMap(1, 128, 4096) }},
		"env value over 4 KiB":   {CodeLimitExceeded, func(s *BundleSpec) { a(s).Launch.Env = strMap(1, 0, 4097) }},
		"env value with newline": {"", func(s *BundleSpec) { a(s).Launch.Env = map[string]string{"CERT": "a\nb"} }},
		"32 constraints":         {"", func(s *BundleSpec) { a(s).EditRules().Constraints = repeat("true", 32) }},
		"33 constraints":         {CodeInvalidRequirement, func(s *BundleSpec) { a(s).EditRules().Constraints = repeat("true", 33) }},
		"constraint of 1 KiB":    {"", func(s *BundleSpec) { a(s).EditRules().Constraints = []string{strings.Repeat(" ", 1020) + "true"} }},
		"constraint over 1 KiB":  {CodeInvalidExpression, func(s *BundleSpec) { a(s).EditRules().Constraints = []string{strings.Repeat(" ", 1021) + "true"} }},
	}
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

func jobsNamed(n int) []Job {
	out := make([]Job, n)
	for i, name := range names("j", n) {
		out[i] = Job{Name: name}
	}
	return out
}

// TestBundleBounds: every bound on a bundle, just at it (valid) and just
// over (an error with the bound's code).
func TestBundleBounds(t *testing.T) {
	for name, tc := range bundleBounds() {
		t.Run(name, func(t *testing.T) {
			for _, e := range checkBound(t, tc, "") {
				if len([]rune(e.Message)) > 3*MaxEcho+100 {
					t.Fatalf("a finding repeats too much of the value: %d characters", len(e.Message))
				}
			}
		})
	}
}

// checkBound validates the bound spec with tc's edit: valid when tc names
// no code, else an error with that code (on job, when named).
func checkBound(t *testing.T, tc boundEdit, job string) []Finding {
	t.Helper()
	spec := boundSpec()
	tc.edit(&spec)
	f := Validate(&spec, nil, nil)
	if tc.code == "" {
		if !f.Valid() {
			t.Fatalf("want valid, got %+v", f.Errors)
		}
		return nil
	}
	if !slices.ContainsFunc(f.Errors, func(e Finding) bool { return e.Code == tc.code && (job == "" || e.Job == job) }) {
		t.Fatalf("want %s (job %q), got %+v", tc.code, job, f.Errors)
	}
	return f.Errors
}

// TestLegacyJobBounds: a legacy launch's job, the shape JSON decodes to,
// is bounded like the older fields, and a launch no process could be
// started with is refused under the job's name, whichever driver runs it.
func TestLegacyJobBounds(t *testing.T) {
	job := func(driver string, command []string, image string, env map[string]string) func(s *BundleSpec) {
		return func(s *BundleSpec) {
			s.Jobs[0].Launch = Launch{Kind: LaunchLegacy, Job: &LegacyJob{Driver: driver, Command: command, Image: image, Env: env}}
		}
	}
	exec := func(env map[string]string) func(s *BundleSpec) { return job(DriverExec, []string{"run"}, "", env) }
	docker := func(image string, env map[string]string) func(s *BundleSpec) {
		return job(DriverDocker, nil, image, env)
	}
	for name, tc := range map[string]boundEdit{
		"exec env":                               {"", exec(map[string]string{"PATH": "/bin", "my.var-1": "a=b", "CERT": "a\nb"})},
		"exec env name empty":                    {CodeInvalidRequirement, exec(map[string]string{"": "x"})},
		"exec env name with =":                   {CodeInvalidRequirement, exec(map[string]string{"A=B": "x"})},
		"exec env name with NUL":                 {CodeInvalidText, exec(map[string]string{"A\x00": "x"})},
		"exec env value with NUL":                {CodeInvalidText, exec(map[string]string{"A": "x\x00y"})},
		"exec 129 env entries":                   {CodeLimitExceeded, exec(strMap(129, 0, 1))},
		"exec env value over 4KiB":               {CodeLimitExceeded, exec(strMap(1, 0, 4097))},
		"exec command with NUL":                  {CodeInvalidText, job(DriverExec, []string{"run\x00"}, "", nil)},
		"exec argument with NUL":                 {CodeInvalidText, job(DriverExec, []string{"run", "a\x00b"}, "", nil)},
		"exec 129 arguments":                     {CodeLimitExceeded, job(DriverExec, repeat("x", 129), "", nil)},
		"docker env name with =":                 {CodeInvalidRequirement, docker("nginx", map[string]string{"=x": "y"})},
		"docker env value with NUL":              {CodeInvalidText, docker("nginx", map[string]string{"A": "\x00"})},
		"docker argument with NUL":               {CodeInvalidText, job(DriverDocker, []string{"a\x00"}, "nginx", nil)},
		"docker image with NUL":                  {CodeInvalidText, docker("nginx\x00", nil)},
		"docker image of 4 KiB":                  {"", docker(strings.Repeat("n", 4096), nil)},
		"docker image over 4 KiB":                {CodeLimitExceeded, docker(strings.Repeat("n", 4097), nil)},
		"none env name empty":                    {CodeInvalidRequirement, job(DriverNone, nil, "", map[string]string{"": "x"})},
		"exec env name the worker's":             {CodeInvalidRequirement, exec(map[string]string{"AMSERVER_ROLE": "primary"})},
		"docker env name the worker's, any case": {CodeInvalidRequirement, docker("nginx", map[string]string{"amserver_job": "x"})},
		"exec env name like the worker's":        {"", exec(map[string]string{"AMSERVER": "x", "MY_AMSERVER_X": "y"})},
	} {
		t.Run(name, func(t *testing.T) { checkBound(t, tc, "a") })
	}
}

// errCode is the finding code of a node, pool or service rejection.
func errCode(err error) string {
	var fe *FindingError
	if errors.As(err, &fe) {
		return fe.Finding.Code
	}
	if err != nil {
		return "uncoded: " + err.Error()
	}
	return ""
}

func boundNode() Node {
	return Node{ID: "n", Pool: "p", TotalCapacity: 1000, UtilizationCap: 1000}
}

// TestNodeBounds: every bound on a registration.
func TestNodeBounds(t *testing.T) {
	gpus := func(model string) []ledger.GPU { return []ledger.GPU{{Index: 0, Model: model, Capacity: 1000}} }
	caps := func(n int) []ledger.Capability {
		var out []ledger.Capability
		for _, name := range names("c", n) {
			out = append(out, ledger.Capability{Name: name, Count: 1})
		}
		return out
	}
	attrs := func(m map[string]string) []ledger.Capability {
		return []ledger.Capability{{Name: "nic", Count: 1, Attributes: m}}
	}
	cases := map[string]struct {
		code string
		edit func(n *Node)
	}{
		"64 labels":                 {"", func(n *Node) { n.Labels = strMap(64, 0, 1) }},
		"65 labels":                 {CodeInvalidRequirement, func(n *Node) { n.Labels = strMap(65, 0, 1) }},
		"label key of 63 bytes":     {"", func(n *Node) { n.Labels = strMap(1, 63, 1) }},
		"label key of 64 bytes":     {CodeInvalidRequirement, func(n *Node) { n.Labels = strMap(1, 64, 1) }},
		"label value of 256 bytes":  {"", func(n *Node) { n.Labels = strMap(1, 0, 256) }},
		"label value of 257 bytes":  {CodeInvalidRequirement, func(n *Node) { n.Labels = strMap(1, 0, 257) }},
		"label value with bidi":     {CodeInvalidText, func(n *Node) { n.Labels = map[string]string{"az": "eu\u202Ewest"} }},
		"label key with tab":        {CodeInvalidText, func(n *Node) { n.Labels = map[string]string{"a\tz": "x"} }},
		"64 taints":                 {"", func(n *Node) { n.Taints = names("t", 64) }},
		"65 taints":                 {CodeInvalidRequirement, func(n *Node) { n.Taints = names("t", 65) }},
		"taint with RLM":            {CodeInvalidText, func(n *Node) { n.Taints = []string{"gpu\u200F"} }},
		"gpu model of 128 bytes":    {"", func(n *Node) { n.GPUs = gpus(strings.Repeat("m", 128)) }},
		"gpu model of 129 bytes":    {CodeLimitExceeded, func(n *Node) { n.GPUs = gpus(strings.Repeat("m", 129)) }},
		"64 capabilities":           {"", func(n *Node) { n.Capabilities = caps(64) }},
		"65 capabilities":           {CodeLimitExceeded, func(n *Node) { n.Capabilities = caps(65) }},
		"64 capability attributes":  {"", func(n *Node) { n.Capabilities = attrs(strMap(64, 0, 1)) }},
		"65 capability attributes":  {CodeLimitExceeded, func(n *Node) { n.Capabilities = attrs(strMap(65, 0, 1)) }},
		"attribute value of 1 KiB":  {"", func(n *Node) { n.Capabilities = attrs(strMap(1, 128, 1024)) }},
		"attribute value over 1KiB": {CodeLimitExceeded, func(n *Node) { n.Capabilities = attrs(strMap(1, 0, 1025)) }},
		"64 gpus":                   {"", func(n *Node) { n.GPUs = gpuList(64) }},
		"gpu index 4095":            {"", func(n *Node) { n.GPUs = []ledger.GPU{{Index: 4095, Capacity: 1000}} }},
		"gpu index 4096":            {CodeLimitExceeded, func(n *Node) { n.GPUs = []ledger.GPU{{Index: 4096, Capacity: 1000}} }},
		"65 gpus":                   {CodeInvalidRequirement, func(n *Node) { n.GPUs = gpuList(65) }},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			n := boundNode()
			tc.edit(&n)
			if got := errCode(ValidateNode(&n)); got != tc.code {
				t.Fatalf("got %q, want %q", got, tc.code)
			}
		})
	}
}

func gpuList(n int) []ledger.GPU {
	out := make([]ledger.GPU, n)
	for i := range out {
		out[i] = ledger.GPU{Index: i, Capacity: 1000}
	}
	return out
}

// TestPoolBounds: every bound on a pool; an elastic pool's sizes are what
// kept the leader's planner busy without end.
func TestPoolBounds(t *testing.T) {
	its := func(n int) []InstanceType {
		var out []InstanceType
		for _, name := range names("it", n) {
			out = append(out, InstanceType{Name: name, TotalCapacity: 1000})
		}
		return out
	}
	tiers := func(n int) []Tier {
		var out []Tier
		for _, name := range names("t", n) {
			out = append(out, Tier{Name: name, Cloud: name})
		}
		return out
	}
	cases := map[string]struct {
		code string
		edit func(p *Pool)
	}{
		"warm 10,000":               {"", func(p *Pool) { p.Warm = 10_000 }},
		"warm 10,001":               {CodeLimitExceeded, func(p *Pool) { p.Warm = 10_001 }},
		"warm 1,000,000,000":        {CodeLimitExceeded, func(p *Pool) { p.Warm = 1_000_000_000 }},
		"minNodes 10,000":           {"", func(p *Pool) { p.MinNodes = 10_000 }},
		"minNodes 10,001":           {CodeLimitExceeded, func(p *Pool) { p.MinNodes = 10_001 }},
		"maxNodes 10,000":           {"", func(p *Pool) { p.MaxNodes = 10_000 }},
		"maxNodes 10,001":           {CodeLimitExceeded, func(p *Pool) { p.MaxNodes = 10_001 }},
		"minNodes at maxNodes":      {"", func(p *Pool) { p.MinNodes, p.MaxNodes = 5, 5 }},
		"minNodes over maxNodes":    {CodeInvalidRequirement, func(p *Pool) { p.MinNodes, p.MaxNodes = 6, 5 }},
		"warm at maxNodes":          {"", func(p *Pool) { p.Warm, p.MaxNodes = 5, 5 }},
		"warm over maxNodes":        {CodeInvalidRequirement, func(p *Pool) { p.Warm, p.MaxNodes = 6, 5 }},
		"warm without maxNodes":     {"", func(p *Pool) { p.Warm = 6 }},
		"negative warm":             {CodeInvalidRequirement, func(p *Pool) { p.Warm = -1 }},
		"idleTimeout of 30 days":    {"", func(p *Pool) { p.IdleTimeout = int64(30 * 24 * time.Hour) }},
		"idleTimeout over 30 days":  {CodeLimitExceeded, func(p *Pool) { p.IdleTimeout = int64(30*24*time.Hour) + 1 }},
		"spawnTimeout over 30 days": {CodeLimitExceeded, func(p *Pool) { p.SpawnTimeout = int64(30*24*time.Hour) + 1 }},
		"64 tiers":                  {"", func(p *Pool) { p.Tiers = tiers(64) }},
		"65 tiers":                  {CodeLimitExceeded, func(p *Pool) { p.Tiers = tiers(65) }},
		"tier name of 129 bytes":    {CodeLimitExceeded, func(p *Pool) { p.Tiers = []Tier{{Name: strings.Repeat("t", 129), Cloud: "c"}} }},
		"tier cloud with bidi":      {CodeInvalidText, func(p *Pool) { p.Tiers = []Tier{{Name: "t", Cloud: "c\u2069"}} }},
		"64 instance types":         {"", func(p *Pool) { p.InstanceTypes = its(64) }},
		"65 instance types":         {CodeLimitExceeded, func(p *Pool) { p.InstanceTypes = its(65) }},
		"64 instance type labels": {"", func(p *Pool) {
			p.InstanceTypes = its(1)
			p.InstanceTypes[0].Labels = labelsN(64)
		}},
		"65 instance type labels": {CodeLimitExceeded, func(p *Pool) {
			p.InstanceTypes = its(1)
			p.InstanceTypes[0].Labels = labelsN(65)
		}},
		"65 instance type taints": {CodeLimitExceeded, func(p *Pool) {
			p.InstanceTypes = its(1)
			p.InstanceTypes[0].Taints = repeatN("t", 65)
		}},
		"instance type label with bidi": {CodeInvalidText, func(p *Pool) {
			p.InstanceTypes = its(1)
			p.InstanceTypes[0].Labels = map[string]string{"zone": "a\u202Eb"}
		}},
		"capacity cap at the bound":   {"", func(p *Pool) { p.Caps.MaxCapacity = maxPoolQuantity }},
		"capacity cap over the bound": {CodeLimitExceeded, func(p *Pool) { p.Caps.MaxCapacity = maxPoolQuantity + 1 }},
		"128 provisioner arguments":   {"", func(p *Pool) { p.Provisioner = &Provisioner{Command: repeat("x", 128)} }},
		"129 provisioner arguments":   {CodeLimitExceeded, func(p *Pool) { p.Provisioner = &Provisioner{Command: repeat("x", 129)} }},
		"provisioner url of 2 KiB":    {"", func(p *Pool) { p.Provisioner = &Provisioner{URL: strings.Repeat("u", 2048)} }},
		"provisioner url over 2 KiB":  {CodeLimitExceeded, func(p *Pool) { p.Provisioner = &Provisioner{URL: strings.Repeat("u", 2049)} }},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := Pool{Name: "p", Kind: PoolElastic, Scoring: ScoringBinpack}
			tc.edit(&p)
			if got := errCode(ValidatePool(&p)); got != tc.code {
				t.Fatalf("got %q, want %q", got, tc.code)
			}
		})
	}
}

// TestServiceBounds: a node service's lists.
func TestServiceBounds(t *testing.T) {
	cases := map[string]struct {
		code string
		edit func(s *NodeService)
	}{
		"64 pools":          {"", func(s *NodeService) { s.Pools = names("p", 64) }},
		"65 pools":          {CodeLimitExceeded, func(s *NodeService) { s.Pools = names("p", 65) }},
		"65 consumes":       {CodeLimitExceeded, func(s *NodeService) { s.Consumes = consumes(65) }},
		"64 consumes":       {"", func(s *NodeService) { s.Consumes = consumes(64) }},
		"provides with LRM": {CodeInvalidText, func(s *NodeService) { s.Provides = []ledger.Capability{{Name: "n\u200Eic", Count: 1}} }},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := NodeService{ID: "s", Pools: []string{"p"}, Lifecycle: LifecycleEager, Launch: Launch{Driver: DriverNone}}
			tc.edit(&s)
			if got := errCode(ValidateService(&s)); got != tc.code {
				t.Fatalf("got %q, want %q", got, tc.code)
			}
		})
	}
}

func consumes(n int) []ledger.CapabilityRequest {
	var out []ledger.CapabilityRequest
	for _, name := range names("c", n) {
		out = append(out, ledger.CapabilityRequest{Name: name, Count: 1})
	}
	return out
}

// TestMessagesClipEchoes: a finding repeats at most MaxEcho characters of
// a value, however long it is.
func TestMessagesClipEchoes(t *testing.T) {
	long := strings.Repeat("x", 10_000)
	spec := boundSpec()
	spec.ID = long
	f := Validate(&spec, nil, nil)
	if len(f.Errors) == 0 || strings.Contains(f.Errors[0].Message, strings.Repeat("x", MaxEcho)) {
		t.Fatalf("the id was echoed whole or not at all: %+v", f.Errors)
	}
	n := boundNode()
	n.ID = long
	if err := ValidateNode(&n); err == nil || len(err.Error()) > 2*MaxEcho+100 {
		t.Fatalf("node id echoed: %d bytes", len(err.Error()))
	}
	if got := Clip("héllo"); got != "héllo" {
		t.Fatalf("Clip of a short value: %q", got)
	}
	if got := []rune(Clip(strings.Repeat("é", 200))); len(got) != MaxEcho || got[MaxEcho-1] != '…' {
		t.Fatalf("Clip of a long value: %d runes", len(got))
	}
}

func labelsN(n int) map[string]string {
	out := map[string]string{}
	for i := range n {
		out[fmt.Sprintf("k%d", i)] = "v"
	}
	return out
}

func repeatN(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return out
}
