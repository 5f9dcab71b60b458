package testenv

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

// Command runs name with args in dir (the current folder if empty), with
// env added to this process's environment, its output written to log
// (discarded if nil); a failure carries the output's last lines.
func Command(ctx context.Context, dir string, env []string, log io.Writer, name string, args ...string) error {
	var tail bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	if log == nil {
		log = io.Discard
	}
	cmd.Stdout, cmd.Stderr = io.MultiWriter(log, &tail), io.MultiWriter(log, &tail)
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%w: %s", err, LastLines(tail.String(), 5))
	}
	return nil
}

// LastLines is the last n lines of s, trimmed.
func LastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
