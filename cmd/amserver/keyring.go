package main

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/gossip"
)

func newKeygenCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "keygen",
		Short: "Print a new random gossip encryption key (base64, 32 bytes) for --encrypt",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			key := make([]byte, 32)
			if _, err := rand.Read(key); err != nil {
				return fmt.Errorf("generate a key: %w", err)
			}
			encoded := base64.StdEncoding.EncodeToString(key)
			if a.json {
				return printJSON(cmd.OutOrStdout(), map[string]string{"key": encoded})
			}
			fmt.Fprintln(cmd.OutOrStdout(), encoded)
			return nil
		},
	}
}

func newKeyringCmd(a *app) *cobra.Command {
	cmd := makeGroup(&cobra.Command{
		Use:   "keyring",
		Short: "List and rotate the gossip encryption keys",
		Long: `Rotate the gossip key in three steps, waiting after each until 'keyring list'
shows that every member has caught up:

  amserver keyring install NEWKEY   every member can then decrypt with it
  amserver keyring use NEWKEY       every member then encrypts with it
  amserver keyring remove OLDKEY

'use' is refused while a live member has not installed the key, and 'remove'
while a live member still encrypts with it, unless --force.`,
	})
	cmd.AddCommand(newKeyringListCmd(a),
		newKeyringChangeCmd(a, api.KeyringInstall, "Install a key: members decrypt with it too", "installed", false),
		newKeyringChangeCmd(a, api.KeyringUse, "Make an installed key the one members encrypt with", "is now the primary key", true),
		newKeyringChangeCmd(a, api.KeyringRemove, "Remove a key that no member encrypts with any more", "removed", true))
	return cmd
}

func newKeyringListCmd(a *app) *cobra.Command {
	var withKeys bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the keys and which members have applied them",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, ctx, cancel, err := a.connect(cmd)
			if err != nil {
				return err
			}
			defer cancel()
			kr, _, err := c.Keyring(ctx, withKeys, a.query())
			if err != nil {
				return about(err, "gossip keyring", "")
			}
			if a.json {
				return printJSON(cmd.OutOrStdout(), kr)
			}
			return printKeyring(cmd.OutOrStdout(), kr)
		},
	}
	cmd.Flags().BoolVar(&withKeys, "keys", false, "also print the keys themselves (secrets)")
	return cmd
}

func printKeyring(w io.Writer, kr *api.Keyring) error {
	if len(kr.Keys) == 0 {
		_, err := fmt.Fprintln(w, "gossip is not encrypted: start the agents with --encrypt (see 'amserver keygen')")
		return err
	}
	live := 0
	for _, m := range kr.Members {
		if m.Status == "alive" || m.Status == "suspect" {
			live++
		}
	}
	t := newTable(w)
	withKeys := kr.Keys[0].Key != ""
	header := []string{"FINGERPRINT", "PRIMARY", "INSTALLED", "ENCRYPTING"}
	if withKeys {
		header = append(header, "KEY")
	}
	t.row(header...)
	for _, k := range kr.Keys {
		row := []string{k.Fingerprint, yesNo(k.Primary), fmt.Sprintf("%d/%d", k.Installed, live), fmt.Sprintf("%d/%d", k.PrimaryOn, live)}
		if withKeys {
			row = append(row, k.Key)
		}
		t.row(row...)
	}
	if err := t.flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	t = newTable(w)
	t.row("MEMBER", "ROLE", "STATUS", "PRIMARY", "KEYS", "CONVERGED")
	for _, m := range kr.Members {
		t.row(m.Name, orDash(m.Role), m.Status, orDash(m.Primary), orDash(strings.Join(m.Keys, ",")), yesNo(m.Converged))
	}
	return t.flush()
}

func newKeyringChangeCmd(a *app, op, short, done string, canForce bool) *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   op + " KEY",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(args[0]))
			if err != nil {
				return usagef("KEY is not base64: %v", err)
			}
			fp := gossip.KeyFingerprint(key)
			c, ctx, cancel, err := a.connect(cmd)
			if err != nil {
				return err
			}
			defer cancel()
			if err := c.ChangeKeyring(ctx, op, args[0], force); err != nil {
				return about(err, "gossip key", fp)
			}
			if a.json {
				return printJSON(cmd.OutOrStdout(), doneJSON{Kind: "gossip key", ID: fp, Result: op})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "gossip key %s %s\n", strconv.Quote(fp), done)
			return nil
		},
	}
	if canForce {
		cmd.Flags().BoolVar(&force, "force", false, "skip the check that every live member has caught up with the previous step")
	}
	return cmd
}
