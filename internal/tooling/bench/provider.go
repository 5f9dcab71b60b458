package bench

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	networkv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// poolName is the PortPool every Pod of the workload asks from.
const poolName = "bench"

// CloudCallModeFlag is the provider flag of the naive mode; a binary
// without it cannot run that mode.
const CloudCallModeFlag = "--cloud-call-mode"

// Provider is this repository's provider as a System.
type Provider struct {
	// Extra modes run after the built-in ones, e.g. a flag that trades
	// safety for speed measured beside the defaults.
	Extra []Mode

	bin   string
	modes []Mode
}

// Name implements System.
func (p *Provider) Name() string { return "provider-tencentcloud-network" }

// Build builds cmd/provider once and reads its flags, to tell whether the
// naive mode exists in this tree.
func (p *Provider) Build(_ context.Context, env *Env) error {
	bin, err := testenv.BuildProvider(env.Dir)
	if err != nil {
		return err
	}
	p.bin = bin
	help, _ := exec.Command(bin, "--help").CombinedOutput() //nolint:gosec // G204: the binary just built.
	naive := Mode{Name: "naive", Policy: clbv1alpha1.PolicyLeastUsed, Flags: []string{CloudCallModeFlag + "=naive"}}
	if !strings.Contains(string(help), strings.TrimPrefix(CloudCallModeFlag, "-")) {
		naive.Unavailable = "not available: the provider binary has no " + CloudCallModeFlag + " flag"
	}
	p.modes = []Mode{
		{Name: clbv1alpha1.PolicyLeastUsed, Policy: clbv1alpha1.PolicyLeastUsed},
		{Name: clbv1alpha1.PolicyInOrder, Policy: clbv1alpha1.PolicyInOrder},
		naive,
	}
	p.modes = append(p.modes, p.Extra...)
	return nil
}

// Modes implements System: LeastUsed and InOrder at the defaults, and the
// naive cloud-call mode.
func (p *Provider) Modes() []Mode { return p.modes }

// Start runs the provider with its default flags. Only the kubeconfig and
// free loopback ports for metrics and health are given (the defaults,
// :8080 and :8081, may be taken on a shared machine), metrics over plain
// HTTP, which the harness scrapes without a token.
func (p *Provider) Start(ctx context.Context, env *Env, r Run) (Instance, error) {
	metrics, err := testenv.FreeAddr()
	if err != nil {
		return nil, err
	}
	health, err := testenv.FreeAddr()
	if err != nil {
		return nil, err
	}
	args := append([]string{"--kubeconfig", env.KubeConfig, "--metrics-bind-address", metrics, "--metrics-secure=false", "--health-probe-bind-address", health}, r.Flags...)
	proc, err := testenv.StartProcess(env.Dir, "provider-"+r.Name, p.bin, nil, args...)
	if err != nil {
		return nil, err
	}
	inst := &process{Process: proc, metrics: "http://" + metrics + "/metrics"}
	if err := proc.WaitHTTP(ctx, "http://"+health+"/readyz", time.Minute); err != nil {
		inst.Stop(5 * time.Second)
		return nil, err
	}
	return inst, nil
}

// Prepare creates the namespace's ProviderConfig (the example, pointed at
// the run's emulator) and a PortPool over the pre-created load balancers,
// and waits until every load balancer has all its listeners.
func (p *Provider) Prepare(ctx context.Context, env *Env, r Run) error {
	return preparePool(ctx, env, r, portPool(r, r.Namespace, poolName))
}

// portPool is the run's PortPool named ns/name: the pre-created load
// balancers and ports of r.Cloud, r's policy, the namespace's
// ProviderConfig team-a.
func portPool(r Run, ns, name string) *clbv1alpha1.PortPool {
	pp := &clbv1alpha1.PortPool{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	policy := r.Policy
	pp.Spec.ForProvider = clbv1alpha1.PortPoolParameters{
		LoadBalancerIDs:  r.Cloud.LoadBalancerIDs,
		StartPort:        int64(r.Cloud.StartPort),
		EndPort:          int64(r.Cloud.EndPort),
		AllocationPolicy: &policy,
	}
	pp.Spec.ProviderConfigReference = &xpv2.ProviderConfigReference{Kind: "ProviderConfig", Name: "team-a"}
	return pp
}

// preparePool applies the ProviderConfig example (pointed at the run's
// emulator) into pp's namespace, creates pp and waits until every load
// balancer has all its listeners.
func preparePool(ctx context.Context, env *Env, r Run, pp *clbv1alpha1.PortPool) error {
	if err := testenv.ApplyTeamProviderConfig(ctx, env.Kube, pp.Namespace, r.Cloud.Endpoint); err != nil {
		return err
	}
	if err := env.Kube.Create(ctx, pp); err != nil {
		return err
	}
	return testenv.Eventually(ctx, 5*time.Minute, func() error {
		if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(pp), pp); err != nil {
			return err
		}
		lbs := pp.Status.AtProvider.LoadBalancers
		if len(lbs) != len(r.Cloud.LoadBalancerIDs) {
			return fmt.Errorf("pool %s: %d of %d load balancers in status", pp.Name, len(lbs), len(r.Cloud.LoadBalancerIDs))
		}
		for _, l := range lbs {
			if l.State != clbv1alpha1.PoolLBReady || l.ListenersReady != l.ListenersWanted {
				return fmt.Errorf("pool %s: load balancer %s %s, %d/%d listeners", pp.Name, l.ID, l.State, l.ListenersReady, l.ListenersWanted)
			}
		}
		return nil
	})
}

// Pod asks for one address on 7777 from the pool, by annotation.
func (p *Provider) Pod(r Run, name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: name,
			Annotations: map[string]string{podannotation.AnnotationPorts: "7777 " + poolName}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "server", Image: "example/server",
			Ports: []corev1.ContainerPort{{ContainerPort: 7777, Protocol: corev1.ProtocolTCP}}}}},
	}
}

// Published is the provider's own word to the Pod: its status annotation
// says Ready once every address forwards to it.
func (p *Provider) Published(pod *corev1.Pod) bool {
	return pod.Annotations[podannotation.AnnotationStatus] == podannotation.StatusReady &&
		pod.Annotations[podannotation.AnnotationAddresses] != ""
}

// providerKinds are the namespaced kinds a run leaves behind, in the order
// they are removed.
func providerKinds() []schema.GroupVersionKind {
	return []schema.GroupVersionKind{
		networkv1alpha1.PodAddressGroupVersionKind,
		clbv1alpha1.PortPoolGroupVersionKind,
		clbv1alpha1.LoadBalancerGroupVersionKind,
		{Group: "tencentcloud.m.crossplane.io", Version: "v1alpha1", Kind: "ProviderConfigUsage"},
		{Group: "tencentcloud.m.crossplane.io", Version: "v1alpha1", Kind: "ProviderConfig"},
	}
}

// Cleanup deletes the run's objects with their finalizers removed: the
// provider has stopped and the run's cloud is gone with it.
func (p *Provider) Cleanup(ctx context.Context, env *Env, r Run) error {
	return RemoveAll(ctx, env.Kube, r.Namespace, providerKinds()...)
}

// RemoveAll deletes every object of the kinds in ns, finalizers removed.
func RemoveAll(ctx context.Context, kube client.Client, ns string, kinds ...schema.GroupVersionKind) error {
	for _, gvk := range kinds {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := kube.List(ctx, l, client.InNamespace(ns)); err != nil {
			return fmt.Errorf("cannot list %s: %w", gvk.Kind, err)
		}
		for i := range l.Items {
			o := &l.Items[i]
			if len(o.GetFinalizers()) > 0 {
				patch := client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`))
				if err := kube.Patch(ctx, o, patch); err != nil && !kerrors.IsNotFound(err) {
					return err
				}
			}
			if err := kube.Delete(ctx, o); err != nil && !kerrors.IsNotFound(err) {
				return err
			}
		}
	}
	return nil
}

// process is a system's process started through testenv.
type process struct {
	*testenv.Process
	metrics string
}

func (p *process) PID() int           { return p.Process.PID() }
func (p *process) MetricsURL() string { return p.metrics }
func (p *process) Log() string        { return p.Process.Log }

// CreateOthers imports each of lbIDs as an Observe-only LoadBalancer:
// managed resources the provider keeps watching and polling beside the
// Pods, with no cloud writes.
func (p *Provider) CreateOthers(ctx context.Context, env *Env, r Run, lbIDs []string) error {
	var mu sync.Mutex
	var firstErr error
	work := make(chan int)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range work {
				cr := &clbv1alpha1.LoadBalancer{ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: fmt.Sprintf("other-%04d", i)}}
				meta.SetExternalName(cr, lbIDs[i])
				cr.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionObserve}
				cr.Spec.ProviderConfigReference = &xpv2.ProviderConfigReference{Kind: "ProviderConfig", Name: "team-a"}
				if err := env.Kube.Create(ctx, cr); err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
				}
			}
		})
	}
	for i := range lbIDs {
		work <- i
	}
	close(work)
	wg.Wait()
	return firstErr
}

// Managed counts the namespace's PodAddresses (their metadata only).
func (p *Provider) Managed(ctx context.Context, env *Env, r Run) (int, error) {
	l := &metav1.PartialObjectMetadataList{}
	l.SetGroupVersionKind(networkv1alpha1.SchemeGroupVersion.WithKind(networkv1alpha1.PodAddressKind + "List"))
	if err := env.Kube.List(ctx, l, client.InNamespace(r.Namespace)); err != nil {
		return 0, err
	}
	return len(l.Items), nil
}
