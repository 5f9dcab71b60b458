package podaddress

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/podaddress"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv/suite"
)

// setLabels sets (value non-empty) or removes (value "") labels of a Pod.
func setLabels(t *testing.T, p *corev1.Pod, kv map[string]string) {
	t.Helper()
	eventually(t, "label "+p.Name, func() error {
		got := &corev1.Pod{}
		if err := kube.Get(context.Background(), client.ObjectKeyFromObject(p), got); err != nil {
			return err
		}
		if got.Labels == nil {
			got.Labels = map[string]string{}
		}
		for k, v := range kv {
			if v == "" {
				delete(got.Labels, k)
			} else {
				got.Labels[k] = v
			}
		}
		return kube.Update(context.Background(), got)
	})
}

// setAnnotations sets (value non-empty) or removes (value "") annotations
// of a Pod.
func setAnnotations(t *testing.T, p *corev1.Pod, kv map[string]string) {
	t.Helper()
	eventually(t, "annotate "+p.Name, func() error {
		got := &corev1.Pod{}
		if err := kube.Get(context.Background(), client.ObjectKeyFromObject(p), got); err != nil {
			return err
		}
		for k, v := range kv {
			if v == "" {
				delete(got.Annotations, k)
			} else {
				got.Annotations[k] = v
			}
		}
		return kube.Update(context.Background(), got)
	})
}

// isolated waits until the PodAddress is Isolated with the same address as
// was, and checks that the cloud has no target for it and that the Pod
// still carries the address, NotReady.
func isolated(t *testing.T, p *corev1.Pod, was v1alpha1.PortBinding) {
	t.Helper()
	pa := state(t, p.Namespace, p.Name, v1alpha1.StateIsolated)
	if len(pa.Status.Bindings) != 1 {
		t.Fatalf("isolated: %d bindings, want the 1 kept", len(pa.Status.Bindings))
	}
	b := pa.Status.Bindings[0]
	if b.LoadBalancerID != was.LoadBalancerID || b.Port != was.Port || b.Address != was.Address || b.TargetIP != "" {
		t.Errorf("isolated binding %+v, want %s:%d (%s) without a target", b, b.LoadBalancerID, b.Port, was.Address)
	}
	if !pa.Spec.Isolated {
		t.Error("spec.isolated is false on an Isolated PodAddress")
	}
	if c := pa.Status.GetCondition(xpv2.TypeReady); c.Status != corev1.ConditionFalse || c.Reason != v1alpha1.StateIsolated {
		t.Errorf("Ready %s %s, want False Isolated", c.Status, c.Reason)
	}
	if got := cloudTargets(b.LoadBalancerID, b.ListenerIDs["TCP"]); len(got) != 0 {
		t.Errorf("isolated Pod still has targets %v", got)
	}
	podConditionIs(t, p, corev1.ConditionFalse, v1alpha1.StateIsolated, "")
	podAnnotation(t, p, ourStatus, podannotation.StatusNotReady)
	got := &corev1.Pod{}
	if err := kube.Get(context.Background(), client.ObjectKeyFromObject(p), got); err != nil {
		t.Fatal(err)
	}
	var addrs []podannotation.Address
	if err := json.Unmarshal([]byte(got.Annotations[ourResult]), &addrs); err != nil || len(addrs) != 1 || addrs[0].Address != was.Address {
		t.Errorf("%s = %q (%v), want the kept address %s", ourResult, got.Annotations[ourResult], err, was.Address)
	}
}

// rebound waits until the PodAddress is Bound again on the same address
// and the cloud forwards it to target only.
func rebound(t *testing.T, p *corev1.Pod, was v1alpha1.PortBinding, target string) {
	t.Helper()
	b := bound(t, p.Namespace, p.Name).Status.Bindings[0]
	if b.LoadBalancerID != was.LoadBalancerID || b.Port != was.Port || b.Address != was.Address {
		t.Errorf("back in service on %s:%d (%s), want the kept %s:%d", b.LoadBalancerID, b.Port, b.Address, was.LoadBalancerID, was.Port)
	}
	if got := cloudTargets(b.LoadBalancerID, b.ListenerIDs["TCP"]); !slices.Equal(got, []string{target}) {
		t.Errorf("targets %v, want [%s]", got, target)
	}
	podConditionIs(t, p, corev1.ConditionTrue, "Bound", was.Address)
}

// TestIsolate takes a Pod out of service and back by each isolation
// switch (our annotation, tke-extend's annotation, OKG's label): its targets go and come back,
// its port and address stay. While it is isolated, its port is not free
// for another Pod, a restarted provider does not register it again, and
// deleting it frees the port and leaves no target.
func TestIsolate(t *testing.T) {
	stop := startProvider(t, suite.PodAddress(podaddress.Options{PodEvents: podaddress.PodEventsAll}))
	ns := namespace(t)
	l := lb(t, ns, "lb", "BGP")
	// One port: whether it is free shows in whether another Pod binds.
	pool(t, ns, "one", []string{"lb"}, 50000, 50000)

	p := pod(t, ns, "gs-0", "10.50.0.1", map[string]string{ourPorts: "game one", "network.tencentcloud.crossplane.io/readiness-gate": "true"})
	was := bound(t, ns, "gs-0").Status.Bindings[0]
	if got := cloudTargets(lbID(l), was.ListenerIDs["TCP"]); !slices.Equal(got, []string{"10.50.0.1:7777"}) {
		t.Fatalf("targets %v before isolation", got)
	}

	// Ours.
	setAnnotations(t, p, map[string]string{podannotation.AnnotationIsolated: "true"})
	isolated(t, p, was)
	eventually(t, "an AddressIsolated event", func() error {
		l := &corev1.EventList{}
		if err := kube.List(context.Background(), l, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, e := range l.Items {
			if e.InvolvedObject.Name == p.Name && e.Reason == "AddressIsolated" && strings.Contains(e.Message, was.Address) {
				return nil
			}
		}
		return errors.Errorf("none among %d events", len(l.Items))
	})

	// A restart while isolated registers nothing. The new provider shows
	// it has looked at the Pod by telling it its status again.
	stop()
	setAnnotations(t, p, map[string]string{ourStatus: ""})
	startProvider(t)
	podAnnotation(t, p, ourStatus, podannotation.StatusNotReady)
	isolated(t, p, was)

	setAnnotations(t, p, map[string]string{podannotation.AnnotationIsolated: "false"})
	rebound(t, p, was, "10.50.0.1:7777")

	// tke-extend's switch, then OKG's.
	setAnnotations(t, p, map[string]string{podannotation.AnnotationIsolated: "", podannotation.TKEAnnotationEnableMapping: "false"})
	isolated(t, p, was)
	setAnnotations(t, p, map[string]string{podannotation.TKEAnnotationEnableMapping: "true"})
	rebound(t, p, was, "10.50.0.1:7777")
	// OKG's is a label, which its GameServer controller sets.
	setLabels(t, p, map[string]string{podannotation.OKGLabelNetworkDisabled: "true"})
	isolated(t, p, was)

	// The isolated Pod keeps its port: another Pod finds none.
	other := pod(t, ns, "gs-1", "10.50.0.2", map[string]string{ourPorts: "game one"})
	state(t, ns, "gs-1", v1alpha1.StateNoPortAvailable)

	// Deleted while isolated: its PodAddress goes, its port goes to the
	// other Pod, and the listener forwards to that one only.
	deletePod(t, p)
	eventually(t, "the isolated Pod's PodAddress gone", func() error {
		err := kube.Get(context.Background(), client.ObjectKeyFromObject(p), &v1alpha1.PodAddress{})
		if kerrors.IsNotFound(err) {
			return nil
		}
		return errors.Errorf("still there (%v)", err)
	})
	b := bound(t, ns, other.Name).Status.Bindings[0]
	if b.Port != was.Port {
		t.Errorf("the other Pod got port %d, want the freed %d", b.Port, was.Port)
	}
	if got := cloudTargets(lbID(l), was.ListenerIDs["TCP"]); !slices.Equal(got, []string{"10.50.0.2:7777"}) {
		t.Errorf("targets %v, want only the other Pod's", got)
	}
}
