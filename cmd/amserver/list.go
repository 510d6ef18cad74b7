package main

import (
	"context"
	"iter"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/amserver/amserver/api"
)

// listCmd declares a command that lists things. Every list goes through
// build, which owns what lists share: the output format (-o table|wide|json,
// --json being -o json), and for lists the server pages, walking the pages
// and printing each as it arrives, with --filter, --prefix and --per-page.
type listCmd[T any] struct {
	// Use is "list" (alias "ls") unless set.
	Use   string
	Short string
	// Kind names what is listed, for errors: "nodes".
	Kind  string
	Flags func(*pflag.FlagSet)
	// Walk yields the items, page by page. A paged list is given --filter
	// and --prefix in o; q carries --stale.
	Walk func(ctx context.Context, c *api.Client, o api.ListOptions, q *api.QueryOptions) iter.Seq2[T, error]
	// Paged says the server pages the list: it takes --filter (a CEL
	// expression over the item, bound as Variable), --prefix, --per-page.
	Paged    bool
	Variable string
	// Columns and Row are the table; WideColumns and WideRow are the
	// columns -o wide adds after them.
	Columns     []string
	Row         func(item T, now time.Time) []string
	WideColumns []string
	WideRow     func(item T, now time.Time) []string
}

// Output formats of -o.
const (
	outTable = "table"
	outWide  = "wide"
	outJSON  = "json"
)

func (l listCmd[T]) build(a *app) *cobra.Command {
	if l.Walk == nil || l.Row == nil || (l.WideRow == nil) != (len(l.WideColumns) == 0) {
		panic("list " + l.Kind + ": want Walk and Row, and WideRow with WideColumns")
	}
	use, aliases := l.Use, []string(nil)
	if use == "" {
		use, aliases = "list", []string{"ls"}
	}
	var (
		format string
		o      api.ListOptions
	)
	cmd := &cobra.Command{
		Use:     use,
		Aliases: aliases,
		Short:   l.Short,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := a.outputFormat(cmd, format)
			if err != nil {
				return err
			}
			return l.run(a, cmd, f, o)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&format, "output", "o", outTable, "output format: table, wide or json (--json is -o json)")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{outTable, outWide, outJSON}, cobra.ShellCompDirectiveNoFileComp))
	if l.Paged {
		fl.StringVar(&o.Filter, "filter", "", "a CEL expression over each "+l.Variable+
			" as the API shows it, e.g. '"+l.Variable+`.id.startsWith("a")'`)
		fl.StringVar(&o.Prefix, "prefix", "", "only ids starting with this")
		fl.IntVar(&o.PerPage, "per-page", 0, "entries per request (server default 100, at most 1000)")
	}
	if l.Flags != nil {
		l.Flags(fl)
	}
	return cmd
}

// outputFormat is -o, or json with --json.
func (a *app) outputFormat(cmd *cobra.Command, format string) (string, error) {
	if !slices.Contains([]string{outTable, outWide, outJSON}, format) {
		return "", usagef("-o %q: want table, wide or json", format)
	}
	if a.json {
		if cmd.Flags().Changed("output") && format != outJSON {
			return "", usagef("--json and -o %s disagree; --json is -o json", format)
		}
		return outJSON, nil
	}
	return format, nil
}

// run walks the list and prints each page as it arrives.
func (l listCmd[T]) run(a *app, cmd *cobra.Command, format string, o api.ListOptions) error {
	if o.PerPage < 0 || o.PerPage > api.MaxPerPage {
		return usagef("--per-page %d: want 1 to %d", o.PerPage, api.MaxPerPage)
	}
	c, ctx, cancel, err := a.connect(cmd)
	if err != nil {
		return err
	}
	defer cancel()
	out := newListPrinter[T](cmd.OutOrStdout(), format, l, max(o.PerPage, api.DefaultPerPage))
	for item, err := range l.Walk(ctx, c, o, a.query()) {
		if err != nil {
			_ = out.abort()
			return about(err, l.Kind, "")
		}
		if err := out.add(item); err != nil {
			return err
		}
	}
	return out.close()
}

// pages wraps a list the server does not page (members) as a walk.
func pages[T any](fetch func(ctx context.Context, c *api.Client) ([]T, error)) func(context.Context, *api.Client, api.ListOptions, *api.QueryOptions) iter.Seq2[T, error] {
	return func(ctx context.Context, c *api.Client, _ api.ListOptions, _ *api.QueryOptions) iter.Seq2[T, error] {
		return func(yield func(T, error) bool) {
			items, err := fetch(ctx, c)
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, it := range items {
				if !yield(it, nil) {
					return
				}
			}
		}
	}
}

// nonNil makes an empty list print as [] rather than null.
func nonNil[T any](v []T) []T {
	if v == nil {
		return []T{}
	}
	return v
}
