package main

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/amserver/amserver/api"
)

func newBundleCmd(a *app) *cobra.Command {
	cmd := makeGroup(&cobra.Command{
		Use:   "bundle",
		Short: "Submit, inspect and delete bundles",
	})
	cmd.AddCommand(newBundleSubmitCmd(a), newBundleValidateCmd(a), newBundlePlanCmd(a),
		newBundleListCmd(a), newBundleStatusCmd(a), newBundleDeleteCmd(a), newBundleReplaceCmd(a))
	return cmd
}

func newBundleValidateCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "validate FILE|-",
		Short: "Check a bundle file statically, without submitting it (exit 5 when invalid)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var spec api.BundleSpec
			if err := a.readInput(args[0], "bundle", &spec); err != nil {
				return err
			}
			c, ctx, cancel, err := a.connect(cmd)
			if err != nil {
				return err
			}
			defer cancel()
			resp, err := c.ValidateBundle(ctx, spec)
			if err != nil {
				return about(err, "bundle", spec.ID)
			}
			return a.printValidation(cmd, spec.ID, resp)
		},
	}
}

// printValidation prints the findings on stdout (they are the answer) and
// fails with exit 5 when there are errors.
func (a *app) printValidation(cmd *cobra.Command, id string, resp *api.ValidateResponse) error {
	w := cmd.OutOrStdout()
	if a.json {
		if err := printJSON(w, resp); err != nil {
			return err
		}
	} else {
		if resp.Valid {
			fmt.Fprintf(w, "bundle %s is valid\n", clean(orDefault(quoted(id), "file")))
		}
		printFindings(w, resp.Errors, resp.Warnings)
	}
	if resp.Valid {
		return nil
	}
	// The findings are printed already; the error carries only the exit code.
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
	return &cobra.Command{
		Use:   "plan FILE|-",
		Short: "Dry-run placement: show where the bundle would go, and why not",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var spec api.BundleSpec
			if err := a.readInput(args[0], "bundle", &spec); err != nil {
				return err
			}
			c, ctx, cancel, err := a.connect(cmd)
			if err != nil {
				return err
			}
			defer cancel()
			plan, err := c.PlanBundle(ctx, spec)
			if err != nil {
				return about(err, "bundle", spec.ID)
			}
			if a.json {
				return printJSON(cmd.OutOrStdout(), plan)
			}
			return printPlan(cmd, plan)
		},
	}
}

func printPlan(cmd *cobra.Command, plan *api.PlanResponse) error {
	w := cmd.OutOrStdout()
	b := &plan.Bundle
	fmt.Fprintf(w, "Plan for bundle %s (dry run, nothing was changed): would be %s\n",
		clean(orDefault(quoted(b.ID), "(no id)")), clean(orDefault(b.State, "unknown")))
	printReplicas(w, b)
	explain := plan.Explain
	if explain == nil {
		explain = b.Explain
	}
	printExplain(w, explain)
	return nil
}

func newBundleListCmd(a *app) *cobra.Command {
	var f api.BundleFilter
	cmd := newListCmd(a, "List bundles", "bundles",
		func(ctx context.Context, c *api.Client, q *api.QueryOptions) ([]api.Bundle, error) {
			bundles, _, err := c.Bundles(ctx, f, q)
			return bundles, err
		}, printBundleList)
	cmd.Flags().StringVar(&f.Pool, "pool", "", "only bundles of this pool")
	cmd.Flags().StringVar(&f.State, "state", "", "only bundles in this state (pending, placed, degraded, ...)")
	return cmd
}

// nonNil makes an empty list print as [] rather than null.
func nonNil[T any](v []T) []T {
	if v == nil {
		return []T{}
	}
	return v
}

func newBundleStatusCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:               "status ID",
		ValidArgsFunction: a.completeBundles(),
		Short:             "Show a bundle: spec summary, state, replicas, degradations, explanation",
		Args:              cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ctx, cancel, err := a.connect(cmd)
			if err != nil {
				return err
			}
			defer cancel()
			b, _, err := c.Bundle(ctx, args[0], a.query())
			if err != nil {
				return about(err, "bundle", args[0])
			}
			if a.json {
				return printJSON(cmd.OutOrStdout(), b)
			}
			return printBundle(cmd.OutOrStdout(), b, time.Now())
		},
	}
}

func newBundleDeleteCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:               "delete ID",
		ValidArgsFunction: a.completeBundles(),
		Short:             "Delete a bundle (its jobs are stopped first)",
		Args:              cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ctx, cancel, err := a.connect(cmd)
			if err != nil {
				return err
			}
			defer cancel()
			b, err := c.DeleteBundle(ctx, args[0])
			if err != nil {
				return about(err, "bundle", args[0])
			}
			if a.json {
				return printJSON(cmd.OutOrStdout(), b)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "bundle %q is being deleted: its jobs stop first, then it is removed\n", args[0])
			return nil
		},
	}
}

func newBundleReplaceCmd(a *app) *cobra.Command {
	var cas uint64
	cmd := &cobra.Command{
		Use:   "replace FILE|-",
		Short: "Replace a bundle's spec (the file must name the bundle's id)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var spec api.BundleSpec
			if err := a.readInput(args[0], "bundle", &spec); err != nil {
				return err
			}
			if spec.ID == "" {
				return usagef("bundle file %s has no id; replace needs the id of the bundle to replace", displayName(args[0]))
			}
			c, ctx, cancel, err := a.connect(cmd)
			if err != nil {
				return err
			}
			defer cancel()
			resp, err := c.ReplaceBundle(ctx, spec, cas)
			if err != nil {
				return about(err, "bundle", spec.ID)
			}
			printWarnings(cmd.ErrOrStderr(), resp.Warnings)
			if a.json {
				return printJSON(cmd.OutOrStdout(), resp)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "bundle %q replaced (state %s, modify index %d)\n",
				spec.ID, clean(resp.Bundle.State), resp.Bundle.ModifyIndex)
			return nil
		},
	}
	cmd.Flags().Uint64Var(&cas, "cas", 0, "replace only if the bundle's modify index is still N (409 otherwise)")
	return cmd
}
