package podaddress

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv/suite"
)

// TestPoolConsent: a tenant's Pods (our syntax, bcs's pool.namespace and
// a policy) that name another team's pool get no port until the pool's
// spec.consumers lets their namespace in; a selector follows the
// namespace's labels; taking the consent back releases their bindings and
// deregisters their targets.
func TestPoolConsent(t *testing.T) {
	startProvider(t)
	ctx := context.Background()
	owner, tenant := namespace(t), namespace(t)
	l := lb(t, owner, "lb", "BGP")
	pp := pool(t, owner, "shared", []string{"lb"}, 31100, 31109)

	pol := &v1alpha1.PodAddressPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "rooms"},
		Spec: v1alpha1.PodAddressPolicySpec{
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "battle"}},
			Ports:    []v1alpha1.PortRequest{{Port: intstr.FromInt32(7777), Pools: []v1alpha1.PoolRef{{Namespace: owner, Name: "shared"}}}},
		},
	}
	if err := kube.Create(ctx, pol); err != nil {
		t.Fatal(err)
	}
	pods := map[string]map[string]string{
		"ours":   {ourPorts: "7777/TCP " + owner + "/shared"},
		"bcs":    {bcsEnabled: "true", bcsPorts: "shared." + owner + " TCP 7777"},
		"policy": nil,
	}
	i := 0
	for name, ann := range pods {
		i++
		pod(t, tenant, name, fmt.Sprintf("10.61.0.%d", i), ann)
	}
	// The owner's own Pods are always served.
	pod(t, owner, "own", "10.61.1.1", map[string]string{ourPorts: "7777 shared"})
	bound(t, owner, "own")

	refused := func(rule string) {
		t.Helper()
		for name := range pods {
			want := []string{"PortPool " + owner + "/shared", "does not serve namespace " + tenant, rule}
			eventually(t, name+" refused by "+rule, func() error {
				pa := &v1alpha1.PodAddress{}
				if err := kube.Get(ctx, client.ObjectKey{Namespace: tenant, Name: name}, pa); err != nil {
					return err
				}
				if pa.Status.State != v1alpha1.StatePoolNotAllowed {
					return errors.Errorf("state %q: %s", pa.Status.State, pa.Status.Message)
				}
				for _, w := range want {
					if !strings.Contains(pa.Status.Message, w) {
						return errors.Errorf("message %q does not say %q", pa.Status.Message, w)
					}
				}
				if len(pa.Status.Bindings) != 0 {
					return errors.Errorf("bindings %+v in a pool that does not serve it", pa.Status.Bindings)
				}
				return nil
			})
		}
		// Only the owner's Pod is a target of the pool's listeners.
		eventually(t, "only the owner's target in the cloud", func() error {
			if got := poolTargets(t, pp, lbID(l)); len(got) != 1 || got[0] != "10.61.1.1:7777" {
				return errors.Errorf("targets %v, want [10.61.1.1:7777]", got)
			}
			return nil
		})
	}
	refused("from: Same")
	podEvent(t, tenant, "ours", "PoolNotAllowed")
	eventually(t, "the Pod told NotReady", func() error {
		p := &corev1.Pod{}
		if err := kube.Get(ctx, client.ObjectKey{Namespace: tenant, Name: "ours"}, p); err != nil {
			return err
		}
		if p.Annotations[ourStatus] != "NotReady" {
			return errors.Errorf("%s = %q", ourStatus, p.Annotations[ourStatus])
		}
		return nil
	})
	eventually(t, "the policy says why", func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(pol), pol); err != nil {
			return err
		}
		if c := pol.Status.GetCondition("Ready"); c.Reason != v1alpha1.ReasonBindFailed || !strings.Contains(c.Message, v1alpha1.StatePoolNotAllowed) {
			return errors.Errorf("Ready %s %s: %s", c.Status, c.Reason, c.Message)
		}
		return nil
	})

	// A selector the tenant's namespace does not match yet.
	setConsumers(t, pp, &clbv1alpha1.PoolConsumers{Namespaces: clbv1alpha1.NamespaceConsent{
		From: clbv1alpha1.ConsentSelector, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "games"}},
	}})
	refused("selector team=games")

	// The admin labels the namespace: every request binds on the owner's
	// load balancer.
	labelNamespace(t, tenant, "team", "games")
	for name := range pods {
		pa := bound(t, tenant, name)
		if b := pa.Status.Bindings; len(b) != 1 || b[0].LoadBalancerID != lbID(l) || b[0].Pool != owner+"/shared" {
			t.Errorf("%s: bindings %+v", name, b)
		}
	}
	eventually(t, "four targets in the cloud", func() error {
		if got := poolTargets(t, pp, lbID(l)); len(got) != 4 {
			return errors.Errorf("targets %v, want 4", got)
		}
		return nil
	})

	// The label goes: the tenant's bindings are released, its targets
	// deregistered.
	labelNamespace(t, tenant, "team", "")
	refused("selector team=games")
	eventually(t, "the pool counts the owner's binding only", func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(pp), pp); err != nil {
			return err
		}
		if pp.Status.AtProvider.Allocated != 1 {
			return errors.Errorf("%d allocated", pp.Status.AtProvider.Allocated)
		}
		return nil
	})

	// from: All serves them again.
	setConsumers(t, pp, &clbv1alpha1.PoolConsumers{Namespaces: clbv1alpha1.NamespaceConsent{From: clbv1alpha1.ConsentAll}})
	for name := range pods {
		bound(t, tenant, name)
	}
}

// TestMaxBindingsPerNamespace: a pool open to every namespace bounds how
// many bindings each may hold; the Pod over it waits for a port of its
// namespace to free up.
func TestMaxBindingsPerNamespace(t *testing.T) {
	startProvider(t)
	owner, tenant := namespace(t), namespace(t)
	lb(t, owner, "lb", "BGP")
	pool(t, owner, "shared", []string{"lb"}, 31200, 31209, func(pp *clbv1alpha1.PortPool) {
		pp.Spec.Consumers = &clbv1alpha1.PoolConsumers{
			Namespaces:              clbv1alpha1.NamespaceConsent{From: clbv1alpha1.ConsentAll},
			MaxBindingsPerNamespace: clb.Ptr(int64(2)),
		}
	})
	var first *corev1.Pod
	for i := range 3 {
		p := pod(t, tenant, fmt.Sprintf("gs-%d", i), fmt.Sprintf("10.62.0.%d", i+1), map[string]string{ourPorts: "7777 " + owner + "/shared"})
		if i == 0 {
			first = p
			bound(t, tenant, p.Name)
		}
	}
	bound(t, tenant, "gs-1")
	pa := state(t, tenant, "gs-2", v1alpha1.StateNoPortAvailable)
	if !strings.Contains(pa.Status.Message, "maxBindingsPerNamespace") || !strings.Contains(pa.Status.Message, "namespace "+tenant+" hold 2") {
		t.Errorf("message %q does not name the limit", pa.Status.Message)
	}
	// The owner's namespace has a limit of its own, not shared with the
	// tenant's.
	for i := range 2 {
		pod(t, owner, fmt.Sprintf("own-%d", i), fmt.Sprintf("10.62.1.%d", i+1), map[string]string{ourPorts: "7777 shared"})
		bound(t, owner, fmt.Sprintf("own-%d", i))
	}
	pod(t, owner, "own-2", "10.62.1.3", map[string]string{ourPorts: "7777 shared"})
	state(t, owner, "own-2", v1alpha1.StateNoPortAvailable)
	deletePod(t, first)
	bound(t, tenant, "gs-2")
}

// setConsumers replaces a pool's spec.consumers.
func setConsumers(t *testing.T, pp *clbv1alpha1.PortPool, c *clbv1alpha1.PoolConsumers) {
	t.Helper()
	eventually(t, "set the consumers of "+pp.Name, func() error {
		if err := kube.Get(context.Background(), client.ObjectKeyFromObject(pp), pp); err != nil {
			return err
		}
		pp.Spec.Consumers = c
		return kube.Update(context.Background(), pp)
	})
}

// labelNamespace sets a label of a namespace; "" removes it.
func labelNamespace(t *testing.T, name, key, value string) {
	t.Helper()
	eventually(t, "label namespace "+name, func() error {
		ns := &corev1.Namespace{}
		if err := kube.Get(context.Background(), client.ObjectKey{Name: name}, ns); err != nil {
			return err
		}
		if ns.Labels == nil {
			ns.Labels = map[string]string{}
		}
		if value == "" {
			delete(ns.Labels, key)
		} else {
			ns.Labels[key] = value
		}
		return kube.Update(context.Background(), ns)
	})
}

// poolTargets lists "ip:port" of every target on the pool's TCP
// listeners of a load balancer.
func poolTargets(t *testing.T, pp *clbv1alpha1.PortPool, id string) []string {
	t.Helper()
	if err := kube.Get(context.Background(), client.ObjectKeyFromObject(pp), pp); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range pp.Status.AtProvider.LoadBalancers {
		if l.ID != id {
			continue
		}
		for key, lis := range l.Listeners {
			if strings.HasPrefix(key, "TCP/") {
				out = append(out, cloudTargets(id, lis)...)
			}
		}
	}
	return out
}

// TestPendingHold: a Pod that has not run on a node keeps its port in a
// pool of another namespace for --pending-hold after its creation, then
// gives it back (Pending, saying why, the port free again) while its own
// namespace's pool keeps its port; once it runs it binds in both again.
func TestPendingHold(t *testing.T) {
	const hold = 5 * time.Second
	startProvider(t, func(p *suite.ProviderSettings) { p.PodAddress.PendingHold = ptr.To(hold) })
	ctx := context.Background()
	owner, tenant := namespace(t), namespace(t)
	lb(t, owner, "lb", "BGP")
	shared := pool(t, owner, "shared", []string{"lb"}, 31400, 31409, func(pp *clbv1alpha1.PortPool) {
		pp.Spec.Consumers = &clbv1alpha1.PoolConsumers{Namespaces: clbv1alpha1.NamespaceConsent{From: clbv1alpha1.ConsentAll}}
	})
	lb(t, tenant, "own-lb", "BGP")
	pool(t, tenant, "own", []string{"own-lb"}, 31410, 31419)
	ports := []corev1.ContainerPort{{ContainerPort: 7777}, {ContainerPort: 7778}}
	p := pod(t, tenant, "waiting", "", map[string]string{ourPorts: "7777/TCP " + owner + "/shared; 7778/TCP own"}, ports...)

	// Pending is also the state before anything is allocated: the
	// message tells them apart.
	pa := &v1alpha1.PodAddress{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "waiting"}}
	eventually(t, "the Pod's ports in the shared pool given back", func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(pa), pa); err != nil {
			return err
		}
		if pa.Status.State != v1alpha1.StatePending {
			return errors.Errorf("state %q: %s", pa.Status.State, pa.Status.Message)
		}
		for _, w := range []string{"the Pod has not run on a node for 5s", owner + "/shared", "(--pending-hold)"} {
			if !strings.Contains(pa.Status.Message, w) {
				return errors.Errorf("message %q does not say %q", pa.Status.Message, w)
			}
		}
		return nil
	})
	eventually(t, "the shared pool's port given back, the own pool's kept", func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(pa), pa); err != nil {
			return err
		}
		if len(pa.Status.Bindings) != 1 || pa.Status.Bindings[0].Pool != tenant+"/own" {
			return errors.Errorf("bindings %+v, want only the own pool's", pa.Status.Bindings)
		}
		if err := kube.Get(ctx, client.ObjectKeyFromObject(shared), shared); err != nil {
			return err
		}
		if n := shared.Status.AtProvider.Allocated; n != 0 {
			return errors.Errorf("%d ports of the shared pool allocated", n)
		}
		return nil
	})

	setIP(t, p, "10.64.0.1")
	pa = bound(t, tenant, "waiting")
	if len(pa.Status.Bindings) != 2 {
		t.Errorf("bindings %+v once the Pod runs, want both pools'", pa.Status.Bindings)
	}
}
