package podaddress

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	clusterv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/cluster/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/podaddress/certgrant"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
)

// TestCertSecret: tke-extend's certSecret, read per Pod. A TCP_SSL Pod
// whose Secret (in its own namespace) names a certificate granted to its
// namespace gets it on its slot's listener, and the pool's certificate is
// put back when the Pod lets the slot go. A tenant naming a certificate
// id granted to no namespace of hers is NotGranted, with nothing
// allocated and no listener touched. The next Pod on the slot is bound
// only once the listener has the pool's certificate back.
func TestCertSecret(t *testing.T) {
	startProvider(t)
	ctx := context.Background()
	if err := kube.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: podannotation.TKEPoolNamespace}}); err != nil && !kerrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	ns := namespace(t)
	poolName, lbName := "pool-tls-"+ns, "lb-"+ns // the pool namespace is shared by the suite's tests
	poolCert, granted, other := "cert-pool-"+ns, "cert-granted-"+ns, "cert-other-team-"+ns
	l := lb(t, podannotation.TKEPoolNamespace, lbName, "BGP")
	pool(t, podannotation.TKEPoolNamespace, poolName, []string{lbName}, 30000, 30000, func(pp *clbv1alpha1.PortPool) {
		pp.Spec.ForProvider.Protocols = []string{"TCP_SSL"}
		pp.Spec.ForProvider.Listener = &clbv1alpha1.PoolListenerSettings{Certificate: &clbv1alpha1.Certificate{CertID: poolCert}}
		pp.Spec.Consumers = &clbv1alpha1.PoolConsumers{Namespaces: clbv1alpha1.NamespaceConsent{From: clbv1alpha1.ConsentAll}}
	})
	grantCert(t, granted, ns)
	for name, id := range map[string]string{"game-cert": granted, "stolen-cert": other} {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string][]byte{certgrant.SecretKey: []byte(id)}}
		if err := kube.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	tls := func(secret string) map[string]string {
		return map[string]string{
			podannotation.TKEAnnotationEnableMapping: "true",
			podannotation.TKEAnnotationPortMapping:   fmt.Sprintf("443 TCP_SSL %s certSecret=%s", poolName, secret),
		}
	}
	port := corev1.ContainerPort{ContainerPort: 443, Protocol: corev1.ProtocolTCP}

	p := pod(t, ns, "gameserver-0", "10.27.0.1", tls("game-cert"), port)
	pa := bound(t, ns, p.Name)
	if len(pa.Status.Bindings) != 1 || pa.Status.Bindings[0].CertID != granted {
		t.Fatalf("bindings %+v, want one with certId %s", pa.Status.Bindings, granted)
	}
	b := pa.Status.Bindings[0]
	id := b.ListenerIDs["TCP_SSL"]
	eventually(t, "the Pod's certificate on its listener", func() error { return listenerCert(lbID(l), id, granted) })
	eventually(t, "certId in the Pod's tke-extend result", func() error {
		got := &corev1.Pod{}
		if err := kube.Get(ctx, client.ObjectKeyFromObject(p), got); err != nil {
			return err
		}
		if r := got.Annotations[podannotation.TKEAnnotationMappingResult]; !strings.Contains(r, `"protocol":"TCP_SSL","certId":"`+granted+`"`) {
			return errors.Errorf("result %q", r)
		}
		return nil
	})

	modifies, registers := cloud.CallCount("ModifyListener"), cloud.CallCount("BatchRegisterTargets")+cloud.CallCount("RegisterTargets")
	thief := pod(t, ns, "gameserver-1", "10.27.0.2", tls("stolen-cert"), port)
	refused := state(t, ns, thief.Name, v1alpha1.StateNotGranted)
	if !strings.Contains(refused.Status.Message, other) || !strings.Contains(refused.Status.Message, "namespace "+ns) || len(refused.Status.Bindings) != 0 {
		t.Errorf("NotGranted %q with bindings %+v; want the certificate and the namespace named, nothing allocated", refused.Status.Message, refused.Status.Bindings)
	}
	if m, r := cloud.CallCount("ModifyListener"), cloud.CallCount("BatchRegisterTargets")+cloud.CallCount("RegisterTargets"); m != modifies || r != registers {
		t.Errorf("cloud calls for the refused Pod: ModifyListener %d→%d, register %d→%d; want none", modifies, m, registers, r)
	}
	if err := listenerCert(lbID(l), id, granted); err != nil {
		t.Errorf("after the refusal: %v", err)
	}

	// The one slot goes to the next Pod, without a certSecret: it is
	// bound only behind the pool's certificate. While the cloud refuses
	// the pool's ModifyListener the listener keeps the first Pod's, and
	// the next Pod waits with no target registered.
	if err := cloud.SetFaults(emulator.Faults{Rules: []emulator.FaultRule{{Action: "ModifyListener", Code: "InternalError"}}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cloud.SetFaults(emulator.Faults{}) })
	deletePod(t, p)
	next := pod(t, ns, "gameserver-2", "10.27.0.3", map[string]string{
		podannotation.TKEAnnotationEnableMapping: "true",
		podannotation.TKEAnnotationPortMapping:   "443 TCP_SSL " + poolName,
	}, port)
	waiting := state(t, ns, next.Name, v1alpha1.StateAllocated)
	eventually(t, "the next Pod waits for the pool's certificate", func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(waiting), waiting); err != nil {
			return err
		}
		if !strings.Contains(waiting.Status.Message, "to put certificate "+poolCert+" on listener "+id) {
			return errors.Errorf("%s: %s", waiting.Status.State, waiting.Status.Message)
		}
		return nil
	})
	if err := listenerCert(lbID(l), id, granted); err != nil {
		t.Errorf("with ModifyListener refused: %v", err)
	}
	if tg := cloudTargets(lbID(l), id); len(tg) != 0 {
		t.Errorf("targets %v registered behind the first Pod's certificate", tg)
	}
	if err := cloud.SetFaults(emulator.Faults{}); err != nil {
		t.Fatal(err)
	}
	pa = bound(t, ns, next.Name)
	if len(pa.Status.Bindings) != 1 || pa.Status.Bindings[0].ListenerIDs["TCP_SSL"] != id || pa.Status.Bindings[0].CertID != "" {
		t.Fatalf("bindings %+v, want the released listener %s with the pool's certificate", pa.Status.Bindings, id)
	}
	if err := listenerCert(lbID(l), id, poolCert); err != nil {
		t.Errorf("the next Pod is Bound behind another certificate: %v", err)
	}
}

// grantCert adds to the suite's ClusterProviderConfig a grant of
// certificate id to namespace ns, removed when the test ends.
func grantCert(t *testing.T, id, ns string) {
	t.Helper()
	ctx := context.Background()
	edit := func(fn func(*clusterv1alpha1.ClusterProviderConfig)) error {
		cpc := &clusterv1alpha1.ClusterProviderConfig{}
		if err := kube.Get(ctx, client.ObjectKey{Name: "default"}, cpc); err != nil {
			return err
		}
		fn(cpc)
		return kube.Update(ctx, cpc)
	}
	grant := clusterv1alpha1.ObjectGrant{IDs: []string{id}, Namespaces: clbv1alpha1.NamespaceConsent{
		From:     clbv1alpha1.ConsentSelector,
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
	}}
	eventually(t, "grant "+id, func() error {
		return edit(func(c *clusterv1alpha1.ClusterProviderConfig) {
			c.Spec.Consumers.Grants = append(c.Spec.Consumers.Grants, grant)
		})
	})
	t.Cleanup(func() {
		eventually(t, "take grant "+id+" back", func() error {
			return edit(func(c *clusterv1alpha1.ClusterProviderConfig) {
				c.Spec.Consumers.Grants = slices.DeleteFunc(c.Spec.Consumers.Grants, func(g clusterv1alpha1.ObjectGrant) bool { return slices.Contains(g.IDs, id) })
			})
		})
	})
}

// listenerCert says how the certificate of a listener in the emulator
// differs from want.
func listenerCert(lbID, listenerID, want string) error {
	l, ok := listener(lbID, listenerID)
	if !ok {
		return errors.Errorf("listener %s not found", listenerID)
	}
	if l.CertID != want {
		return errors.Errorf("listener %s (port %d) has certificate %q, want %q", listenerID, l.Port, l.CertID, want)
	}
	return nil
}
