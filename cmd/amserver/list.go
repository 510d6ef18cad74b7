package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/amserver/amserver/api"
)

// newListCmd builds a `list` command: fetch the items (reading any filter
// flags the caller adds), then print them as JSON or as a table.
func newListCmd[T any](a *app, short, what string,
	fetch func(ctx context.Context, c *api.Client, q *api.QueryOptions) ([]T, error),
	table func(w io.Writer, items []T) error,
) *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   short,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, ctx, cancel, err := a.connect(cmd)
			if err != nil {
				return err
			}
			defer cancel()
			items, err := fetch(ctx, c, a.query())
			if err != nil {
				return about(err, what, "")
			}
			if a.json {
				return printJSON(cmd.OutOrStdout(), nonNil(items))
			}
			return table(cmd.OutOrStdout(), items)
		},
	}
}

// newRemoveCmd builds a command that removes one thing by id and says so.
// done is a format with one %q for the id.
func newRemoveCmd(a *app, use, short, what, done string,
	remove func(c *api.Client, ctx context.Context, id string) error,
) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ctx, cancel, err := a.connect(cmd)
			if err != nil {
				return err
			}
			defer cancel()
			if err := remove(c, ctx, args[0]); err != nil {
				return about(err, what, args[0])
			}
			if a.json {
				return printJSON(cmd.OutOrStdout(), doneJSON{Kind: what, ID: args[0], Result: "removed"})
			}
			fmt.Fprintf(cmd.OutOrStdout(), done+"\n", args[0])
			return nil
		},
	}
}
