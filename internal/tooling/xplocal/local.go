package xplocal

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpextv1alpha1 "github.com/crossplane/crossplane/apis/v2/apiextensions/v1alpha1"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	pkgv1 "github.com/crossplane/crossplane/apis/v2/pkg/v1"
	pkgv1beta1 "github.com/crossplane/crossplane/apis/v2/pkg/v1beta1"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/xpkgbuild"
)

// The packages of this repository and the names Crossplane installs them
// under. The Configuration depends on the other two by these names.
const (
	Registry          = "xpkg.crossplane.io"
	ProviderPackage   = "provider-tencentcloud-network"
	FunctionPackage   = "function-tencentcloud-network"
	ConfigurationName = "configuration-tencentcloud-network"
	// ServiceAccount is who the provider runs as: in a cluster the
	// Deployment's ServiceAccount, here a client certificate with its user
	// name, so only the RBAC Crossplane grants the package applies.
	ServiceAccount = "system:serviceaccount:" + Namespace + ":" + ProviderPackage
)

// Options say what Start runs.
type Options struct {
	// Env is the local control plane, started with no provider CRDs:
	// the package manager installs them.
	Env *testenv.Env
	// Dir holds certificates, caches and logs.
	Dir string
	// Version tags the packages.
	Version string
	// ProviderFlags are passed to the provider process.
	ProviderFlags []string
	// Activations are installed by core init (see CoreOptions).
	Activations []string
}

// Local is a running Crossplane with our packages in its registry.
type Local struct {
	Kube     client.Client
	Core     *Core
	Registry string
	PKI      *testenv.PKI
	Runtime  *Runtime

	registry *httptest.Server
	stop     context.CancelFunc
	done     chan struct{}
}

// Scheme knows the Kubernetes, Crossplane and provider kinds.
func Scheme(env *testenv.Env) (*kruntime.Scheme, error) {
	s := env.Scheme
	for _, add := range []func(*kruntime.Scheme) error{
		pkgv1.AddToScheme, pkgv1beta1.AddToScheme, xpextv1alpha1.AddToScheme, apiextensionsv1.AddToScheme, rbacv1.AddToScheme,
	} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Start builds the three packages of this repository, serves them from a
// registry on loopback, and runs Crossplane core with this package's
// External runtime. Install then installs them as a user would.
func Start(ctx context.Context, o Options) (*Local, error) {
	s, err := Scheme(o.Env)
	if err != nil {
		return nil, err
	}
	kube, err := client.New(o.Env.Config, client.Options{Scheme: s})
	if err != nil {
		return nil, err
	}
	l := &Local{Kube: kube, done: make(chan struct{})}
	l.registry = httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	l.Registry = strings.TrimPrefix(l.registry.URL, "http://")
	fail := func(err error) (*Local, error) {
		l.Stop()
		return nil, err
	}
	if err := PushPackages(ctx, l.Registry, o.Version); err != nil {
		return fail(err)
	}

	if l.PKI, err = testenv.NewPKI(filepath.Join(o.Dir, "pki")); err != nil {
		return fail(err)
	}
	kubeconfig := filepath.Join(o.Dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, o.Env.KubeConfig, 0o600); err != nil {
		return fail(err)
	}
	saConfig, err := o.Env.UserKubeConfig(ServiceAccount)
	if err != nil {
		return fail(err)
	}
	providerKubeconfig := filepath.Join(o.Dir, "provider-kubeconfig")
	if err := os.WriteFile(providerKubeconfig, saConfig, 0o600); err != nil {
		return fail(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}
	if err := kube.Create(ctx, ns); err != nil && !kerrors.IsAlreadyExists(err) {
		return fail(err)
	}
	// What the provider needs beyond the role Crossplane's RBAC manager
	// gives every provider: applied as docs/install.md tells users to.
	for _, f := range append(testenv.RBACFiles(testenv.Features()...), testenv.Policies(testenv.Features()...)...) {
		if _, err := testenv.Apply(ctx, kube, f); err != nil {
			return fail(err)
		}
	}
	bin, crds, err := CoreBinary()
	if err != nil {
		return fail(err)
	}
	if l.Core, err = StartCore(ctx, CoreOptions{
		Binary: bin, CRDs: crds, Kubeconfig: kubeconfig, Dir: o.Dir,
		ClientCerts: l.PKI.ClientDir, Activations: o.Activations,
	}); err != nil {
		return fail(err)
	}
	fnBin, err := functionBinary(o.Dir)
	if err != nil {
		return fail(err)
	}
	providerBin, err := testenv.BuildProvider(o.Dir)
	if err != nil {
		return fail(err)
	}
	rlog, err := os.Create(filepath.Join(o.Dir, "runtime.log"))
	if err != nil {
		return fail(err)
	}
	l.Runtime = &Runtime{
		Log:  rlog,
		Kube: kube,
		PKI:  l.PKI,
		Providers: map[string]Launcher{ProviderPackage: func(ctx context.Context, rev, _ string) (func(), error) {
			if err := bindProvider(ctx, kube, rev); err != nil {
				return nil, err
			}
			p, err := testenv.StartProvider(o.Dir, providerBin, providerKubeconfig, o.ProviderFlags...)
			if err != nil {
				return nil, err
			}
			return func() { p.Stop(30 * time.Second) }, nil
		}},
		Functions: map[string]Launcher{FunctionPackage: func(_ context.Context, _, endpoint string) (func(), error) {
			p, err := testenv.StartProcess(o.Dir, "function", fnBin, nil,
				"--address", endpoint, "--tls-certs-dir", l.PKI.ServerDir, "--metrics-address", "", "--debug")
			if err != nil {
				return nil, err
			}
			return func() { p.Stop(10 * time.Second) }, nil
		}},
	}
	rctx, cancel := context.WithCancel(context.Background())
	l.stop = cancel
	go func() {
		defer close(l.done)
		l.Runtime.Run(rctx)
	}()
	return l, nil
}

// PushPackages builds the three packages of this repository and pushes
// them to registry (host:port) as <name>:<version>.
func PushPackages(ctx context.Context, registry, version string) error {
	root := testenv.RepoRoot()
	for _, p := range []xpkgbuild.Options{
		{Root: filepath.Join(root, "package"), MainPackage: "./cmd/provider", ModuleDir: root, ExamplesDir: filepath.Join(root, "examples"), Version: version},
		{Root: filepath.Join(root, "package", "function"), MainPackage: "./cmd/function", ModuleDir: root, Version: version},
		{Root: filepath.Join(root, "package", "configuration"), Version: version},
	} {
		pkg, err := xpkgbuild.Build(ctx, p)
		if err != nil {
			return fmt.Errorf("cannot build %s: %w", p.Root, err)
		}
		if err := xpkgbuild.Push(ctx, pkg.Image, registry+"/"+pkg.Name+":"+version); err != nil {
			return fmt.Errorf("cannot push %s: %w", pkg.Name, err)
		}
	}
	return nil
}

// Install installs the Configuration package as docs/install.md tells
// users to (InstallPackages) from the loopback registry.
func (l *Local) Install(ctx context.Context, version string) error {
	return InstallPackages(ctx, l.Kube, l.Registry, version)
}

// InstallPackages installs the Configuration package as docs/install.md
// tells users to: the ImageConfigs and runtime config of examples/provider,
// the registry prefix pointed at registry (as at a private mirror), then
// the Configuration; the package manager resolves the provider and the
// function as its dependencies.
func InstallPackages(ctx context.Context, kube client.Client, registry, version string) error {
	dir := filepath.Join(testenv.RepoRoot(), "examples", "provider")
	// The examples' registry, in the rewrite and in the runtime config's
	// match of the rewritten name, becomes registry.
	const example = "registry.example.com/tencentcloud-network/"
	mirror := func(u *unstructured.Unstructured) {
		if _, found, _ := unstructured.NestedString(u.Object, "spec", "rewriteImage", "prefix"); found {
			_ = unstructured.SetNestedField(u.Object, registry+"/", "spec", "rewriteImage", "prefix")
		}
		matches, _, _ := unstructured.NestedSlice(u.Object, "spec", "matchImages")
		for _, m := range matches {
			if mm, ok := m.(map[string]any); ok {
				if p, ok := mm["prefix"].(string); ok && strings.HasPrefix(p, example) {
					mm["prefix"] = registry + "/" + strings.TrimPrefix(p, example)
				}
			}
		}
		if matches != nil {
			_ = unstructured.SetNestedSlice(u.Object, matches, "spec", "matchImages")
		}
	}
	for _, f := range []string{"runtimeconfig.yaml", "imageconfig.yaml"} {
		if _, err := testenv.Apply(ctx, kube, filepath.Join(dir, f), mirror); err != nil {
			return err
		}
	}
	c := &pkgv1.Configuration{
		ObjectMeta: metav1.ObjectMeta{Name: ConfigurationName},
		Spec: pkgv1.ConfigurationSpec{PackageSpec: pkgv1.PackageSpec{
			Package: Registry + "/" + ConfigurationName + ":" + version,
		}},
	}
	if err := kube.Create(ctx, c); err != nil && !kerrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// WaitHealthy waits until the three packages are Installed and Healthy.
func (l *Local) WaitHealthy(ctx context.Context, timeout time.Duration) error {
	return WaitPackagesHealthy(ctx, l.Kube, timeout)
}

// WaitPackagesHealthy waits until the three packages are Installed and
// Healthy.
func WaitPackagesHealthy(ctx context.Context, kube client.Client, timeout time.Duration) error {
	return testenv.Eventually(ctx, timeout, func() error {
		for _, p := range []pkgv1.Package{
			&pkgv1.Configuration{ObjectMeta: metav1.ObjectMeta{Name: ConfigurationName}},
			&pkgv1.Provider{ObjectMeta: metav1.ObjectMeta{Name: ProviderPackage}},
			&pkgv1.Function{ObjectMeta: metav1.ObjectMeta{Name: FunctionPackage}},
		} {
			if err := kube.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
				return err
			}
			for _, t := range []xpv2.ConditionType{pkgv1.TypeInstalled, pkgv1.TypeHealthy} {
				if c := p.GetCondition(t); c.Status != "True" {
					return fmt.Errorf("%T %s: %s=%s %s: %s", p, p.GetName(), t, c.Status, c.Reason, c.Message)
				}
			}
		}
		return nil
	})
}

// Stop stops the runtime's processes, core and the registry.
func (l *Local) Stop() {
	if l.stop != nil {
		l.stop()
		<-l.done
	}
	if l.Core != nil {
		l.Core.Stop()
	}
	if l.registry != nil {
		l.registry.Close()
	}
}

// bindProvider binds the ClusterRole Crossplane's RBAC manager makes for a
// provider revision (its CRDs, what the package's permissionRequests ask,
// and Crossplane's defaults) to the provider's identity, as core binds it
// to the runtime Deployment's ServiceAccount in a cluster.
func bindProvider(ctx context.Context, kube client.Client, rev string) error {
	role := "crossplane:provider:" + rev + ":system"
	if err := kube.Get(ctx, client.ObjectKey{Name: role}, &rbacv1.ClusterRole{}); err != nil {
		return fmt.Errorf("waiting for the RBAC manager's ClusterRole %s: %w", role, err)
	}
	b := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "xplocal:" + rev},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: ServiceAccount}},
	}
	if err := kube.Create(ctx, b); err != nil && !kerrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// CoreBinary builds (once, cached) Crossplane core and returns it with the
// folder of its CRDs.
func CoreBinary() (bin, crds string, err error) {
	bin, err = testenv.CrossplaneBinary("core")
	if err != nil {
		return "", "", err
	}
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/crossplane/crossplane/v2")
	cmd.Dir = filepath.Join(testenv.RepoRoot(), "cluster", "local", "crossplane", "core")
	out, err := cmd.Output()
	if err != nil {
		return "", "", fmt.Errorf("cannot find the crossplane module: %w", err)
	}
	return bin, filepath.Join(strings.TrimSpace(string(out)), "cluster", "crds"), nil
}

func functionBinary(dir string) (string, error) {
	out := filepath.Join(dir, "function")
	cmd := exec.Command("go", "build", "-o", out, "./cmd/function")
	cmd.Dir = testenv.RepoRoot()
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("cannot build the function: %w\n%s", err, b)
	}
	return out, nil
}
