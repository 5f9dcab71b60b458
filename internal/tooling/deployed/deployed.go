// Package deployed runs the product the way users run it, on the real node
// of internal/tooling/node: the local control plane with a node, CoreDNS, Crossplane
// core installed from its Helm chart, and this repository's packages
// installed by Crossplane's package manager with the Deployment runtime, so
// that the provider and the function run as Pods from their package images.
// The emulated cloud listens on the node's IP, where those Pods reach it;
// its data plane forwards each load balancer's VIP (a loopback address, or
// an IPv6 one a test puts on lo) to the real Pod IPs of either family. The demo and test/e2e start it.
package deployed

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator/dataplane"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/clusterdns"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/node"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/xpcluster"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/xplocal"
)

// Options say what Start installs.
type Options struct {
	// Dir holds certificates and logs kept after a failure.
	Dir string
	// Version tags the packages.
	Version string
	// Cloud, if set, edits the emulator's configuration.
	Cloud func(*emulator.Config)
	// Wait bounds each step; 0 means 4 minutes.
	Wait time.Duration
	// Say, if set, is told each step as it starts.
	Say func(format string, args ...any)
	// GitOps leaves the runtime config, the ImageConfigs, the
	// Configuration and the ClusterProviderConfig to someone else (Argo
	// CD syncing them from Git in test/gitops): only what a cluster admin
	// applies once (the provider's RBAC, the admission policies and the
	// activation policy) is applied, and the packages are pushed.
	GitOps bool
}

// A Cluster is the running product.
type Cluster struct {
	Env   *testenv.Env
	Node  *node.Node
	Kube  client.Client
	Cloud *emulator.Emulator
	// Endpoint is the emulator's host:port on the node's IP.
	Endpoint string
	// Timings are how long each step of Start took.
	Timings []node.Timing

	plane   *dataplane.Plane
	cleanup []func() error
}

// Start brings everything up; on error what was started is stopped.
func Start(ctx context.Context, o Options) (_ *Cluster, err error) {
	if err := node.Supported(); err != nil {
		return nil, err
	}
	if o.Wait == 0 {
		o.Wait = 4 * time.Minute
	}
	say := o.Say
	if say == nil {
		say = func(string, ...any) {}
	}
	c := &Cluster{}
	defer func() {
		if err != nil {
			err = errors.Join(err, c.Stop())
		}
	}()
	steps := []struct {
		name string
		fn   func() error
	}{
		{"control plane (etcd, kube-apiserver)", func() error { return c.startControlPlane(o.Dir) }},
		{"node (containerd, kubelet, controller manager, scheduler, proxy)", func() error { return c.startNode(ctx, o) }},
		{"cluster DNS (CoreDNS)", func() error { return clusterdns.Install(ctx, c.Kube, c.Node.Registry()) }},
		{"emulated cloud on the node's IP", func() error { return c.startCloud(o) }},
		{"packages built and pushed to the node's registry", func() error {
			return xplocal.PushPackages(ctx, c.Node.Registry(), o.Version)
		}},
		{"Crossplane core from its Helm chart", func() error { return c.installCrossplane(ctx, o.Wait) }},
		{"the Configuration (pulls the Provider and the Function)", func() error { return c.installPackages(ctx, o) }},
	}
	for _, s := range steps {
		say("%s", s.name)
		t := time.Now()
		err := s.fn()
		c.Timings = append(c.Timings, node.Timing{Step: s.name, Took: time.Since(t)})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.name, err)
		}
	}
	return c, nil
}

func (c *Cluster) startControlPlane(dir string) error {
	opt, err := node.ControlPlane(filepath.Join(dir, "apiserver-certs"))
	if err != nil {
		return err
	}
	// No provider CRDs: the package manager installs them.
	if c.Env, err = testenv.Start(opt, testenv.WithCRDs()); err != nil {
		return err
	}
	c.cleanup = append(c.cleanup, c.Env.Stop)
	s, err := xplocal.Scheme(c.Env)
	if err != nil {
		return err
	}
	c.Kube, err = client.New(c.Env.Config, client.Options{Scheme: s})
	return err
}

func (c *Cluster) startNode(ctx context.Context, o Options) (err error) {
	if c.Node, err = node.Start(ctx, node.Options{Env: c.Env}); err != nil {
		return err
	}
	c.cleanup = append(c.cleanup, func() error {
		// Keep the components' logs beside the others.
		_ = copyTree(c.Node.Logs(), filepath.Join(o.Dir, "node-logs"))
		// And those of the Pods still running: the provider's, the
		// function's and Crossplane's among them.
		_ = copyTree(c.Node.PodLogs(), filepath.Join(o.Dir, "pod-logs"))
		return c.Node.Stop()
	})
	return nil
}

// startCloud starts the emulator on the node's IP, where the provider's
// Pods reach it, with its data plane on: targets are real Pod IPs, and
// any address gets an ENI (the Pods' IPs are not known in advance).
func (c *Cluster) startCloud(o Options) (err error) {
	cfg := emulator.DefaultConfig()
	cfg.TaskDuration = 20 * time.Millisecond
	cfg.AutoENI = true
	c.plane = dataplane.New(func(string, ...any) {})
	c.cleanup = append(c.cleanup, c.plane.Close)
	cfg.DataPlane = dataplane.ForEmulator(c.plane)
	if o.Cloud != nil {
		o.Cloud(&cfg)
	}
	if c.Cloud, c.Endpoint, err = emulator.StartOn(cfg, node.IP().String()+":0"); err != nil {
		return err
	}
	c.cleanup = append(c.cleanup, c.Cloud.Close)
	return nil
}

func (c *Cluster) installCrossplane(ctx context.Context, wait time.Duration) error {
	// No default activation policy: the provider's kinds are activated as
	// docs/install.md says (examples/provider/activationpolicy.yaml).
	o := xpcluster.InstallOptions{Registry: c.Node.Registry(), Options: xpcluster.Options{Activations: []string{}}}
	if _, err := xpcluster.Install(ctx, c.Env.Config, o); err != nil {
		return err
	}
	return WaitDeploymentsAvailable(ctx, c.Kube, xpcluster.Namespace, wait, "crossplane", "crossplane-rbac-manager")
}

// installPackages installs the Configuration as docs/install.md says, waits
// for the packages to be healthy, and points the ClusterProviderConfig of
// the examples at the emulator.
func (c *Cluster) installPackages(ctx context.Context, o Options) error {
	// What the provider needs beyond the role Crossplane's RBAC manager
	// gives every provider: applied as docs/install.md tells users to.
	// Every feature is on: the RBAC and the admission policies of each,
	// and the activation policy.
	files := append(append(testenv.RBACFiles(testenv.Features()...), testenv.Policies(testenv.Features()...)...),
		filepath.Join(testenv.RepoRoot(), "examples", "provider", "activationpolicy.yaml"))
	for _, f := range files {
		if _, err := testenv.Apply(ctx, c.Kube, f); err != nil {
			return err
		}
	}
	if o.GitOps {
		return nil
	}
	if err := xplocal.InstallPackages(ctx, c.Kube, c.Node.Registry(), o.Version); err != nil {
		return err
	}
	if err := xplocal.WaitPackagesHealthy(ctx, c.Kube, o.Wait); err != nil {
		return err
	}
	dir := filepath.Join(testenv.RepoRoot(), "examples", "providerconfig")
	for _, f := range []string{"secret.yaml", "clusterproviderconfig.yaml"} {
		if _, err := testenv.Apply(ctx, c.Kube, filepath.Join(dir, f), testenv.WithEndpoint(c.Endpoint), testenv.ServingAll); err != nil {
			return err
		}
	}
	return nil
}

// WaitDeploymentsAvailable waits until each named Deployment of ns has all
// its replicas updated and available.
func WaitDeploymentsAvailable(ctx context.Context, kube client.Client, ns string, wait time.Duration, names ...string) error {
	return testenv.Eventually(ctx, wait, func() error {
		for _, n := range names {
			d := &appsv1.Deployment{}
			if err := kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: n}, d); err != nil {
				return err
			}
			want := int32(1)
			if d.Spec.Replicas != nil {
				want = *d.Spec.Replicas
			}
			if d.Status.AvailableReplicas < want || d.Status.UpdatedReplicas < want {
				return fmt.Errorf("deployment %s: %d/%d available", n, d.Status.AvailableReplicas, want)
			}
		}
		return nil
	})
}

// WaitDeploymentsAvailableByLabel waits until the Deployments of ns whose
// Pods carry the label key=value (at least one) have all their replicas
// available.
func WaitDeploymentsAvailableByLabel(ctx context.Context, kube client.Client, ns, key, value string, wait time.Duration) error {
	return testenv.Eventually(ctx, wait, func() error {
		var l appsv1.DeploymentList
		if err := kube.List(ctx, &l, client.InNamespace(ns)); err != nil {
			return err
		}
		found := false
		for _, d := range l.Items {
			if d.Spec.Selector == nil || d.Spec.Selector.MatchLabels[key] != value {
				continue
			}
			found = true
			want := int32(1)
			if d.Spec.Replicas != nil {
				want = *d.Spec.Replicas
			}
			if d.Status.AvailableReplicas < want || d.Status.UpdatedReplicas < want || d.Status.Replicas != want {
				return fmt.Errorf("deployment %s: %d/%d available, %d Pods", d.Name, d.Status.AvailableReplicas, want, d.Status.Replicas)
			}
		}
		if !found {
			return fmt.Errorf("no deployment of Pods %s=%s", key, value)
		}
		return nil
	})
}

// PodsOf lists the Pods of ns with the label key=value.
func PodsOf(ctx context.Context, kube client.Client, ns, key, value string) ([]corev1.Pod, error) {
	var l corev1.PodList
	err := kube.List(ctx, &l, client.InNamespace(ns), client.MatchingLabels{key: value})
	return l.Items, err
}

// Stop stops everything Start started, the node last but the control
// plane, and leaves the machine as it was.
func (c *Cluster) Stop() error {
	var errs []error
	for i := len(c.cleanup) - 1; i >= 0; i-- {
		errs = append(errs, c.cleanup[i]())
	}
	c.cleanup = nil
	return errors.Join(errs...)
}

// copyTree copies the regular files under src into dst, keeping their
// relative paths.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		if err := os.MkdirAll(filepath.Dir(to), 0o700); err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o600)
	})
}
