package main

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/amserver/amserver/api"
)

func newACLCmd(a *app) *cobra.Command {
	cmd := makeGroup(&cobra.Command{Use: "acl", Short: "Manage ACL tokens (needs a management token)"})
	tok := makeGroup(&cobra.Command{Use: "token", Short: "Create, list, read and delete ACL tokens"})
	tok.AddCommand(newACLTokenCreateCmd(a), newACLTokenListCmd(a), newACLTokenReadCmd(a), newACLTokenSelfCmd(a),
		newRemoveCmd(a, "delete ACCESSOR-ID", "Delete a token; it stops working at once", "acl token",
			"acl token %q deleted", (*api.Client).DeleteACLToken))
	cmd.AddCommand(tok)
	return cmd
}

func newACLTokenCreateCmd(a *app) *cobra.Command {
	var in api.ACLTokenRequest
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Create a token and print its secret (shown this once)",
		Long: `Create a token of kind management, write, read or worker. A worker token
is bound to one node (--node-id) and reaches only that node's registration,
assignments and status reports. The secret is printed once: the servers keep
only its hash.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if in.Kind == "" {
				return asUsage(errors.New("--kind is required: management, write, read or worker"))
			}
			c, ctx, cancel, err := a.connect(cmd)
			if err != nil {
				return err
			}
			defer cancel()
			out, err := c.CreateACLToken(ctx, in)
			if err != nil {
				return about(err, "acl token", "")
			}
			if a.json {
				return printJSON(cmd.OutOrStdout(), out)
			}
			if err := printACLToken(cmd.OutOrStdout(), &out.Token); err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "SecretID     %s\n", out.SecretID)
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&in.Kind, "kind", "", "management, write, read or worker (required)")
	fl.StringVar(&in.NodeID, "node-id", "", "worker tokens: the node the token is bound to")
	fl.StringVar(&in.Description, "description", "", "what the token is for")
	fl.StringVar(&in.SecretID, "secret", "", "use this secret (at least 16 bytes) instead of a generated one")
	return cmd
}

func newACLTokenListCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List tokens (never their secrets)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, ctx, cancel, err := a.connect(cmd)
			if err != nil {
				return err
			}
			defer cancel()
			toks, _, err := c.ACLTokens(ctx, a.query())
			if err != nil {
				return about(err, "acl tokens", "")
			}
			if a.json {
				return printJSON(cmd.OutOrStdout(), nonNil(toks))
			}
			t := newTable(cmd.OutOrStdout())
			t.row("ACCESSOR", "KIND", "NODE", "CREATED", "DESCRIPTION")
			now := time.Now()
			for _, tok := range toks {
				t.row(tok.AccessorID, tok.Kind, orDash(tok.NodeID), ago(tok.CreateTime, now), orDash(tok.Description))
			}
			return t.flush()
		},
	}
}

func newACLTokenReadCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "read ACCESSOR-ID",
		Short: "Show one token",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ctx, cancel, err := a.connect(cmd)
			if err != nil {
				return err
			}
			defer cancel()
			tok, _, err := c.ACLToken(ctx, args[0], a.query())
			if err != nil {
				return about(err, "acl token", args[0])
			}
			if a.json {
				return printJSON(cmd.OutOrStdout(), tok)
			}
			return printACLToken(cmd.OutOrStdout(), tok)
		},
	}
}

func newACLTokenSelfCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "self",
		Short: "Show the token this command sends (--token or AMSERVER_TOKEN)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, ctx, cancel, err := a.connect(cmd)
			if err != nil {
				return err
			}
			defer cancel()
			tok, err := c.ACLTokenSelf(ctx)
			if err != nil {
				return about(err, "acl token", "self")
			}
			if a.json {
				return printJSON(cmd.OutOrStdout(), tok)
			}
			return printACLToken(cmd.OutOrStdout(), tok)
		},
	}
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
