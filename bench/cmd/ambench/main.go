// Command ambench runs amserver's benchmark suites side by side with real
// peers, prints one table and writes the rows as JSON.
//
//	go run ./cmd/ambench -suite write,sched -quick
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/amserver/amserver/bench"
	"github.com/amserver/amserver/internal/memlimit"
)

type flags struct {
	suites     string
	quick      bool
	out        string
	dir        string
	keep       bool
	cpuprofile string
	waitprof   string
	verbose    bool
	headroom   int
}

func main() {
	var f flags
	flag.StringVar(&f.suites, "suite", "all", "suites to run: a comma list or \"all\"")
	flag.BoolVar(&f.quick, "quick", false, "short runs (CI smoke)")
	flag.StringVar(&f.out, "out", "", "JSON results path (default bench/results/<timestamp>.json)")
	flag.StringVar(&f.dir, "dir", "", "scratch directory for data (default: a new temp dir, removed afterwards)")
	flag.BoolVar(&f.keep, "keep", false, "keep the scratch directory")
	flag.StringVar(&f.cpuprofile, "cpuprofile", "", "write a CPU profile of the whole run to this file")
	flag.StringVar(&f.waitprof, "waitprofile", "", "write block, mutex and allocation profiles of the whole run to this path plus .block, .mutex and .allocs")
	flag.BoolVar(&f.verbose, "v", false, "log progress at debug level")
	flag.IntVar(&f.headroom, "heap-headroom-mib", 0, "run the servers' soft memory limit (amserver's --heap-headroom-mib) in this process and in the state suite's child; in-process clusters share one heap, so there the headroom is tighter than one server's (0: off)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, f)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "ambench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, f flags) (err error) {
	names, err := bench.ParseSuites(f.suites)
	if err != nil {
		return err
	}
	level := slog.LevelInfo
	if f.verbose {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	dir, cleanup, err := scratchDir(f.dir, f.keep)
	if err != nil {
		return err
	}
	defer cleanup()
	if f.cpuprofile != "" {
		stopProf, err := startProfile(f.cpuprofile)
		if err != nil {
			return err
		}
		defer stopProf()
	}
	if f.waitprof != "" {
		defer startWaitProfiles(f.waitprof)()
	}
	if f.headroom < 0 {
		return fmt.Errorf("-heap-headroom-mib must be >= 0, not %d", f.headroom)
	}
	memlimit.Start(ctx, uint64(f.headroom)<<20, logger)
	rs, runErr := runSuites(ctx, names, bench.Options{Quick: f.quick, Dir: dir, Logger: logger, HeapHeadroom: uint64(f.headroom) << 20})
	bench.PrintTable(os.Stdout, rs)
	out := f.out
	if out == "" {
		out = filepath.Join(resultsDir(), time.Now().UTC().Format("20060102T150405Z")+".json")
	}
	if err := bench.WriteJSON(out, rs); err != nil {
		return errors.Join(runErr, err)
	}
	fmt.Printf("\n%d rows, %d targets missed; results in %s\n", len(rs), bench.Missed(rs), out)
	return runErr
}

// runSuites runs each suite in its own scratch subdirectory. A failing
// suite is reported and the others still run, so one broken peer does not
// hide every other number.
func runSuites(ctx context.Context, names []string, o bench.Options) ([]bench.Result, error) {
	var all []bench.Result
	var errs []error
	for _, name := range names {
		if ctx.Err() != nil {
			errs = append(errs, fmt.Errorf("suite %s: %w", name, ctx.Err()))
			break
		}
		so := o
		so.Dir = filepath.Join(o.Dir, name)
		so.Logger = o.Logger.With("suite", name)
		if err := os.MkdirAll(so.Dir, 0o750); err != nil {
			return all, fmt.Errorf("suite %s scratch dir: %w", name, err)
		}
		start := time.Now()
		so.Logger.Info("suite starting", "quick", o.Quick)
		rs, err := bench.Suites[name](ctx, so)
		all = append(all, rs...)
		if err != nil {
			so.Logger.Error("suite failed", "err", err)
			errs = append(errs, fmt.Errorf("suite %s: %w", name, err))
			continue
		}
		so.Logger.Info("suite done", "rows", len(rs), "took", time.Since(start).Round(time.Millisecond))
	}
	return all, errors.Join(errs...)
}

func scratchDir(dir string, keep bool) (string, func(), error) {
	if dir != "" {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return "", nil, fmt.Errorf("scratch dir: %w", err)
		}
		return dir, func() {}, nil
	}
	tmp, err := os.MkdirTemp("", "ambench-")
	if err != nil {
		return "", nil, fmt.Errorf("scratch dir: %w", err)
	}
	if keep {
		return tmp, func() { fmt.Fprintln(os.Stderr, "scratch data kept in", tmp) }, nil
	}
	return tmp, func() { _ = os.RemoveAll(tmp) }, nil
}

func startProfile(path string) (func(), error) {
	pf, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(pf); err != nil {
		_ = pf.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); _ = pf.Close() }, nil
}

// startWaitProfiles records blocking and lock contention from now on; the
// returned func writes them and the allocations (errors go to stderr: the numbers of
// the run matter more than its profiles).
func startWaitProfiles(path string) func() {
	runtime.SetBlockProfileRate(int(time.Microsecond))
	runtime.SetMutexProfileFraction(10)
	return func() {
		for _, name := range []string{"block", "mutex", "allocs"} {
			pf, err := os.Create(path + "." + name)
			if err == nil {
				err = errors.Join(pprof.Lookup(name).WriteTo(pf, 0), pf.Close())
			}
			if err != nil {
				fmt.Fprintf(os.Stderr, "ambench: %s profile: %v\n", name, err)
			}
		}
	}
}

// resultsDir is bench/results of the repository, whether ambench runs from
// the repository root or from bench/ (make bench); elsewhere ./results.
func resultsDir() string {
	wd, err := os.Getwd()
	if err != nil {
		return "results"
	}
	for d := wd; ; d = filepath.Dir(d) {
		if isFile(filepath.Join(d, "bench", "go.mod")) {
			return filepath.Join(d, "bench", "results")
		}
		if filepath.Dir(d) == d {
			return filepath.Join(wd, "results")
		}
	}
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}
