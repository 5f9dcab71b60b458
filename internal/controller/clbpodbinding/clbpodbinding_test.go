package clbpodbinding

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	networkv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/tkeextend/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
)

// tkeExtendLeft is the CLBPodBinding tke-extend leaves for the Pod gs-0:
// owned by the Pod, with its finalizer, its own listeners in the status.
func tkeExtendLeft() *v1alpha1.CLBPodBinding {
	return &v1alpha1.CLBPodBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "game", Name: "gs-0", Finalizers: []string{TKEFinalizer},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "gs-0", UID: "pod-uid"}}},
		Spec: v1alpha1.CLBBindingSpec{Ports: []v1alpha1.PortEntry{{Port: 8000, Protocol: "UDP", Pools: []string{"pool-a"}}}},
		Status: v1alpha1.CLBBindingStatus{State: v1alpha1.BindingStateBound, PortBindings: []v1alpha1.PortBindingStatus{
			{Port: 8000, Protocol: "UDP", Pool: "pool-a", Region: "ap-guangzhou", LoadbalancerID: "lb-old", LoadbalancerPort: 31000, ListenerID: "lbl-old"}}},
	}
}

func TestReconcile(t *testing.T) {
	type want struct {
		exists bool
		mirror bool // the binding says what tkeBound says, owned by the PodAddress alone
		cpb    func(*testing.T, *v1alpha1.CLBPodBinding)
	}
	cases := map[string]struct {
		reason string
		pa     func(*networkv1alpha1.PodAddress)
		cpb    *v1alpha1.CLBPodBinding
		want   want
	}{
		"Created": {
			reason: "a bound tke-extend Pod's PodAddress gets its CLBPodBinding, status included",
			want:   want{exists: true, mirror: true},
		},
		"EditsOverwritten": {
			reason: "a user's spec, status and owners are overwritten from the PodAddress",
			cpb: func() *v1alpha1.CLBPodBinding {
				c := tkeExtendLeft()
				c.Finalizers, c.OwnerReferences = nil, nil
				c.Spec.Ports[0].Pools = []string{"someone-elses"}
				c.Status.PortBindings[0].LoadbalancerID = "lb-forged"
				return c
			}(),
			want: want{exists: true, mirror: true},
		},
		"TKEExtendTakenOver": {
			reason: "tke-extend's binding loses its Pod owner and its finalizer (its controller is gone) and says what the provider serves",
			cpb:    tkeExtendLeft(),
			want: want{exists: true, mirror: true, cpb: func(t *testing.T, c *v1alpha1.CLBPodBinding) {
				if len(c.Finalizers) != 0 {
					t.Errorf("finalizers %v, want none", c.Finalizers)
				}
			}},
		},
		"OtherFinalizersKept": {
			reason: "only tke-extend's finalizer is removed",
			cpb: func() *v1alpha1.CLBPodBinding {
				c := tkeExtendLeft()
				c.Finalizers = append(c.Finalizers, "example.com/keep")
				return c
			}(),
			want: want{exists: true, mirror: true, cpb: func(t *testing.T, c *v1alpha1.CLBPodBinding) {
				if d := cmp.Diff([]string{"example.com/keep"}, c.Finalizers); d != "" {
					t.Errorf("finalizers (-want +got):\n%s", d)
				}
			}},
		},
		"NoLongerTKE": {
			reason: "a Pod that stops asking in tke-extend's syntax loses the binding the provider made",
			pa:     func(pa *networkv1alpha1.PodAddress) { pa.Spec.Source = "annotation/" + podannotation.SyntaxNative },
			cpb: func() *v1alpha1.CLBPodBinding {
				c := tkeExtendLeft()
				c.Finalizers = nil
				c.OwnerReferences = []metav1.OwnerReference{{APIVersion: networkv1alpha1.SchemeGroupVersion.String(), Kind: networkv1alpha1.PodAddressKind,
					Name: "gs-0", UID: "pa-uid", Controller: ptr.To(true)}}
				return c
			}(),
			want: want{exists: false},
		},
		"NotOursLeftAlone": {
			reason: "a binding the provider did not make, for a Pod it serves another way, is neither read nor written",
			pa:     func(pa *networkv1alpha1.PodAddress) { pa.Spec.Source = "annotation/" + podannotation.SyntaxNative },
			cpb:    tkeExtendLeft(),
			want: want{exists: true, cpb: func(t *testing.T, c *v1alpha1.CLBPodBinding) {
				if d := cmp.Diff(tkeExtendLeft().Status, c.Status); d != "" {
					t.Errorf("status changed (-want +got):\n%s", d)
				}
			}},
		},
		"DeletedByUser": {
			reason: "a binding deleted while tke-extend's finalizer holds it is let go (and made again on its deletion event)",
			cpb: func() *v1alpha1.CLBPodBinding {
				c := tkeExtendLeft()
				now := metav1.Now()
				c.DeletionTimestamp = &now
				return c
			}(),
			want: want{exists: false},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := runtime.NewScheme()
			for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, networkv1alpha1.AddToScheme, v1alpha1.AddToScheme} {
				if err := add(s); err != nil {
					t.Fatal(err)
				}
			}
			pa := tkePodAddress()
			pa.UID = "pa-uid"
			if tc.pa != nil {
				tc.pa(pa)
			}
			b := fake.NewClientBuilder().WithScheme(s).WithStatusSubresource(&networkv1alpha1.PodAddress{}, &v1alpha1.CLBPodBinding{}).WithObjects(pa)
			if tc.cpb != nil {
				b = b.WithObjects(tc.cpb)
			}
			kube := b.Build()
			r := &reconciler{kube: kube}
			key := client.ObjectKeyFromObject(pa)
			if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: key}); err != nil {
				t.Fatalf("%s: %v", tc.reason, err)
			}
			got := &v1alpha1.CLBPodBinding{}
			err := kube.Get(context.Background(), key, got)
			if exists := err == nil; exists != tc.want.exists {
				t.Fatalf("%s: binding exists %v (%v), want %v", tc.reason, exists, err, tc.want.exists)
			}
			if err != nil && !kerrors.IsNotFound(err) {
				t.Fatal(err)
			}
			if !tc.want.exists {
				return
			}
			if tc.want.mirror {
				m := tkeBound()
				if d := cmp.Diff(m.spec, got.Spec); d != "" {
					t.Errorf("%s: spec (-want +got):\n%s", tc.reason, d)
				}
				if d := cmp.Diff(m.status, got.Status); d != "" {
					t.Errorf("%s: status (-want +got):\n%s", tc.reason, d)
				}
				if len(got.OwnerReferences) != 1 || !metav1.IsControlledBy(got, pa) {
					t.Errorf("%s: owners %+v, want the PodAddress alone", tc.reason, got.OwnerReferences)
				}
			}
			if tc.want.cpb != nil {
				tc.want.cpb(t, got)
			}
		})
	}
}

// TestReconcileNode: the PodAddress of a Node of tke-extend's HostPort
// scheme is shown as the Node's CLBNodeBinding, owned by the Node; it is
// deleted with the PodAddress, and one tke-extend left for a Node that no
// longer asks is left alone.
func TestReconcileNode(t *testing.T) {
	nodeKey := podannotation.TKENodeAddressName("worker-1")
	mine := map[string]string{AnnotationMirrorOf: nodeKey.String()}
	tkeLeft := func() *v1alpha1.CLBNodeBinding {
		return &v1alpha1.CLBNodeBinding{ObjectMeta: metav1.ObjectMeta{Name: "worker-1", Finalizers: []string{TKEFinalizer},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "worker-1", UID: "node-uid"}}},
			Status: v1alpha1.CLBBindingStatus{State: v1alpha1.BindingStateBound}}
	}
	cases := map[string]struct {
		reason string
		noPA   bool
		cnb    *v1alpha1.CLBNodeBinding
		exists bool
		mirror bool
	}{
		"Created":     {reason: "a Node's PodAddress gets the Node's CLBNodeBinding", exists: true, mirror: true},
		"TakenOver":   {reason: "tke-extend's binding of the Node is overwritten, its finalizer off", cnb: tkeLeft(), exists: true, mirror: true},
		"GoneWithPA":  {reason: "the binding the provider wrote goes with the PodAddress", noPA: true, cnb: &v1alpha1.CLBNodeBinding{ObjectMeta: metav1.ObjectMeta{Name: "worker-1", Annotations: mine}}},
		"TKELeftKept": {reason: "tke-extend's binding of a Node that does not ask is left as it is", noPA: true, cnb: tkeLeft(), exists: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := runtime.NewScheme()
			for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, networkv1alpha1.AddToScheme, v1alpha1.AddToScheme} {
				if err := add(s); err != nil {
					t.Fatal(err)
				}
			}
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-1", UID: "node-uid"}}
			b := fake.NewClientBuilder().WithScheme(s).WithStatusSubresource(&networkv1alpha1.PodAddress{}, &v1alpha1.CLBNodeBinding{}).WithObjects(node)
			if !tc.noPA {
				pa := tkePodAddress()
				pa.Namespace, pa.Name, pa.UID = nodeKey.Namespace, nodeKey.Name, "pa-uid"
				b = b.WithObjects(pa)
			}
			if tc.cnb != nil {
				b = b.WithObjects(tc.cnb)
			}
			kube := b.Build()
			r := &reconciler{kube: kube}
			if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: nodeKey}); err != nil {
				t.Fatalf("%s: %v", tc.reason, err)
			}
			if err := kube.Get(context.Background(), nodeKey, &v1alpha1.CLBPodBinding{}); !kerrors.IsNotFound(err) {
				t.Errorf("%s: a CLBPodBinding of the Node's PodAddress (%v)", tc.reason, err)
			}
			got := &v1alpha1.CLBNodeBinding{}
			err := kube.Get(context.Background(), client.ObjectKey{Name: "worker-1"}, got)
			if exists := err == nil; exists != tc.exists {
				t.Fatalf("%s: binding exists %v (%v), want %v", tc.reason, exists, err, tc.exists)
			}
			if !tc.mirror {
				if tc.exists && got.Status.State != v1alpha1.BindingStateBound {
					t.Errorf("%s: status changed: %+v", tc.reason, got.Status)
				}
				return
			}
			m := tkeBound()
			if d := cmp.Diff(m.spec, got.Spec); d != "" {
				t.Errorf("%s: spec (-want +got):\n%s", tc.reason, d)
			}
			if d := cmp.Diff(m.status, got.Status); d != "" {
				t.Errorf("%s: status (-want +got):\n%s", tc.reason, d)
			}
			if len(got.OwnerReferences) != 1 || !metav1.IsControlledBy(got, node) || len(got.Finalizers) != 0 || got.Annotations[AnnotationMirrorOf] != nodeKey.String() {
				t.Errorf("%s: owners %+v, finalizers %v, annotations %v: want the Node alone, none, the mirror mark", tc.reason, got.OwnerReferences, got.Finalizers, got.Annotations)
			}
		})
	}
}
