package ingress

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/xplocal/xplocaltest"
)

// wait bounds every poll.
const wait = xplocaltest.Wait

// eventually polls for at most wait.
var eventually = xplocaltest.Eventually

// region is the default ClusterProviderConfig's.
const region = "ap-guangzhou"

var (
	xrIngress    = schema.GroupVersionKind{Group: "workload.tencentcloud.crossplane.io", Version: "v1alpha1", Kind: "Ingress"}
	claimIngress = schema.GroupVersionKind{Group: "claims.workload.tencentcloud.crossplane.io", Version: "v1alpha1", Kind: "Ingress"}
)

// existingLB creates a load balancer outside Crossplane, as the one a bcs
// user names in the annotation, and returns its id.
func existingLB(t testing.TB, name string) string {
	t.Helper()
	return suite.ExistingLB(t, region, name)
}

// cloudView is a load balancer's listeners as the emulator has them:
// "TCP 38080" (or "UDP 30000-30004", or "HTTPS 443 www.qq.com/path1" for
// a rule) → its targets as "ins-…:port" or "ip:port" → weight.
type cloudView map[string]map[string]int

func view(id string) cloudView {
	lb, _ := suite.InventoryLB(id)
	out := cloudView{}
	targets := func(ts []emulator.InventoryTarget) map[string]int {
		m := map[string]int{}
		for _, tg := range ts {
			k := tg.IP
			if tg.InstanceID != "" {
				k = tg.InstanceID
			}
			m[fmt.Sprintf("%s:%d", k, tg.Port)] = tg.Weight
		}
		return m
	}
	for _, l := range lb.Listeners {
		key := fmt.Sprintf("%s %d", l.Protocol, l.Port)
		if l.EndPort > 0 {
			key += fmt.Sprintf("-%d", l.EndPort)
		}
		if len(l.Rules) == 0 {
			out[key] = targets(l.Targets)
		}
		for _, r := range l.Rules {
			out[key+" "+r.Domain+r.URL] = targets(r.Targets)
		}
	}
	return out
}

// waitView waits until the load balancer has exactly these listeners,
// rules and targets.
func waitView(t testing.TB, what, id string, want cloudView) {
	t.Helper()
	eventually(t, what, func() error { return sameView(id, want) })
}

func sameView(id string, want cloudView) error {
	got := view(id)
	if !maps.EqualFunc(got, want, func(a, b map[string]int) bool { return maps.Equal(a, b) }) {
		return fmt.Errorf("load balancer %s has\n  %v\nwant\n  %v", id, got, want)
	}
	return nil
}

// seed reads one of the seed's Ingresses (test/render/testdata/ingress)
// with the load balancer id and namespaces replaced.
func seed(t testing.TB, file string, edits ...string) *unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "test", "render", "testdata", "ingress", file))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(strings.NewReplacer(edits...).Replace(string(b))), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

// apply creates the Ingress once its XRD serves the kind.
func apply(t testing.TB, u *unstructured.Unstructured) {
	t.Helper()
	eventually(t, "create "+u.GetName(), func() error {
		err := kube.Create(context.Background(), u.DeepCopy())
		if kerrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	})
}

// remove deletes an Ingress and what it composed, and checks that the
// load balancer (imported, observed only) stays with no listener left.
func remove(t testing.TB, u *unstructured.Unstructured, lbID string) {
	t.Helper()
	if _, err := local.DeleteComposite(context.Background(), u.GroupVersionKind(), u.GetNamespace(), u.GetName(), wait); err != nil {
		t.Fatal(err)
	}
	lb, ok := suite.InventoryLB(lbID)
	if !ok {
		t.Fatalf("load balancer %s was deleted with the Ingress", lbID)
	}
	if len(lb.Listeners) != 0 {
		t.Errorf("load balancer %s keeps %d listeners after the Ingress is deleted: %v", lbID, len(lb.Listeners), view(lbID))
	}
}

// ingressStatus reads the Ingress's status.
func ingressStatus(t testing.TB, gvk schema.GroupVersionKind, ns, name string) map[string]any {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	if err := kube.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
		t.Fatal(err)
	}
	st, _, _ := unstructured.NestedMap(u.Object, "status")
	return st
}

// node creates a Node whose providerID names a CVM instance.
func node(t testing.TB, name, instance string) {
	t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: "qcloud:///800002/" + instance}}
	if err := kube.Create(context.Background(), n); err != nil && !kerrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// service is a Service with one TCP port and its Pods. The local control
// plane runs no kube-controller-manager, so it writes the Service's
// EndpointSlice as the EndpointSlice controller would.
type service struct {
	ns, name   string
	targetPort int32
	nodePort   int64
	pods       []*corev1.Pod
}

func newService(t testing.TB, ns, name string, port, targetPort int32) *service {
	t.Helper()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.ServiceSpec{
		Type:     corev1.ServiceTypeNodePort,
		Selector: map[string]string{"app": name},
		Ports:    []corev1.ServicePort{{Name: "http", Port: port, TargetPort: intstr.FromInt32(targetPort), Protocol: corev1.ProtocolTCP}},
	}}
	if err := kube.Create(context.Background(), svc); err != nil {
		t.Fatal(err)
	}
	return &service{ns: ns, name: name, targetPort: targetPort, nodePort: int64(svc.Spec.Ports[0].NodePort)}
}

// add runs a Ready Pod of the Service on a node (hostPort 0: none).
func (s *service) add(t testing.TB, name, ip, nodeName string, hostPort int32, labels ...string) {
	t.Helper()
	l := map[string]string{"app": s.name}
	for i := 0; i+1 < len(labels); i += 2 {
		l[labels[i]] = labels[i+1]
	}
	p := readyPod(t, s.ns, name, ip, nodeName, l, corev1.ContainerPort{ContainerPort: s.targetPort, HostPort: hostPort})
	s.pods = append(s.pods, p)
	s.publish(t)
}

// drop deletes a Pod of the Service.
func (s *service) drop(t testing.TB, name string) {
	t.Helper()
	i := slices.IndexFunc(s.pods, func(p *corev1.Pod) bool { return p.Name == name })
	if err := kube.Delete(context.Background(), s.pods[i], client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	s.pods = slices.Delete(s.pods, i, i+1)
	s.publish(t)
}

func (s *service) publish(t testing.TB) {
	t.Helper()
	sl := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: s.name + "-ep", Labels: map[string]string{
			discoveryv1.LabelServiceName: s.name, discoveryv1.LabelManagedBy: "ingress-e2e"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: clb.Ptr("http"), Port: clb.Ptr(s.targetPort), Protocol: clb.Ptr(corev1.ProtocolTCP)}},
	}
	for _, p := range s.pods {
		sl.Endpoints = append(sl.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{p.Status.PodIP},
			Conditions: discoveryv1.EndpointConditions{Ready: clb.Ptr(true), Serving: clb.Ptr(true), Terminating: clb.Ptr(false)},
			NodeName:   clb.Ptr(p.Spec.NodeName),
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: p.Namespace, Name: p.Name, UID: p.UID},
		})
	}
	ctx := context.Background()
	got := &discoveryv1.EndpointSlice{}
	err := kube.Get(ctx, client.ObjectKeyFromObject(sl), got)
	switch {
	case kerrors.IsNotFound(err):
		err = kube.Create(ctx, sl)
	case err == nil:
		got.Endpoints, got.Ports = sl.Endpoints, sl.Ports
		err = kube.Update(ctx, got)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// readyPod creates a Pod and sets its IP and Ready condition as a kubelet
// would.
func readyPod(t testing.TB, ns, name, ip, nodeName string, labels map[string]string, ports ...corev1.ContainerPort) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}, Spec: corev1.PodSpec{
		NodeName:   nodeName,
		Containers: []corev1.Container{{Name: "server", Image: "example/server", Ports: ports}},
	}}
	if err := kube.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	eventually(t, "run Pod "+name, func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			return err
		}
		p.Status.Phase = corev1.PodRunning
		p.Status.PodIP, p.Status.PodIPs = ip, []corev1.PodIP{{IP: ip}}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		return kube.Status().Update(ctx, p)
	})
	return p
}

func podMeta(ns, name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }

// collectForeground does what the garbage collector does for an object
// deleted in the foreground that has no dependents: it removes the
// foregroundDeletion finalizer, so the provider (which waits for other
// finalizers to go first) deletes it in the cloud.
func collectForeground(t testing.TB, ns string) error {
	t.Helper()
	ctx := context.Background()
	for _, kind := range []string{"Listener", "Rule", "TargetSet"} {
		l := &unstructured.UnstructuredList{}
		l.SetAPIVersion("clb.tencentcloud.m.crossplane.io/v1alpha1")
		l.SetKind(kind + "List")
		if err := kube.List(ctx, l, client.InNamespace(ns)); err != nil {
			return err
		}
		for i := range l.Items {
			o := &l.Items[i]
			if o.GetDeletionTimestamp() == nil || !slices.Contains(o.GetFinalizers(), metav1.FinalizerDeleteDependents) {
				continue
			}
			o.SetFinalizers(slices.DeleteFunc(o.GetFinalizers(), func(f string) bool { return f == metav1.FinalizerDeleteDependents }))
			if err := kube.Update(ctx, o); err != nil {
				return err
			}
		}
	}
	return nil
}
