package elastic

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// execProvisioner runs a local command for each call, with the request in
// its environment (docs/provisioner.md). Exit status 0 is success. The
// command runs in a process group of its own, killed whole when the call
// times out; its output goes to a file rather than a pipe, so a process it
// leaves running (a worker) neither holds the call open nor dies of SIGPIPE.
type execProvisioner struct {
	command []string
}

var _ Provisioner = (*execProvisioner)(nil)

func (p *execProvisioner) Create(ctx context.Context, req *ProvisionRequest) error {
	return p.run(ctx, req)
}

func (p *execProvisioner) Delete(ctx context.Context, req *ProvisionRequest) error {
	return p.run(ctx, req)
}

// execOutputTail bounds how much of a failed command's output its error quotes.
const execOutputTail = 2048

func (p *execProvisioner) run(ctx context.Context, req *ProvisionRequest) error {
	raw, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("encode provision request: %w", err)
	}
	out, err := os.CreateTemp("", "amserver-provision-*.log")
	if err != nil {
		return fmt.Errorf("provisioner output file: %w", err)
	}
	defer os.Remove(out.Name())
	defer out.Close()
	cmd := exec.CommandContext(ctx, p.command[0], p.command[1:]...) //nolint:gosec // the operator configures the command
	cmd.Env = append(os.Environ(), req.env(raw)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("provisioner command %s %s: %w", p.command[0], req.Op, ctx.Err())
		}
		return fmt.Errorf("provisioner command %s %s: %w: %s", p.command[0], req.Op, err, tail(out))
	}
	return nil
}

// tail returns the end of a command's output, trimmed, for an error.
func tail(f *os.File) string {
	info, err := f.Stat()
	if err != nil {
		return ""
	}
	off := max(info.Size()-execOutputTail, 0)
	buf := make([]byte, info.Size()-off)
	if _, err := f.ReadAt(buf, off); err != nil && err != io.EOF {
		return ""
	}
	return strings.TrimSpace(string(buf))
}
