package testenv

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// CrossplaneBinary returns the path of a real Crossplane binary, "core"
// (crossplane/v2 cmd/crossplane: core, rbac and the engine `composition
// render` runs) or "cli" (the crossplane CLI), built once by
// cluster/local/crossplane.sh from pinned modules into a cache outside the
// work tree.
func CrossplaneBinary(which string) (string, error) {
	cmd := exec.Command("bash", filepath.Join(RepoRoot(), "cluster", "local", "crossplane.sh"), which)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("cannot build crossplane %s: %w", which, err)
	}
	return strings.TrimSpace(out.String()), nil
}

// CrossplaneBinaries returns the core and the CLI binaries.
func CrossplaneBinaries() (core, cli string, err error) {
	if core, err = CrossplaneBinary("core"); err != nil {
		return "", "", err
	}
	cli, err = CrossplaneBinary("cli")
	return core, cli, err
}
