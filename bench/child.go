package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
)

// startChild starts this same executable with env set to arg's JSON: an
// init function of the suite sees it and runs the child's part (a state
// measured in a fresh process, readers apart from the writer). wait waits
// for the child and decodes the JSON it wrote on stdout into out.
func startChild(ctx context.Context, env string, arg any) (wait func(out any) error, err error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find the executable: %w", err)
	}
	raw, err := json.Marshal(arg)
	if err != nil {
		return nil, fmt.Errorf("child arguments: %w", err)
	}
	cmd := exec.CommandContext(ctx, exe)
	cmd.Env = append(os.Environ(), env+"="+string(raw))
	cmd.Stderr = os.Stderr
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the child: %w", err)
	}
	return func(out any) error {
		runErr := cmd.Wait()
		if err := json.Unmarshal(stdout.Bytes(), out); err != nil {
			return errors.Join(fmt.Errorf("child process: %w", err), runErr)
		}
		return runErr
	}, nil
}
