package portpool

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	networkv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	tkev1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/tkeextend/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb/fake"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/mr"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
)

// tkeListener puts a listener named as tke-extend names its own on lb,
// with targets "ip" on port 7777.
func tkeListener(c *fake.Cloud, lb, id, proto string, port, end int64, ips ...string) {
	b := &clbsdk.ListenerBackend{ListenerId: clb.Ptr(id), Protocol: clb.Ptr(proto), Port: clb.Ptr(port)}
	for _, ip := range ips {
		b.Targets = append(b.Targets, &clbsdk.Backend{PrivateIpAddresses: []*string{clb.Ptr(ip)}, Port: clb.Ptr(int64(7777))})
	}
	c.SetTargets(lb, b)
	ls := c.Listeners[lb]
	l := ls[len(ls)-1]
	l.ListenerName, l.EndPort = clb.Ptr(v1alpha1.TKEListenerName), clb.Ptr(end)
}

func tkeSidePool(ns string) *v1alpha1.PortPool {
	cr := pool(onLBs("lb-a"), func(p *v1alpha1.PortPool) {
		p.Namespace, p.Name = ns, "pool-a"
		p.Spec.ForProvider.StartPort, p.Spec.ForProvider.EndPort = 30000, 30002
		p.Spec.ForProvider.Protocols = []string{"UDP"}
	})
	meta.SetExternalName(cr, cr.Name)
	return cr
}

// TestTakeOverTKEListeners: once the switch is made, a pool of
// tke-port-pools takes over every tke-extend listener on its slots
// (Listeners and Adopted in its status), never deleting or creating one
// again, and keeps it once the binding is gone: the one a binding records
// (a kept Pod), and the one whose target no binding records, which stays
// Inherited with its target and takes no binding (not Free) while that
// target's Pod lives. A tke-extend listener whose shape is not a slot
// (another protocol, an end port) is not taken over: a conflict.
func TestTakeOverTKEListeners(t *testing.T) {
	ctx := context.Background()
	home := fake.New("lb-a")
	tkeListener(home, "lb-a", "lbl-tke0", "UDP", 30000, 0, "10.0.0.5")
	tkeListener(home, "lb-a", "lbl-tke1", "UDP", 30001, 0, "10.0.0.6")
	tkeListener(home, "lb-a", "lbl-tcp2", "TCP", 30002, 0, "10.0.0.7")
	tkeListener(home, "lb-a", "lbl-seg", "UDP", 30002, 30003, "10.0.0.8")
	cr := tkeSidePool(podannotation.TKEPoolNamespace)
	pa := &networkv1alpha1.PodAddress{
		ObjectMeta: metav1.ObjectMeta{Namespace: "game", Name: "gs-0"},
		Status: networkv1alpha1.PodAddressStatus{Bindings: []networkv1alpha1.PortBinding{{
			Pool: "tke-port-pools/pool-a", Protocol: "UDP", ContainerPort: 7777, LoadBalancerID: "lb-a", Port: 30000,
			ListenerIDs: map[string]string{"UDP": "lbl-tke0"}, TargetIP: "10.0.0.5", TargetPort: 7777,
		}}},
	}
	// The Pod lbl-tke1 forwards to did not keep its address; it lives.
	e := newExternal(t, home, nil, pa, podWithIP("gs-1", "10.0.0.6"))
	for range 3 {
		_ = reconcile(t, *e, cr)
	}
	st := cr.Status.AtProvider.LoadBalancers[0]
	if st.Adopted["UDP/30000"] != "lbl-tke0" || st.Adopted["UDP/30001"] != "lbl-tke1" || len(st.Adopted) != 2 ||
		st.Listeners["UDP/30000"] != "lbl-tke0" || st.Listeners["UDP/30001"] != "lbl-tke1" {
		t.Errorf("listeners %v, adopted %v; want lbl-tke0 and lbl-tke1 taken over", st.Listeners, st.Adopted)
	}
	if len(st.TKEListeners) != 0 {
		t.Errorf("tkeListeners %+v, want none left once the switch is made", st.TKEListeners)
	}
	if len(st.Inherited) != 1 || st.Inherited[0].ID != "lbl-tke1" || !slices.Equal(st.Inherited[0].Targets, []string{"10.0.0.6:7777"}) {
		t.Errorf("inherited %+v, want lbl-tke1 forwarding to 10.0.0.6:7777 (no binding records it)", st.Inherited)
	}
	if st.Free != 0 {
		t.Errorf("free %d, want 0: 30000 is bound, 30001 still forwards to the Pod that had it, 30002 is taken", st.Free)
	}
	for _, w := range home.Log() {
		if strings.HasPrefix(w, "DeleteListeners") || strings.HasPrefix(w, "DeregisterTargets") ||
			strings.Contains(w, "UDP 30000") || strings.Contains(w, "UDP 30001") {
			t.Errorf("write %q to a tke-extend listener or its slot", w)
		}
	}
	_, err := e.Observe(ctx, cr)
	if err != nil {
		t.Fatal(err)
	}
	if c := strings.Join(e.obs.lbs[0].m.conflicts, "; "); !strings.Contains(c, "tke-extend's listener lbl-seg") || strings.Contains(c, "lbl-tke") {
		t.Errorf("conflicts %q, want lbl-seg (not a slot) alone", c)
	}

	// The binding goes (the Pod left, its target deregistered): the
	// listener stays the pool's.
	if _, err := home.DeregisterTargets(ctx, "lb-a", []clb.Target{{ListenerID: "lbl-tke0", EniIP: "10.0.0.5", Port: 7777}}); err != nil {
		t.Fatal(err)
	}
	e = newExternal(t, home, nil, podWithIP("gs-1", "10.0.0.6"))
	before := len(home.Log())
	for range 2 {
		_ = reconcile(t, *e, cr)
	}
	st = cr.Status.AtProvider.LoadBalancers[0]
	if st.Adopted["UDP/30000"] != "lbl-tke0" || st.Listeners["UDP/30000"] != "lbl-tke0" || st.Free != 1 {
		t.Errorf("after the binding went: listeners %v, adopted %v, free %d; want lbl-tke0 still the pool's, its slot free", st.Listeners, st.Adopted, st.Free)
	}
	for _, w := range home.Log()[before:] {
		if strings.HasPrefix(w, "DeleteListeners") || strings.HasPrefix(w, "DeregisterTargets") {
			t.Errorf("write %q after the binding went", w)
		}
	}
}

// podWithIP is a Pod of namespace game with Pod IP ip.
func podWithIP(name, ip string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "game", Name: name},
		Status: corev1.PodStatus{PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}}}
}

// TestInheritTKEListeners decides, one case a row, what the pool does
// with a tke-extend listener on its slot UDP/30001: take it over (or only
// list it), keep its slot from new bindings while a target no binding
// records is left, and deregister such a target only once no Pod of the
// cluster has its IP; never in a dry run or in a GameServerSet's pool.
func TestInheritTKEListeners(t *testing.T) {
	bound := func(ip string) *networkv1alpha1.PodAddress {
		return &networkv1alpha1.PodAddress{
			ObjectMeta: metav1.ObjectMeta{Namespace: "game", Name: "gs-kept"},
			Status: networkv1alpha1.PodAddressStatus{Bindings: []networkv1alpha1.PortBinding{{
				Pool: "tke-port-pools/pool-a", Protocol: "UDP", ContainerPort: 7777, LoadBalancerID: "lb-a", Port: 30001,
				ListenerIDs: map[string]string{"UDP": "lbl-tke1"}, TargetIP: ip, TargetPort: 7777,
			}}},
		}
	}
	hostOf := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "ds-0"},
		Status: corev1.PodStatus{HostIP: "10.0.0.6", HostIPs: []corev1.HostIP{{IP: "10.0.0.6"}}}}
	nodeAt := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-1"},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.6"}}}}
	externalAt := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-2"},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeExternalIP, Address: "10.0.0.6"}}}}
	dryRun := func(p *v1alpha1.PortPool) {
		meta.AddAnnotations(p, map[string]string{v1alpha1.AnnotationTKESwitch: v1alpha1.TKESwitchDryRun})
	}
	for _, tc := range []struct {
		name    string
		mod     func(*v1alpha1.PortPool)
		targets []string
		objs    []client.Object
		// what the status says of lbl-tke1 after the reconciles
		adopted, listed bool
		inherited       []string
		free            int64 // of 3 slots; 30000 and 30002 are free
		deregistered    []string
	}{
		{name: "no target: taken over, its slot free", adopted: true, free: 3},
		{name: "a live Pod's target: inherited, slot held", targets: []string{"10.0.0.6"}, objs: []client.Object{podWithIP("gs-1", "10.0.0.6")},
			adopted: true, inherited: []string{"10.0.0.6:7777"}, free: 2},
		{name: "a host IP's target (a Node of tke-extend's HostPort scheme): kept", targets: []string{"10.0.0.6"}, objs: []client.Object{hostOf},
			adopted: true, inherited: []string{"10.0.0.6:7777"}, free: 2},
		{name: "a Node's InternalIP, no Pod on it (tke-extend's HostPort scheme): kept", targets: []string{"10.0.0.6"}, objs: []client.Object{nodeAt},
			adopted: true, inherited: []string{"10.0.0.6:7777"}, free: 2},
		{name: "a Node's other address is not its InternalIP: deregistered", targets: []string{"10.0.0.6"}, objs: []client.Object{externalAt},
			adopted: true, free: 3, deregistered: []string{"lbl-tke1//10.0.0.6:7777"}},
		{name: "no Pod has the IP: deregistered, then free", targets: []string{"10.0.0.6"},
			adopted: true, free: 3, deregistered: []string{"lbl-tke1//10.0.0.6:7777"}},
		{name: "recorded by a binding (a kept Pod): not inherited", targets: []string{"10.0.0.6"}, objs: []client.Object{bound("10.0.0.6")},
			adopted: true, free: 2},
		{name: "a second target no binding records: only it deregistered", targets: []string{"10.0.0.6", "10.0.0.9"}, objs: []client.Object{bound("10.0.0.6")},
			adopted: true, free: 2, deregistered: []string{"lbl-tke1//10.0.0.9:7777"}},
		{name: "a binding of another target: the listener's own stays", targets: []string{"10.0.0.6"}, objs: []client.Object{bound("10.0.0.7"), podWithIP("gs-1", "10.0.0.6")},
			adopted: true, inherited: []string{"10.0.0.6:7777"}, free: 2},
		{name: "dry run: listed only, nothing deregistered", mod: dryRun, targets: []string{"10.0.0.6"}, listed: true, free: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := fake.New("lb-a")
			tkeListener(home, "lb-a", "lbl-tke1", "UDP", 30001, 0, tc.targets...)
			cr := tkeSidePool(podannotation.TKEPoolNamespace)
			if tc.mod != nil {
				tc.mod(cr)
			}
			e := newExternal(t, home, nil, tc.objs...)
			for range 4 {
				_ = reconcile(t, *e, cr)
			}
			st := cr.Status.AtProvider.LoadBalancers[0]
			if got := st.Adopted["UDP/30001"] == "lbl-tke1"; got != tc.adopted {
				t.Errorf("adopted %v, want lbl-tke1 taken over: %v", st.Adopted, tc.adopted)
			}
			if got := len(st.TKEListeners) == 1; got != tc.listed {
				t.Errorf("tkeListeners %+v, want lbl-tke1 listed: %v", st.TKEListeners, tc.listed)
			}
			var inherited []string
			if len(st.Inherited) == 1 && st.Inherited[0].ID == "lbl-tke1" {
				inherited = st.Inherited[0].Targets
			}
			if !slices.Equal(inherited, tc.inherited) || len(st.Inherited) > 1 {
				t.Errorf("inherited %+v, want lbl-tke1 with %v", st.Inherited, tc.inherited)
			}
			if tc.listed || tc.mod != nil {
				// Observe only: the dry run's Free is not the question.
			} else if st.Free != tc.free {
				t.Errorf("free %d, want %d", st.Free, tc.free)
			}
			var dereg []string
			for _, w := range home.Log() {
				if r, ok := strings.CutPrefix(w, "DeregisterTargets lb-a "); ok {
					dereg = append(dereg, strings.Fields(r)...)
				}
				if strings.HasPrefix(w, "DeleteListeners") {
					t.Errorf("write %q", w)
				}
			}
			if !slices.Equal(dereg, tc.deregistered) {
				t.Errorf("deregistered %v, want %v", dereg, tc.deregistered)
			}
		})
	}
}

// TestTakeOverReadsTargetsAgain: the targets of a listener the dry run
// listed are read again when the switch takes it over, so that a listener
// which gained a second target meanwhile (tke-extend still running during
// the dry run) is inherited with both, and a Pod cannot keep it as its
// own alone (allocation.Adoptable reads Inherited).
func TestTakeOverReadsTargetsAgain(t *testing.T) {
	home := fake.New("lb-a")
	tkeListener(home, "lb-a", "lbl-tke1", "UDP", 30001, 0, "10.0.0.6")
	cr := tkeSidePool(podannotation.TKEPoolNamespace)
	meta.AddAnnotations(cr, map[string]string{v1alpha1.AnnotationTKESwitch: v1alpha1.TKESwitchDryRun})
	e := newExternal(t, home, nil, podWithIP("gs-1", "10.0.0.6"), podWithIP("gs-2", "10.0.0.9"))
	_ = reconcile(t, *e, cr)
	if st := cr.Status.AtProvider.LoadBalancers[0]; len(st.TKEListeners) != 1 || len(st.TKEListeners[0].Targets) != 1 {
		t.Fatalf("dry run: tkeListeners %+v, want lbl-tke1 with one target", st.TKEListeners)
	}
	if _, err := home.RegisterTargets(context.Background(), "lb-a", []clb.Target{{ListenerID: "lbl-tke1", EniIP: "10.0.0.9", Port: 7777}}); err != nil {
		t.Fatal(err)
	}
	delete(cr.Annotations, v1alpha1.AnnotationTKESwitch) // the switch
	_ = reconcile(t, *e, cr)
	st := cr.Status.AtProvider.LoadBalancers[0]
	if len(st.Inherited) != 1 || !slices.Equal(st.Inherited[0].Targets, []string{"10.0.0.6:7777", "10.0.0.9:7777"}) {
		t.Errorf("inherited %+v, want lbl-tke1 with both targets as the cloud has them now", st.Inherited)
	}
}

// TestTKEListenersOnlyInTKEPools: a pool of another namespace (a tenant's)
// neither lists nor takes over tke-extend's listeners, even when a binding
// names one: they stay conflicts.
func TestTKEListenersOnlyInTKEPools(t *testing.T) {
	home := fake.New("lb-a")
	tkeListener(home, "lb-a", "lbl-tke0", "UDP", 30000, 0, "10.0.0.5")
	cr := tkeSidePool("team-a")
	pa := &networkv1alpha1.PodAddress{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "gs-0"},
		Status: networkv1alpha1.PodAddressStatus{Bindings: []networkv1alpha1.PortBinding{{
			Pool: "team-a/pool-a", Protocol: "UDP", ContainerPort: 7777, LoadBalancerID: "lb-a", Port: 30000,
			ListenerIDs: map[string]string{"UDP": "lbl-tke0"},
		}}},
	}
	e := newExternal(t, home, nil, pa)
	for range 2 {
		_ = reconcile(t, *e, cr)
	}
	st := cr.Status.AtProvider.LoadBalancers[0]
	if len(st.Adopted) != 0 || len(st.TKEListeners) != 0 || st.Listeners["UDP/30000"] != "" {
		t.Errorf("a tenant's pool: adopted %v, tkeListeners %v, listeners %v; want none of tke-extend's", st.Adopted, st.TKEListeners, st.Listeners)
	}
}

// TestTagTKEAutoCreated: once the switch is made, a pool of tke-port-pools
// tags the load balancers the provider recorded as tke-extend's
// auto-created ones as its own; then they are its auto-created load
// balancers: listed autoCreated, counted by autoCreate (no new one is
// created under maxLoadBalancers 1), and deleted with the pool, as
// tke-extend's deletion of its CLBPortPool did. Nothing is tagged in a dry
// run, for a tenant's or a GameServerSet's pool, for a load balancer not
// recorded, or one that carries another owner's tags.
func TestTagTKEAutoCreated(t *testing.T) {
	tagged := func(c *fake.Cloud) bool {
		return clb.LoadBalancerTags(c.LBs["lb-auto"])[TagPoolUID] == "uid-1"
	}
	for _, tc := range []struct {
		name     string
		ns       string
		mod      func(*v1alpha1.PortPool)
		lbTags   map[string]string
		wantTags bool
	}{
		{name: "switched", ns: podannotation.TKEPoolNamespace, wantTags: true},
		{name: "dry run", ns: podannotation.TKEPoolNamespace, mod: func(p *v1alpha1.PortPool) {
			meta.AddAnnotations(p, map[string]string{v1alpha1.AnnotationTKESwitch: v1alpha1.TKESwitchDryRun})
		}},
		{name: "a tenant's pool", ns: "team-a"},
		{name: "a GameServerSet's pool", ns: podannotation.TKEPoolNamespace, mod: func(p *v1alpha1.PortPool) {
			meta.AddAnnotations(p, map[string]string{v1alpha1.AnnotationActsFor: "game"})
		}},
		{name: "not recorded", ns: podannotation.TKEPoolNamespace, mod: func(p *v1alpha1.PortPool) {
			meta.AddAnnotations(p, map[string]string{tkev1alpha1.AnnotationTKEAutoCreated: "lb-other"})
		}},
		{name: "another owner's", ns: podannotation.TKEPoolNamespace, lbTags: map[string]string{mr.TagNamespace: "team-a", mr.TagKind: "LoadBalancer"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := fake.New("lb-a")
			home.AddLB("lb-auto", tc.lbTags)
			cr := tkeSidePool(tc.ns)
			cr.Spec.ForProvider.LoadBalancerIDs = []string{"lb-a", "lb-auto"}
			// Always short of free slots: only the bound stops it.
			cr.Spec.ForProvider.AutoCreate = &v1alpha1.PoolAutoCreate{MaxLoadBalancers: 1, MinFreeSlots: ptr.To[int64](100)}
			meta.AddAnnotations(cr, map[string]string{tkev1alpha1.AnnotationTKEAutoCreated: "lb-auto"})
			if tc.mod != nil {
				tc.mod(cr)
			}
			e := newExternal(t, home, nil)
			for range 3 {
				_ = reconcile(t, *e, cr)
			}
			if got := tagged(home); got != tc.wantTags {
				t.Fatalf("tagged as the pool's: %v, want %v (writes %v)", got, tc.wantTags, home.Log())
			}
			if !tc.wantTags {
				return
			}
			for _, w := range home.Log() {
				if strings.HasPrefix(w, "CreateLoadBalancer") {
					t.Errorf("write %q: autoCreate does not count tke-extend's load balancer", w)
				}
			}
			if got := tagsOf(home, "lb-auto"); got[TagPool] != podannotation.TKEPoolNamespace+"/pool-a" || got[mr.TagNamespace] != podannotation.TKEPoolNamespace {
				t.Errorf("tags %v, want the pool's owner tags", got)
			}
			var st *v1alpha1.PoolLoadBalancerStatus
			for i := range cr.Status.AtProvider.LoadBalancers {
				if s := &cr.Status.AtProvider.LoadBalancers[i]; s.ID == "lb-auto" {
					st = s
				}
			}
			if st == nil || !st.AutoCreated {
				t.Errorf("status %+v, want lb-auto autoCreated", cr.Status.AtProvider.LoadBalancers)
			}
			n := 0
			for _, w := range home.Log() {
				if strings.HasPrefix(w, "TagLoadBalancer") {
					n++
				}
			}
			if n != 1 {
				t.Errorf("tagged %d times, want once", n)
			}
			cr.SetDeletionTimestamp(&metav1.Time{Time: time.Now()})
			e.obs, e.cfg = nil, nil
			if _, err := e.Observe(context.Background(), cr); err != nil {
				t.Fatal(err)
			}
			if _, err := e.Delete(context.Background(), cr); err != nil {
				t.Fatal(err)
			}
			if _, ok := home.LBs["lb-auto"]; ok {
				t.Error("deleting the pool kept the load balancer tke-extend created for it")
			}
			if _, ok := home.LBs["lb-a"]; !ok {
				t.Error("deleting the pool deleted the load balancer it was given")
			}
		})
	}
}

func tagsOf(c *fake.Cloud, id string) map[string]string { return clb.LoadBalancerTags(c.LBs[id]) }
