package argocd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// Namespace is where Argo CD keeps its settings and Applications, as its
// install manifests do.
const Namespace = "argocd"

// Options say how Start runs Argo CD.
type Options struct {
	// Binary is the argocd binary (Build).
	Binary string
	// Kubeconfig is a kubeconfig file the application-controller uses
	// for the cluster it runs in (the "in-cluster" destination,
	// https://kubernetes.default.svc) and for its own objects.
	Kubeconfig string
	// Dir holds the processes' logs and state.
	Dir string
	// Settings are keys added to argocd-cm, e.g. health scripts
	// (resource.customizations.health.<group>_<Kind>).
	Settings map[string]string
	// Resync is how often the controller compares every Application
	// with Git (--app-resync); 0 means 10 seconds.
	Resync time.Duration
	// Wait bounds each component's start; 0 means 2 minutes.
	Wait time.Duration
}

// ArgoCD is Argo CD running beside the control plane: Redis, the
// repo-server and the application-controller, each a process that dies
// with the one that started it (testenv.StartProcess).
type ArgoCD struct {
	procs []*testenv.Process
}

// Start applies Argo CD's CRDs, its settings (argocd-cm, argocd-secret)
// and the default AppProject (which Argo CD's API server would make; it
// does not run here), then starts Redis, the repo-server and the
// application-controller. The API server, Dex, the ApplicationSet and
// notifications controllers are not run: an Application is synced and
// reports its status without them.
func Start(ctx context.Context, kube client.Client, o Options) (_ *ArgoCD, err error) {
	if o.Resync == 0 {
		o.Resync = 10 * time.Second
	}
	if o.Wait == 0 {
		o.Wait = 2 * time.Minute
	}
	a := &ArgoCD{}
	defer func() {
		if err != nil {
			a.Stop()
		}
	}()
	if err := installCRDs(ctx, kube, o.Wait); err != nil {
		return nil, err
	}
	if err := settings(ctx, kube, o.Settings); err != nil {
		return nil, err
	}
	redisBin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("redis-server: %w (cluster/local/redis.sh installs it)", err)
	}
	redisAddr, err := testenv.FreeAddr()
	if err != nil {
		return nil, err
	}
	host, port, _ := net.SplitHostPort(redisAddr)
	redis, err := a.start(o.Dir, "redis", redisBin, nil,
		"--bind", host, "--port", port, "--save", "", "--appendonly", "no", "--dir", o.Dir)
	if err != nil {
		return nil, err
	}
	if err := waitTCP(ctx, redis, redisAddr, o.Wait); err != nil {
		return nil, err
	}

	// The repo-server renders the Git folder of each Application. Its
	// image's paths (/app/config/..., /home/argocd/...) are pointed into
	// Dir; GnuPG is off, as no commit is signed.
	repoAddr, err := testenv.FreeAddr()
	if err != nil {
		return nil, err
	}
	paths := map[string]string{}
	for _, p := range []string{"tls", "ssh", "gpg", "plugins", "tmp"} {
		paths[p] = filepath.Join(o.Dir, "argocd-"+p)
		if err := os.MkdirAll(paths[p], 0o700); err != nil {
			return nil, err
		}
	}
	repoEnv := []string{
		"ARGOCD_BINARY_NAME=argocd-repo-server", "ARGOCD_GPG_ENABLED=false",
		"ARGOCD_TLS_DATA_PATH=" + paths["tls"], "ARGOCD_SSH_DATA_PATH=" + paths["ssh"],
		"ARGOCD_GNUPGHOME=" + paths["gpg"], "ARGOCD_PLUGINSOCKFILEPATH=" + paths["plugins"], "TMPDIR=" + paths["tmp"],
		// Its Git credential helper's socket, else a fixed path in /tmp.
		"ARGOCD_ASK_PASS_SOCK=" + filepath.Join(paths["tmp"], "askpass.sock"),
	}
	_, repoPort, _ := net.SplitHostPort(repoAddr)
	repoMetrics, err := freePort()
	if err != nil {
		return nil, err
	}
	repo, err := a.start(o.Dir, "argocd-repo-server", o.Binary, repoEnv,
		"--address", "127.0.0.1", "--port", repoPort, "--metrics-address", "127.0.0.1", "--metrics-port", repoMetrics,
		"--redis", redisAddr, "--disable-tls", "--logformat", "text")
	if err != nil {
		return nil, err
	}
	if err := waitTCP(ctx, repo, repoAddr, o.Wait); err != nil {
		return nil, err
	}

	ctrlMetrics, err := freePort()
	if err != nil {
		return nil, err
	}
	// Outside a Pod the "in-cluster" destination is the kubeconfig's
	// cluster only with ARGOCD_FAKE_IN_CLUSTER (Argo CD's own way to run
	// the controller locally); else it would look for a Pod's token.
	ctrl, err := a.start(o.Dir, "argocd-application-controller", o.Binary,
		[]string{"ARGOCD_BINARY_NAME=argocd-application-controller", "ARGOCD_FAKE_IN_CLUSTER=true", "KUBECONFIG=" + o.Kubeconfig},
		"--kubeconfig", o.Kubeconfig, "--namespace", Namespace,
		"--repo-server", repoAddr, "--repo-server-plaintext", "--redis", redisAddr,
		"--metrics-port", ctrlMetrics, "--app-resync", fmt.Sprint(int(o.Resync.Seconds())), "--app-resync-jitter", "0",
		"--status-processors", "4", "--operation-processors", "4", "--logformat", "text",
		// Each resource's health in the Application's status.resources,
		// where a client without Argo CD's API server reads it (v3 keeps
		// it out by default).
		"--persist-resource-health")
	if err != nil {
		return nil, err
	}
	if err := ctrl.WaitHTTP(ctx, "http://127.0.0.1:"+ctrlMetrics+"/metrics", o.Wait); err != nil {
		return nil, fmt.Errorf("application-controller: %w", err)
	}
	return a, nil
}

// Up builds Argo CD (once per version; the build's output goes to log),
// starts it against the cluster of kubeconfig with settings, and serves an
// empty Git repository, all under dir. The caller stops both (Stop, Close).
func Up(ctx context.Context, kube client.Client, kubeconfig []byte, dir string, settings map[string]string, wait time.Duration, log io.Writer) (*ArgoCD, *Repo, error) {
	bin, err := Build(ctx, log)
	if err != nil {
		return nil, nil, err
	}
	file := filepath.Join(dir, "argocd-kubeconfig")
	if err := os.WriteFile(file, kubeconfig, 0o600); err != nil {
		return nil, nil, err
	}
	argoDir := filepath.Join(dir, "argocd")
	if err := os.MkdirAll(argoDir, 0o700); err != nil {
		return nil, nil, err
	}
	a, err := Start(ctx, kube, Options{Binary: bin, Kubeconfig: file, Dir: argoDir, Settings: settings, Wait: wait})
	if err != nil {
		return nil, nil, err
	}
	repo, err := ServeRepo(ctx, filepath.Join(dir, "git"))
	if err != nil {
		a.Stop()
		return nil, nil, err
	}
	return a, repo, nil
}

func (a *ArgoCD) start(dir, name, bin string, env []string, args ...string) (*testenv.Process, error) {
	p, err := testenv.StartProcess(dir, name, bin, env, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	a.procs = append(a.procs, p)
	return p, nil
}

// Stop stops the processes, the controller first.
func (a *ArgoCD) Stop() {
	for i := len(a.procs) - 1; i >= 0; i-- {
		a.procs[i].Stop(10 * time.Second)
	}
	a.procs = nil
}

// installCRDs creates Argo CD's Application and AppProject CRDs from the
// module and waits until they are served.
func installCRDs(ctx context.Context, kube client.Client, wait time.Duration) error {
	files, err := CRDFiles(ctx)
	if err != nil {
		return err
	}
	for _, f := range files {
		objs, err := testenv.Apply(ctx, kube, f)
		if err != nil {
			return err
		}
		for _, o := range objs {
			if err := testenv.Eventually(ctx, wait, func() error {
				crd := &apiextensionsv1.CustomResourceDefinition{}
				if err := kube.Get(ctx, client.ObjectKey{Name: o.GetName()}, crd); err != nil {
					return err
				}
				for _, c := range crd.Status.Conditions {
					if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
						return nil
					}
				}
				return fmt.Errorf("CRD %s not established", o.GetName())
			}); err != nil {
				return err
			}
		}
	}
	return nil
}

// settings makes the namespace, argocd-cm (annotation tracking, as
// Crossplane's guide asks, and extra), argocd-secret (the key Argo CD
// signs with, random) and the default AppProject, which allows every
// source, destination and kind.
func settings(ctx context.Context, kube client.Client, extra map[string]string) error {
	if err := kube.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}); err != nil && !kerrors.IsAlreadyExists(err) {
		return err
	}
	part := map[string]string{"app.kubernetes.io/part-of": "argocd"}
	data := settingsData(extra)
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return err
	}
	project := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "AppProject",
		"metadata": map[string]any{"name": "default", "namespace": Namespace},
		"spec": map[string]any{
			"sourceRepos":              []any{"*"},
			"destinations":             []any{map[string]any{"server": "*", "namespace": "*"}},
			"clusterResourceWhitelist": []any{map[string]any{"group": "*", "kind": "*"}},
		},
	}}
	for _, o := range []client.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: "argocd-cm", Labels: part}, Data: data},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: "argocd-secret", Labels: part},
			StringData: map[string]string{"server.secretkey": hex.EncodeToString(key)}},
		project,
	} {
		if err := kube.Create(ctx, o); err != nil {
			return fmt.Errorf("create %T %s: %w", o, o.GetName(), err)
		}
	}
	return nil
}

// settingsData is argocd-cm's data: annotation tracking, as Crossplane's
// guide asks, and extra.
func settingsData(extra map[string]string) map[string]string {
	data := map[string]string{"application.resourceTrackingMethod": "annotation"}
	for k, v := range extra {
		data[k] = v
	}
	return data
}

// SetSettings replaces the keys Start added to argocd-cm with extra. The
// running application-controller watches argocd-cm: a change of its
// resource customizations invalidates its cache of the cluster, and each
// comparison after that reads health with the new scripts.
func SetSettings(ctx context.Context, kube client.Client, extra map[string]string) error {
	cm := &corev1.ConfigMap{}
	if err := kube.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: "argocd-cm"}, cm); err != nil {
		return err
	}
	cm.Data = settingsData(extra)
	return kube.Update(ctx, cm)
}

func freePort() (string, error) {
	addr, err := testenv.FreeAddr()
	if err != nil {
		return "", err
	}
	_, port, err := net.SplitHostPort(addr)
	return port, err
}

// waitTCP waits until addr accepts connections, failing early if p exits.
func waitTCP(ctx context.Context, p *testenv.Process, addr string, wait time.Duration) error {
	return testenv.Eventually(ctx, wait, func() error {
		if p.Exited() {
			return errors.New("exited; see " + p.Log)
		}
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return err
		}
		return c.Close()
	})
}
