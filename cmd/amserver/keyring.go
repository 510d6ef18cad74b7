package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

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
			return a.emit(cmd.OutOrStdout(), map[string]string{"key": encoded}, line("%s", encoded))
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
	return clientCmd[*api.Keyring]{
		Use:   "list",
		Short: "List the keys and which members have applied them",
		Args:  cobra.NoArgs,
		Flags: func(fl *pflag.FlagSet) {
			fl.BoolVar(&withKeys, "keys", false, "also print the keys themselves (secrets)")
		},
		Kind: "gossip keyring",
		Call: func(ctx context.Context, c *api.Client, _ []string) (*api.Keyring, error) {
			kr, _, err := c.Keyring(ctx, withKeys, a.query())
			return kr, err
		},
		Text: printKeyring,
	}.build(a)
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

// newKeyringChangeCmd declares install, use and remove. Errors and output
// name the key by its fingerprint: the key itself is a secret.
func newKeyringChangeCmd(a *app, op, short, done string, canForce bool) *cobra.Command {
	var force bool
	d := clientCmd[noBody]{
		Use:   op + " KEY",
		Short: short,
		Args:  cobra.ExactArgs(1),
		Prepare: func(args []string) (string, error) {
			key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(args[0]))
			if err != nil {
				return "", usagef("KEY is not base64: %v", err)
			}
			return gossip.KeyFingerprint(key), nil
		},
		Kind: "gossip key",
		Call: func(ctx context.Context, c *api.Client, args []string) (noBody, error) {
			return noBody{}, c.ChangeKeyring(ctx, op, args[0], force)
		},
		Done:     op,
		Sentence: func(fp string, _ noBody) string { return fmt.Sprintf("gossip key %s %s", strconv.Quote(fp), done) },
	}
	if canForce {
		d.Flags = func(fl *pflag.FlagSet) {
			fl.BoolVar(&force, "force", false, "skip the check that every live member has caught up with the previous step")
		}
	}
	return d.build(a)
}
