package portpool

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

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

// TestTakeOverTKEListeners: a pool of tke-port-pools lists tke-extend's
// listeners on its slots with their targets and writes nothing to them;
// the one a binding of the pool records on its own slot becomes the
// pool's (Listeners and Adopted in its status), never deleted and created
// again, and stays the pool's once the binding is gone. A tke-extend
// listener whose shape is not a slot (another protocol, an end port) is
// neither listed nor taken over.
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
			ListenerIDs: map[string]string{"UDP": "lbl-tke0"},
		}}},
	}
	e := newExternal(t, home, nil, pa)
	for range 3 {
		_ = reconcile(t, *e, cr)
	}
	st := cr.Status.AtProvider.LoadBalancers[0]
	if st.Listeners["UDP/30000"] != "lbl-tke0" || st.Adopted["UDP/30000"] != "lbl-tke0" || len(st.Adopted) != 1 {
		t.Errorf("listeners %v, adopted %v; want UDP/30000 taken over as lbl-tke0", st.Listeners, st.Adopted)
	}
	if len(st.TKEListeners) != 1 || st.TKEListeners[0].ID != "lbl-tke1" || st.TKEListeners[0].Key != "UDP/30001" ||
		!slices.Equal(st.TKEListeners[0].Targets, []string{"10.0.0.6:7777"}) {
		t.Errorf("tkeListeners %+v, want lbl-tke1 on UDP/30001 forwarding to 10.0.0.6:7777", st.TKEListeners)
	}
	for _, w := range home.Log() {
		if strings.HasPrefix(w, "DeleteListeners") || strings.Contains(w, "UDP 30000") || strings.Contains(w, "UDP 30001") {
			t.Errorf("write %q to a tke-extend listener's slot", w)
		}
	}
	_, err := e.Observe(ctx, cr)
	if err != nil {
		t.Fatal(err)
	}
	if c := strings.Join(e.obs.lbs[0].m.conflicts, "; "); !strings.Contains(c, "tke-extend's listener lbl-tke1") || strings.Contains(c, "lbl-tke0") {
		t.Errorf("conflicts %q, want lbl-tke1 (not taken over) alone of the slot listeners", c)
	}

	// The binding goes (the Pod left): the listener stays the pool's.
	e = newExternal(t, home, nil)
	before := len(home.Log())
	for range 2 {
		_ = reconcile(t, *e, cr)
	}
	st = cr.Status.AtProvider.LoadBalancers[0]
	if st.Adopted["UDP/30000"] != "lbl-tke0" || st.Listeners["UDP/30000"] != "lbl-tke0" {
		t.Errorf("after the binding went: listeners %v, adopted %v; want lbl-tke0 still the pool's", st.Listeners, st.Adopted)
	}
	for _, w := range home.Log()[before:] {
		if strings.HasPrefix(w, "DeleteListeners") {
			t.Errorf("write %q after the binding went", w)
		}
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
