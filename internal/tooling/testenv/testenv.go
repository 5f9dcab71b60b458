// Package testenv starts the provider's local control plane: a real etcd and
// kube-apiserver on loopback (through controller-runtime's envtest) with the
// provider's CRDs installed. Integration tests, the demo and benchmarks share it.
package testenv

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis"
)

// An Env is a running local control plane.
type Env struct {
	Config *rest.Config
	Client client.Client
	Scheme *kruntime.Scheme
	// KubeConfig is a kubeconfig for the admin user of the control plane.
	KubeConfig []byte

	env *envtest.Environment
}

// modulePath names this repository's go.mod.
const modulePath = "module github.com/tencentcloud-network/provider-tencentcloud-network\n"

// RepoRoot is the root of this repository: the nearest folder, from the
// working directory up, whose go.mod is this module's, so that it works
// from any package's test directory and from the root. Not found from the
// source file's path: builds are -trimpath (make sets GOFLAGS), so that a
// fresh clone elsewhere reuses the build cache, and that path is then the
// module's, not a folder. Failing that, the working directory.
func RepoRoot() string {
	wd, err := os.Getwd()
	if err != nil {
		return "."
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.HasPrefix(string(b), modulePath) {
			return dir
		}
		if filepath.Dir(dir) == dir {
			return wd
		}
	}
}

// Assets returns the folder holding etcd and kube-apiserver. It honours
// KUBEBUILDER_ASSETS and otherwise runs cluster/local/install.sh, which
// builds or installs what is missing into a cache outside the work tree.
// Where setpriv can, the folder returned holds wrappers that make etcd and
// kube-apiserver die with the process that started them (envtest offers no
// hook for that), so a killed test leaves no control plane behind.
func Assets() (string, error) {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir, nil
	}
	cmd := exec.Command("bash", filepath.Join(RepoRoot(), "cluster", "local", "install.sh"))
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("cannot install the local control plane binaries: %w", err)
	}
	return dieWithParentAssets(strings.TrimSpace(out.String()))
}

// dieWithParentAssets writes, beside the binaries of dir, a folder of
// scripts that exec each one under `setpriv --pdeathsig KILL` (and a
// garbage collector tuned for tests), and returns it; dir itself when
// setpriv is missing or too old.
func dieWithParentAssets(dir string) (string, error) {
	setpriv, err := exec.LookPath("setpriv")
	if err != nil || exec.Command(setpriv, "--pdeathsig", "KILL", "true").Run() != nil {
		return dir, nil
	}
	wrapped := filepath.Join(dir, "pdeathsig")
	if err := os.MkdirAll(wrapped, 0o755); err != nil {
		return "", err
	}
	for _, name := range []string{"etcd", "kube-apiserver", "kubectl"} {
		bin := filepath.Join(dir, name)
		if _, err := os.Stat(bin); err != nil {
			continue
		}
		// GOGC and GOMEMLIMIT: the test control planes collect garbage
		// five times less often, under a soft cap of 1.5 GiB each. make
		// test runs up to six of them on 2 cores, and their collector was a
		// large part of what kept the cores busy.
		script := fmt.Sprintf("#!/bin/sh\nGOGC=400 GOMEMLIMIT=1536MiB exec %s --pdeathsig KILL -- %s \"$@\"\n", setpriv, bin)
		tmp := filepath.Join(wrapped, name+fmt.Sprintf(".%d", os.Getpid()))
		if err := os.WriteFile(tmp, []byte(script), 0o755); err != nil {
			return "", err
		}
		// Renamed into place: parallel test packages write the same file.
		if err := os.Rename(tmp, filepath.Join(wrapped, name)); err != nil {
			return "", err
		}
	}
	return wrapped, nil
}

// An Option changes how Start sets up the control plane.
type Option func(*envtest.Environment)

// WithCRDs installs only these CRD files instead of every CRD in
// package/crds, as a cluster would where Crossplane activated only some of
// the provider's kinds (safe-start).
func WithCRDs(paths ...string) Option {
	return func(e *envtest.Environment) {
		e.CRDDirectoryPaths = paths
	}
}

// ForNode sets the API server up as a cluster with a node needs it. Pods
// reach it through the kubernetes Service (certDir is filled by
// NodeCerts: its serving certificate names the Service's address and the
// node's IP, which it advertises), it listens on every address (Pods are
// not on loopback), and the ServiceAccount admission plugin is on (envtest
// turns it off) so Pods get their ServiceAccount's token mounted.
func ForNode(certs *NodeCerts) Option {
	return func(e *envtest.Environment) {
		if e.ControlPlane.APIServer == nil {
			e.ControlPlane.APIServer = &envtest.APIServer{}
		}
		s := e.ControlPlane.APIServer
		s.CertDir = certs.Dir
		s.CA = certs.CA
		args := s.Configure()
		args.Set("disable-admission-plugins", "")
		args.Set("bind-address", "0.0.0.0")
		args.Set("advertise-address", certs.Advertise.String())
		// The kubelet by its InternalIP (resolving the node's name would
		// ask the machine's DNS servers), with a certificate it trusts.
		args.Set("kubelet-preferred-address-types", "InternalIP")
		args.Set("kubelet-client-certificate", filepath.Join(certs.Dir, "kubelet-client.crt"))
		args.Set("kubelet-client-key", filepath.Join(certs.Dir, "kubelet-client.key"))
	}
}

// Start starts etcd and kube-apiserver and installs the CRDs in
// package/crds. Call Stop when done.
func Start(opts ...Option) (*Env, error) {
	assets, err := Assets()
	if err != nil {
		return nil, err
	}
	s := kruntime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := apis.AddToScheme(s); err != nil {
		return nil, err
	}
	e := &envtest.Environment{
		BinaryAssetsDirectory:    assets,
		CRDDirectoryPaths:        []string{filepath.Join(RepoRoot(), "package", "crds")},
		ErrorIfCRDPathMissing:    true,
		Scheme:                   s,
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
	}
	for _, o := range opts {
		o(e)
	}
	cfg, err := e.Start()
	if err != nil {
		return nil, fmt.Errorf("cannot start the local control plane: %w", err)
	}
	env := &Env{Config: cfg, Scheme: s, env: e}
	if env.Client, err = client.New(cfg, client.Options{Scheme: s}); err != nil {
		_ = e.Stop()
		return nil, err
	}
	if env.KubeConfig, err = kubeconfig(e); err != nil {
		_ = e.Stop()
		return nil, err
	}
	// The provider's namespace, as installing Crossplane makes it: the
	// provider keeps its records key there.
	if err := env.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ProviderSANamespace}}); err != nil && !kerrors.IsAlreadyExists(err) {
		_ = e.Stop()
		return nil, err
	}
	return env, nil
}

// kubeconfig asks envtest for an admin user and renders its kubeconfig.
func kubeconfig(e *envtest.Environment) ([]byte, error) {
	u, err := e.ControlPlane.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return nil, fmt.Errorf("cannot add the admin user: %w", err)
	}
	return u.KubeConfig()
}

// UserKubeConfig returns a kubeconfig for a user authenticated by a client
// certificate, with only the permissions RBAC gives name and groups. A
// ServiceAccount's permissions are tested with its user name,
// system:serviceaccount:<namespace>:<name>.
func (e *Env) UserKubeConfig(name string, groups ...string) ([]byte, error) {
	u, err := e.env.ControlPlane.AddUser(envtest.User{Name: name, Groups: groups}, nil)
	if err != nil {
		return nil, fmt.Errorf("cannot add user %s: %w", name, err)
	}
	return u.KubeConfig()
}

// CertDir is the API server's certificate folder, which holds the key
// ServiceAccount tokens are signed with (sa-signer.key).
func (e *Env) CertDir() string { return e.env.ControlPlane.APIServer.CertDir }

// Stop stops the control plane and removes its data.
func (e *Env) Stop() error { return e.env.Stop() }

// Eventually polls fn until it returns nil or the timeout passes, and then
// returns fn's last error. Tests use it to wait for controllers.
func Eventually(ctx context.Context, timeout time.Duration, fn func() error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		err := fn()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("still failing after %s: %w", timeout, err)
		case <-t.C:
		}
	}
}
