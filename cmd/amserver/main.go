// Command amserver is the one binary of amserver: the agent (server or
// worker), the embedded dev cluster and the client CLI (DESIGN §8).
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/amserver/amserver/api"
)

const (
	envAddr        = "AMSERVER_ADDR"
	envToken       = "AMSERVER_TOKEN"
	defaultAddr    = "http://127.0.0.1:7070"
	defaultTimeout = 30 * time.Second
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// After the first signal cancels the context, restore the default
	// handling so that a second Ctrl-C kills a command that is stuck.
	go func() { <-ctx.Done(); stop() }()
	code := run(ctx, os.Args[1:], stdio{in: os.Stdin, out: os.Stdout, err: os.Stderr, getenv: os.Getenv})
	stop()
	os.Exit(code)
}

// stdio is the process environment a run sees, injectable so that tests run
// commands in-process.
type stdio struct {
	in       io.Reader
	out, err io.Writer
	getenv   func(string) string
}

// run executes one command line and returns the process exit code.
func run(ctx context.Context, args []string, s stdio) int {
	a := &app{stdio: s}
	return a.execute(ctx, newRootCmd(a), args)
}

// execute runs one command line on root, reports any error and returns
// the exit code it maps to.
func (a *app) execute(ctx context.Context, root *cobra.Command, args []string) int {
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	a.report(err)
	return exitCode(err)
}

// app holds the global flags; every client command closes over it.
type app struct {
	stdio
	addr    string
	token   string
	json    bool
	stale   bool
	timeout time.Duration
	tls     clientTLS
	// serverAddr is the address a client was built for, for messages.
	serverAddr string
}

func newRootCmd(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:   "amserver",
		Short: "amserver: a highly available scheduler for resource-hungry, long-running workloads",
		// Errors are printed once, by run, with the exit code they map to.
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	// Set the streams first: cobra's completion command captures the
	// output writer when it is created.
	root.SetIn(a.in)
	root.SetOut(a.out)
	root.SetErr(a.err)
	makeGroup(root)
	f := root.PersistentFlags()
	f.StringVar(&a.addr, "address", defaultAddr, "server HTTP address (env "+envAddr+")")
	f.StringVar(&a.token, "token", "", "ACL token (env "+envToken+")")
	f.BoolVar(&a.json, "json", false, "print the API's JSON instead of tables")
	f.BoolVar(&a.stale, "stale", false, "let any server answer reads from its local state")
	f.DurationVar(&a.timeout, "timeout", defaultTimeout, "bound on the whole command, waits included (0 = none)")
	a.tls.register(f)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError{err: err, cmdPath: c.CommandPath()}
	})

	root.AddCommand(newAgentCmd(), newDevCmd(),
		newBundleCmd(a), newNodeCmd(a), newPoolCmd(a), newCapsCmd(a), newServiceCmd(a),
		newMembersCmd(a), newStatusCmd(a), newOperatorCmd(a), newEventsCmd(a), newACLCmd(a),
		newKeyringCmd(a), newKeygenCmd(a), newTLSCmd(a), newTemplateCmd(a), newLogsCmd(a))
	// Create cobra's help and completion commands now (Execute would do it
	// later) so that the walk below also covers their argument checks.
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	markArgErrors(root)
	return root
}

// makeGroup turns a command that only holds subcommands into one that
// rejects an unknown subcommand as a usage error (cobra would print help and
// succeed, or fail with an untyped error at the root).
func makeGroup(c *cobra.Command) *cobra.Command {
	c.Args = cobra.ArbitraryArgs
	c.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return cmd.Help()
		}
		err := fmt.Errorf("unknown command %q for %q", args[0], cmd.CommandPath())
		if cmd.SuggestionsMinimumDistance <= 0 {
			cmd.SuggestionsMinimumDistance = 2 // cobra's default, set only on its own path
		}
		if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
			err = fmt.Errorf("%w; did you mean %q?", err, s[0])
		}
		return usageError{err: err, cmdPath: cmd.CommandPath()}
	}
	return c
}

// markArgErrors wraps every positional-argument check in the tree so that
// its failure is a usage error (exit 2), including the lead's commands.
func markArgErrors(c *cobra.Command) {
	if check := c.Args; check != nil {
		c.Args = func(cmd *cobra.Command, args []string) error {
			if err := check(cmd, args); err != nil {
				return usageError{err: err, cmdPath: cmd.CommandPath()}
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		markArgErrors(sub)
	}
}

// client builds an API client from the flags, falling back to the
// environment for flags not given on the command line.
func (a *app) client(cmd *cobra.Command, opts ...api.Option) (*api.Client, error) {
	if a.timeout < 0 {
		return nil, usagef("--timeout must not be negative")
	}
	addr, token := a.addr, a.token
	if env := a.env(envAddr); env != "" && !cmd.Flags().Changed("address") {
		addr = env
	}
	if env := a.env(envToken); env != "" && !cmd.Flags().Changed("token") {
		token = env
	}
	if token != "" {
		opts = append(opts, api.WithToken(token))
	}
	tc, err := a.tlsConfig(cmd)
	if err != nil {
		return nil, err
	}
	if tc != nil {
		opts = append(opts, api.WithTLSConfig(tc))
	}
	if a.stale {
		opts = append(opts, api.WithReadHook(staleWarning(cmd.ErrOrStderr())))
	}
	c, err := api.New(addr, opts...)
	if err != nil {
		return nil, asUsage(err)
	}
	a.serverAddr = c.Address()
	return c, nil
}

func (a *app) env(key string) string {
	if a.getenv == nil {
		return ""
	}
	return a.getenv(key)
}

// context bounds a command by --timeout.
func (a *app) context(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	if a.timeout <= 0 {
		return context.WithCancel(cmd.Context())
	}
	return context.WithTimeout(cmd.Context(), a.timeout)
}

// query is the read options every read command passes.
func (a *app) query() *api.QueryOptions { return &api.QueryOptions{Stale: a.stale} }

// connect is the common start of a client command: a client and a context.
func (a *app) connect(cmd *cobra.Command, opts ...api.Option) (*api.Client, context.Context, context.CancelFunc, error) {
	c, err := a.client(cmd, opts...)
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, cancel := a.context(cmd)
	return c, ctx, cancel, nil
}
