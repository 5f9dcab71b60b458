package e2e

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	networkv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	tkev1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/tkeextend/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/deployed"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/tkestandin"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/udpstream"
)

const (
	switchNamespace = "tke-switch"
	switchSet       = "tke-rooms"
	switchPool      = "tke-switch-rooms"
	switchPods      = 3
	// switchPort0 is the public port tke-extend gave Pod 0; Pod i has
	// switchPort0+i. Not the example's 30000: the emulators of tests
	// running beside this one on the machine bind their first VIP,
	// 127.1.0.1 as this one's, on ports from 30000 in their data planes.
	switchPort0 = 45100
)

// TestSwitchFromTKEExtendOnNode switches a StatefulSet of real game server
// Pods from tke-extend-network-controller v2 to the provider, deployed as
// users run it. A stand-in binds each Pod as tke-extend does (a
// TKE-LISTENER listener per Pod, the Pod IP registered, the result and
// status Ready annotations), while the Pods' CLBPortPool is marked
// tke-extend-switch: DryRun: the dry run tells each Pod the address it
// would keep and writes nothing (no cloud write, no PodAddress, the Pods
// untouched). Removing the annotation makes the switch: every Pod keeps
// its VIP:port, listener, target and result byte for byte, the pool takes
// tke-extend's listeners over, the cloud sees no listener deleted and no
// target deregistered, and every listener keeps its one target at every
// moment. Throughout, a player on the host sends a UDP packet every 10 ms
// through each address to its Pod, through the emulator's data plane: none
// is lost. A Pod added by a scale-up then gets an address the new way.
func TestSwitchFromTKEExtendOnNode(t *testing.T) {
	ctx := context.Background()
	began := time.Now()
	image := gameServer(t, switchNamespace)
	ensureNamespace(t, podannotation.TKEPoolNamespace)
	lbID := existingLB(t, emulator.DefaultRegion, "tke-switch")
	spare := existingLB(t, emulator.DefaultRegion, "tke-switch-spare")
	t.Cleanup(func() { deleteLBs(t, emulator.DefaultRegion, []string{lbID, spare}) })
	s, err := tkestandin.New(ctx, kube, clients.Config{SecretID: emulator.DefaultSecretID, SecretKey: emulator.DefaultSecretKey,
		Region: emulator.DefaultRegion, Endpoint: cluster.Cloud.Endpoint(), Scheme: "http"}, lbID, wait)
	if err != nil {
		t.Fatal(err)
	}

	// The CLBPortPool, marked for a dry run as the example shows, before
	// the Pods: the provider leaves alone every Pod naming it. In a real
	// switch the provider first looks at tke-extend's load balancer once
	// tke-extend has stopped (runbook, step 3); the pool lists a listener's
	// targets when it first sees the listener. Here the provider runs
	// already, so the pool names a spare load balancer until the stand-in
	// is done.
	if _, err := testenv.Apply(ctx, kube, filepath.Join(testenv.RepoRoot(), "examples", "tke-extend", "clbportpool-switch.yaml"), func(u *unstructured.Unstructured) {
		u.SetName(switchPool)
		_ = unstructured.SetNestedStringSlice(u.Object, []string{spare}, "spec", "exsistedLoadBalancerIDs")
		_ = unstructured.SetNestedField(u.Object, int64(switchPort0), "spec", "startPort")
		_ = unstructured.SetNestedField(u.Object, int64(switchPort0+9), "spec", "endPort")
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteSwitchPool(t) })
	pp := &clbv1alpha1.PortPool{}
	ppKey := client.ObjectKey{Namespace: podannotation.TKEPoolNamespace, Name: switchPool}
	eventually(t, "the CLBPortPool's PortPool in dry run", func() error {
		if err := kube.Get(ctx, ppKey, pp); err != nil {
			return err
		}
		if pp.Annotations[clbv1alpha1.AnnotationTKESwitch] != clbv1alpha1.TKESwitchDryRun {
			return fmt.Errorf("annotations %v", pp.Annotations)
		}
		return nil
	})

	// tke-extend at work: each Pod of the StatefulSet bound on its own
	// port as soon as it runs.
	sts := tkeStatefulSet(image)
	if err := kube.Create(ctx, sts); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteSwitchSet(t, sts) })
	pods := make([]*corev1.Pod, switchPods)
	results := make([]podannotation.TKEPortMapping, switchPods)
	for i := range switchPods {
		pods[i] = runningPod(t, switchPodName(i))
		if results[i], err = s.Bind(ctx, pods[i], switchPool, deployed.GamePort, int32(switchPort0+i)); err != nil { //nolint:gosec // G115: test ports.
			t.Fatal(err)
		}
	}
	t.Logf("%d Pods running, bound by tke-extend's stand-in, in %s", switchPods, time.Since(began).Round(time.Millisecond))
	before := map[string]*corev1.Pod{}
	for _, p := range pods {
		got := &corev1.Pod{}
		if err := kube.Get(ctx, client.ObjectKeyFromObject(p), got); err != nil {
			t.Fatal(err)
		}
		before[p.Name] = got
	}
	eventually(t, "the pool on tke-extend's load balancer", func() error {
		cpp := &tkev1alpha1.CLBPortPool{}
		if err := kube.Get(ctx, client.ObjectKey{Name: switchPool}, cpp); err != nil {
			return err
		}
		cpp.Spec.ExsistedLoadBalancerIDs = []string{lbID}
		return kube.Update(ctx, cpp)
	})
	cluster.Cloud.ResetCounters()

	// Players play through every address from now until after the switch.
	var players []*udpstream.Stream
	for i, p := range pods {
		pl, err := udpstream.Start(ctx, p.Name, fmt.Sprintf("%s:%d", s.VIP(), switchPort0+i), wait)
		if err != nil {
			t.Fatal(err)
		}
		players = append(players, pl)
	}

	// The dry run.
	step := time.Now()
	for i, p := range pods {
		podEvent(t, p.Name, "TKEExtendSwitchDryRun", fmt.Sprintf("would keep: %d/UDP in tke-port-pools/%s keeps port %d on %s",
			deployed.GamePort, switchPool, switchPort0+i, lbID))
	}
	eventually(t, "the dry run's pool lists tke-extend's listeners", func() error {
		if err := kube.Get(ctx, ppKey, pp); err != nil {
			return err
		}
		if st := poolLB(pp, lbID); st == nil || len(st.TKEListeners) != switchPods {
			return fmt.Errorf("load balancers %+v", pp.Status.AtProvider.LoadBalancers)
		}
		return nil
	})
	for _, a := range tkestandin.SwitchWrites() {
		if n := cluster.Cloud.CallCount(a); n > 0 {
			t.Errorf("the dry run called %s %d times", a, n)
		}
	}
	pas := &networkv1alpha1.PodAddressList{}
	if err := kube.List(ctx, pas, client.InNamespace(switchNamespace)); err != nil || len(pas.Items) > 0 {
		t.Errorf("the dry run made %d PodAddresses (%v)", len(pas.Items), err)
	}
	for name, was := range before {
		now := &corev1.Pod{}
		if err := kube.Get(ctx, client.ObjectKeyFromObject(was), now); err != nil {
			t.Fatal(err)
		}
		if d := podWrites(was, now); d != "" {
			t.Errorf("the dry run wrote Pod %s: %s", name, d)
		}
	}
	t.Logf("dry run: every Pod told the address it would keep, nothing written, in %s", time.Since(step).Round(time.Millisecond))

	// Every listener keeps its one target, its Pod, at every moment.
	stop := make(chan struct{})
	var lost []string
	var looks int
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			looks++
			lost = append(lost, switchTargetsLost(lbID, pods, results)...)
			select {
			case <-stop:
				return
			case <-time.After(udpstream.Every):
			}
		}
	})

	// The switch.
	step = time.Now()
	eventually(t, "the dry-run annotation removed", func() error {
		cpp := &tkev1alpha1.CLBPortPool{}
		if err := kube.Get(ctx, client.ObjectKey{Name: switchPool}, cpp); err != nil {
			return err
		}
		delete(cpp.Annotations, clbv1alpha1.AnnotationTKESwitch)
		return kube.Update(ctx, cpp)
	})
	kept := map[string]bool{}
	for i, p := range pods {
		b := switchBound(t, p.Name)
		if b.LoadBalancerID != lbID || b.Port != results[i].LoadbalancerPort || b.ListenerIDs["UDP"] != results[i].ListenerID || b.Address != results[i].Address {
			t.Errorf("%s: bound to %s %s listener %v, want tke-extend's %s %s listener %s", p.Name, b.LoadBalancerID, b.Address, b.ListenerIDs,
				lbID, results[i].Address, results[i].ListenerID)
		}
		kept[b.Address] = true
	}
	eventually(t, "the pool takes tke-extend's listeners over", func() error {
		if err := kube.Get(ctx, ppKey, pp); err != nil {
			return err
		}
		if st := poolLB(pp, lbID); st == nil || len(st.Adopted) != switchPods || len(st.TKEListeners) != 0 {
			return fmt.Errorf("load balancers %+v", pp.Status.AtProvider.LoadBalancers)
		}
		return nil
	})
	for _, p := range pods {
		now := &corev1.Pod{}
		if err := kube.Get(ctx, client.ObjectKeyFromObject(p), now); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{podannotation.TKEAnnotationMappingResult, podannotation.TKEAnnotationMappingStatus} {
			if got, want := now.Annotations[k], before[p.Name].Annotations[k]; got != want {
				t.Errorf("%s: %s %q after the switch, tke-extend wrote %q", p.Name, k, got, want)
			}
		}
	}
	t.Logf("switch: every Pod bound at tke-extend's address, the pool owns its listeners, in %s", time.Since(step).Round(time.Millisecond))

	// A Pod added after the switch gets its address the new way, while
	// the players go on.
	step = time.Now()
	eventually(t, "scale up by one", func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(sts), sts); err != nil {
			return err
		}
		sts.Spec.Replicas = ptr.To[int32](switchPods + 1)
		return kube.Update(ctx, sts)
	})
	late := switchPodName(switchPods)
	b := switchBound(t, late)
	if kept[b.Address] || b.LoadBalancerID != lbID {
		t.Errorf("%s got %s on %s, want a free port of %s", late, b.Address, b.LoadBalancerID, lbID)
	}
	if lb, ok := cluster.Cloud.Inventory().LoadBalancer(lbID); ok {
		for _, l := range lb.Listeners {
			if l.ID == b.ListenerIDs["UDP"] && l.Name == clbv1alpha1.TKEListenerName {
				t.Errorf("%s bound on a listener named %s, want one of the pool's", late, l.Name)
			}
		}
	}
	eventually(t, late+"'s result in tke-extend's format", func() error {
		p := &corev1.Pod{}
		if err := kube.Get(ctx, client.ObjectKey{Namespace: switchNamespace, Name: late}, p); err != nil {
			return err
		}
		if r := p.Annotations[podannotation.TKEAnnotationMappingResult]; p.Annotations[podannotation.TKEAnnotationMappingStatus] != "Ready" || !strings.Contains(r, `"address":"`+b.Address+`"`) {
			return fmt.Errorf("result %q, status %q", r, p.Annotations[podannotation.TKEAnnotationMappingStatus])
		}
		return nil
	})
	if name, err := deployed.Ask(ctx, "udp", b.Address, wait); err != nil || name != late {
		t.Errorf("UDP through %s answered by %q (%v), want %s", b.Address, name, err, late)
	}
	t.Logf("%s, added after the switch, bound at %s (a new port) and answering, in %s", late, b.Address, time.Since(step).Round(time.Millisecond))

	close(stop)
	wg.Wait()
	for _, pl := range players {
		sent, answered, wrong := pl.Finish()
		t.Logf("%s: %d packets sent, %d answered, %d answered by another server", pl, sent, answered, wrong)
		if answered != sent || wrong > 0 || sent < 100 {
			t.Errorf("%s: %d of %d packets lost, %d answered by another server", pl, sent-answered, sent, wrong)
		}
	}
	if len(lost) > 0 {
		t.Errorf("%d of %d looks found a listener of tke-extend not forwarding to its Pod alone, e.g. %s", len(lost), looks, strings.Join(lost[:min(3, len(lost))], "; "))
	}
	for _, a := range tkestandin.Removals() {
		if n := cluster.Cloud.CallCount(a); n > 0 {
			t.Errorf("the switch called %s %d times", a, n)
		}
	}
	t.Logf("switched from tke-extend in %s: no packet lost, no listener deleted, no target deregistered (%d looks at the targets)", time.Since(began).Round(time.Millisecond), looks)
}

// poolLB is the status of load balancer id in pp.
func poolLB(pp *clbv1alpha1.PortPool, id string) *clbv1alpha1.PoolLoadBalancerStatus {
	for i := range pp.Status.AtProvider.LoadBalancers {
		if st := &pp.Status.AtProvider.LoadBalancers[i]; st.ID == id {
			return st
		}
	}
	return nil
}

func switchPodName(i int) string { return switchSet + "-" + strconv.Itoa(i) }

// tkeStatefulSet is the game server as a tke-extend user runs it: its
// Pods ask in tke-extend's annotations for a UDP address in the pool, and
// have no readiness gate of ours.
func tkeStatefulSet(image string) *appsv1.StatefulSet {
	sts := deployed.GameStatefulSet(switchNamespace, switchSet, image, switchPods)
	sts.Spec.Template.Spec.ReadinessGates = nil
	sts.Spec.Template.Annotations = map[string]string{
		podannotation.TKEAnnotationEnableMapping: "true",
		podannotation.TKEAnnotationPortMapping:   fmt.Sprintf("%d UDP %s", deployed.GamePort, switchPool),
	}
	return sts
}

// runningPod waits until the Pod name of the switch's namespace is Ready
// with an IP, and returns it.
func runningPod(t *testing.T, name string) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{}
	eventually(t, name+" Ready", func() error {
		if err := kube.Get(context.Background(), client.ObjectKey{Namespace: switchNamespace, Name: name}, p); err != nil {
			return err
		}
		if p.Status.PodIP == "" || !isReady(p) {
			return fmt.Errorf("IP %q, conditions %+v", p.Status.PodIP, p.Status.Conditions)
		}
		return nil
	})
	return p
}

// podWrites says what differs in what the provider writes on a Pod (its
// annotations, labels, finalizers, owners, conditions): the kubelet's own
// status writes aside.
func podWrites(was, now *corev1.Pod) string {
	var d []string
	if !maps.Equal(was.Annotations, now.Annotations) {
		d = append(d, fmt.Sprintf("annotations %v, were %v", now.Annotations, was.Annotations))
	}
	if !maps.Equal(was.Labels, now.Labels) {
		d = append(d, fmt.Sprintf("labels %v, were %v", now.Labels, was.Labels))
	}
	if !slices.Equal(was.Finalizers, now.Finalizers) || len(was.OwnerReferences) != len(now.OwnerReferences) {
		d = append(d, fmt.Sprintf("finalizers %v, owners %v", now.Finalizers, now.OwnerReferences))
	}
	for _, c := range now.Status.Conditions {
		if !slices.ContainsFunc(was.Status.Conditions, func(w corev1.PodCondition) bool { return w.Type == c.Type }) {
			d = append(d, "condition "+string(c.Type))
		}
	}
	return strings.Join(d, "; ")
}

// podEvent waits for an Event of reason on Pod name of the switch's
// namespace whose message contains text.
func podEvent(t *testing.T, name, reason, text string) {
	t.Helper()
	eventually(t, "a "+reason+" Event on "+name, func() error {
		l := &corev1.EventList{}
		if err := kube.List(context.Background(), l, client.InNamespace(switchNamespace)); err != nil {
			return err
		}
		var seen []string
		for _, e := range l.Items {
			if e.InvolvedObject.Kind == "Pod" && e.InvolvedObject.Name == name && e.Reason == reason {
				if strings.Contains(e.Message, text) {
					return nil
				}
				seen = append(seen, e.Message)
			}
		}
		return fmt.Errorf("none among %q", seen)
	})
}

// switchBound waits until Pod name's PodAddress is bound with one binding,
// and returns it.
func switchBound(t *testing.T, name string) networkv1alpha1.PortBinding {
	t.Helper()
	var b networkv1alpha1.PortBinding
	eventually(t, name+" bound", func() error {
		pa := &networkv1alpha1.PodAddress{}
		if err := kube.Get(context.Background(), client.ObjectKey{Namespace: switchNamespace, Name: name}, pa); err != nil {
			return err
		}
		if pa.Status.State != networkv1alpha1.StateBound || len(pa.Status.Bindings) != 1 || pa.Status.Bindings[0].Address == "" {
			return fmt.Errorf("PodAddress %s: %s %s", pa.Name, pa.Status.State, pa.Status.Message)
		}
		b = pa.Status.Bindings[0]
		return nil
	})
	return b
}

// switchTargetsLost names each listener tke-extend made that does not
// forward to its Pod alone, in the cloud, now.
func switchTargetsLost(lbID string, pods []*corev1.Pod, results []podannotation.TKEPortMapping) []string {
	lb, ok := cluster.Cloud.Inventory().LoadBalancer(lbID)
	if !ok {
		return []string{"load balancer " + lbID + " gone"}
	}
	var lost []string
	for i, r := range results {
		want := fmt.Sprintf("%s:%d", pods[i].Status.PodIP, deployed.GamePort)
		var got []string
		for _, l := range lb.Listeners {
			if l.ID == r.ListenerID {
				for _, tg := range l.Targets {
					got = append(got, fmt.Sprintf("%s:%d", tg.IP, tg.Port))
				}
			}
		}
		if len(got) != 1 || got[0] != want {
			lost = append(lost, fmt.Sprintf("%s: %v", pods[i].Name, got))
		}
	}
	return lost
}

// deleteSwitchSet deletes the StatefulSet and waits until its Pods'
// PodAddresses are gone (their targets deregistered).
func deleteSwitchSet(t *testing.T, sts *appsv1.StatefulSet) {
	t.Helper()
	ctx := context.Background()
	if err := kube.Delete(ctx, sts); client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	eventually(t, "the StatefulSet's PodAddresses gone", func() error {
		var pas networkv1alpha1.PodAddressList
		if err := kube.List(ctx, &pas, client.InNamespace(switchNamespace)); err != nil {
			return err
		}
		if len(pas.Items) != 0 {
			return fmt.Errorf("%d PodAddresses", len(pas.Items))
		}
		return nil
	})
}

// deleteSwitchPool deletes the CLBPortPool and waits until it and its
// PortPool are gone (the listeners it owns deleted).
func deleteSwitchPool(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	cpp := &tkev1alpha1.CLBPortPool{}
	cpp.Name = switchPool
	if err := kube.Delete(ctx, cpp); client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	eventually(t, "the CLBPortPool and its PortPool deleted", func() error {
		if err := gone(ctx, client.ObjectKey{Name: switchPool}, &tkev1alpha1.CLBPortPool{}); err != nil {
			return err
		}
		return gone(ctx, client.ObjectKey{Namespace: podannotation.TKEPoolNamespace, Name: switchPool}, &clbv1alpha1.PortPool{})
	})
}
