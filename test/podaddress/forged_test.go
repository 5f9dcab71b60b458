package podaddress

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/podaddress"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/seal"
)

// TestForgedRecordsIgnored: PodAddress records the provider did not seal
// are never acted on. They are written here by the cluster's admin,
// standing in for a namespace's editor where
// examples/provider/records-policy.yaml is not installed (Crossplane's
// crossplane-edit may write PodAddresses and their status): a status
// copied from another team's PodAddress, seal included, and a create
// record naming that team's binding, sealed with another key. Neither is
// counted by the pool, neither claims the slot after a restart, each gets
// a RecordsIgnored Warning, and deleting them deregisters nothing: the
// other team's Pod keeps its address and its target.
func TestForgedRecordsIgnored(t *testing.T) {
	stop := startProvider(t)
	ctx := context.Background()
	victim := namespace(t)
	lb(t, victim, "lb-v", "BGP")
	pool(t, victim, "v", []string{"lb-v"}, 45000, 45001)
	pod(t, victim, "gs-v", "10.64.0.1", map[string]string{ourPorts: "7777 v"})
	real := bound(t, victim, "gs-v")
	b := real.Status.Bindings[0]
	target := "10.64.0.1:7777"
	if got := cloudTargets(b.LoadBalancerID, b.ListenerIDs["TCP"]); !slices.Contains(got, target) {
		t.Fatalf("victim's targets %v, want %s", got, target)
	}

	forger := namespace(t)
	forge := func(name string, mod func(*v1alpha1.PodAddress)) {
		t.Helper()
		pa := &v1alpha1.PodAddress{
			ObjectMeta: metav1.ObjectMeta{Namespace: forger, Name: name, Finalizers: []string{podaddress.Finalizer}},
			Spec:       real.Spec,
		}
		pa.Spec.PodUID = "no-such-pod"
		mod(pa)
		st := pa.Status
		if err := kube.Create(ctx, pa); err != nil {
			t.Fatal(err)
		}
		if st.State != "" {
			pa.Status = st
			if err := kube.Status().Update(ctx, pa); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The victim's status, seal and all, in the forger's PodAddress.
	copied := func(pa *v1alpha1.PodAddress) { pa.Status = real.Status }
	// A create record of the victim's binding, sealed with another key.
	created := func(pa *v1alpha1.PodAddress) {
		raw, err := json.Marshal(real.Status.Bindings)
		if err != nil {
			t.Fatal(err)
		}
		pa.Annotations = map[string]string{v1alpha1.AnnotationCreatedBindings: string(raw)}
		seal.Ephemeral().SealCreated(pa, time.Now())
	}

	// Made while the provider is down: a restarted provider rebuilds the
	// pool's slots from records.
	stop()
	forge("copied-status", copied)
	forge("created-record", created)
	startProvider(t)
	for _, name := range []string{"copied-status", "created-record"} {
		forgedWarning(t, forger, name)
	}
	// The pool counts the victim's binding only, and a second Pod of the
	// victim's namespace gets the other port: the forged records hold no
	// slot.
	eventually(t, "the pool counts one binding", func() error {
		pp := &clbv1alpha1.PortPool{}
		if err := kube.Get(ctx, client.ObjectKey{Namespace: victim, Name: "v"}, pp); err != nil {
			return err
		}
		if n := pp.Status.AtProvider.Bindings; n != 1 {
			return errors.Errorf("%d bindings", n)
		}
		return nil
	})
	pod(t, victim, "gs-w", "10.64.0.2", map[string]string{ourPorts: "7777 v"})
	if w := bound(t, victim, "gs-w").Status.Bindings[0]; w.Port == b.Port {
		t.Errorf("second Pod given the victim's port %d", w.Port)
	}

	for _, name := range []string{"copied-status", "created-record"} {
		if err := kube.Delete(ctx, &v1alpha1.PodAddress{ObjectMeta: metav1.ObjectMeta{Namespace: forger, Name: name}}); client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "forged PodAddresses gone", func() error {
		for _, name := range []string{"copied-status", "created-record"} {
			err := kube.Get(ctx, client.ObjectKey{Namespace: forger, Name: name}, &v1alpha1.PodAddress{})
			if !kerrors.IsNotFound(err) {
				return errors.Errorf("%s still there (%v)", name, err)
			}
		}
		return nil
	})
	// Nothing of the victim's was touched.
	now := bound(t, victim, "gs-v")
	if got := now.Status.Bindings[0]; got.Port != b.Port || got.LoadBalancerID != b.LoadBalancerID {
		t.Errorf("victim's binding moved from %s:%d to %s:%d", b.LoadBalancerID, b.Port, got.LoadBalancerID, got.Port)
	}
	if got := cloudTargets(b.LoadBalancerID, b.ListenerIDs["TCP"]); !slices.Contains(got, target) {
		t.Errorf("victim's target deregistered: listener has %v", got)
	}
}

// forgedWarning waits for the RecordsIgnored Warning on a PodAddress.
func forgedWarning(t *testing.T, ns, name string) {
	t.Helper()
	eventually(t, "RecordsIgnored on "+name, func() error {
		l := &corev1.EventList{}
		if err := kube.List(context.Background(), l, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, e := range l.Items {
			if e.InvolvedObject.Name == name && e.InvolvedObject.Kind == "PodAddress" && e.Reason == "RecordsIgnored" && e.Type == corev1.EventTypeWarning {
				return nil
			}
		}
		return errors.New("none yet")
	})
}
