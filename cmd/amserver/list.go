package main

import (
	"context"
	"io"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/amserver/amserver/api"
)

// listCmd declares a command that lists things. Every list goes through
// build, so what lists should share (output formats such as -o wide,
// filtering the items, walking pages) is added there once.
type listCmd[T any] struct {
	// Use is "list" (alias "ls") unless set.
	Use   string
	Short string
	// Kind names what is listed, for errors: "nodes".
	Kind  string
	Flags func(*pflag.FlagSet)
	// Fetch reads the items, honouring q (--stale) and any filter flags.
	Fetch func(ctx context.Context, c *api.Client, q *api.QueryOptions) ([]T, error)
	Table func(w io.Writer, items []T) error
}

func (l listCmd[T]) build(a *app) *cobra.Command {
	use, aliases := l.Use, []string(nil)
	if use == "" {
		use, aliases = "list", []string{"ls"}
	}
	return clientCmd[[]T]{
		Use:     use,
		Aliases: aliases,
		Short:   l.Short,
		Args:    cobra.NoArgs,
		Flags:   l.Flags,
		Kind:    l.Kind,
		Call: func(ctx context.Context, c *api.Client, _ []string) ([]T, error) {
			return l.Fetch(ctx, c, a.query())
		},
		Text: l.Table,
		// An empty list prints as [] rather than null.
		JSON: func(_ string, items []T) any { return nonNil(items) },
	}.build(a)
}

// nonNil makes an empty list print as [] rather than null.
func nonNil[T any](v []T) []T {
	if v == nil {
		return []T{}
	}
	return v
}
