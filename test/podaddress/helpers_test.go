package podaddress

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
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

const wait = 90 * time.Second

func namespace(t testing.TB) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "pa-"}}
	if err := kube.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	clearAtEnd(t, ns.Name)
	return ns.Name
}

// clearAtEnd empties ns when the test ends, before its provider stops:
// later tests' providers need not reconcile this test's objects.
func clearAtEnd(t testing.TB, ns string) {
	t.Cleanup(func() {
		if err := env.ClearNamespace(context.Background(), ns); err != nil {
			t.Error(err)
		}
	})
}

func eventually(t testing.TB, what string, fn func() error) {
	t.Helper()
	if err := testenv.Eventually(context.Background(), wait, fn); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// lb creates a LoadBalancer with the given ISP and waits until it is Ready.
func lb(t testing.TB, ns, name, isp string) *clbv1alpha1.LoadBalancer {
	t.Helper()
	cr := &clbv1alpha1.LoadBalancer{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       clbv1alpha1.LoadBalancerSpec{ForProvider: clbv1alpha1.LoadBalancerParameters{Type: clb.Ptr("OPEN"), VipIsp: clb.Ptr(isp)}},
	}
	if err := kube.Create(context.Background(), cr); err != nil {
		t.Fatal(err)
	}
	waitReady(t, cr)
	return cr
}

func waitReady(t testing.TB, mg interface {
	client.Object
	GetCondition(xpv2.ConditionType) xpv2.Condition
},
) {
	t.Helper()
	eventually(t, mg.GetName()+" Ready", func() error {
		if err := kube.Get(context.Background(), client.ObjectKeyFromObject(mg), mg); err != nil {
			return err
		}
		if c := mg.GetCondition(xpv2.TypeReady); c.Status != corev1.ConditionTrue {
			return errors.Errorf("Ready=%s %s; Synced: %s", c.Status, c.Message, mg.GetCondition(xpv2.TypeSynced).Message)
		}
		return nil
	})
}

// pool creates a PortPool over the named LoadBalancers and waits until
// every load balancer has all its listeners.
func pool(t testing.TB, ns, name string, lbNames []string, start, end int64, mods ...func(*clbv1alpha1.PortPool)) *clbv1alpha1.PortPool {
	t.Helper()
	pp := &clbv1alpha1.PortPool{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: clbv1alpha1.PortPoolSpec{ForProvider: clbv1alpha1.PortPoolParameters{
			StartPort: start,
			EndPort:   end,
		}},
	}
	for _, n := range lbNames {
		pp.Spec.ForProvider.LoadBalancerIDRefs = append(pp.Spec.ForProvider.LoadBalancerIDRefs, xpv2.NamespacedReference{Name: n})
	}
	for _, m := range mods {
		m(pp)
	}
	if err := kube.Create(context.Background(), pp); err != nil {
		t.Fatal(err)
	}
	eventually(t, "pool "+name+" ready", func() error {
		if err := kube.Get(context.Background(), client.ObjectKeyFromObject(pp), pp); err != nil {
			return err
		}
		if len(pp.Status.AtProvider.LoadBalancers) == 0 {
			return errors.New("no load balancers in status")
		}
		for _, l := range pp.Status.AtProvider.LoadBalancers {
			if l.State != "Ready" || l.ListenersReady != l.ListenersWanted {
				return errors.Errorf("load balancer %s: %s, %d/%d listeners", l.ID, l.State, l.ListenersReady, l.ListenersWanted)
			}
		}
		return nil
	})
	return pp
}

// pod creates a Pod with one container port and the given annotations,
// then sets its IP as a kubelet would.
func pod(t testing.TB, ns, name, ip string, annotations map[string]string, ports ...corev1.ContainerPort) *corev1.Pod {
	t.Helper()
	if len(ports) == 0 {
		ports = []corev1.ContainerPort{{Name: "game", ContainerPort: 7777, Protocol: corev1.ProtocolTCP}}
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations, Labels: map[string]string{"app": "battle"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "server", Image: "example/server", Ports: ports}}},
	}
	ctx := context.Background()
	if err := kube.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	if ip != "" {
		setIP(t, p, ip)
	}
	return p
}

func setIP(t testing.TB, p *corev1.Pod, ip string) {
	t.Helper()
	eventually(t, "set the Pod's IP", func() error {
		if err := kube.Get(context.Background(), client.ObjectKeyFromObject(p), p); err != nil {
			return err
		}
		p.Status.Phase = corev1.PodRunning
		p.Status.PodIP = ip
		p.Status.PodIPs = []corev1.PodIP{{IP: ip}}
		p.Status.HostIP = "10.0.0.1"
		return kube.Status().Update(context.Background(), p)
	})
}

// deletePod deletes a Pod at once (there is no kubelet to finish it).
func deletePod(t testing.TB, p *corev1.Pod) {
	t.Helper()
	if err := kube.Delete(context.Background(), p, client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	eventually(t, "Pod "+p.Name+" gone", func() error {
		err := kube.Get(context.Background(), client.ObjectKeyFromObject(p), &corev1.Pod{})
		if kerrors.IsNotFound(err) {
			return nil
		}
		return errors.Errorf("still there (%v)", err)
	})
}

// bound waits until the PodAddress of a Pod is Bound and returns it.
func bound(t testing.TB, ns, name string) *v1alpha1.PodAddress {
	t.Helper()
	pa := &v1alpha1.PodAddress{}
	eventually(t, "PodAddress "+name+" Bound", func() error {
		if err := kube.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, pa); err != nil {
			return err
		}
		if pa.Status.State != v1alpha1.StateBound {
			return errors.Errorf("state %q: %s", pa.Status.State, pa.Status.Message)
		}
		return nil
	})
	return pa
}

// state waits until the PodAddress is in state.
func state(t testing.TB, ns, name, want string) *v1alpha1.PodAddress {
	t.Helper()
	pa := &v1alpha1.PodAddress{}
	eventually(t, "PodAddress "+name+" "+want, func() error {
		if err := kube.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, pa); err != nil {
			return err
		}
		if pa.Status.State != want {
			return errors.Errorf("state %q: %s", pa.Status.State, pa.Status.Message)
		}
		return nil
	})
	return pa
}

// cloudTargets lists "ip:port" of the targets of a listener in the emulator.
func cloudTargets(lbID, listenerID string) []string {
	l, ok := listener(lbID, listenerID)
	if !ok {
		return nil
	}
	var out []string
	for _, tg := range l.Targets {
		out = append(out, fmt.Sprintf("%s:%d", tg.IP, tg.Port))
	}
	return out
}

func listener(lbID, listenerID string) (emulator.InventoryListener, bool) {
	lb, ok := cloud.Inventory().LoadBalancer(lbID)
	if !ok {
		return emulator.InventoryListener{}, false
	}
	for _, l := range lb.Listeners {
		if l.ID == listenerID {
			return l, true
		}
	}
	return emulator.InventoryListener{}, false
}

func lbID(cr *clbv1alpha1.LoadBalancer) string { return meta.GetExternalName(cr) }

func intOrName(s string) intstr.IntOrString { return intstr.FromString(s) }

// podConditionIs waits until the Pod's address condition has status and a
// reason and message that contain reason and text.
func podConditionIs(t *testing.T, p *corev1.Pod, status corev1.ConditionStatus, reason, text string) {
	t.Helper()
	eventually(t, p.Name+" condition "+string(status)+" "+reason, func() error {
		got := &corev1.Pod{}
		if err := kube.Get(context.Background(), client.ObjectKeyFromObject(p), got); err != nil {
			return err
		}
		c := podCond(got)
		if c == nil || c.Status != status || !strings.Contains(c.Reason, reason) || !strings.Contains(c.Message, text) {
			return errors.Errorf("condition %+v", c)
		}
		return nil
	})
}

// podWarning waits for a warning Event on the Pod with reason whose
// message contains text.
func podWarning(t *testing.T, ns, podName, reason, text string) {
	t.Helper()
	eventually(t, "a "+reason+" warning on "+podName, func() error {
		l := &corev1.EventList{}
		if err := kube.List(context.Background(), l, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, e := range l.Items {
			if e.InvolvedObject.Kind == "Pod" && e.InvolvedObject.Name == podName && e.Type == corev1.EventTypeWarning &&
				e.Reason == reason && strings.Contains(e.Message, text) {
				return nil
			}
		}
		return errors.Errorf("none among %d events", len(l.Items))
	})
}
