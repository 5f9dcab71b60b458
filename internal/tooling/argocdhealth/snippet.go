package argocdhealth

import (
	"os"
	"path/filepath"
	"strings"
)

// Snippet renders the argocd-cm ConfigMap that carries every script, one
// "resource.customizations.health.<group>_<Kind>" key per kind, in the
// order of Kinds. root is the repository root.
func Snippet(root string) (string, error) {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: argocd-cm\n  namespace: argocd\n  labels:\n    app.kubernetes.io/part-of: argocd\ndata:\n")
	for _, k := range Kinds() {
		script, err := os.ReadFile(filepath.Join(root, ScriptDir, k.Script))
		if err != nil {
			return "", err
		}
		b.WriteString("  resource.customizations.health." + k.Group + "_" + k.Kind + ": |\n")
		for line := range strings.SplitSeq(strings.TrimRight(string(script), "\n"), "\n") {
			if line == "" {
				b.WriteString("\n")
				continue
			}
			b.WriteString("    " + line + "\n")
		}
	}
	return b.String(), nil
}
