package xpcluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/testenv"
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

// Render renders Crossplane's chart for the node: Values, then what the
// chart cannot express (see onHostNetwork).
func Render(ctx context.Context, image string, o Options) ([]*unstructured.Unstructured, error) {
	v, err := Values(image, o)
	if err != nil {
		return nil, err
	}
	mod, err := ModuleDir(ctx)
	if err != nil {
		return nil, err
	}
	objs, err := RenderChart(ctx, ChartDir(mod), v)
	if err != nil {
		return nil, err
	}
	if err := onHostNetwork(objs, o.Env()); err != nil {
		return nil, err
	}
	return objs, nil
}

// onHostNetwork puts every Deployment's Pods on the host network and gives
// each of their containers, init containers included, the env. The chart's
// hostNetwork value reaches only core's Deployment, and its RBAC manager's
// init container (`rbac init`, which waits for CRDs through the API server)
// takes no extra env; both are set here rather than forking the chart.
func onHostNetwork(objs []*unstructured.Unstructured, env map[string]string) error {
	for _, u := range objs {
		if u.GetAPIVersion() != "apps/v1" || u.GetKind() != "Deployment" {
			continue
		}
		spec := []string{"spec", "template", "spec"}
		if err := unstructured.SetNestedField(u.Object, true, append(spec, "hostNetwork")...); err != nil {
			return fmt.Errorf("deployment %s: %w", u.GetName(), err)
		}
		for _, field := range []string{"initContainers", "containers"} {
			cs, _, err := unstructured.NestedSlice(u.Object, append(spec, field)...)
			if err != nil {
				return fmt.Errorf("deployment %s: %w", u.GetName(), err)
			}
			for i, c := range cs {
				cm, ok := c.(map[string]any)
				if !ok {
					return fmt.Errorf("deployment %s: %s[%d] is not an object", u.GetName(), field, i)
				}
				setEnv(cm, env)
			}
			if cs != nil {
				if err := unstructured.SetNestedSlice(u.Object, cs, append(spec, field)...); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// setEnv sets each variable of env on container c, replacing an entry of
// the same name, in the sorted order of names so output is stable.
func setEnv(c map[string]any, env map[string]string) {
	list, _ := c["env"].([]any)
	for _, name := range slices.Sorted(maps.Keys(env)) {
		entry := map[string]any{"name": name, "value": env[name]}
		replaced := false
		for i, e := range list {
			if em, ok := e.(map[string]any); ok && em["name"] == name {
				list[i], replaced = entry, true
			}
		}
		if !replaced {
			list = append(list, entry)
		}
	}
	c["env"] = list
}
