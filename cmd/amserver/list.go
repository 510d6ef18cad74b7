package main

import (
	"context"
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
