package xplocal

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	pkgv1 "github.com/crossplane/crossplane/apis/v2/pkg/v1"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// Namespace is where core keeps package secrets.
const Namespace = "crossplane-system"

// A Launcher starts the process of one active package revision. For a
// function, endpoint is the loopback address it must serve on with the
// runtime's server certificate; for a provider it is empty. The returned
// stop ends the process.
type Launcher func(ctx context.Context, revision, endpoint string) (stop func(), err error)

// Runtime plays Crossplane's External package runtime: for every active
// revision of a package it knows, it provides the TLS secrets core waits
// for, starts the package's process, tells core the function's endpoint,
// and reports the runtime healthy, as the Deployment runtime would in a
// cluster.
type Runtime struct {
	Kube client.Client
	PKI  *testenv.PKI
	// Providers and Functions launch processes by package name (the name
	// of the Provider or Function object).
	Providers map[string]Launcher
	Functions map[string]Launcher
	// Log, if set, receives each error once when it first occurs.
	Log io.Writer

	last    string
	mu      sync.Mutex
	running map[string]func()
	ports   map[string]string
}

// Run keeps every known package revision served until ctx ends, then stops
// the processes it started.
func (r *Runtime) Run(ctx context.Context) {
	r.mu.Lock()
	r.running, r.ports = map[string]func(){}, map[string]string{}
	r.mu.Unlock()
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		// Errors are conflicts with core's own status writes or passing
		// API failures: the next tick tries again.
		if err := r.step(ctx); err != nil && r.Log != nil && err.Error() != r.last {
			r.last = err.Error()
			_, _ = fmt.Fprintf(r.Log, "%s %v\n", time.Now().Format(time.RFC3339), err)
		}
		select {
		case <-ctx.Done():
			r.mu.Lock()
			for _, stop := range r.running {
				stop()
			}
			r.running = map[string]func(){}
			r.mu.Unlock()
			return
		case <-t.C:
		}
	}
}

func (r *Runtime) step(ctx context.Context) error {
	var errs []error
	prs := &pkgv1.ProviderRevisionList{}
	if err := r.Kube.List(ctx, prs); err != nil {
		return err
	}
	for i := range prs.Items {
		pr := &prs.Items[i]
		launch, ok := r.Providers[pr.GetLabels()[pkgv1.LabelParentPackage]]
		if !ok {
			continue
		}
		errs = append(errs, r.serve(ctx, pr, launch, false))
	}
	frs := &pkgv1.FunctionRevisionList{}
	if err := r.Kube.List(ctx, frs); err != nil {
		return err
	}
	for i := range frs.Items {
		fr := &frs.Items[i]
		launch, ok := r.Functions[fr.GetLabels()[pkgv1.LabelParentPackage]]
		if !ok {
			continue
		}
		errs = append(errs, r.serve(ctx, fr, launch, true))
	}
	return errors.Join(errs...)
}

// revision is what serve needs of a Provider or Function revision.
type revision interface {
	pkgv1.PackageRevisionWithRuntime
}

func (r *Runtime) serve(ctx context.Context, rev revision, launch Launcher, function bool) error {
	name := rev.GetName()
	if rev.GetDesiredState() != pkgv1.PackageRevisionActive {
		r.stop(name)
		return nil
	}
	// First what core waits for before it installs the package's objects:
	// the TLS secrets and, for a function, where it listens. A provider's
	// RBAC exists only once its CRDs are installed, so launching waits
	// for that, not the other way round.
	// With the External runtime core leaves the revision's secret names
	// unset; name them as core's Deployment runtime would, after the
	// package. Providers need both, functions only the server secret.
	pkg := rev.GetLabels()[pkgv1.LabelParentPackage]
	server := pkgv1.GetSecretNameWithSuffix(pkg, pkgv1.TLSServerSecretNameSuffix)
	var clientSecret *string
	if !function {
		clientSecret = pkgv1.GetSecretNameWithSuffix(pkg, pkgv1.TLSClientSecretNameSuffix)
	}
	for _, s := range []*string{server, clientSecret} {
		if s == nil {
			continue
		}
		if err := r.secret(ctx, *s); err != nil {
			return err
		}
	}
	endpoint := ""
	if function {
		var err error
		if endpoint, err = r.port(name); err != nil {
			return err
		}
	}
	if err := r.patchStatus(ctx, rev, func(rev revision) {
		rev.SetObservedTLSServerSecretName(server)
		rev.SetObservedTLSClientSecretName(clientSecret)
		if fr, ok := rev.(*pkgv1.FunctionRevision); ok {
			fr.Status.Endpoint = endpoint
		}
	}); err != nil {
		return err
	}

	r.mu.Lock()
	_, started := r.running[name]
	r.mu.Unlock()
	if !started {
		stop, err := launch(ctx, name, endpoint)
		if err != nil {
			return errors.Join(fmt.Errorf("%s: %w", name, err), r.patchStatus(ctx, rev, func(rev revision) {
				rev.SetConditions(pkgv1.RuntimeUnhealthy().WithMessage(err.Error()))
			}))
		}
		r.mu.Lock()
		r.running[name] = stop
		r.mu.Unlock()
	}
	return r.patchStatus(ctx, rev, func(rev revision) { rev.SetConditions(pkgv1.RuntimeHealthy()) })
}

// patchStatus applies change to the revision's status when it changes
// anything, guarded by the revision's resource version: core writes the
// same status, and a conflict is retried on the next tick.
func (r *Runtime) patchStatus(ctx context.Context, rev revision, change func(revision)) error {
	orig, ok := rev.DeepCopyObject().(revision)
	if !ok {
		return fmt.Errorf("cannot copy %s", rev.GetName())
	}
	change(rev)
	if equality.Semantic.DeepEqual(orig, rev) {
		return nil
	}
	return r.Kube.Status().Patch(ctx, rev, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
}

func (r *Runtime) stop(name string) {
	r.mu.Lock()
	stop, ok := r.running[name]
	delete(r.running, name)
	r.mu.Unlock()
	if ok {
		stop()
	}
}

// secret writes the runtime's certificate into a TLS secret core reads
// (it injects tls.crt as the CA bundle of webhook configurations).
func (r *Runtime) secret(ctx context.Context, name string) error {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: name},
		Type:       corev1.SecretTypeTLS,
		Data: map[string][]byte{
			"tls.crt": r.PKI.ServerCert,
			"tls.key": r.PKI.ServerKey,
			"ca.crt":  r.PKI.CA,
		},
	}
	err := r.Kube.Create(ctx, s)
	if kerrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// port returns the endpoint of a function revision, the same for its
// whole life.
func (r *Runtime) port(rev string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.ports[rev]; ok {
		return e, nil
	}
	addr, err := testenv.FreeAddr()
	if err != nil {
		return "", err
	}
	r.ports[rev] = addr
	return r.ports[rev], nil
}
