package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/amserver/amserver/api"
)

// clientCmd declares a client command that makes one call and prints its
// answer. build owns what every such command does alike (connect, bound
// the call by --timeout, name the subject of an API error, choose between
// text and JSON), so a command states only what is its own.
//
// The id passed to the printing functions is the command's subject: what
// Prepare returned, or without Prepare the first argument ("" if none).
type clientCmd[T any] struct {
	Use, Short, Long string
	Aliases          []string
	Args             cobra.PositionalArgs
	Complete         cobra.CompletionFunc
	// Flags registers the command's own flags (bound to variables the
	// declaration's functions close over).
	Flags func(*pflag.FlagSet)
	// Options are extra client options (status does not retry).
	Options []api.Option

	// Prepare runs before connecting: it reads input files and checks
	// flags, so that a mistake fails as usage (exit 2) and sends nothing.
	// It returns the subject's id when the arguments do not hold it.
	Prepare func(args []string) (id string, err error)
	// Kind names the subject of Call's errors (`node "w-1" not found`).
	// Empty when Call names them itself, as a command of several requests.
	Kind string
	Call func(ctx context.Context, c *api.Client, args []string) (T, error)

	// Exactly one of Text (a table or a report) and Sentence (one line
	// confirming an action) is the human form of the answer.
	Text     func(w io.Writer, v T) error
	Sentence func(id string, v T) string
	// JSON is what --json prints when it is not the answer itself.
	JSON func(id string, v T) any
	// Done is the result a --json doneJSON reports for an answer without a
	// body (204): "removed", "deregistered".
	Done string
	// Warnings go to stderr in either format, before the answer.
	Warnings func(v T) []api.Finding
	// Verdict runs after printing: an answer that means failure (no
	// leader, an invalid bundle) is still printed, then sets the exit code.
	Verdict func(id string, v T) error
}

// noBody is the answer of a call whose API response has none (204).
type noBody struct{}

// build turns the declaration into a cobra command. A malformed
// declaration panics, so that every test that builds the tree catches it.
func (d clientCmd[T]) build(a *app) *cobra.Command {
	if d.Call == nil || (d.Text == nil) == (d.Sentence == nil) || (d.JSON != nil && d.Done != "") {
		panic(fmt.Sprintf("command %q: want Call, one of Text and Sentence, at most one of JSON and Done", d.Use))
	}
	cmd := &cobra.Command{
		Use:               d.Use,
		Aliases:           d.Aliases,
		Short:             d.Short,
		Long:              d.Long,
		Args:              d.Args,
		ValidArgsFunction: d.Complete,
		RunE:              func(cmd *cobra.Command, args []string) error { return d.run(a, cmd, args) },
	}
	if d.Flags != nil {
		d.Flags(cmd.Flags())
	}
	return cmd
}

func (d clientCmd[T]) run(a *app, cmd *cobra.Command, args []string) error {
	id, err := d.subject(args)
	if err != nil {
		return err
	}
	c, ctx, cancel, err := a.connect(cmd, d.Options...)
	if err != nil {
		return err
	}
	// The answer is printed before cancel: a printer may read more (node
	// status fetches assignments for its table only).
	defer cancel()
	v, err := d.Call(ctx, c, args)
	if err != nil {
		return d.name(err, id)
	}
	if d.Warnings != nil {
		printWarnings(cmd.ErrOrStderr(), d.Warnings(v))
	}
	if err := d.print(a, cmd.OutOrStdout(), id, v); err != nil {
		return err
	}
	if d.Verdict != nil {
		return d.Verdict(id, v)
	}
	return nil
}

func (d clientCmd[T]) subject(args []string) (string, error) {
	if d.Prepare != nil {
		return d.Prepare(args)
	}
	if len(args) > 0 {
		return args[0], nil
	}
	return "", nil
}

// name gives err the declared subject, unless it already reads as a whole
// sentence or names its own subject.
func (d clientCmd[T]) name(err error, id string) error {
	var (
		s  *sentenceError
		se *subjectError
	)
	if d.Kind == "" || errors.As(err, &s) || errors.As(err, &se) {
		return err
	}
	return about(err, d.Kind, id)
}

func (d clientCmd[T]) print(a *app, w io.Writer, id string, v T) error {
	var asJSON any = v
	switch {
	case d.JSON != nil:
		asJSON = d.JSON(id, v)
	case d.Done != "":
		asJSON = doneJSON{Kind: d.Kind, ID: id, Result: d.Done}
	}
	text := func(w io.Writer) error { return d.Text(w, v) }
	if d.Sentence != nil {
		text = line("%s", d.Sentence(id, v))
	}
	return a.emit(w, asJSON, text)
}

// emit prints an answer: v as JSON with --json, else its text form. It is
// the one place where a command's output format is chosen, declared
// commands and custom ones alike.
func (a *app) emit(w io.Writer, v any, text func(io.Writer) error) error {
	if a.json {
		return printJSON(w, v)
	}
	return text(w)
}

// line is the text form of an answer that is one sentence.
func line(format string, args ...any) func(io.Writer) error {
	return func(w io.Writer) error {
		_, err := fmt.Fprintf(w, format+"\n", args...)
		return err
	}
}

// fileInput is the Prepare of a command that sends a JSON or YAML file
// (FILE|-): it decodes the file into spec and returns the spec's id. With
// missing set, a file without an id is refused, e.g. "has no name".
func (a *app) fileInput(what string, spec any, id func() string, missing string) func([]string) (string, error) {
	return func(args []string) (string, error) {
		if err := a.readInput(args[0], what, spec); err != nil {
			return "", err
		}
		if missing != "" && id() == "" {
			return "", usagef("%s file %s %s", what, displayName(args[0]), missing)
		}
		return id(), nil
	}
}

// removeCmd declares a command that removes one thing by id and says so.
// done is a format with one %q for the id.
func removeCmd(a *app, use, short, kind, done string,
	remove func(c *api.Client, ctx context.Context, id string) error,
) *cobra.Command {
	return clientCmd[noBody]{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(1),
		Kind:  kind,
		Call: func(ctx context.Context, c *api.Client, args []string) (noBody, error) {
			return noBody{}, remove(c, ctx, args[0])
		},
		Done:     "removed",
		Sentence: func(id string, _ noBody) string { return fmt.Sprintf(done, id) },
	}.build(a)
}
