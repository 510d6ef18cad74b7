package main

import (
	"context"
	"fmt"
	"io"
	"iter"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/amserver/amserver/api"
)

func newBundleCmd(a *app) *cobra.Command {
	cmd := makeGroup(&cobra.Command{
		Use:   "bundle",
		Short: "Submit, inspect and delete bundles",
	})
	cmd.AddCommand(newBundleSubmitCmd(a), newBundleValidateCmd(a), newBundlePlanCmd(a),
		newBundleListCmd(a), newBundleStatusCmd(a), newBundleDeleteCmd(a), newBundleReplaceCmd(a), newBundleScaleCmd(a))
	return cmd
}

func newBundleValidateCmd(a *app) *cobra.Command {
	var spec api.BundleSpec
	return clientCmd[*api.ValidateResponse]{
		Use:     "validate FILE|-",
		Short:   "Check a bundle file statically, without submitting it (exit 5 when invalid)",
		Args:    cobra.ExactArgs(1),
		Prepare: a.fileInput("bundle", &spec, func() string { return spec.ID }, ""),
		Kind:    "bundle",
		Call: func(ctx context.Context, c *api.Client, _ []string) (*api.ValidateResponse, error) {
			return c.ValidateBundle(ctx, spec)
		},
		// The findings go to stdout: they are the answer.
		Text: func(w io.Writer, resp *api.ValidateResponse) error {
			if resp.Valid {
				fmt.Fprintf(w, "bundle %s is valid\n", clean(orDefault(quoted(spec.ID), "file")))
			}
			printFindings(w, resp.Errors, resp.Warnings)
			return nil
		},
		Verdict: validationVerdict,
	}.build(a)
}

// validationVerdict fails with exit 5 when there are errors. The findings
// are printed already; the error carries only the exit code.
func validationVerdict(id string, resp *api.ValidateResponse) error {
	if resp.Valid {
		return nil
	}
	invalid := &api.Error{Status: http.StatusUnprocessableEntity, Code: api.CodeValidationFailed}
	n := len(resp.Errors)
	return sentence(invalid, "bundle %s is invalid: %d %s", orDefault(quoted(id), "file"), n, plural(n, "error", "errors"))
}

func quoted(id string) string {
	if id == "" {
		return ""
	}
	return fmt.Sprintf("%q", id)
}

func newBundlePlanCmd(a *app) *cobra.Command {
	var spec api.BundleSpec
	return clientCmd[*api.PlanResponse]{
		Use:     "plan FILE|-",
		Short:   "Dry-run placement: show where the bundle would go, and why not",
		Args:    cobra.ExactArgs(1),
		Prepare: a.fileInput("bundle", &spec, func() string { return spec.ID }, ""),
		Kind:    "bundle",
		Call: func(ctx context.Context, c *api.Client, _ []string) (*api.PlanResponse, error) {
			return c.PlanBundle(ctx, spec)
		},
		Text: printPlan,
	}.build(a)
}

func printPlan(w io.Writer, plan *api.PlanResponse) error {
	b := &plan.Bundle
	how := ""
	if n := len(plan.Evictions); n > 0 {
		how = fmt.Sprintf(" by evicting %d replica(s) of lower-priority bundles", n)
	}
	fmt.Fprintf(w, "Plan for bundle %s (dry run, nothing was changed): would be %s%s\n",
		clean(orDefault(quoted(b.ID), "(no id)")), clean(orDefault(b.State, "unknown")), how)
	printReplicas(w, b)
	if err := printEvictions(w, plan.Evictions); err != nil {
		return err
	}
	explain := plan.Explain
	if explain == nil {
		explain = b.Explain
	}
	printExplain(w, explain)
	return nil
}

// printEvictions lists what a plan's preemption would evict, and what
// becomes of each victim (DESIGN §3.5).
func printEvictions(w io.Writer, evictions []api.PlanEviction) error {
	if len(evictions) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nEvictions")
	t := newTable(w)
	t.row("BUNDLE", "PRIORITY", "REPLICA", "JOBS", "THEN")
	for _, v := range evictions {
		then := "noBackup (its primary keeps running)"
		switch {
		case v.Role == api.RolePrimary && v.Promoted:
			then = "its backup is promoted"
		case v.Role == api.RolePrimary:
			then = "pending: no backup takes over"
		}
		t.row(clean(v.BundleID), clean(v.Priority), clean(v.Role), clean(strings.Join(v.Jobs, ",")), then)
	}
	return t.flush()
}

func newBundleListCmd(a *app) *cobra.Command {
	var f api.BundleFilter
	return listCmd[api.BundleSummary]{
		Short: "List bundles, page by page as the servers answer",
		Kind:  "bundles",
		Flags: func(fl *pflag.FlagSet) {
			fl.StringVar(&f.Pool, "pool", "", "only bundles of this pool")
			fl.StringVar(&f.State, "state", "", "only bundles in this state (pending, placed, degraded, ...)")
		},
		Walk: func(ctx context.Context, c *api.Client, o api.ListOptions, q *api.QueryOptions) iter.Seq2[api.BundleSummary, error] {
			return c.ListBundles(ctx, f, o, q)
		},
		Paged: true, Variable: "bundle",
		Columns:     []string{"ID", "POOL", "PRIORITY", "KIND", "STATE", "JOBS", "REPLICAS", "FAILED", "EPOCH", "DEGRADATIONS"},
		Row:         bundleRow,
		WideColumns: []string{"PRIMARY", "BACKUP", "EXPLAINED", "MODIFIED"},
		WideRow:     bundleWideRow,
	}.build(a)
}

func newBundleStatusCmd(a *app) *cobra.Command {
	return clientCmd[*api.Bundle]{
		Use:      "status ID",
		Complete: a.completeBundles(),
		Short:    "Show a bundle: spec summary, state, replicas, degradations, explanation",
		Args:     cobra.ExactArgs(1),
		Kind:     "bundle",
		Call: func(ctx context.Context, c *api.Client, args []string) (*api.Bundle, error) {
			b, _, err := c.Bundle(ctx, args[0], a.query())
			return b, err
		},
		Text: func(w io.Writer, b *api.Bundle) error { return printBundle(w, b, time.Now()) },
	}.build(a)
}

func newBundleDeleteCmd(a *app) *cobra.Command {
	return clientCmd[*api.Bundle]{
		Use:      "delete ID",
		Complete: a.completeBundles(),
		Short:    "Delete a bundle (its jobs are stopped first)",
		Args:     cobra.ExactArgs(1),
		Kind:     "bundle",
		Call: func(ctx context.Context, c *api.Client, args []string) (*api.Bundle, error) {
			return c.DeleteBundle(ctx, args[0])
		},
		Sentence: func(id string, _ *api.Bundle) string {
			return fmt.Sprintf("bundle %q is being deleted: its jobs stop first, then it is removed", id)
		},
	}.build(a)
}

// newBundleScaleCmd changes a service's count: it reads the bundle and
// replaces it with only the count changed, conditional on the modify index
// it read (so a concurrent change is not overwritten). The replicas that
// stay keep their nodes; new ones are placed, the highest ones removed.
func newBundleScaleCmd(a *app) *cobra.Command {
	var count int
	return clientCmd[*api.CreateResponse]{
		Use:      "scale ID N",
		Complete: a.completeBundles(),
		Short:    "Set a service bundle's replica count (1..10000); the other replicas stay where they are",
		Args:     cobra.ExactArgs(2),
		Prepare: func(args []string) (string, error) {
			n, err := strconv.Atoi(args[1])
			if err != nil || n < 1 || n > maxServiceCount {
				return "", usageError{err: fmt.Errorf("replica count %q must be a number in 1..%d", clean(args[1]), maxServiceCount)}
			}
			count = n
			return args[0], nil
		},
		Kind: "bundle",
		Call: func(ctx context.Context, c *api.Client, args []string) (*api.CreateResponse, error) {
			return scaleBundle(ctx, c, args[0], count)
		},
		Warnings: func(resp *api.CreateResponse) []api.Finding { return resp.Warnings },
		Sentence: func(id string, resp *api.CreateResponse) string {
			return fmt.Sprintf("bundle %q scaled to %d replicas (state %s when written%s)", id, resp.Bundle.Count, clean(resp.Bundle.State), placementFollows(id))
		},
	}.build(a)
}

// scaleBundle reads and replaces; the placer changes a bundle's modify
// index as it places replicas, so a mismatch is read again, a few times.
func scaleBundle(ctx context.Context, c *api.Client, id string, count int) (*api.CreateResponse, error) {
	for attempt := 0; ; attempt++ {
		b, _, err := c.Bundle(ctx, id, nil)
		if err != nil {
			return nil, err
		}
		spec := b.BundleSpec
		spec.Count = count
		resp, err := c.ReplaceBundle(ctx, spec, b.ModifyIndex)
		if err == nil || !api.IsCode(err, api.CodeCASMismatch) || attempt == 4 {
			return resp, err
		}
	}
}

// placementFollows points at the bundle's status: the answer to a write
// is the bundle as written, and the placer moves its replicas after, so a
// scale answered "degraded" while its new replicas were being placed.
func placementFollows(id string) string {
	return "; the placer acts next: amserver bundle status " + clean(id)
}

// maxServiceCount is the API's bound on a service's count.
const maxServiceCount = 10_000

func newBundleReplaceCmd(a *app) *cobra.Command {
	var (
		spec  api.BundleSpec
		cas   uint64
		flags *pflag.FlagSet
	)
	read := a.fileInput("bundle", &spec, func() string { return spec.ID },
		"has no id; replace needs the id of the bundle to replace")
	return clientCmd[*api.CreateResponse]{
		Use:   "replace FILE|-",
		Short: "Replace a bundle's spec (the file must name the bundle's id)",
		Args:  cobra.ExactArgs(1),
		Flags: func(fl *pflag.FlagSet) {
			flags = fl
			fl.Uint64Var(&cas, "cas", 0, "replace only if the bundle's modify index is still N (409 otherwise)")
		},
		Prepare: func(args []string) (string, error) {
			// 0 is also "no --cas": a script whose index came out empty
			// would replace unconditionally (the API refuses ?cas=0).
			if cas == 0 && flags.Changed("cas") {
				return "", usagef("--cas 0: a modify index is at least 1 (leave --cas out to replace whatever the index)")
			}
			return read(args)
		},
		Kind: "bundle",
		Call: func(ctx context.Context, c *api.Client, _ []string) (*api.CreateResponse, error) {
			return c.ReplaceBundle(ctx, spec, cas)
		},
		Warnings: func(resp *api.CreateResponse) []api.Finding { return resp.Warnings },
		Sentence: func(id string, resp *api.CreateResponse) string {
			return fmt.Sprintf("bundle %q replaced (state %s when written, modify index %d%s)", id, clean(resp.Bundle.State), resp.Bundle.ModifyIndex, placementFollows(id))
		},
	}.build(a)
}
