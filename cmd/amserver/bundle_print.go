package main

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/amserver/amserver/api"
)

// bundleRow is a bundle's line in `bundle list`. FAILED counts the placed
// jobs whose worker reports them failed (a stack that would not deploy or
// crashed): a bundle's state goes by placement alone and stays placed.
func bundleRow(b api.BundleSummary, _ time.Time) []string {
	placed, failed := 0, 0
	for _, r := range b.Replicas {
		if r.Statuses[api.JobUnplaced] == 0 && len(r.Statuses) > 0 {
			placed++
		}
		failed += r.Statuses[api.JobFailed]
	}
	return []string{b.ID, b.Pool, effectivePriority(b.Priority, b.EffectivePriority), orDefault(b.Kind, api.KindResilient), b.State, strconv.Itoa(b.Jobs),
		fmt.Sprintf("%d/%d", placed, b.WantReplicas), strconv.Itoa(failed), strconv.FormatUint(b.Epoch, 10), list(b.Degradations)}
}

// bundleWideRow adds where the replicas run, whether an explanation waits
// in `bundle status`, and the last change's index.
func bundleWideRow(b api.BundleSummary, _ time.Time) []string {
	nodes := map[string]string{}
	for _, r := range b.Replicas {
		nodes[r.Role] = list(r.Nodes)
	}
	return []string{orDash(nodes[api.RolePrimary]), orDash(nodes[api.RoleBackup]), yesNo(b.Explained),
		strconv.FormatUint(b.ModifyIndex, 10)}
}

// printBundle is `bundle status`: the spec in brief, then where every job
// of every replica runs, then what is wrong and why.
func printBundle(w io.Writer, b *api.Bundle, now time.Time) error {
	t := newTable(w)
	t.row("ID", b.ID)
	t.row("Pool", b.Pool)
	t.row("Priority", effectivePriority(b.Priority, b.EffectivePriority))
	t.row("Kind", kindSummary(&b.BundleSpec))
	t.row("State", b.State)
	if !b.FinishTime.IsZero() {
		t.row("Finished", fmt.Sprintf("%s (%s)", b.FinishTime.UTC().Format(time.RFC3339), ago(b.FinishTime, now)))
	}
	t.row("Epoch", strconv.FormatUint(b.Epoch, 10))
	if b.Generation > 0 {
		t.row("Generation", strconv.FormatUint(b.Generation, 10)+" (in-place launch changes)")
	}
	if b.Rolling {
		t.row("Rollout", "in progress: some replicas still run an older generation or have not yet run the settle window (it waits while maxUnavailable replicas are not running or settling)")
	}
	t.row("Placement", placementSummary(b.Placement))
	if b.Kind == "" || b.Kind == api.KindResilient {
		t.row("Resilience", resilienceSummary(b.Resilience))
	}
	if b.StartAt != "" || b.StopAt != "" {
		t.row("Start at", timeField(b.StartAt, now))
		t.row("Stop at", timeField(b.StopAt, now))
	}
	t.row("Tags", kv(b.Tags))
	t.row("Index", fmt.Sprintf("created %d, modified %d", b.CreateIndex, b.ModifyIndex))
	if err := t.flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nJobs")
	printJobSpecs(w, b.Jobs)
	printReplicas(w, b)
	printJobMessages(w, b.Replicas)
	printDegradations(w, b.Degradations, now)
	printExplain(w, b.Explain)
	return nil
}

func printJobSpecs(w io.Writer, jobs []api.Job) {
	t := newTable(w)
	t.row("JOB", "CAPACITY", "CORES", "MEMORY", "GPU", "CAPABILITIES", "RUNTIME", "LAUNCH")
	for _, j := range jobs {
		r := j.Requirements
		t.row(j.Name, qty(r.Capacity), strconv.Itoa(r.Cores), memoryRequest(r.MemoryMiB, r.MemoryLimitMiB), gpuRequirement(r),
			capabilityRequests(r.Capabilities), runtimeText(j.Runtime), launchText(j.Launch))
	}
	_ = t.flush() // a failed terminal write has no one to report to
}

// printReplicas lists one row per job of every replica.
func printReplicas(w io.Writer, b *api.Bundle) {
	if len(b.Replicas) == 0 {
		fmt.Fprintln(w, "\nReplicas: none placed")
		return
	}
	fmt.Fprintln(w, "\nReplicas")
	t := newTable(w)
	batch := b.Kind == api.KindBatch
	head := []string{"REPLICA", "ROLE", "STATE", "JOB", "NODE", "CORES", "GPU", "STATUS"}
	if batch {
		head = append(head, "EXIT", "RESTARTS")
	}
	t.row(head...)
	for _, r := range b.Replicas {
		idx := strconv.Itoa(r.Index)
		if len(r.Jobs) == 0 {
			t.row(idx, r.Role, orDash(r.State), "-", "-", "-", "-", "-")
		}
		for _, j := range r.Jobs {
			row := []string{idx, r.Role, orDash(r.State), j.Name, orDash(j.NodeID), coreSet(j.Cores), gpuPlacement(j), orDash(j.Status)}
			if batch {
				row = append(row, exitText(j.ExitCode), strconv.Itoa(j.Attempts))
			}
			t.row(row...)
		}
	}
	_ = t.flush() // a failed terminal write has no one to report to
}

// printJobMessages gives each job's message from its worker (why it
// failed) under the replicas, not as a column: one can run to 2 KiB, a
// failure's last output lines included, each printed on its own line.
func printJobMessages(w io.Writer, replicas []api.Replica) {
	heading := "\nMessages"
	for _, r := range replicas {
		for _, j := range r.Jobs {
			if j.Message == "" {
				continue
			}
			if heading != "" {
				fmt.Fprintln(w, heading)
				heading = ""
			}
			printMessage(w, fmt.Sprintf("replica %d job %s (%s)", r.Index, clean(j.Name), clean(orDash(j.Status))), j.Message)
		}
	}
}

// printMessage prints a worker's message after its label, its first line
// there and each further line indented.
func printMessage(w io.Writer, label, msg string) {
	lines := strings.Split(strings.TrimRight(msg, "\n"), "\n")
	fmt.Fprintf(w, "%s: %s\n", label, clean(lines[0]))
	for _, l := range lines[1:] {
		fmt.Fprintf(w, "  %s\n", clean(l))
	}
}

func printDegradations(w io.Writer, ds []api.Degradation, now time.Time) {
	if len(ds) == 0 {
		return
	}
	fmt.Fprintln(w, "\nDegradations")
	t := newTable(w)
	t.row("CODE", "SINCE", "MESSAGE")
	for _, d := range ds {
		t.row(d.Code, ago(d.Since, now), d.Message)
	}
	_ = t.flush() // a failed terminal write has no one to report to
}

// printExplain says how many nodes each placement stage removed, largest
// first, because the biggest filter is usually the one to relax.
func printExplain(w io.Writer, e *api.Explain) {
	if e == nil {
		return
	}
	fmt.Fprintf(w, "\nExplain: %d %s evaluated\n", e.NodesEvaluated, plural(e.NodesEvaluated, "node", "nodes"))
	if len(e.Filtered) > 0 {
		stages := slices.SortedFunc(maps.Keys(e.Filtered), func(x, y string) int {
			return cmp.Or(cmp.Compare(e.Filtered[y], e.Filtered[x]), cmp.Compare(x, y))
		})
		t := newTable(w)
		t.row("STAGE", "NODES REMOVED")
		for _, s := range stages {
			t.row(s, strconv.Itoa(e.Filtered[s]))
		}
		_ = t.flush() // a failed terminal write has no one to report to
	}
	if m := e.NearestMiss; m != nil {
		fmt.Fprintf(w, "Nearest miss: node %s, stopped at %s", clean(orDash(m.NodeID)), clean(orDash(m.Stage)))
		if m.Detail != "" {
			fmt.Fprintf(w, ": %s", clean(m.Detail))
		}
		fmt.Fprintln(w)
	}
}

func priority(p string) string { return orDefault(p, api.PrioritySilver) }

// effectivePriority shows the band the queue uses, and the bundle's own
// when a job's band lifted it ("gold (own bronze)").
func effectivePriority(own, effective string) string {
	if effective == "" || effective == priority(own) {
		return priority(own)
	}
	return effective + " (own " + priority(own) + ")"
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func degradationCodes(ds []api.Degradation) string {
	codes := make([]string, len(ds))
	for i, d := range ds {
		codes[i] = d.Code
	}
	return list(codes)
}

func placementSummary(p api.Placement) string {
	return fmt.Sprintf("sameNodeDefault=%t sameAz=%s", p.SameNodeDefault, orDefault(p.SameAz, api.SameAzOff))
}

// kindSummary is the kind with the fields that belong to it.
func kindSummary(s *api.BundleSpec) string {
	switch s.Kind {
	case api.KindService:
		out := fmt.Sprintf("service: %d replicas", s.Count)
		if s.MaxPerNode > 0 {
			out += fmt.Sprintf(", at most %d per node", s.MaxPerNode)
		}
		if s.MaxPerAz > 0 {
			out += fmt.Sprintf(", at most %d per az", s.MaxPerAz)
		}
		return out + fmt.Sprintf(", maxUnavailable %d", max(s.MaxUnavailable, 1))
	case api.KindBatch:
		out := "batch: no restart"
		if r := s.Restart; r != nil {
			out = fmt.Sprintf("batch: restart %d time(s) after %s, then %s", r.Attempts, orDefault(r.Delay, "0s"), orDefault(r.Mode, api.RestartFail))
		}
		if s.TTLAfterFinished != "" {
			out += ", deleted " + s.TTLAfterFinished + " after it ends"
		}
		return out
	}
	return api.KindResilient
}

func exitText(code *int) string {
	if code == nil {
		return "-"
	}
	return strconv.Itoa(*code)
}

func resilienceSummary(r *api.Resilience) string {
	if r == nil {
		return "none (primary only)"
	}
	s := fmt.Sprintf("sameNode=%s sameAz=%s sameCloud=%s",
		orDefault(r.SameNode, api.Allow), orDefault(r.SameAz, api.Allow), orDefault(r.SameCloud, api.Allow))
	if r.Pool != "" {
		s = "pool=" + r.Pool + " " + s
	}
	return s
}

// timeField prints an RFC 3339 instant with a relative hint.
func timeField(s string, now time.Time) string {
	if s == "" {
		return "-"
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return s
	}
	return fmt.Sprintf("%s (%s)", s, ago(t, now))
}

func gpuRequirement(r api.Requirements) string {
	switch {
	case r.ExclusiveGPUs > 0:
		return fmt.Sprintf("%d exclusive%s", r.ExclusiveGPUs, modelSuffix(r.GPUModel))
	case r.GPUCapacity > 0:
		return qty(r.GPUCapacity) + modelSuffix(r.GPUModel)
	}
	return "-"
}

func modelSuffix(model string) string {
	if model == "" {
		return ""
	}
	return " " + model
}

func gpuPlacement(j api.JobPlacement) string {
	switch {
	case j.GPU != nil:
		return fmt.Sprintf("%d (%s)", j.GPU.Index, qty(j.GPU.Capacity))
	case len(j.GPUs) > 0:
		return intList(j.GPUs) + " (exclusive)"
	}
	return "-"
}

func capabilityRequests(cs []api.CapabilityRequest) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = fmt.Sprintf("%s:%d", c.Name, c.Count)
		if len(c.AttributeMatches) > 0 {
			parts[i] += "{" + kv(c.AttributeMatches) + "}"
		}
	}
	return list(parts)
}

// printWarnings lists warnings on stderr, where they do not disturb --json.
func printWarnings(w io.Writer, warns []api.Finding) {
	if len(warns) == 0 {
		return
	}
	fmt.Fprintf(w, "%d %s:\n", len(warns), plural(len(warns), "warning", "warnings"))
	printFindings(w, nil, warns)
}

// stateLine is one line of `bundle submit --wait` progress.
func stateLine(b *api.Bundle) string {
	s := fmt.Sprintf("bundle %q is %s", b.ID, b.State)
	var extra []string
	if b.State == api.StatePlaced || b.State == api.StateDegraded {
		extra = append(extra, fmt.Sprintf("epoch %d", b.Epoch))
	}
	if len(b.Degradations) > 0 {
		extra = append(extra, degradationCodes(b.Degradations))
	}
	if len(extra) > 0 {
		s += " (" + strings.Join(extra, ", ") + ")"
	}
	return clean(s)
}
