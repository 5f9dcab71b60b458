package podaddress

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	pkgv1beta1 "github.com/crossplane/crossplane/apis/v2/pkg/v1beta1"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	tkev1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/tkeextend/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/podaddress"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator/emulatortest"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv/suite"
)

const (
	providerSANamespace = testenv.ProviderSANamespace
	providerSA          = testenv.ProviderSA
)

// TestRuntimeConfigNamesTheBoundServiceAccount checks that
// examples/provider/runtimeconfig.yaml is a valid DeploymentRuntimeConfig
// naming the ServiceAccount that every file of examples/provider/rbac
// binds to its feature's ClusterRole.
func TestRuntimeConfigNamesTheBoundServiceAccount(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "examples", "provider", "runtimeconfig.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	rc := &pkgv1beta1.DeploymentRuntimeConfig{}
	if err := yaml.UnmarshalStrict(b, rc); err != nil {
		t.Fatal(err)
	}
	if rc.Kind != pkgv1beta1.DeploymentRuntimeConfigKind || rc.Spec.ServiceAccountTemplate == nil || rc.Spec.ServiceAccountTemplate.Metadata == nil ||
		rc.Spec.ServiceAccountTemplate.Metadata.Name == nil || *rc.Spec.ServiceAccountTemplate.Metadata.Name != providerSA {
		t.Fatalf("runtimeconfig.yaml does not name the ServiceAccount %s: %+v", providerSA, rc)
	}
	for _, f := range testenv.Features() {
		objs, err := testenv.ReadYAML(testenv.RBACFile(f))
		if err != nil {
			t.Fatal(err)
		}
		bindings := 0
		for _, o := range objs {
			if o.GetKind() != "ClusterRoleBinding" {
				continue
			}
			bindings++
			b := &rbacv1.ClusterRoleBinding{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, b); err != nil {
				t.Fatal(err)
			}
			if len(b.Subjects) != 1 || b.Subjects[0].Name != providerSA || b.Subjects[0].Namespace != providerSANamespace {
				t.Errorf("rbac/%s.yaml binds %+v, want %s/%s", f, b.Subjects, providerSANamespace, providerSA)
			}
			if want := "provider-tencentcloud-network:" + string(f); b.RoleRef.Name != want {
				t.Errorf("rbac/%s.yaml binds the ClusterRole %s, want %s", f, b.RoleRef.Name, want)
			}
		}
		if bindings != 1 {
			t.Errorf("rbac/%s.yaml has %d ClusterRoleBindings, want 1", f, bindings)
		}
	}
}

// TestLeastPrivilege runs the provider as the ServiceAccount Crossplane
// would run it as, with only Crossplane's default grants plus
// the RBAC of core and Pod addresses (examples/provider/rbac), and drives
// the paths that touch core
// resources: Pods watched and annotated, a readiness-gate condition, a
// Node looked up for a NodePort backend, a Node of tke-extend's HostPort
// scheme told and its CLBNodeBinding made and deleted, and a PodAddress deleted when its
// Pod goes, the target audit's uncached read and PortPool Event, and a
// certSecret read in the Pod's namespace (uncached). Any
// permission missing from those files stalls one of them. On the cloud side
// its key has README's CAM policy, as in every test of this package; none
// of these calls may be refused.
func TestLeastPrivilege(t *testing.T) {
	ctx := context.Background()
	refused := emulatortest.Refused(cloud, testenv.SessionSecretID)
	t.Cleanup(func() {
		if r := emulatortest.Refused(cloud, testenv.SessionSecretID); !maps.Equal(r, refused) {
			t.Errorf("README's CAM policy refused calls of the provider: %v (before the test: %v)", r, refused)
		}
	})
	sa, err := env.AsProvider(ctx, testenv.FeaturePodAddresses)
	if err != nil {
		t.Fatal(err)
	}

	startProvider(t, suite.As(sa), suite.PodAddress(podaddress.Options{TargetAuditInterval: time.Second}))
	ns := namespace(t)
	lbCR := lb(t, ns, "lb", "BGP")
	// Every namespace served: tke-port-pools too, for the Node below.
	pp := pool(t, ns, "pool", []string{"lb"}, 44000, 44009, func(pp *clbv1alpha1.PortPool) {
		pp.Spec.Consumers = &clbv1alpha1.PoolConsumers{Namespaces: clbv1alpha1.NamespaceConsent{From: clbv1alpha1.ConsentAll}}
	})

	// Annotated Pod with a readiness gate: Pod patch and pods/status patch.
	gated := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gated", Annotations: map[string]string{ourPorts: "7777 pool"}}}
	gated.Spec.Containers = []corev1.Container{{Name: "s", Image: "example/server", Ports: []corev1.ContainerPort{{ContainerPort: 7777}}}}
	gated.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: condition}}
	if err := kube.Create(ctx, gated); err != nil {
		t.Fatal(err)
	}
	setIP(t, gated, "10.44.0.1")
	bound(t, ns, "gated")
	eventually(t, "address annotation and condition on the gated Pod", func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(gated), gated); err != nil {
			return err
		}
		if c := podCond(gated); c == nil || c.Status != corev1.ConditionTrue {
			return errors.Errorf("condition %+v", c)
		}
		for k := range gated.GetAnnotations() {
			if k != ourPorts {
				return nil
			}
		}
		return errors.Errorf("no address annotation: %v", gated.GetAnnotations())
	})

	// NodePort backend through a policy: the Node is read.
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-" + ns}, Spec: corev1.NodeSpec{ProviderID: "qcloud:///800002/ins-rbac0001"}}
	if err := kube.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.Delete(context.Background(), node) })
	nodePort := int32(30778)
	// The node port is the Pod's own Service's (the NodePort backend's rule).
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "np"}, Spec: corev1.ServiceSpec{
		Type: corev1.ServiceTypeNodePort, Selector: map[string]string{"app": "np"},
		Ports: []corev1.ServicePort{{Port: 7777, TargetPort: intstr.FromInt32(7777), NodePort: nodePort}},
	}}
	if err := kube.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	pol := &v1alpha1.PodAddressPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "np"}}
	pol.Spec.Selector.MatchLabels = map[string]string{"app": "np"}
	pol.Spec.Backend = v1alpha1.BackendNodePort
	pol.Spec.Ports = []v1alpha1.PortRequest{{Port: intstr.FromInt32(7777), Pools: []v1alpha1.PoolRef{{Name: "pool"}}, NodePort: &nodePort}}
	if err := kube.Create(ctx, pol); err != nil {
		t.Fatal(err)
	}
	np := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "np-0", Labels: map[string]string{"app": "np"}}}
	np.Spec.NodeName = node.Name
	np.Spec.Containers = []corev1.Container{{Name: "s", Image: "example/server", Ports: []corev1.ContainerPort{{ContainerPort: 7777}}}}
	if err := kube.Create(ctx, np); err != nil {
		t.Fatal(err)
	}
	setIP(t, np, "10.44.0.2")
	if b := bound(t, ns, "np-0").Status.Bindings[0]; b.InstanceID != "ins-rbac0001" {
		t.Errorf("NodePort binding targets %q, want the node's instance ins-rbac0001", b.InstanceID)
	}

	// tke-extend's HostPort scheme: the Node asks, is told on its
	// annotations (Node patch) and gets its CLBNodeBinding; it stops
	// asking and the binding is deleted.
	if err := kube.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: podannotation.TKEPoolNamespace}}); err != nil && !kerrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	eventually(t, "the Node asks", func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(node), node); err != nil {
			return err
		}
		node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.44.1.1"}}
		if err := kube.Status().Update(ctx, node); err != nil {
			return err
		}
		node.Annotations = map[string]string{podannotation.TKEAnnotationEnableMapping: "true", podannotation.TKEAnnotationPortMapping: "7000 TCP " + ns + "/pool"}
		return kube.Update(ctx, node)
	})
	eventually(t, "the Node told and its CLBNodeBinding Bound", func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(node), node); err != nil {
			return err
		}
		if _, ok, err := podannotation.TKEResult(node.Annotations); !ok || err != nil {
			return errors.Errorf("Node annotations %v", node.Annotations)
		}
		cnb := &tkev1alpha1.CLBNodeBinding{}
		if err := kube.Get(ctx, client.ObjectKeyFromObject(node), cnb); err != nil {
			return err
		}
		if cnb.Status.State != tkev1alpha1.BindingStateBound {
			return errors.Errorf("CLBNodeBinding %q", cnb.Status.State)
		}
		return nil
	})
	eventually(t, "the Node stops asking", func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(node), node); err != nil {
			return err
		}
		delete(node.Annotations, podannotation.TKEAnnotationEnableMapping)
		return kube.Update(ctx, node)
	})
	eventually(t, "its CLBNodeBinding deleted", func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(node), &tkev1alpha1.CLBNodeBinding{}); !kerrors.IsNotFound(err) {
			return errors.Errorf("still there (%v)", err)
		}
		return nil
	})

	// The Pod goes: the provider deletes its PodAddress.
	deletePod(t, gated)
	eventually(t, "PodAddress of the deleted Pod gone", func() error {
		err := kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: "gated"}, &v1alpha1.PodAddress{})
		if kerrors.IsNotFound(err) {
			return nil
		}
		return errors.Errorf("still there (%v)", err)
	})
	// The target audit: an uncached read of the PodAddresses and an Event
	// on the PortPool, for a foreign target it deregisters.
	foreignListener := pp.Status.AtProvider.LoadBalancers[0].Listeners["TCP/44009"]
	out, err := clb.NewPool(clb.Options{}).Client(clients.Config{SecretID: emulatortest.ConsoleSecretID, SecretKey: emulatortest.ConsoleSecretKey,
		Region: emulator.DefaultRegion, Endpoint: cloud.Endpoint(), Scheme: "http"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := out.RegisterTargets(ctx, lbID(lbCR), []clb.Target{{ListenerID: foreignListener, EniIP: "10.44.9.9", Port: 9000}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the foreign target deregistered, with an Event on the PortPool", func() error {
		if ts := cloudTargets(lbID(lbCR), foreignListener); len(ts) > 0 {
			return errors.Errorf("targets %v", ts)
		}
		l := &corev1.EventList{}
		if err := kube.List(ctx, l, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, e := range l.Items {
			if e.InvolvedObject.Kind == "PortPool" && e.Reason == "ForeignTargetRemoved" {
				return nil
			}
		}
		return errors.New("no ForeignTargetRemoved Event")
	})

	// tke-extend's certSecret: the Secret is read in the Pod's namespace
	// (Crossplane's default grant on Secrets; no rule of ours). A missing
	// one is Invalid, not a read the API server forbade.
	pool(t, ns, "tls", []string{"lb"}, 44010, 44011, func(pp *clbv1alpha1.PortPool) {
		pp.Spec.ForProvider.Protocols = []string{"TCP_SSL"}
		pp.Spec.ForProvider.Listener = &clbv1alpha1.PoolListenerSettings{Certificate: &clbv1alpha1.Certificate{CertID: "cert-rbac"}}
	})
	pod(t, ns, "tls", "10.44.0.3", map[string]string{
		podannotation.TKEAnnotationEnableMapping: "true",
		podannotation.TKEAnnotationPortMapping:   "443 TCP_SSL " + ns + "/tls certSecret=missing",
	}, corev1.ContainerPort{ContainerPort: 443})
	if pa := state(t, ns, "tls", v1alpha1.StateInvalid); !strings.Contains(pa.Status.Message, "certSecret "+ns+"/missing not found") {
		t.Errorf("Invalid %q, want the Secret not found", pa.Status.Message)
	}
}
