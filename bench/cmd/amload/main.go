// Command amload is the load test (make loadtest): three amserver servers,
// each a process of its own, loaded with bundles, then thousands of
// read-token clients (lists, event streams from index 0, blocking queries
// woken by writes) beside a steady write load. It prints elections, the
// leader's resident set over idle, /v1/health p99 and write p99 against
// idle, each with its goal and MET or MISSED. -short is the smoke version
// (seconds, small numbers). With AMSERVER_ADDR (comma-separated) it loads
// a running cluster instead; AMSERVER_TOKEN is then a management token and
// AMSERVER_READ_TOKEN the readers' (the RSS row needs servers it started).
//
//	cd bench && go run ./cmd/amload            # 100k bundles, 2,000 clients
//	cd bench && go run ./cmd/amload -short     # smoke
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/amserver/amserver/bench"
)

func main() {
	o := bench.LoadOptions{Servers: 3, Bundles: 100_000, Clients: 2000, ReadTokens: 1, WriteRate: 20,
		// As long idle as loaded: the goal compares the two phases' p99,
		// and 400 idle samples (20 s) moved it twofold between runs.
		Idle: 60 * time.Second, Load: 60 * time.Second, TimeoutScale: 1}
	short := flag.Bool("short", false, "smoke: 2,000 bundles, 100 clients, 5 s idle and 10 s of load (flags given beside it win)")
	flag.IntVar(&o.Bundles, "bundles", o.Bundles, "bundles to load")
	flag.IntVar(&o.Clients, "clients", o.Clients, "concurrent read clients")
	flag.IntVar(&o.ReadTokens, "read-tokens", o.ReadTokens, "read tokens the clients share (the per-caller bound applies to each)")
	flag.IntVar(&o.WriteRate, "write-rate", o.WriteRate, "bundle creates per second, idle and under load")
	flag.DurationVar(&o.Idle, "idle", o.Idle, "how long writes run alone first")
	flag.DurationVar(&o.Load, "load", o.Load, "how long the read load runs")
	flag.Float64Var(&o.TimeoutScale, "timeout-scale", o.TimeoutScale, "the servers' --timeout-scale")
	serverArgs := flag.String("server-args", "", "more flags for every server, space-separated (\"--http-max-expensive 1\")")
	root := flag.String("root", "..", "the repository root (its cmd/amserver is built)")
	flag.StringVar(&o.ProfileDir, "profile", "", "a directory for CPU, heap and goroutine profiles of every server, taken a third of the way into the read load")
	keep := flag.Bool("keep", false, "keep the scratch directory (binary, data, server logs)")
	flag.Parse()
	if *short {
		// Flags given beside -short win: -short -clients 2000 -load 1m
		// is the soak's smoke (make soak-smoke).
		set := map[string]bool{}
		flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
		shortDefault(set, "bundles", &o.Bundles, 2000)
		shortDefault(set, "clients", &o.Clients, 100)
		shortDefault(set, "idle", &o.Idle, 5*time.Second)
		shortDefault(set, "load", &o.Load, 10*time.Second)
	}
	abs, err := filepath.Abs(*root)
	if err != nil {
		fail(err)
	}
	o.Root = abs
	o.ServerArgs = strings.Fields(*serverArgs)
	dir, cleanup, err := bench.LoadScratch()
	if err != nil {
		fail(err)
	}
	if *keep {
		fmt.Fprintln(os.Stderr, "scratch data kept in", dir)
	} else {
		defer cleanup()
	}
	o.Dir = dir
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	o.Progress = func(format string, args ...any) { logger.Info(fmt.Sprintf(format, args...)) }
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rs, err := bench.RunLoad(ctx, o)
	bench.PrintTable(os.Stdout, rs)
	if err != nil {
		fail(err)
	}
	fmt.Printf("\n%d rows, %d goals missed\n", len(rs), bench.Missed(rs))
}

func shortDefault[T any](set map[string]bool, name string, v *T, short T) {
	if !set[name] {
		*v = short
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "amload:", err)
	os.Exit(1)
}
