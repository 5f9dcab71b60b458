package podaddress

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
)

// refusedOutOfBounds waits until the RemotePod is told it is refused with a
// message holding text: the address condition False OutOfClusterBounds,
// the refusal as status.warning, no address annotation; and checks it
// holds no PodAddress.
func refusedOutOfBounds(t *testing.T, rp *v1alpha1.RemotePod, text string) {
	t.Helper()
	remoteTold(t, rp, "refused: "+text, func(st v1alpha1.RemotePodStatus) error {
		if st.Warning == nil || st.Warning.Reason != "OutOfClusterBounds" || !strings.Contains(st.Warning.Message, text) {
			return errors.Errorf("warning %+v", st.Warning)
		}
		if c := remoteCond(st); c == nil || c.Status != corev1.ConditionFalse || c.Reason != "OutOfClusterBounds" || !strings.Contains(c.Message, text) {
			return errors.Errorf("condition %+v, want False OutOfClusterBounds", c)
		}
		if _, ok := st.Annotations[ourResult]; ok {
			return errors.Errorf("annotations %v still give an address", st.Annotations)
		}
		return nil
	})
	gone(t, &v1alpha1.PodAddress{ObjectMeta: metav1.ObjectMeta{Namespace: rp.Namespace, Name: rp.Name}})
}

// TestRemotePodOutOfBounds plays a compromised agent: RemotePods claiming
// addresses outside their WorkloadCluster's CIDRs, a node instance that is
// no CVM, or a pool the cluster may not use are refused with a condition
// and a warning naming the field, and nothing reaches the cloud. A Pod
// bound within the bounds whose IP the agent moves outside (a database's)
// loses its targets. Widening the CIDRs serves a refused Pod; suspending
// the cluster releases it again.
func TestRemotePodOutOfBounds(t *testing.T) {
	startProvider(t)
	ns := namespace(t)
	l := lb(t, ns, "lb", "BGP")
	pool(t, ns, "pool", []string{"lb"}, 53000, 53009)
	pool(t, ns, "other", []string{"lb"}, 53100, 53109)
	ctx := context.Background()
	wc := &v1alpha1.WorkloadCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "idc-1"},
		Spec: v1alpha1.WorkloadClusterSpec{PodCIDRs: []string{"10.53.0.0/24"}, NodeCIDRs: []string{"10.200.0.0/16"}, Pools: []v1alpha1.PoolRef{{Name: "pool"}}}}
	if err := kube.Create(ctx, wc); err != nil {
		t.Fatal(err)
	}
	ask := map[string]string{ourPorts: "7777 pool"}
	gated := func(rp *v1alpha1.RemotePod) { rp.Spec.ReadinessGates = []string{string(condition)} }

	outside := remotePod(t, ns, "outside", "10.99.0.1", ask, gated)
	badNode := remotePod(t, ns, "badnode", "10.53.0.2", ask, func(rp *v1alpha1.RemotePod) { rp.Spec.Node.InternalIP = "10.9.9.9" })
	badInstance := remotePod(t, ns, "badins", "10.53.0.3", ask, func(rp *v1alpha1.RemotePod) { rp.Spec.Node.InstanceID = "ins-1/../x" })
	otherPool := remotePod(t, ns, "otherpool", "10.53.0.4", map[string]string{ourPorts: "7777 other"})
	ok := remotePod(t, ns, "ok", "10.53.0.5", ask, gated)

	refusedOutOfBounds(t, outside, "spec.podIP 10.99.0.1 is outside the podCIDRs of WorkloadCluster idc-1 (10.53.0.0/24)")
	refusedOutOfBounds(t, badNode, "spec.node.internalIP 10.9.9.9 is outside the nodeCIDRs of WorkloadCluster idc-1 (10.200.0.0/16)")
	refusedOutOfBounds(t, badInstance, `spec.node.instanceId "ins-1/../x" is not a CVM instance id`)
	refusedOutOfBounds(t, otherPool, "PortPool "+ns+"/other is not in spec.pools of WorkloadCluster idc-1 ("+ns+"/pool)")
	pa := bound(t, ns, ok.Name)
	listenerID := pa.Status.Bindings[0].ListenerIDs["TCP"]
	if got := cloudTargets(lbID(l), listenerID); !slices.Equal(got, []string{"10.53.0.5:7777"}) {
		t.Fatalf("targets %v, want only the Pod within bounds", got)
	}
	allTargets := func() []string {
		lb, _ := cloud.Inventory().LoadBalancer(lbID(l))
		var out []string
		for _, li := range lb.Listeners {
			for _, tg := range li.Targets {
				out = append(out, tg.IP)
			}
		}
		return out
	}
	if got := allTargets(); !slices.Equal(got, []string{"10.53.0.5"}) {
		t.Fatalf("the load balancer's targets are %v: a refused Pod reached the cloud", got)
	}

	// The agent moves the bound Pod onto a database's address: the Pod
	// is refused and its target deregistered, not moved.
	updateRemote(t, ok, func(rp *v1alpha1.RemotePod) { rp.Spec.PodIP, rp.Spec.PodIPs = "10.0.0.5", []string{"10.0.0.5"} })
	refusedOutOfBounds(t, ok, "spec.podIP 10.0.0.5 is outside")
	eventually(t, "the moved Pod's target deregistered", func() error {
		if got := allTargets(); len(got) != 0 {
			return errors.Errorf("targets %v", got)
		}
		return nil
	})
	st := &v1alpha1.RemotePod{}
	if err := kube.Get(ctx, client.ObjectKeyFromObject(ok), st); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(st.Status.RemoveAnnotations, ourResult) {
		t.Errorf("removeAnnotations %v: the address told before is not withdrawn", st.Status.RemoveAnnotations)
	}

	// The admin widens the Pod CIDRs: the refused Pod is served.
	eventually(t, "widen podCIDRs", func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(wc), wc); err != nil {
			return err
		}
		wc.Spec.PodCIDRs = []string{"10.53.0.0/24", "10.99.0.0/24"}
		return kube.Update(ctx, wc)
	})
	bound(t, ns, outside.Name)
	remoteTold(t, outside, "served", func(st v1alpha1.RemotePodStatus) error {
		if c := remoteCond(st); c == nil || c.Status != corev1.ConditionTrue || st.Warning != nil {
			return errors.Errorf("condition %+v, warning %+v; want True and no warning", c, st.Warning)
		}
		return nil
	})

	// Suspended: nothing of the cluster is served.
	eventually(t, "suspend", func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(wc), wc); err != nil {
			return err
		}
		wc.Spec.Suspend = true
		return kube.Update(ctx, wc)
	})
	eventually(t, "the suspended cluster's Pod released", func() error {
		err := kube.Get(ctx, client.ObjectKeyFromObject(outside), &v1alpha1.PodAddress{})
		if !kerrors.IsNotFound(err) {
			return errors.Errorf("PodAddress still there (%v)", err)
		}
		if got := allTargets(); len(got) != 0 {
			return errors.Errorf("targets %v", got)
		}
		return nil
	})
	noPodEvents(t, ns)
}
