package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/amserver/amserver/api"
)

func newACLCmd(a *app) *cobra.Command {
	cmd := makeGroup(&cobra.Command{Use: "acl", Short: "Manage ACL tokens (needs a management token)"})
	tok := makeGroup(&cobra.Command{Use: "token", Short: "Create, list, read and delete ACL tokens"})
	tok.AddCommand(newACLTokenCreateCmd(a), newACLTokenListCmd(a), newACLTokenReadCmd(a), newACLTokenSelfCmd(a),
		removeCmd(a, "delete ACCESSOR-ID", "Delete a token; it stops working at once", "acl token",
			"acl token %q deleted", (*api.Client).DeleteACLToken))
	cmd.AddCommand(tok)
	return cmd
}

func newACLTokenCreateCmd(a *app) *cobra.Command {
	var in api.ACLTokenRequest
	return clientCmd[*api.ACLTokenCreated]{
		Use:   "create",
		Short: "Create a token and print its secret (shown this once)",
		Long: `Create a token of kind management, write, read or worker. A worker token
is bound to one node (--node-id) and reaches only that node's registration,
assignments and status reports. The secret is printed once: the servers keep
only its hash.`,
		Args: cobra.NoArgs,
		Flags: func(fl *pflag.FlagSet) {
			fl.StringVar(&in.Kind, "kind", "", "management, write, read or worker (required)")
			fl.StringVar(&in.NodeID, "node-id", "", "worker tokens: the node the token is bound to")
			fl.StringVar(&in.Description, "description", "", "what the token is for")
			fl.StringVar(&in.SecretID, "secret", "", "use this secret (at least 16 bytes) instead of a generated one")
		},
		Prepare: func([]string) (string, error) {
			if in.Kind == "" {
				return "", asUsage(errors.New("--kind is required: management, write, read or worker"))
			}
			return "", nil
		},
		Kind: "acl token",
		Call: func(ctx context.Context, c *api.Client, _ []string) (*api.ACLTokenCreated, error) {
			return c.CreateACLToken(ctx, in)
		},
		Text: func(w io.Writer, out *api.ACLTokenCreated) error {
			if err := printACLToken(w, &out.Token); err != nil {
				return err
			}
			_, err := fmt.Fprintf(w, "SecretID     %s\n", out.SecretID)
			return err
		},
	}.build(a)
}

func newACLTokenListCmd(a *app) *cobra.Command {
	return listCmd[api.ACLToken]{
		Short: "List tokens (never their secrets)",
		Kind:  "acl tokens",
		Walk: func(ctx context.Context, c *api.Client, o api.ListOptions, q *api.QueryOptions) iter.Seq2[api.ACLToken, error] {
			return c.ListACLTokens(ctx, o, q)
		},
		Paged: true, Variable: "token",
		Columns: []string{"ACCESSOR", "KIND", "NODE", "CREATED", "DESCRIPTION"},
		Row: func(tok api.ACLToken, now time.Time) []string {
			return []string{tok.AccessorID, tok.Kind, orDash(tok.NodeID), ago(tok.CreateTime, now), orDash(tok.Description)}
		},
		WideColumns: []string{"MODIFIED"},
		WideRow: func(tok api.ACLToken, _ time.Time) []string {
			return []string{strconv.FormatUint(tok.ModifyIndex, 10)}
		},
	}.build(a)
}

func newACLTokenReadCmd(a *app) *cobra.Command {
	return clientCmd[*api.ACLToken]{
		Use:   "read ACCESSOR-ID",
		Short: "Show one token",
		Args:  cobra.ExactArgs(1),
		Kind:  "acl token",
		Call: func(ctx context.Context, c *api.Client, args []string) (*api.ACLToken, error) {
			tok, _, err := c.ACLToken(ctx, args[0], a.query())
			return tok, err
		},
		Text: printACLToken,
	}.build(a)
}

func newACLTokenSelfCmd(a *app) *cobra.Command {
	return clientCmd[*api.ACLToken]{
		Use:   "self",
		Short: "Show the token this command sends (--token or AMSERVER_TOKEN)",
		Args:  cobra.NoArgs,
		// Errors name the token as "self": its accessor is what is asked.
		Prepare: func([]string) (string, error) { return "self", nil },
		Kind:    "acl token",
		Call: func(ctx context.Context, c *api.Client, _ []string) (*api.ACLToken, error) {
			return c.ACLTokenSelf(ctx)
		},
		Text: printACLToken,
	}.build(a)
}

func printACLToken(w io.Writer, tok *api.ACLToken) error {
	t := newTable(w)
	t.row("AccessorID", tok.AccessorID)
	t.row("Kind", tok.Kind)
	t.row("Node", orDash(tok.NodeID))
	t.row("Description", orDash(tok.Description))
	t.row("Created", tok.CreateTime.Format(time.RFC3339))
	return t.flush()
}
