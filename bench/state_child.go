package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/amserver/amserver/internal/memlimit"
)

// The state suite measures the resident memory of one server's state, so it
// runs in a fresh process: in the process that ran the other suites, their
// clusters and worlds (freed or not yet) made up half the resident set.
// runState starts this same executable with stateChildEnv set; init sees
// it, runs measureState and writes the rows as JSON on stdout.

const stateChildEnv = "AMBENCH_STATE_CHILD"

// stateChildArgs is what the parent passes the child.
type stateChildArgs struct {
	Quick        bool   `json:"quick"`
	Dir          string `json:"dir"`
	HeapHeadroom uint64 `json:"heapHeadroom,omitempty"`
}

// stateChildOut is what the child answers.
type stateChildOut struct {
	Results []Result `json:"results"`
	Err     string   `json:"err,omitempty"`
}

func init() {
	if arg := os.Getenv(stateChildEnv); arg != "" {
		os.Exit(stateChild(arg, os.Stdout))
	}
}

func runState(ctx context.Context, o Options) ([]Result, error) {
	wait, err := startChild(ctx, stateChildEnv, stateChildArgs{Quick: o.Quick, Dir: o.Dir, HeapHeadroom: o.HeapHeadroom})
	if err != nil {
		return nil, fmt.Errorf("state: %w", err)
	}
	var out stateChildOut
	werr := wait(&out) // out stays empty when the child answered nothing
	if out.Err != "" {
		return out.Results, fmt.Errorf("state: %s", out.Err)
	}
	if werr != nil {
		return out.Results, fmt.Errorf("state: %w", werr)
	}
	return out.Results, nil
}

// stateChild runs the suite for runState and returns the exit code.
func stateChild(arg string, w io.Writer) int {
	var args stateChildArgs
	if err := json.Unmarshal([]byte(arg), &args); err != nil {
		fmt.Fprintf(os.Stderr, "state child: %v\n", err)
		return 2
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	memlimit.Start(ctx, args.HeapHeadroom, slog.New(slog.NewTextHandler(os.Stderr, nil)))
	rs, err := measureState(ctx, Options{Quick: args.Quick, Dir: args.Dir, HeapHeadroom: args.HeapHeadroom})
	out := stateChildOut{Results: rs}
	if err != nil {
		out.Err = err.Error()
	}
	if err := json.NewEncoder(w).Encode(out); err != nil {
		fmt.Fprintf(os.Stderr, "state child: %v\n", err)
		return 2
	}
	return 0
}
