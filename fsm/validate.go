package fsm

import (
	"fmt"
	"slices"
	"strings"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/ledger"
)

// Static validation codes (DESIGN §3.8).
const (
	CodeDuplicateJobName          = "duplicateJobName"
	CodeUnknownJobNameInPlacement = "unknownJobNameInPlacement"
	CodeSelfReferenceInPlacement  = "selfReferenceInPlacement"
	CodeContradictoryPlacement    = "contradictoryPlacement"
	CodeEmptyPoolList             = "emptyPoolList"
	CodeUnknownPoolName           = "unknownPoolName"
	CodeUnknownResiliencePool     = "unknownResiliencePool"
	CodeResilienceUnsatisfiable   = "resilienceUnsatisfiable"
	CodeInvalidExpression         = "invalidExpression"
	CodeInvalidRequirement        = "invalidRequirement"
	CodeUnsatisfiableCapacity     = "unsatisfiableCapacity"
	CodeUnsatisfiableCores        = "unsatisfiableCores"
	CodeUnsatisfiableMemory       = "unsatisfiableMemory"
	CodeUnsatisfiableGpu          = "unsatisfiableGpu"
	CodeUnsatisfiableCapability   = "unsatisfiableCapability"

	// Launch drivers.
	DriverExec = api.DriverExec
	DriverNone = api.DriverNone
)

// ExprChecker compiles a constraint or affinity expression (CEL, provided by
// the scheduler package); a nil error means it compiles.
type ExprChecker interface {
	Check(expr string) error
}

// Normalize fills defaults in place and puts launches in their stored form
// (NormalizeLaunch). It touches nothing else, so a normalized spec compares
// equal to a resubmission of the same spec.
func Normalize(spec *BundleSpec) {
	if spec == nil {
		return
	}
	if spec.Priority == "" {
		// A bundle that names no band takes its highest job's, silver
		// when no job names one either.
		spec.Priority = spec.EffectivePriority()
	}
	if spec.Placement.SameAz == "" {
		spec.Placement.SameAz = SameAzOff
	}
	// Reserved tags are the server's: a user's are dropped (the API warns
	// first, StripReservedTags), then __stopDateTime is set from the launch.
	StripReservedTags(spec)
	normalizeKind(spec)
	for i := range spec.Jobs {
		NormalizeLaunch(&spec.Jobs[i].Launch)
	}
	if r := spec.Resilience; r != nil {
		for _, rule := range []*string{&r.SameNode, &r.SameAz, &r.SameCloud} {
			if *rule == "" {
				*rule = Allow
			}
		}
	}
}

// collector accumulates findings in the order they are found.
type collector struct {
	out Findings
}

// maxFindings caps each list of findings: a spec with thousands of bad
// references gets the first hundred, not an answer the size of the spec.
const maxFindings = 100

func (c *collector) errorf(job, code, format string, args ...any) {
	if len(c.out.Errors) >= maxFindings {
		return
	}
	c.out.Errors = append(c.out.Errors, Finding{Code: code, Job: job, Message: fmt.Sprintf(format, clipArgs(args)...)})
}

func (c *collector) warnf(job, code, format string, args ...any) {
	if len(c.out.Warnings) >= maxFindings {
		return
	}
	c.out.Warnings = append(c.out.Warnings, Finding{Code: code, Job: job, Message: fmt.Sprintf(format, clipArgs(args)...)})
}

// Validate returns every finding for spec against st: bundle-level findings
// first, then each job's in job order. Values Normalize would fill may still
// be empty. With a nil st only the state-independent checks run.
func Validate(spec *BundleSpec, st *State, exprs ExprChecker) Findings {
	f := validate(spec, st, exprs, true)
	if spec != nil && len(spec.Jobs) <= maxJobs {
		admitJobLaunches(&f, spec, st)
	}
	return f
}

// validate is Validate; with clusterProfiles false it skips the scan of a
// cluster pool's nodes, whose findings are only warnings. Apply uses that, so
// a create costs the same on 10 nodes as on 10,000; the API runs the full
// check before submitting and returns its warnings.
func validate(spec *BundleSpec, st *State, exprs ExprChecker, clusterProfiles bool) Findings {
	var c collector
	if spec == nil {
		c.errorf("", CodeInvalidRequirement, "bundle spec is missing")
		return c.out
	}
	if st != nil && st.txn == nil {
		st = nil
	}
	checkBundleFields(&c, spec)
	checkKind(&c, spec)
	pool := checkPool(&c, spec, st)
	checkResilience(&c, spec, st, pool)
	if len(spec.Jobs) > maxJobs {
		// A rejected bundle; skipping per-job work bounds the cost of abuse.
		return c.out
	}
	v := jobValidator{c: &c, spec: spec, st: st, pool: pool, exprs: exprs}
	if pool != nil && pool.Kind != PoolElastic && !clusterProfiles {
		v.pool = nil // no profiles: the satisfiability warnings are skipped
	}
	v.prepare()
	for i := range spec.Jobs {
		v.job(i)
	}
	return c.out
}

func checkBundleFields(c *collector, spec *BundleSpec) {
	if !validName(spec.ID) {
		c.errorf("", CodeInvalidRequirement, "bundle id %q must match %s", spec.ID, namePattern)
	}
	if !oneOf(spec.Priority, "", PriorityGold, PrioritySilver, PriorityBronze) {
		c.errorf("", CodeInvalidRequirement, "priority %q must be gold, silver or bronze", spec.Priority)
	}
	if !oneOf(spec.Placement.SameAz, "", SameAzHard, SameAzSoft, SameAzOff) {
		c.errorf("", CodeInvalidRequirement, "placement.sameAz %q must be hard, soft or off", spec.Placement.SameAz)
	}
	if n := len(spec.Jobs); n == 0 || n > maxJobs {
		c.errorf("", CodeInvalidRequirement, "a bundle needs 1..%d jobs, has %d", maxJobs, n)
	}
	if spec.StartAt != 0 && spec.StopAt != 0 && spec.StopAt <= spec.StartAt {
		c.errorf("", CodeInvalidRequirement, "stopAt must be after startAt")
	} else if start, stop := spec.EffectiveStart(), spec.EffectiveStop(); stop != 0 && stop <= start && !jobStopsBeforeStart(spec) {
		c.errorf("", CodeInvalidRequirement, "the bundle would stop (the earliest of stopAt and its jobs' stopDateTime) before it starts (the latest of startAt and their startDateTime)")
	}
	// Reserved "__" keys are stripped by Normalize, with a warning from the API.
	if _, ok := spec.Tags[""]; ok {
		c.errorf("", CodeInvalidRequirement, "tag keys must not be empty")
	}
	checkTags(c, spec.Tags)
}

func checkPool(c *collector, spec *BundleSpec, st *State) *Pool {
	if spec.Pool == "" {
		c.errorf("", CodeEmptyPoolList, "pool is required")
		return nil
	}
	if st == nil {
		return nil
	}
	p := st.Pool(spec.Pool)
	if p == nil {
		c.errorf("", CodeUnknownPoolName, "pool %q is not configured", spec.Pool)
	}
	return p
}

func checkResilience(c *collector, spec *BundleSpec, st *State, primary *Pool) {
	r := spec.Resilience
	if r == nil {
		return
	}
	rules := []struct{ name, value string }{{"sameNode", r.SameNode}, {"sameAz", r.SameAz}, {"sameCloud", r.SameCloud}}
	for _, rule := range rules {
		if !oneOf(rule.value, "", Allow, Forbid) {
			c.errorf("", CodeInvalidRequirement, "resilience.%s %q must be allow or forbid", rule.name, rule.value)
		}
	}
	if r.Pool != "" && r.Pool != spec.Pool {
		if st != nil && st.Pool(r.Pool) == nil {
			c.errorf("", CodeUnknownResiliencePool, "resilience pool %q is not configured", r.Pool)
		}
		return
	}
	// The backup shares the primary's pool: forbidding its cloud needs a second one.
	if r.SameCloud == Forbid && primary != nil {
		if clouds := poolClouds(st, primary); len(clouds) < 2 {
			c.errorf("", CodeResilienceUnsatisfiable,
				"resilience.sameCloud is forbid but the backup's pool %q spans %d cloud(s) %v", primary.Name, len(clouds), clouds)
		}
	}
}

// jobValidator holds what every job's checks share: the name index, the
// co-location groups, the compiled-expression cache and the pool's profiles.
type jobValidator struct {
	c     *collector
	spec  *BundleSpec
	st    *State
	pool  *Pool
	exprs ExprChecker

	index    map[string]int // job name → first job with it
	groups   []int          // union-find parents over job indexes
	reported map[[2]int]bool
	compiled map[string]error
	profiles *profileSource
}

func (v *jobValidator) prepare() {
	jobs := v.spec.Jobs
	v.index = make(map[string]int, len(jobs))
	for i := len(jobs) - 1; i >= 0; i-- {
		v.index[jobs[i].Name] = i
	}
	v.groups = make([]int, len(jobs))
	for i := range v.groups {
		v.groups[i] = i
	}
	bare := -1
	for i := range jobs {
		j := &jobs[i]
		for _, name := range j.CoLocateWith {
			if k, ok := v.index[name]; ok && name != j.Name {
				v.union(i, k)
			}
		}
		// With sameNodeDefault, jobs naming neither rule form one group (§3.3).
		if v.spec.Placement.SameNodeDefault && len(j.CoLocateWith) == 0 && len(j.SeparateFrom) == 0 {
			if bare >= 0 {
				v.union(bare, i)
			}
			bare = i
		}
	}
	v.reported = map[[2]int]bool{}
	v.compiled = map[string]error{}
	if v.pool != nil {
		v.profiles = poolProfiles(v.st, v.pool)
	}
}

func (v *jobValidator) find(i int) int {
	for v.groups[i] != i {
		v.groups[i] = v.groups[v.groups[i]]
		i = v.groups[i]
	}
	return i
}

func (v *jobValidator) union(a, b int) { v.groups[v.find(a)] = v.find(b) }

// job runs one job's checks in rule order.
func (v *jobValidator) job(i int) {
	j := &v.spec.Jobs[i]
	if !validName(j.Name) {
		v.c.errorf(j.Name, CodeInvalidRequirement, "job name %q must match %s", j.Name, namePattern)
	}
	if v.index[j.Name] != i {
		v.c.errorf(j.Name, CodeDuplicateJobName, "job name %q is used by more than one job", j.Name)
	}
	reqOK := checkRequest(v.c, j.Name, j.Requirements)
	checkJobFields(v.c, j)
	v.checkTemplate(j)
	checkJobBounds(v.c, j)
	v.checkExpressions(j)
	v.checkPlacement(i)
	if reqOK && v.pool != nil {
		v.checkSatisfiable(j)
	}
}

// checkRequest reports malformed quantities and says whether there were none.
func checkRequest(c *collector, job string, r ledger.Request) bool {
	before := len(c.out.Errors)
	bad := func(format string, args ...any) { c.errorf(job, CodeInvalidRequirement, format, args...) }
	if r.Capacity < 0 || r.Capacity > maxQuantity {
		bad("capacity %s must be within 0..%s", units(r.Capacity), units(maxQuantity))
	}
	if r.Cores < 0 || r.Cores > maxCores {
		bad("cores %d must be within 0..%d", r.Cores, maxCores)
	}
	if r.MemoryMiB < 0 || r.MemoryMiB > maxMemoryMiB {
		bad("memoryMiB %d must be within 0..%d", r.MemoryMiB, maxMemoryMiB)
	}
	if r.MemoryLimitMiB < 0 || r.MemoryLimitMiB > maxMemoryMiB {
		bad("memoryLimitMiB %d must be within 0..%d", r.MemoryLimitMiB, maxMemoryMiB)
	}
	if r.MemoryMiB > 0 && r.MemoryLimitMiB > 0 && r.MemoryLimitMiB < r.MemoryMiB {
		bad("memoryLimitMiB %d is below memoryMiB %d: a limit cannot be less than the request", r.MemoryLimitMiB, r.MemoryMiB)
	}
	if r.GPUCapacity < 0 || r.GPUCapacity > maxQuantity {
		bad("gpuCapacity %s must be within 0..%s", units(r.GPUCapacity), units(maxQuantity))
	}
	if r.ExclusiveGPUs < 0 || r.ExclusiveGPUs > maxExclusiveGPUs {
		bad("exclusiveGpus %d must be within 0..%d", r.ExclusiveGPUs, maxExclusiveGPUs)
	}
	if r.GPUCapacity > 0 && r.ExclusiveGPUs > 0 {
		bad("gpuCapacity and exclusiveGpus are mutually exclusive")
	}
	if r.GPUModel != "" && r.GPUCapacity <= 0 && r.ExclusiveGPUs <= 0 {
		bad("gpuModel %q is set but no GPU is requested", r.GPUModel)
	}
	seen := make(map[string]bool, len(r.Capabilities))
	for _, cr := range r.Capabilities {
		switch {
		case cr.Name == "":
			bad("capability requests need a name")
		case seen[cr.Name]:
			bad("capability %q is requested twice", cr.Name)
		case cr.Count <= 0 || cr.Count > maxCapabilityCount:
			bad("capability %q count %d must be within 1..%d", cr.Name, cr.Count, maxCapabilityCount)
		}
		seen[cr.Name] = true
	}
	return len(c.out.Errors) == before
}

func checkJobFields(c *collector, j *Job) {
	bad := func(format string, args ...any) { c.errorf(j.Name, CodeInvalidRequirement, format, args...) }
	if !oneOf(j.Priority, "", PriorityGold, PrioritySilver, PriorityBronze) {
		bad("priority %q must be gold, silver or bronze", j.Priority)
	}
	if slices.Contains(j.Tolerations(), "") {
		bad("tolerations must not be empty strings")
	}
	if len(j.Constraints()) > maxExprs {
		bad("%d constraints, at most %d allowed", len(j.Constraints()), maxExprs)
	}
	if len(j.Affinities()) > maxExprs {
		bad("%d affinities, at most %d allowed", len(j.Affinities()), maxExprs)
	}
	for _, a := range j.Affinities() {
		if a.Weight < -maxAffinityWeight || a.Weight > maxAffinityWeight {
			bad("affinity weight %d must be within -%d..%d", a.Weight, maxAffinityWeight, maxAffinityWeight)
		}
	}
	checkLaunch(c, j.Name, &j.Launch)
	checkRuntime(c, j)
}

func (v *jobValidator) checkExpressions(j *Job) {
	// Over-long lists are already an error; compiling them would only cost time.
	if len(j.Constraints()) <= maxExprs {
		for i, e := range j.Constraints() {
			v.checkExpression(j.Name, fmt.Sprintf("constraint %d", i), e)
		}
	}
	if len(j.Affinities()) <= maxExprs {
		for i, a := range j.Affinities() {
			v.checkExpression(j.Name, fmt.Sprintf("affinity %d", i), a.Expression)
		}
	}
}

func (v *jobValidator) checkExpression(job, what, expr string) {
	switch {
	case strings.TrimSpace(expr) == "":
		v.c.errorf(job, CodeInvalidExpression, "%s is empty", what)
	case len(expr) > maxExprLen:
		v.c.errorf(job, CodeInvalidExpression, "%s is %d bytes, at most %d allowed", what, len(expr), maxExprLen)
	case v.exprs != nil:
		err, ok := v.compiled[expr]
		if !ok {
			err = safeCheck(v.exprs, expr)
			v.compiled[expr] = err
		}
		if err != nil {
			v.c.errorf(job, CodeInvalidExpression, "%s %q: %v", what, expr, err)
		}
	}
}

// safeCheck turns a checker panic into a finding: validation runs on the
// leader and must not take it down over one bad expression.
func safeCheck(exprs ExprChecker, expr string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("expression checker failed: %v", r)
		}
	}()
	return exprs.Check(expr)
}

// checkPlacement reports bad references and separateFrom pairs that their
// co-location groups force onto one node; each pair is reported once.
func (v *jobValidator) checkPlacement(i int) {
	j := &v.spec.Jobs[i]
	refs := func(rule string, names []string) {
		for _, name := range names {
			if name == j.Name {
				v.c.errorf(j.Name, CodeSelfReferenceInPlacement, "job %q names itself in %s", j.Name, rule)
			} else if _, ok := v.index[name]; !ok {
				v.c.errorf(j.Name, CodeUnknownJobNameInPlacement, "%s names %q, which is not a job of this bundle", rule, name)
			}
		}
	}
	refs("coLocateWith", j.CoLocateWith)
	refs("separateFrom", j.SeparateFrom)
	for _, name := range j.SeparateFrom {
		k, ok := v.index[name]
		if !ok || name == j.Name || v.find(i) != v.find(k) {
			continue
		}
		pair := [2]int{min(i, k), max(i, k)}
		if v.reported[pair] {
			continue
		}
		v.reported[pair] = true
		v.c.errorf(j.Name, CodeContradictoryPlacement,
			"jobs %q and %q must share a node (coLocateWith or sameNodeDefault) and must not (separateFrom)", j.Name, name)
	}
}

// checkSatisfiable reports a job that no profile of its pool could hold even
// when empty: an error in an elastic pool, whose profiles are fixed, and a
// warning in a cluster pool, which may gain nodes later.
func (v *jobValidator) checkSatisfiable(j *Job) {
	report := v.c.warnf
	if v.pool.Kind == PoolElastic {
		report = v.c.errorf
	}
	req := v.pool.Effective(j.Requirements)
	need := JobRuntimeNeed(j, v.st.TemplateRuntime)
	caps := v.st.TightestCaps(v.pool)
	if _, found := v.profiles.at(0); !found {
		code := CodeUnsatisfiableCapacity
		if s := shortfalls(req, need, profile{}, caps); len(s) > 0 {
			code = s[0].code
		}
		report(j.Name, code, "pool %q has no nodes or instance types yet", v.pool.Name)
		return
	}
	var nearest []shortfall
	nearestName := ""
	missing := map[shortfall]int{} // how many profiles lack each dimension
	n := 0
	for p, ok := v.profiles.at(0); ok; p, ok = v.profiles.at(n) {
		n++
		s := shortfalls(req, need, p, caps)
		if len(s) == 0 {
			return
		}
		if nearest == nil || len(s) < len(nearest) {
			nearest, nearestName = s, p.name
		}
		for _, d := range s {
			missing[d]++
		}
	}
	reported := false
	for _, d := range shortfalls(req, need, profile{}, ledger.PoolCaps{}) {
		if missing[d] == n {
			report(j.Name, d.code, "no node profile in pool %q offers %s", v.pool.Name, d.what)
			reported = true
		}
	}
	if reported {
		return
	}
	// Every dimension fits somewhere, but never all on one profile.
	for _, d := range nearest {
		report(j.Name, d.code, "no single node profile in pool %q offers all the job needs; the nearest, %s, cannot offer %s",
			v.pool.Name, nearestName, d.what)
	}
}
