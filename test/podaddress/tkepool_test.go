package podaddress

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

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
	tkev1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/tkeextend/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv/suite"
)

// TestCLBPortPoolSample: tke-extend's guide's "pool-internal" CLBPortPool
// (examples/tke-extend/clbportpool.yaml), with only the load balancer id
// and name changed, is accepted and becomes the PortPool
// tke-port-pools/<name> field by field: no endPort reaches as far as the
// cloud's listener quota allows (50 listeners: 25 ports × TCP and UDP),
// lbPolicy's default Random, every namespace served. The CLBPortPool's
// status shows the PortPool's (Active, the load balancer Running) and
// what is not honoured. Deleting it deletes the PortPool and its
// listeners.
func TestCLBPortPoolSample(t *testing.T) {
	startProvider(t)
	ctx := context.Background()
	ns := namespace(t)
	l := lb(t, ns, "lb", "BGP")
	name := "pool-internal-" + ns
	objs, err := testenv.Apply(ctx, kube, filepath.Join(testenv.RepoRoot(), "examples", "tke-extend", "clbportpool.yaml"), func(u *unstructured.Unstructured) {
		u.SetName(name)
		_ = unstructured.SetNestedStringSlice(u.Object, []string{lbID(l)}, "spec", "exsistedLoadBalancerIDs")
	})
	if err != nil || len(objs) != 1 {
		t.Fatalf("apply the example: %d objects, %v", len(objs), err)
	}

	key := types.NamespacedName{Namespace: podannotation.TKEPoolNamespace, Name: name}
	pp := &clbv1alpha1.PortPool{}
	eventually(t, "PortPool "+key.String()+" Ready", func() error {
		if err := kube.Get(ctx, key, pp); err != nil {
			return err
		}
		if len(pp.Status.AtProvider.LoadBalancers) != 1 || pp.Status.AtProvider.LoadBalancers[0].State != clbv1alpha1.PoolLBReady {
			return errors.Errorf("load balancers %+v", pp.Status.AtProvider.LoadBalancers)
		}
		return nil
	})
	fp := pp.Spec.ForProvider
	if fp.StartPort != 30000 || fp.EndPort != 65535 || fp.SegmentLength != nil || !slices.Equal(fp.LoadBalancerIDs, []string{lbID(l)}) ||
		!slices.Equal(fp.Protocols, []string{"TCP", "UDP"}) || ptr.Deref(fp.AllocationPolicy, "") != clbv1alpha1.PolicyRandom {
		t.Errorf("forProvider %+v, want ports 30000-65535, [%s], TCP and UDP, Random", fp, lbID(l))
	}
	if a := fp.AutoCreate; a == nil || a.MaxLoadBalancers != 100 || ptr.Deref(a.Template.Type, "") != "INTERNAL" || ptr.Deref(a.Template.SubnetID, "") != "subnet-k57djpow" {
		t.Errorf("autoCreate %+v, want 100 INTERNAL load balancers in subnet-k57djpow", fp.AutoCreate)
	}
	if c := pp.Spec.Consumers; c == nil || c.Namespaces.From != clbv1alpha1.ConsentAll {
		t.Errorf("consumers %+v, want every namespace", pp.Spec.Consumers)
	}
	if got := pp.Status.AtProvider.SlotsPerLoadBalancer; got != 25 {
		t.Errorf("%d ports per load balancer, want 25 (the quota of 50 listeners over TCP and UDP)", got)
	}
	if n := poolListeners(lbID(l), 30000, 30024); n != 50 {
		t.Errorf("%d listeners on ports 30000-30024 in the cloud, want 50", n)
	}

	cpp := &tkev1alpha1.CLBPortPool{}
	eventually(t, "CLBPortPool Active", func() error {
		if err := kube.Get(ctx, client.ObjectKey{Name: name}, cpp); err != nil {
			return err
		}
		if cpp.Status.State != tkev1alpha1.StateActive || len(cpp.Status.LoadbalancerStatuses) != 1 {
			return errors.Errorf("status %+v", cpp.Status)
		}
		return nil
	})
	if s := cpp.Status.LoadbalancerStatuses[0]; s.LoadbalancerID != lbID(l) || s.State != tkev1alpha1.LBStateRunning || len(s.Ips) == 0 {
		t.Errorf("load balancer status %+v, want %s Running with its VIPs", s, lbID(l))
	}
	if cpp.Status.PortPool != key.String() || !slices.ContainsFunc(cpp.Status.Ignored, func(s string) bool { return strings.HasPrefix(s, "autoCreate.maxLoadBalancers:") }) {
		t.Errorf("status portPool %q, ignored %q; want %s and the bound on maxLoadBalancers", cpp.Status.PortPool, cpp.Status.Ignored, key)
	}

	if err := kube.Delete(ctx, cpp); err != nil {
		t.Fatal(err)
	}
	eventually(t, "CLBPortPool, PortPool and listeners gone", func() error {
		if err := kube.Get(ctx, key, &clbv1alpha1.PortPool{}); !kerrors.IsNotFound(err) {
			return errors.Errorf("PortPool: %v", err)
		}
		if err := kube.Get(ctx, client.ObjectKey{Name: name}, &tkev1alpha1.CLBPortPool{}); !kerrors.IsNotFound(err) {
			return errors.Errorf("CLBPortPool: %v", err)
		}
		if n := poolListeners(lbID(l), 30000, 30024); n != 0 {
			return errors.Errorf("%d listeners left", n)
		}
		return nil
	})
}

// TestCLBPortPoolRefused: a CLBPortPool the PortPool cannot follow says
// why in its status, and makes no PortPool.
func TestCLBPortPoolRefused(t *testing.T) {
	startProvider(t)
	ctx := context.Background()
	ns := namespace(t)
	cpp := &tkev1alpha1.CLBPortPool{
		ObjectMeta: metav1.ObjectMeta{Name: "refused-" + ns, Annotations: map[string]string{tkev1alpha1.AnnotationProtocols: "TCP,SCTP"}},
		Spec:       tkev1alpha1.CLBPortPoolSpec{StartPort: 30000, ExsistedLoadBalancerIDs: []string{"lb-12345678"}},
	}
	if err := kube.Create(ctx, cpp); err != nil {
		t.Fatal(err)
	}
	eventually(t, "CLBPortPool Pending with the reason", func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(cpp), cpp); err != nil {
			return err
		}
		if cpp.Status.State != tkev1alpha1.StatePending || !strings.Contains(ptr.Deref(cpp.Status.Message, ""), `"SCTP" is not TCP, UDP, TCP_SSL or QUIC`) {
			return errors.Errorf("status %+v", cpp.Status)
		}
		return nil
	})
	if err := kube.Get(ctx, types.NamespacedName{Namespace: podannotation.TKEPoolNamespace, Name: cpp.Name}, &clbv1alpha1.PortPool{}); !kerrors.IsNotFound(err) {
		t.Errorf("a PortPool of a refused CLBPortPool: %v", err)
	}
	if err := kube.Delete(ctx, cpp); err != nil {
		t.Fatal(err)
	}
}

// TestOKGGameServerSetPool: with OKG's GameServerSet kind served, a
// GameServerSet on the TencentCloud-CLB network gets the CLBPortPool
// <ns>-<gss> tke-extend would make (ClbIds, MinPort; MaxPort; UDP listeners
// for PortProtocols 7777/UDP), whose PortPool serves only its namespace; a
// Pod annotated as OKG's plugin writes is bound and told; a changed conf
// updates the pool; deleting the GameServerSet deletes both pools. The
// provider runs with its shipped RBAC.
func TestOKGGameServerSetPool(t *testing.T) {
	ctx := context.Background()
	gssProvider(t)
	ns := namespace(t)
	l := lb(t, ns, "lb", "BGP")
	gss := newGSS(t, ns, "battle", lbID(l), 31000, 31009)
	name := ns + "-battle"
	key := types.NamespacedName{Namespace: podannotation.TKEPoolNamespace, Name: name}
	pp := &clbv1alpha1.PortPool{}
	eventually(t, "PortPool "+key.String()+" with its 10 listeners", func() error {
		if err := kube.Get(ctx, key, pp); err != nil {
			return err
		}
		if ls := pp.Status.AtProvider.LoadBalancers; len(ls) != 1 || ls[0].State != clbv1alpha1.PoolLBReady || ls[0].ListenersReady != 10 {
			return errors.Errorf("load balancers %+v", ls)
		}
		return nil
	})
	cpp := &tkev1alpha1.CLBPortPool{}
	if err := kube.Get(ctx, client.ObjectKey{Name: name}, cpp); err != nil {
		t.Fatal(err)
	}
	if s := cpp.Spec; s.StartPort != 31000 || ptr.Deref(s.EndPort, 0) != 31009 || !slices.Equal(s.ExsistedLoadBalancerIDs, []string{lbID(l)}) {
		t.Errorf("CLBPortPool spec %+v, want 31000-31009 on %s", s, lbID(l))
	}
	fp := pp.Spec.ForProvider
	if fp.StartPort != 31000 || fp.EndPort != 31009 || !slices.Equal(fp.Protocols, []string{"UDP"}) || !slices.Equal(fp.LoadBalancerIDs, []string{lbID(l)}) {
		t.Errorf("forProvider %+v, want UDP 31000-31009 on %s", fp, lbID(l))
	}
	if c := pp.Spec.Consumers; c == nil || c.Namespaces.From != clbv1alpha1.ConsentSelector || c.Namespaces.Selector == nil ||
		c.Namespaces.Selector.MatchLabels[corev1.LabelMetadataName] != ns {
		t.Errorf("consumers %+v, want the namespace %s only", pp.Spec.Consumers, ns)
	}
	if n := poolListeners(lbID(l), 31000, 31009); n != 10 {
		t.Errorf("%d listeners on 31000-31009 in the cloud, want 10", n)
	}

	// The Pod as OKG's plugin annotates it.
	const ip = "10.27.0.1"
	p := pod(t, ns, "battle-0", ip, map[string]string{
		podannotation.TKEAnnotationEnableMapping: "true",
		podannotation.TKEAnnotationPortMapping:   fmt.Sprintf("7777 UDP %s\n", name),
	}, corev1.ContainerPort{ContainerPort: 7777, Protocol: corev1.ProtocolUDP})
	pa := bound(t, ns, p.Name)
	podAnnotation(t, p, podannotation.TKEAnnotationMappingStatus, "Ready")
	if err := kube.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
		t.Fatal(err)
	}
	var res []podannotation.TKEPortMapping
	if err := json.Unmarshal([]byte(p.Annotations[podannotation.TKEAnnotationMappingResult]), &res); err != nil || len(res) != 1 {
		t.Fatalf("result %q: %v", p.Annotations[podannotation.TKEAnnotationMappingResult], err)
	}
	b := pa.Status.Bindings[0]
	if m := res[0]; m.Pool != name || m.Port != 7777 || m.Protocol != "UDP" || m.LoadbalancerPort < 31000 || m.LoadbalancerPort > 31009 ||
		m.Address != fmt.Sprintf("%s:%d", b.VIPs[0], b.Port) {
		t.Errorf("result %+v, want pool %s, 7777/UDP on a port of 31000-31009", m, name)
	}
	if ts := cloudTargets(lbID(l), res[0].ListenerID); !slices.Equal(ts, []string{ip + ":7777"}) {
		t.Errorf("listener %s forwards to %v, want %s:7777", res[0].ListenerID, ts, ip)
	}

	// A changed conf updates the pool: a second load balancer.
	l2 := lb(t, ns, "lb2", "BGP")
	if err := kube.Get(ctx, client.ObjectKeyFromObject(gss), gss); err != nil {
		t.Fatal(err)
	}
	conf, _, _ := unstructured.NestedSlice(gss.Object, "spec", "network", "networkConf")
	conf[0] = map[string]any{"name": "ClbIds", "value": lbID(l) + "," + lbID(l2)}
	if err := unstructured.SetNestedSlice(gss.Object, conf, "spec", "network", "networkConf"); err != nil {
		t.Fatal(err)
	}
	if err := kube.Update(ctx, gss); err != nil {
		t.Fatal(err)
	}
	eventually(t, "both load balancers in the PortPool", func() error {
		if err := kube.Get(ctx, key, pp); err != nil {
			return err
		}
		if ids := pp.Spec.ForProvider.LoadBalancerIDs; !slices.Equal(ids, []string{lbID(l), lbID(l2)}) {
			return errors.Errorf("loadBalancerIds %v", ids)
		}
		return nil
	})

	// GameServerSet gone (its Pods first, as OKG would delete them).
	deletePod(t, p)
	if err := kube.Delete(ctx, gss); err != nil {
		t.Fatal(err)
	}
	eventually(t, "CLBPortPool, PortPool and listeners gone", func() error {
		if err := kube.Get(ctx, client.ObjectKey{Name: name}, &tkev1alpha1.CLBPortPool{}); !kerrors.IsNotFound(err) {
			return errors.Errorf("CLBPortPool: %v", err)
		}
		if err := kube.Get(ctx, key, &clbv1alpha1.PortPool{}); !kerrors.IsNotFound(err) {
			return errors.Errorf("PortPool: %v", err)
		}
		if n := poolListeners(lbID(l), 31000, 31009) + poolListeners(lbID(l2), 31000, 31009); n != 0 {
			return errors.Errorf("%d listeners left", n)
		}
		return nil
	})
}

// TestOKGGameServerSetPoolEdges: a CLBPortPool of the GameServerSet's
// pool name that an admin made is never taken over (the GameServerSet gets
// a Warning), and a pool whose GameServerSet was deleted while the
// provider was down is deleted when it starts.
func TestOKGGameServerSetPoolEdges(t *testing.T) {
	ctx := context.Background()
	sa, stop := gssProvider(t)
	ns := namespace(t)
	l := lb(t, ns, "lb", "BGP")

	// The admin's pool of the name the GameServerSet would make.
	admins := &tkev1alpha1.CLBPortPool{ObjectMeta: metav1.ObjectMeta{Name: ns + "-clash"},
		Spec: tkev1alpha1.CLBPortPoolSpec{StartPort: 33000, EndPort: ptr.To[int64](33004), ExsistedLoadBalancerIDs: []string{lbID(l)}}}
	if err := kube.Create(ctx, admins); err != nil {
		t.Fatal(err)
	}
	clash := newGSS(t, ns, "clash", lbID(l), 32000, 32004)
	eventually(t, "a CannotMakePool warning on the GameServerSet clash", func() error {
		l := &corev1.EventList{}
		if err := kube.List(ctx, l, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, e := range l.Items {
			if e.InvolvedObject.Kind == "GameServerSet" && e.InvolvedObject.Name == clash.GetName() && e.Type == corev1.EventTypeWarning &&
				e.Reason == "CannotMakePool" && strings.Contains(e.Message, "was not made for this GameServerSet") {
				return nil
			}
		}
		return errors.Errorf("none among %d events", len(l.Items))
	})
	got := &tkev1alpha1.CLBPortPool{}
	if err := kube.Get(ctx, client.ObjectKeyFromObject(admins), got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.StartPort != 33000 || len(got.Labels) != 0 || len(got.Annotations) != 0 {
		t.Errorf("the admin's CLBPortPool was changed: spec %+v, labels %v, annotations %v", got.Spec, got.Labels, got.Annotations)
	}
	// Its deletion leaves the admin's pool too.
	if err := kube.Delete(ctx, clash); err != nil {
		t.Fatal(err)
	}

	// A GameServerSet deleted while the provider is down.
	gone := newGSS(t, ns, "gone", lbID(l), 32000, 32004)
	made := client.ObjectKey{Name: ns + "-gone"}
	eventually(t, "the CLBPortPool "+made.Name+" made", func() error {
		return kube.Get(ctx, made, &tkev1alpha1.CLBPortPool{})
	})
	stop()
	if err := kube.Delete(ctx, gone); err != nil {
		t.Fatal(err)
	}
	startProvider(t, suite.As(sa), suite.GameServerSets())
	eventually(t, "the CLBPortPool "+made.Name+" deleted at start", func() error {
		if err := kube.Get(ctx, made, &tkev1alpha1.CLBPortPool{}); !kerrors.IsNotFound(err) {
			return errors.Errorf("CLBPortPool: %v", err)
		}
		return nil
	})
	if err := kube.Get(ctx, client.ObjectKeyFromObject(admins), got); err != nil {
		t.Errorf("the admin's CLBPortPool: %v", err)
	}
	// Gone, with its PortPool, while the provider runs: nothing of this
	// test is left for the next ones' providers.
	if err := kube.Delete(ctx, admins); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the admin's CLBPortPool and both PortPools gone", func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(admins), &tkev1alpha1.CLBPortPool{}); !kerrors.IsNotFound(err) {
			return errors.Errorf("CLBPortPool: %v", err)
		}
		for _, name := range []string{admins.Name, made.Name} {
			if err := kube.Get(ctx, client.ObjectKey{Namespace: podannotation.TKEPoolNamespace, Name: name}, &clbv1alpha1.PortPool{}); !kerrors.IsNotFound(err) {
				return errors.Errorf("PortPool %s: %v", name, err)
			}
		}
		return nil
	})
}

// gssProvider serves the stand-in GameServerSet kind and returns the
// provider's ServiceAccount (its shipped RBAC) and a provider started as
// it with the GameServerSet controller.
func gssProvider(t *testing.T) (*rest.Config, func()) {
	t.Helper()
	ctx := context.Background()
	if _, err := testenv.Apply(ctx, kube, filepath.Join("testdata", "gameserverset-crd.yaml")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "GameServerSet kind served", func() error {
		return kube.List(ctx, gssList())
	})
	sa, err := env.AsProvider(ctx, testenv.FeaturePodAddresses)
	if err != nil {
		t.Fatal(err)
	}
	return sa, startProvider(t, suite.As(sa), suite.GameServerSets())
}

// newGSS creates GameServerSet ns/name on the TencentCloud-CLB network:
// 7777/UDP, load balancer lbID, ports from-to, no replicas.
func newGSS(t *testing.T, ns, name, lbID string, from, to int) *unstructured.Unstructured {
	t.Helper()
	gss := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "game.kruise.io/v1alpha1", "kind": "GameServerSet",
		"metadata": map[string]any{"namespace": ns, "name": name},
		"spec": map[string]any{"replicas": int64(0), "network": map[string]any{
			"networkType": "TencentCloud-CLB",
			"networkConf": []any{
				map[string]any{"name": "ClbIds", "value": lbID},
				map[string]any{"name": "PortProtocols", "value": "7777/UDP"},
				map[string]any{"name": "MinPort", "value": strconv.Itoa(from)},
				map[string]any{"name": "MaxPort", "value": strconv.Itoa(to)},
			},
		}},
	}}
	if err := kube.Create(context.Background(), gss); err != nil {
		t.Fatal(err)
	}
	return gss
}

func gssList() *unstructured.UnstructuredList {
	l := &unstructured.UnstructuredList{}
	l.SetAPIVersion("game.kruise.io/v1alpha1")
	l.SetKind("GameServerSetList")
	return l
}

// poolListeners counts the listeners of a load balancer on ports from-to.
func poolListeners(lbID string, from, to int) int {
	lb, ok := cloud.Inventory().LoadBalancer(lbID)
	if !ok {
		return 0
	}
	n := 0
	for _, l := range lb.Listeners {
		if l.Port >= from && l.Port <= to {
			n++
		}
	}
	return n
}
