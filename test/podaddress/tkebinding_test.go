package podaddress

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	tkev1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/tkeextend/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/clbpodbinding"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
)

// tkeObject is an object as tke-extend-network-controller v2.5 writes it
// (its Pod and Node controllers create the binding from the annotations,
// owned by the Pod, with its finalizer; its binding controller writes the
// status): JSON, so that nothing of ours shapes it.
func tkeObject(t *testing.T, kind, ns, name, owner, status string) *unstructured.Unstructured {
	t.Helper()
	meta := fmt.Sprintf(`{"name":%q,"finalizers":[%q]%s}`, name, clbpodbinding.TKEFinalizer, owner)
	if ns != "" {
		meta = fmt.Sprintf(`{"name":%q,"namespace":%q,"finalizers":[%q]%s}`, name, ns, clbpodbinding.TKEFinalizer, owner)
	}
	raw := fmt.Sprintf(`{"apiVersion":"networking.cloud.tencent.com/v1alpha1","kind":%q,"metadata":%s,
		"spec":{"ports":[
			{"port":7000,"protocol":"TCPUDP","pools":["pool-ctcc","pool-cucc"],"useSamePortAcrossPools":true},
			{"port":443,"protocol":"TCP_SSL","pools":["pool-ctcc"],"certSecretName":"game-cert"}]},
		"status":%s}`, kind, meta, status)
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON([]byte(raw)); err != nil {
		t.Fatal(err)
	}
	return u
}

// tkeStatus is the status tke-extend writes for those ports once bound:
// a TCPUDP port is an entry per protocol and pool, a segment has its end
// port, a TCP_SSL port its certificate.
const tkeStatus = `{"state":"Bound","portBindings":[
	{"port":7000,"protocol":"TCP","pool":"pool-ctcc","region":"ap-guangzhou","loadbalancerId":"lb-ctcc","loadbalancerPort":30000,"loadbalancerEndPort":30009,"listenerId":"lbl-1","addressIPVersion":"ipv4"},
	{"port":7000,"protocol":"UDP","pool":"pool-ctcc","region":"ap-guangzhou","loadbalancerId":"lb-ctcc","loadbalancerPort":30000,"loadbalancerEndPort":30009,"listenerId":"lbl-2","addressIPVersion":"ipv4"},
	{"port":7000,"protocol":"TCP","pool":"pool-cucc","region":"ap-guangzhou","loadbalancerId":"lb-cucc","loadbalancerPort":30000,"listenerId":"lbl-3"},
	{"port":7000,"protocol":"UDP","pool":"pool-cucc","region":"ap-guangzhou","loadbalancerId":"lb-cucc","loadbalancerPort":30000,"listenerId":"lbl-4"},
	{"port":443,"protocol":"TCP_SSL","certId":"cert-1","pool":"pool-ctcc","region":"ap-guangzhou","loadbalancerId":"lb-ctcc","loadbalancerPort":30010,"listenerId":"lbl-5","addressIPVersion":"IPV4"}]}`

// applyTKEObject creates u and writes its status, as tke-extend does, and
// checks that the API server kept every field of it.
func applyTKEObject(t *testing.T, u *unstructured.Unstructured) {
	t.Helper()
	ctx := context.Background()
	want := u.DeepCopy()
	status := u.Object["status"]
	if err := kube.Create(ctx, u); err != nil {
		t.Fatalf("tke-extend's %s refused: %v", u.GetKind(), err)
	}
	u.Object["status"] = status
	if err := kube.Status().Update(ctx, u); err != nil {
		t.Fatalf("tke-extend's %s status refused: %v", u.GetKind(), err)
	}
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(u.GroupVersionKind())
	if err := kube.Get(ctx, client.ObjectKeyFromObject(u), got); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"spec", "status"} {
		if d := cmp.Diff(want.Object[f], got.Object[f]); d != "" {
			t.Errorf("tke-extend's %s %s not kept as written (-want +got):\n%s", u.GetKind(), f, d)
		}
	}
}

// TestTKEExtendBindings: the CLBPodBinding and CLBNodeBinding CRDs accept
// the objects tke-extend left in a cluster as they are, field for field.
// A Pod annotated in tke-extend's syntax gets a CLBPodBinding that mirrors
// its PodAddress, as tke-extend's would say it: the one tke-extend left
// for the Pod is taken over (owned by the PodAddress, without tke-extend's
// finalizer), a user's edit is overwritten, a deletion undone, and
// isolation shows as Disabled. The CLBNodeBinding of a Node that does
// not ask (no Node annotations) is left as tke-extend wrote it.
func TestTKEExtendBindings(t *testing.T) {
	startProvider(t)
	ctx := context.Background()
	if err := kube.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: podannotation.TKEPoolNamespace}}); err != nil && !kerrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	ns := namespace(t)
	const name = "gameserver-0"

	// What tke-extend left: the Pod's binding and a Node's.
	applyTKEObject(t, tkeObject(t, tkev1alpha1.CLBPodBindingKind, ns, name,
		`,"ownerReferences":[{"apiVersion":"v1","kind":"Pod","name":"gameserver-0","uid":"2c1f6a0e-0000-4000-8000-000000000001"}]`, tkeStatus))
	node := tkeObject(t, tkev1alpha1.CLBNodeBindingKind, "", "node-"+ns,
		`,"ownerReferences":[{"apiVersion":"v1","kind":"Node","name":"node-`+ns+`","uid":"2c1f6a0e-0000-4000-8000-000000000002"}]`, tkeStatus)
	applyTKEObject(t, node)
	t.Cleanup(func() {
		_ = kube.Patch(ctx, node, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))
		_ = kube.Delete(ctx, node)
	})

	poolName := "pool-cpb-" + ns
	lbName := "lb-" + ns
	l := lb(t, podannotation.TKEPoolNamespace, lbName, "BGP")
	pool(t, podannotation.TKEPoolNamespace, poolName, []string{lbName}, 30000, 30009, func(pp *clbv1alpha1.PortPool) {
		pp.Spec.ForProvider.Protocols = []string{"TCP", "UDP"}
		pp.Spec.Consumers = &clbv1alpha1.PoolConsumers{Namespaces: clbv1alpha1.NamespaceConsent{From: clbv1alpha1.ConsentAll}}
	})
	p := pod(t, ns, name, "10.26.0.9", map[string]string{
		podannotation.TKEAnnotationEnableMapping: "true",
		podannotation.TKEAnnotationPortMapping:   fmt.Sprintf("8000 UDP %s\n7000 TCPUDP %s", poolName, poolName),
	},
		corev1.ContainerPort{ContainerPort: 8000, Protocol: corev1.ProtocolUDP},
		corev1.ContainerPort{ContainerPort: 7000, Protocol: corev1.ProtocolTCP},
		corev1.ContainerPort{ContainerPort: 7000, Protocol: corev1.ProtocolUDP})
	pa := bound(t, ns, name)

	// What tke-extend's binding of this Pod would say.
	wantSpec := tkev1alpha1.CLBBindingSpec{Ports: []tkev1alpha1.PortEntry{
		{Port: 8000, Protocol: "UDP", Pools: []string{poolName}},
		{Port: 7000, Protocol: "TCPUDP", Pools: []string{poolName}},
	}}
	var wantBindings []tkev1alpha1.PortBindingStatus
	for _, b := range pa.Status.Bindings {
		for _, proto := range v1alpha1.ListenerProtocols(b.Protocol) {
			s := tkev1alpha1.PortBindingStatus{Port: b.ContainerPort, Protocol: proto, Pool: poolName, Region: b.Region,
				LoadbalancerID: lbID(l), LoadbalancerPort: b.Port, ListenerID: b.ListenerIDs[proto]}
			if b.AddressIPVersion != "" {
				s.AddressIPVersion = ptr.To(b.AddressIPVersion)
			}
			if s.ListenerID == "" || s.Region == "" {
				t.Fatalf("binding %+v has no listener or region for %s", b, proto)
			}
			wantBindings = append(wantBindings, s)
		}
	}
	if len(wantBindings) != 3 {
		t.Fatalf("bindings %+v, want 8000/UDP, 7000/TCP and 7000/UDP", pa.Status.Bindings)
	}
	mirrored := func(what, state string, spec tkev1alpha1.CLBBindingSpec) *tkev1alpha1.CLBPodBinding {
		t.Helper()
		cpb := &tkev1alpha1.CLBPodBinding{}
		eventually(t, what, func() error {
			if err := kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cpb); err != nil {
				return err
			}
			if d := cmp.Diff(spec, cpb.Spec); d != "" {
				return errors.Errorf("spec (-want +got):\n%s", d)
			}
			if cpb.Status.State != state {
				return errors.Errorf("state %q (%s), want %s", cpb.Status.State, cpb.Status.Message, state)
			}
			if d := cmp.Diff(wantBindings, cpb.Status.PortBindings, sortBindings()); d != "" {
				return errors.Errorf("portBindings (-want +got):\n%s", d)
			}
			if len(cpb.OwnerReferences) != 1 || cpb.OwnerReferences[0].UID != pa.UID || !ptr.Deref(cpb.OwnerReferences[0].Controller, false) {
				return errors.Errorf("owners %+v, want PodAddress %s alone", cpb.OwnerReferences, pa.UID)
			}
			if len(cpb.Finalizers) != 0 {
				return errors.Errorf("finalizers %v, want none", cpb.Finalizers)
			}
			return nil
		})
		return cpb
	}
	cpb := mirrored("tke-extend's CLBPodBinding taken over", tkev1alpha1.BindingStateBound, wantSpec)
	if got := printed(t, ns); !cmp.Equal(got, [][]string{{"Name", "State"}, {name, tkev1alpha1.BindingStateBound}}) {
		t.Errorf("kubectl get clbpodbinding prints %v, want tke-extend's NAME and STATE", got)
	}

	// A user's edit of the spec and the status is overwritten.
	cpb.Spec.Ports[0].Pools = []string{"someone-elses"}
	if err := kube.Update(ctx, cpb); err != nil {
		t.Fatal(err)
	}
	cpb.Status.State, cpb.Status.PortBindings[0].LoadbalancerID = tkev1alpha1.BindingStateFailed, "lb-forged"
	if err := kube.Status().Update(ctx, cpb); err != nil && !kerrors.IsConflict(err) {
		t.Fatal(err)
	}
	mirrored("a user's edit overwritten", tkev1alpha1.BindingStateBound, wantSpec)

	// Deleted, it is made again.
	old := cpb.UID
	if err := kube.Delete(ctx, cpb); err != nil {
		t.Fatal(err)
	}
	if cpb = mirrored("the CLBPodBinding made again", tkev1alpha1.BindingStateBound, wantSpec); cpb.UID == old {
		t.Errorf("the CLBPodBinding %s was not deleted", old)
	}

	// tke-extend's switch off: Disabled, ports kept.
	setAnnotations(t, p, map[string]string{podannotation.TKEAnnotationEnableMapping: "false"})
	state(t, ns, name, v1alpha1.StateIsolated)
	disabled := wantSpec
	disabled.Disabled = ptr.To(true)
	mirrored("an isolated Pod's binding Disabled", tkev1alpha1.BindingStateDisabled, disabled)

	// The binding of a Node that does not ask is left as tke-extend wrote it.
	gotNode := &tkev1alpha1.CLBNodeBinding{}
	if err := kube.Get(ctx, client.ObjectKeyFromObject(node), gotNode); err != nil {
		t.Fatal(err)
	}
	if gotNode.Status.State != tkev1alpha1.BindingStateBound || len(gotNode.Status.PortBindings) != 5 || gotNode.Generation != 1 {
		t.Errorf("CLBNodeBinding %+v, want tke-extend's, unchanged", gotNode)
	}
}

// printed is what kubectl get clbpodbinding shows for namespace ns: the
// column names, then one row per binding (the API server's table, which
// kubectl prints).
func printed(t *testing.T, ns string) [][]string {
	t.Helper()
	hc, err := rest.HTTPClientFor(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	host, _, err := rest.DefaultServerUrlFor(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet,
		host.JoinPath("apis", tkev1alpha1.Group, tkev1alpha1.Version, "namespaces", ns, "clbpodbindings").String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s as a table: %s", req.URL, resp.Status)
	}
	table := &metav1.Table{}
	if err := json.NewDecoder(resp.Body).Decode(table); err != nil {
		t.Fatal(err)
	}
	var cols []string
	for _, c := range table.ColumnDefinitions {
		cols = append(cols, c.Name)
	}
	out := [][]string{cols}
	for _, r := range table.Rows {
		var cells []string
		for _, c := range r.Cells {
			cells = append(cells, fmt.Sprint(c))
		}
		out = append(out, cells)
	}
	return out
}

// sortBindings compares portBindings as sets: the order of the mirror's
// is tested in internal/controller/clbpodbinding.
func sortBindings() cmp.Option {
	return cmp.Transformer("sorted", func(in []tkev1alpha1.PortBindingStatus) map[string]tkev1alpha1.PortBindingStatus {
		out := map[string]tkev1alpha1.PortBindingStatus{}
		for _, b := range in {
			out[fmt.Sprintf("%s/%s/%d/%s", b.Pool, b.LoadbalancerID, b.Port, b.Protocol)] = b
		}
		return out
	})
}
