package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/amserver/amserver/agent"
)

func newDevCmd() *cobra.Command {
	var (
		cfg      agent.DevConfig
		logLevel string
		driver   string
	)
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run an embedded dev cluster: servers plus simulated workers over 3 AZs and 2 clouds",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cfg.Servers < 1 || cfg.Workers < 0 {
				return badFlags(fmt.Errorf("--servers must be at least 1 and --workers not negative"))
			}
			switch driver {
			case "none":
			case "real":
				cfg.RealDrivers = true
			default:
				return badFlags(fmt.Errorf("--driver %q: want none or real", driver))
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			logger := newLogger(logLevel)
			cfg.Logger = logger
			cfg.Deps = agent.Deps{}
			d, err := agent.StartDev(ctx, cfg)
			if err != nil {
				return err
			}
			printDevBanner(cmd, d, cfg)
			<-ctx.Done()
			sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			return d.Shutdown(sctx)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&cfg.HTTPAddr, "http-addr", "127.0.0.1:7070", "HTTP API of the first server; others use +10, +20")
	fl.IntVar(&cfg.Servers, "servers", 1, "number of in-process servers (3 for a real Raft quorum)")
	fl.IntVar(&cfg.Workers, "workers", 6, "number of simulated workers")
	fl.StringVar(&cfg.DataDir, "data-dir", "", "keep state here (default: a temporary directory)")
	fl.StringVar(&logLevel, "log-level", "warn", "debug, info, warn or error")
	fl.StringVar(&driver, "driver", "none", "workers' driver: none (simulate: every job runs at once) or real "+
		"(run launches with compose, docker, wasm or exec on this host)")
	return cmd
}

func printDevBanner(cmd *cobra.Command, d *agent.DevCluster, cfg agent.DevConfig) {
	addr := d.HTTPAddr()
	out := cmd.OutOrStdout()
	kind := "simulated"
	if cfg.RealDrivers {
		kind = "real-driver"
	}
	fmt.Fprintf(out, "amserver dev cluster: %d server(s), %d %s worker(s) over 3 AZs and 2 clouds\n", cfg.Servers, cfg.Workers, kind)
	fmt.Fprintf(out, "  API: http://%s/v1/   UI: http://%s/ui/\n\n", addr, addr)
	fmt.Fprintf(out, "Try:\n")
	fmt.Fprintf(out, "  export AMSERVER_ADDR=http://%s\n", addr)
	fmt.Fprintf(out, "  amserver node list\n")
	fmt.Fprintf(out, "  amserver bundle submit --wait examples/bundle.json\n")
	fmt.Fprintf(out, "  amserver bundle list\n")
	fmt.Fprintf(out, "Press Ctrl-C to stop.\n")
}
