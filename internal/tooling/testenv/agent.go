package testenv

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// BuildAgent builds cmd/agent (the agent of a workload cluster behind NAT)
// into dir and returns the binary, for tests that run it as its own
// process with StartProcess.
func BuildAgent(dir string) (string, error) {
	bin := filepath.Join(dir, "agent")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/agent")
	cmd.Dir = RepoRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("cannot build the agent: %w\n%s", err, out)
	}
	return bin, nil
}

// ServiceAccountOnly applies rbacFiles, which must let namespace/name list
// Pods, waits until the API server honours them, and returns a config that
// impersonates the ServiceAccount with nothing but what they grant (unlike
// AsServiceAccount, no provider grants are bound).
func (e *Env) ServiceAccountOnly(ctx context.Context, namespace, name string, rbacFiles ...string) (*rest.Config, error) {
	for _, f := range rbacFiles {
		if _, err := Apply(ctx, e.Client, f); err != nil {
			return nil, err
		}
	}
	sa := rest.CopyConfig(e.Config)
	sa.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + namespace + ":" + name}
	kube, err := client.New(sa, client.Options{Scheme: e.Scheme})
	if err != nil {
		return nil, err
	}
	if err := Eventually(ctx, time.Minute, func() error {
		return kube.List(ctx, &corev1.PodList{}, client.Limit(1))
	}); err != nil {
		return nil, fmt.Errorf("the bindings of %s/%s are not in effect: %w", namespace, name, err)
	}
	return sa, nil
}
