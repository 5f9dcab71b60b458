package xpcluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// ModuleDir returns the source of the crossplane/v2 module that
// cluster/local/crossplane/core pins (its chart, CRDs and webhook
// configurations), downloading it into the module cache when missing.
func ModuleDir(ctx context.Context) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", "github.com/crossplane/crossplane/v2")
	cmd.Dir = filepath.Join(testenv.RepoRoot(), "cluster", "local", "crossplane", "core")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go mod download crossplane/v2: %w: %s", err, stderr.String())
	}
	var m struct{ Dir, Error string }
	if err := json.Unmarshal(out, &m); err != nil {
		return "", err
	}
	if m.Error != "" || m.Dir == "" {
		return "", fmt.Errorf("go mod download crossplane/v2: %q", m.Error)
	}
	return m.Dir, nil
}

// ChartDir is where the module keeps Crossplane's Helm chart.
func ChartDir(moduleDir string) string {
	return filepath.Join(moduleDir, "cluster", "charts", "crossplane")
}

// RenderChart runs the chart renderer (cluster/local/crossplane.sh chart) on
// chart with values, as release Release in Namespace, and decodes its
// output.
func RenderChart(ctx context.Context, chart string, values map[string]any) ([]*unstructured.Unstructured, error) {
	renderer, err := testenv.CrossplaneBinary("chart")
	if err != nil {
		return nil, err
	}
	vy, err := yaml.Marshal(values)
	if err != nil {
		return nil, err
	}
	f, err := os.CreateTemp("", "xpcluster-values-*.yaml")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.Remove(f.Name()) }()
	if _, err := f.Write(vy); err != nil {
		_ = f.Close()
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, renderer, "-chart", chart, "-values", f.Name(), "-namespace", Namespace, "-release", Release) //nolint:gosec // our own cached program
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("rendering %s: %w: %s", chart, err, stderr.String())
	}
	return testenv.DecodeYAML(out, "the rendered chart")
}

// Render renders Crossplane's chart for the node with Values.
func Render(ctx context.Context, image string, o Options) ([]*unstructured.Unstructured, error) {
	mod, err := ModuleDir(ctx)
	if err != nil {
		return nil, err
	}
	return RenderChart(ctx, ChartDir(mod), Values(image, o))
}
