package main

import (
	"fmt"
	"net/http"

	"github.com/spf13/cobra"

	"github.com/amserver/amserver/api"
)

func newServiceLogsCmd(a *app) *cobra.Command {
	var lf logFlags
	cmd := &cobra.Command{
		Use:   "logs SERVICE NODE",
		Short: "Print a node service's output on one node (stdout, or stderr with --stderr), following it with -f",
		Long: `Print the output of the instance of a node service that runs (or ran) on
NODE, as its worker keeps it. The server that answers proxies to that
worker. With -f the command goes on printing what the instance writes
until it stops or the command is interrupted (--timeout applies only when
given). --tail N starts with the last N lines (-1, the default: everything).`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ctx, cancel, err := lf.connect(a, cmd)
			if err != nil {
				return err
			}
			defer cancel()
			as, _, err := c.Assignments(ctx, args[1], a.query())
			if err != nil {
				return err
			}
			id, err := serviceInstance(as, args[0], args[1])
			if err != nil {
				return err
			}
			return lf.print(ctx, cmd, c, id)
		},
	}
	lf.register(cmd, "instance")
	return cmd
}

// serviceInstance is the assignment of service on node: the one that
// runs, else one that is stopping (its output is still there).
func serviceInstance(as []api.Assignment, service, node string) (string, error) {
	id := ""
	for _, x := range as {
		if x.ServiceID != service {
			continue
		}
		if x.Desired == api.DesiredRun {
			return x.ID, nil
		}
		id = x.ID
	}
	if id == "" {
		msg := fmt.Sprintf("service %s has no instance on node %s", service, node)
		return "", sentence(&api.Error{Status: http.StatusNotFound, Code: api.CodeNotFound, Message: msg}, "%s", msg)
	}
	return id, nil
}
