package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"iter"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/amserver/amserver/api"
)

func newTemplateCmd(a *app) *cobra.Command {
	cmd := makeGroup(&cobra.Command{
		Use:   "template",
		Short: "Push, list, show and remove templates (compose stacks and WebAssembly modules the cluster keeps)",
	})
	cmd.AddCommand(newTemplatePushCmd(a), newTemplateListCmd(a), newTemplateShowCmd(a), newTemplateRmCmd(a))
	return cmd
}

func newTemplatePushCmd(a *app) *cobra.Command {
	var name string
	var archive []byte
	return clientCmd[*api.Template]{
		Use:   "push DIR|FILE --name NAME",
		Short: "Push a directory (tarred and gzipped here) or a tar/tar.gz file as a template's latest version",
		Long: "Push a template. A directory is packed as a tar.gz in a fixed order, so an unchanged\n" +
			"directory pushes the same digest (a no-op); a file (\"-\" for stdin) is sent as it is.\n" +
			"The server checks the archive and derives its runtime: a root compose.yaml,\n" +
			"compose.yml or docker-compose.yml makes it compose, a root main.wasm makes it wasm.",
		Args:  cobra.ExactArgs(1),
		Flags: func(f *pflag.FlagSet) { f.StringVar(&name, "name", "", "the template's name (required)") },
		Prepare: func(args []string) (string, error) {
			if name == "" {
				return "", usagef("--name is required")
			}
			var err error
			if archive, err = a.templateArchive(args[0]); err != nil {
				return "", usagef("cannot read template %s: %v", displayName(args[0]), unwrapPathError(err))
			}
			return name, nil
		},
		Kind: "template",
		Call: func(ctx context.Context, c *api.Client, _ []string) (*api.Template, error) {
			return c.PutTemplate(ctx, name, bytes.NewReader(archive))
		},
		Sentence: func(id string, t *api.Template) string {
			return fmt.Sprintf("template %q is %s (%s, %d files, %s, index %d)",
				id, clean(t.Digest), clean(t.Runtime), t.Files, byteSize(t.Size), t.CreateIndex)
		},
	}.build(a)
}

func newTemplateListCmd(a *app) *cobra.Command {
	return listCmd[api.Template]{
		Short: "List templates, each as its latest version says",
		Kind:  "templates",
		Walk: func(ctx context.Context, c *api.Client, o api.ListOptions, q *api.QueryOptions) iter.Seq2[api.Template, error] {
			return c.ListTemplates(ctx, o, q)
		},
		Paged: true, Variable: "template",
		Columns: []string{"NAME", "RUNTIME", "DIGEST", "FILES", "SIZE", "INDEX"},
		Row: func(tpl api.Template, _ time.Time) []string {
			return []string{tpl.Name, tpl.Runtime, shortDigest(tpl.Digest), strconv.Itoa(tpl.Files), byteSize(tpl.Size),
				strconv.FormatUint(tpl.CreateIndex, 10)}
		},
		WideColumns: []string{"FULL DIGEST"},
		WideRow:     func(tpl api.Template, _ time.Time) []string { return []string{tpl.Digest} },
	}.build(a)
}

func newTemplateShowCmd(a *app) *cobra.Command {
	return clientCmd[*api.Template]{
		Use:   "show NAME",
		Short: "Show a template's latest version and every version kept",
		Args:  cobra.ExactArgs(1),
		Kind:  "template",
		Call: func(ctx context.Context, c *api.Client, args []string) (*api.Template, error) {
			tpl, _, err := c.Template(ctx, args[0], a.query())
			return tpl, err
		},
		Text: printTemplate,
	}.build(a)
}

func printTemplate(w io.Writer, tpl *api.Template) error {
	t := newTable(w)
	t.row("Name", tpl.Name)
	t.row("Runtime", tpl.Runtime)
	t.row("Digest", tpl.Digest)
	t.row("Files", strconv.Itoa(tpl.Files))
	t.row("Size", byteSize(tpl.Size))
	t.row("Index", strconv.FormatUint(tpl.CreateIndex, 10))
	if err := t.flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nVersions (oldest first; bundles pin name@digest)\n")
	t = newTable(w)
	t.row("DIGEST", "RUNTIME", "FILES", "SIZE", "INDEX")
	for _, v := range tpl.Versions {
		t.row(v.Digest, v.Runtime, strconv.Itoa(v.Files), byteSize(v.Size), strconv.FormatUint(v.CreateIndex, 10))
	}
	return t.flush()
}

func newTemplateRmCmd(a *app) *cobra.Command {
	return removeCmd(a, "rm NAME", "Remove a template and every version of it (refused while a bundle uses one)",
		"template", "template %q removed", (*api.Client).DeleteTemplate)
}

// shortDigest keeps a digest's algorithm and first 12 hex digits.
func shortDigest(d string) string {
	if len(d) > len("sha256:")+12 {
		return d[:len("sha256:")+12]
	}
	return orDash(d)
}

// byteSize renders a size in bytes, KiB or MiB.
func byteSize(n int64) string {
	switch {
	case n >= 1<<20:
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB"
	case n >= 1<<10:
		return strconv.FormatFloat(float64(n)/(1<<10), 'f', 1, 64) + " KiB"
	}
	return strconv.FormatInt(n, 10) + " B"
}
