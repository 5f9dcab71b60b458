package testenv

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// CrossplaneBinaries returns the paths of real Crossplane binaries: core
// v2.4.0 (which `composition render` runs as its engine, and which the
// install tests run as the control plane) and the CLI v2.5.0. It runs
// cluster/local/crossplane.sh, which builds them from pinned modules into a
// cache outside the work tree, once.
func CrossplaneBinaries() (core, cli string, err error) {
	cmd := exec.Command("bash", filepath.Join(RepoRoot(), "cluster", "local", "crossplane.sh"))
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return "", "", fmt.Errorf("cannot build the Crossplane binaries: %w", err)
	}
	lines := strings.Fields(out.String())
	if len(lines) != 2 {
		return "", "", fmt.Errorf("crossplane.sh printed %q, want the core and CLI paths", out.String())
	}
	return lines[0], lines[1], nil
}
