package reliability

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// portsAnnotation asks for public addresses (docs/pod-addresses.md).
const portsAnnotation = "network.tencentcloud.crossplane.io/ports"

// lbs creates n LoadBalancers that use ref and waits until they are Ready;
// it returns their names and cloud ids.
func lbs(t *testing.T, ns string, n int, ref *xpv2.ProviderConfigReference) (names, ids []string) {
	t.Helper()
	var crs []*clbv1alpha1.LoadBalancer
	for i := range n {
		cr := &clbv1alpha1.LoadBalancer{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("lb-%d", i)}}
		cr.Spec.ForProvider.Type = clb.Ptr("OPEN")
		cr.Spec.ProviderConfigReference = ref
		if err := kube.Create(context.Background(), cr); err != nil {
			t.Fatal(err)
		}
		crs = append(crs, cr)
	}
	for _, cr := range crs {
		eventually(t, cr.Name+" Ready", func() error { return ready(cr) })
		names, ids = append(names, cr.Name), append(ids, meta.GetExternalName(cr))
	}
	return names, ids
}

// ready reads mg and says why it is not Ready.
func ready(mg interface {
	client.Object
	GetCondition(xpv2.ConditionType) xpv2.Condition
},
) error {
	if err := kube.Get(context.Background(), client.ObjectKeyFromObject(mg), mg); err != nil {
		return err
	}
	if c := mg.GetCondition(xpv2.TypeReady); c.Status != corev1.ConditionTrue {
		return errors.Errorf("%s: Ready=%s %s; Synced: %s", mg.GetName(), c.Status, c.Message, mg.GetCondition(xpv2.TypeSynced).Message)
	}
	return nil
}

// pool creates a PortPool over the named LoadBalancers and waits until
// every load balancer has all its listeners.
func pool(t *testing.T, ns, name string, ref *xpv2.ProviderConfigReference, lbNames []string, start, end int64, protocols []string, mods ...func(*clbv1alpha1.PortPool)) {
	t.Helper()
	pp := &clbv1alpha1.PortPool{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: clbv1alpha1.PortPoolSpec{ForProvider: clbv1alpha1.PortPoolParameters{
			StartPort: start, EndPort: end, Protocols: protocols,
		}},
	}
	pp.Spec.ProviderConfigReference = ref
	for _, n := range lbNames {
		pp.Spec.ForProvider.LoadBalancerIDRefs = append(pp.Spec.ForProvider.LoadBalancerIDRefs, xpv2.NamespacedReference{Name: n})
	}
	for _, m := range mods {
		m(pp)
	}
	if err := kube.Create(context.Background(), pp); err != nil {
		t.Fatal(err)
	}
	eventually(t, "pool "+name+" ready", func() error { return poolComplete(pp, len(lbNames)) })
}

// poolComplete reads pp and says why it does not have n load balancers
// with all their listeners.
func poolComplete(pp *clbv1alpha1.PortPool, n int) error {
	if err := kube.Get(context.Background(), client.ObjectKeyFromObject(pp), pp); err != nil {
		return err
	}
	if got := len(pp.Status.AtProvider.LoadBalancers); got != n {
		return errors.Errorf("%d load balancers in status, want %d", got, n)
	}
	for _, l := range pp.Status.AtProvider.LoadBalancers {
		if l.State != clbv1alpha1.PoolLBReady || l.ListenersReady != l.ListenersWanted {
			return errors.Errorf("load balancer %s: %s, %d/%d listeners", l.ID, l.State, l.ListenersReady, l.ListenersWanted)
		}
	}
	return nil
}

// podAddresses lists the PodAddresses of ns by name.
func podAddresses(ns string) (map[string]v1alpha1.PodAddress, error) {
	l := &v1alpha1.PodAddressList{}
	if err := kube.List(context.Background(), l, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	out := make(map[string]v1alpha1.PodAddress, len(l.Items))
	for _, pa := range l.Items {
		out[pa.Name] = pa
	}
	return out, nil
}

// allBound says why the PodAddresses of ns are not exactly n, all Bound.
func allBound(ns string, n int) error {
	pas, err := podAddresses(ns)
	if err != nil {
		return err
	}
	var not []string
	for name, pa := range pas {
		if pa.Status.State != v1alpha1.StateBound {
			not = append(not, fmt.Sprintf("%s %s %q", name, pa.Status.State, pa.Status.Message))
		}
	}
	if len(pas) != n || len(not) != 0 {
		sort.Strings(not)
		return errors.Errorf("%d PodAddresses, %d not Bound (want %d Bound): %s", len(pas), len(not), n, strings.Join(first(not, 5), "; "))
	}
	return nil
}

func first(s []string, n int) []string { return s[:min(n, len(s))] }

// countBound counts the Bound PodAddresses of ns.
func countBound(ns string) int {
	pas, err := podAddresses(ns)
	if err != nil {
		return 0
	}
	n := 0
	for _, pa := range pas {
		if pa.Status.State == v1alpha1.StateBound {
			n++
		}
	}
	return n
}

// bindingsOf renders each Pod's bindings, to compare them before and after
// a crash: pool, protocol, load balancer, port, listeners and address.
func bindingsOf(pas map[string]v1alpha1.PodAddress) map[string]string {
	out := map[string]string{}
	for name, pa := range pas {
		var bs []string
		for _, b := range pa.Status.Bindings {
			bs = append(bs, fmt.Sprintf("%s %s→%s %s:%d %v %s", b.Pool, b.Protocol, b.TargetIP, b.LoadBalancerID, b.Port, b.ListenerIDs, b.Address))
		}
		sort.Strings(bs)
		out[name] = strings.Join(bs, "; ")
	}
	return out
}

// duplicates lists every listener and every address held by more than one
// Pod.
func duplicates(pas map[string]v1alpha1.PodAddress) []string {
	holders := map[string][]string{}
	for name, pa := range pas {
		for _, b := range pa.Status.Bindings {
			for proto, id := range b.ListenerIDs {
				k := fmt.Sprintf("listener %s (%s/%d on %s)", id, proto, b.Port, b.LoadBalancerID)
				holders[k] = append(holders[k], name)
			}
			if b.Address != "" {
				k := fmt.Sprintf("address %s/%s", b.Address, b.Protocol)
				holders[k] = append(holders[k], name)
			}
		}
	}
	var out []string
	for k, names := range holders {
		if len(names) > 1 {
			sort.Strings(names)
			out = append(out, fmt.Sprintf("%s held by %v", k, names))
		}
	}
	sort.Strings(out)
	return out
}

// A cloudShape is what the emulator holds: load balancer ids, listener ids
// and targets ("listener ip:port").
type cloudShape struct {
	lbs, listeners, targets map[string]bool
}

func shapeOf(emu *emulator.Emulator) cloudShape {
	s := cloudShape{lbs: map[string]bool{}, listeners: map[string]bool{}, targets: map[string]bool{}}
	for _, lb := range emu.Inventory().LoadBalancers {
		s.lbs[lb.ID] = true
		for _, l := range lb.Listeners {
			s.listeners[l.ID] = true
			for _, tg := range l.Targets {
				s.targets[fmt.Sprintf("%s %s:%d", l.ID, tg.IP, tg.Port)] = true
			}
		}
	}
	return s
}

// expectedTargets is what the cloud must hold for pas: one target per
// listener of each binding, the Pod's IP and port.
func expectedTargets(pas map[string]v1alpha1.PodAddress) map[string]bool {
	out := map[string]bool{}
	for _, pa := range pas {
		for _, b := range pa.Status.Bindings {
			for _, id := range b.ListenerIDs {
				out[fmt.Sprintf("%s %s:%d", id, b.TargetIP, b.TargetPort)] = true
			}
		}
	}
	return out
}

// diff compares the cloud with what should exist: the load balancers and
// listeners of base, and the targets want. It returns the leaks (what is
// there and should not be) and the rest of the differences (what is
// missing).
func diff(got, base cloudShape, want map[string]bool) (leaks, missing []string) {
	cmp := func(kind string, got, want map[string]bool) {
		for k := range got {
			if !want[k] {
				leaks = append(leaks, kind+" "+k)
			}
		}
		for k := range want {
			if !got[k] {
				missing = append(missing, kind+" "+k)
			}
		}
	}
	cmp("load balancer", got.lbs, base.lbs)
	cmp("listener", got.listeners, base.listeners)
	cmp("target", got.targets, want)
	sort.Strings(leaks)
	sort.Strings(missing)
	return leaks, missing
}

// matches waits until the cloud holds exactly base's load balancers and
// listeners and the targets of the PodAddresses of ns, and returns the
// leaks found if it never does.
func matches(t *testing.T, ns string, emu *emulator.Emulator, base cloudShape) (leaks []string) {
	t.Helper()
	var missing []string
	err := eventuallyErr(func() error {
		pas, err := podAddresses(ns)
		if err != nil {
			return err
		}
		leaks, missing = diff(shapeOf(emu), base, expectedTargets(pas))
		if len(leaks)+len(missing) != 0 {
			return errors.Errorf("%d leaked: %v; %d missing: %v", len(leaks), first(leaks, 5), len(missing), first(missing, 5))
		}
		return nil
	})
	if err != nil {
		t.Errorf("the cloud does not hold what should exist: %v", err)
	}
	return leaks
}

func eventuallyErr(fn func() error) error {
	return testenv.Eventually(context.Background(), wait, fn)
}

// gamePod is Pod i of a game server asking for one TCP address from pool.
func gamePod(ns string, i int, pool string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("gs-%03d", i),
			Annotations: map[string]string{portsAnnotation: "7777 " + pool}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "server", Image: "example/server",
			Ports: []corev1.ContainerPort{{ContainerPort: 7777, Protocol: corev1.ProtocolTCP}}}}},
	}
}

// kept reports, as test errors, every PodAddress of was whose binding is
// not the same in pas (across what), and every address two Pods hold. It
// returns how many moved and the duplicates.
func kept(t *testing.T, was map[string]string, pas map[string]v1alpha1.PodAddress, what string) (moved int, dups []string) {
	t.Helper()
	now := bindingsOf(pas)
	for name, b := range was {
		if now[name] != b {
			moved++
			t.Errorf("%s got another address across %s:\nbefore %s\nafter  %s", name, what, b, now[name])
		}
	}
	dups = duplicates(pas)
	for _, d := range dups {
		t.Error(d)
	}
	return moved, dups
}
