package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	networkv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	tkev1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/tkeextend/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/deployed"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/okg"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

const (
	okgNamespace = "okg"
	okgGSS       = "rooms"
)

var (
	gameServerSetKind = schema.GroupVersionKind{Group: "game.kruise.io", Version: "v1alpha1", Kind: "GameServerSet"}
	gameServerKind    = schema.GroupVersionKind{Group: "game.kruise.io", Version: "v1alpha1", Kind: "GameServer"}
)

// TestOpenKruiseGame runs OpenKruiseGame's managers (built from their
// modules, with their webhooks) beside the product and examples/okg's
// GameServerSet of cmd/gameserver with networkType TencentCloud-CLB: OKG's
// own plugin asks in tke-extend's annotations, the provider binds in the
// pool the plugin names, and every GameServer's status.networkStatus holds
// the address it was bound to, through which TCP and UDP reach its
// container. A GameServer's networkDisabled takes its targets out and keeps
// its ports; enabling puts them back. A scale-down with reserveGameServerIds
// removes that ordinal and releases its ports. Deleting the GameServerSet
// leaves no PodAddress, no pool and no listener.
func TestOpenKruiseGame(t *testing.T) {
	ctx := context.Background()
	began := time.Now()
	timings, err := okg.Install(ctx, kube, okg.Options{Registry: cluster.Node.Registry(), Wait: wait})
	for _, s := range timings {
		t.Logf("OKG: %-60s %s", s.Step, s.Took.Round(time.Millisecond))
	}
	if err != nil {
		t.Fatal(err)
	}
	image := gameServer(t, okgNamespace)

	// The pool OKG's plugin names, <namespace>-<GameServerSet>, is made by
	// the provider from the GameServerSet's ClbIds.
	lbID := existingLB(t, "ap-guangzhou", "okg")
	gss := okgExample(t, "gameserverset.yaml", "GameServerSet")
	gss.SetNamespace(okgNamespace)
	if err := setNetworkConf(gss, "ClbIds", lbID); err != nil {
		t.Fatal(err)
	}
	containers, _, _ := unstructured.NestedSlice(gss.Object, "spec", "gameServerTemplate", "spec", "containers")
	containers[0].(map[string]any)["image"] = image
	if err := unstructured.SetNestedSlice(gss.Object, containers, "spec", "gameServerTemplate", "spec", "containers"); err != nil {
		t.Fatal(err)
	}
	// OKG's validating webhook may take a moment to answer through its
	// Service after the Deployment turned available.
	eventually(t, "GameServerSet created", func() error {
		err := kube.Create(ctx, gss.DeepCopy())
		if kerrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	})
	bound := map[int]map[string]string{}
	for i := range 3 {
		bound[i] = okgAddresses(t, i)
		for _, proto := range []string{"TCP", "UDP"} {
			okgAsk(t, proto, bound[i][proto], i)
		}
		t.Logf("%s: status.networkStatus TCP %s, UDP %s, both answering", okgPod(i), bound[i]["TCP"], bound[i]["UDP"])
	}
	t.Logf("GameServerSet of 3 up, addressed through OKG's plugin and answering, %s after the install began", time.Since(began).Round(time.Millisecond))

	// networkDisabled: OKG labels the Pod, the provider isolates it.
	step := time.Now()
	setNetworkDisabled(t, 1, true)
	okgTargets(t, 1, bound[1], false)
	t.Logf("%s networkDisabled: targets out, ports kept, in %s", okgPod(1), time.Since(step).Round(time.Millisecond))
	step = time.Now()
	setNetworkDisabled(t, 1, false)
	okgTargets(t, 1, bound[1], true)
	okgAsk(t, "UDP", bound[1]["UDP"], 1)
	t.Logf("%s network enabled again: targets back, answering, in %s", okgPod(1), time.Since(step).Round(time.Millisecond))

	// Scale down with ReserveIds: ordinal 1 goes, 0 and 2 stay.
	step = time.Now()
	eventually(t, "scale to 2 reserving id 1", func() error {
		g := &unstructured.Unstructured{}
		g.SetGroupVersionKind(gameServerSetKind)
		if err := kube.Get(ctx, client.ObjectKey{Namespace: okgNamespace, Name: okgGSS}, g); err != nil {
			return err
		}
		_ = unstructured.SetNestedField(g.Object, int64(2), "spec", "replicas")
		_ = unstructured.SetNestedSlice(g.Object, []any{int64(1)}, "spec", "reserveGameServerIds")
		return kube.Update(ctx, g)
	})
	eventually(t, okgPod(1)+" and its PodAddress gone, its ports without targets", func() error {
		for _, o := range []client.Object{&corev1.Pod{}, &networkv1alpha1.PodAddress{}} {
			if err := kube.Get(ctx, client.ObjectKey{Namespace: okgNamespace, Name: okgPod(1)}, o); !kerrors.IsNotFound(err) {
				return fmt.Errorf("%T %s: %w", o, okgPod(1), err)
			}
		}
		return listenerTargets(lbID, bound[1], func(proto string, targets []string) error {
			if len(targets) != 0 {
				return fmt.Errorf("%s %s: targets %v", proto, bound[1][proto], targets)
			}
			return nil
		})
	})
	for _, i := range []int{0, 2} {
		if got := okgAddresses(t, i); got["TCP"] != bound[i]["TCP"] || got["UDP"] != bound[i]["UDP"] {
			t.Errorf("%s moved from %v to %v in the scale-down", okgPod(i), bound[i], got)
		}
	}
	okgAsk(t, "TCP", bound[2]["TCP"], 2)
	t.Logf("scaled to 2 reserving id 1: %s gone with its ports released, 0 and 2 kept theirs, in %s", okgPod(1), time.Since(step).Round(time.Millisecond))

	// Deletion: the GameServerSet's Pods go, then the pool with its
	// listeners.
	step = time.Now()
	if err := kube.Delete(ctx, gss); err != nil {
		t.Fatal(err)
	}
	eventually(t, "no PodAddress left in "+okgNamespace, func() error {
		var l networkv1alpha1.PodAddressList
		if err := kube.List(ctx, &l, client.InNamespace(okgNamespace)); err != nil {
			return err
		}
		if len(l.Items) != 0 {
			return fmt.Errorf("%d PodAddresses", len(l.Items))
		}
		return nil
	})
	poolName := okgNamespace + "-" + okgGSS
	eventually(t, "the GameServerSet's CLBPortPool and PortPool deleted", func() error {
		if err := gone(ctx, client.ObjectKey{Name: poolName}, &tkev1alpha1.CLBPortPool{}); err != nil {
			return err
		}
		return gone(ctx, client.ObjectKey{Namespace: podannotation.TKEPoolNamespace, Name: poolName}, &clbv1alpha1.PortPool{})
	})
	eventually(t, "the pool's listeners deleted", func() error {
		lb, ok := cluster.Cloud.Inventory().LoadBalancer(lbID)
		if !ok {
			return fmt.Errorf("load balancer %s gone", lbID)
		}
		if len(lb.Listeners) != 0 {
			return fmt.Errorf("%d listeners left on %s", len(lb.Listeners), lbID)
		}
		return nil
	})
	t.Logf("GameServerSet and pool deleted, no listener left, in %s", time.Since(step).Round(time.Millisecond))
	deleteLBs(t, "ap-guangzhou", []string{lbID})
}

// gone says why the object at key is not (yet) gone.
func gone(ctx context.Context, key client.ObjectKey, o client.Object) error {
	err := kube.Get(ctx, key, o)
	switch {
	case kerrors.IsNotFound(err):
		return nil
	case err != nil:
		return err
	}
	return fmt.Errorf("%T %s still there", o, key)
}

// setNetworkConf sets the value of the GameServerSet's network conf entry
// name.
func setNetworkConf(gss *unstructured.Unstructured, name, value string) error {
	conf, _, err := unstructured.NestedSlice(gss.Object, "spec", "network", "networkConf")
	if err != nil {
		return err
	}
	for _, c := range conf {
		if e, ok := c.(map[string]any); ok && e["name"] == name {
			e["value"] = value
			return unstructured.SetNestedSlice(gss.Object, conf, "spec", "network", "networkConf")
		}
	}
	return fmt.Errorf("the GameServerSet has no network conf %s", name)
}

func okgPod(i int) string { return okgGSS + "-" + strconv.Itoa(i) }

// okgExample reads the object of kind from examples/okg/file.
func okgExample(t *testing.T, file, kind string) *unstructured.Unstructured {
	t.Helper()
	objs, err := testenv.ReadYAML(filepath.Join(testenv.RepoRoot(), "examples", "okg", file))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetKind() == kind {
			return o
		}
	}
	t.Fatalf("examples/okg/%s has no %s", file, kind)
	return nil
}

// okgAddresses waits until GameServer i's status.networkStatus is Ready
// with one external address per protocol, each the address its PodAddress
// is bound to, and returns them by protocol.
func okgAddresses(t *testing.T, i int) map[string]string {
	t.Helper()
	ctx := context.Background()
	var got map[string]string
	eventually(t, "GameServer "+okgPod(i)+" networkStatus as bound", func() error {
		pa := &networkv1alpha1.PodAddress{}
		if err := kube.Get(ctx, client.ObjectKey{Namespace: okgNamespace, Name: okgPod(i)}, pa); err != nil {
			return err
		}
		want := map[string]string{}
		for _, b := range pa.Status.Bindings {
			want[b.Protocol] = b.Address
		}
		if pa.Status.State != networkv1alpha1.StateBound || want["TCP"] == "" || want["UDP"] == "" {
			return fmt.Errorf("PodAddress %s: %s %s, bindings %v", pa.Name, pa.Status.State, pa.Status.Message, want)
		}
		gs := &unstructured.Unstructured{}
		gs.SetGroupVersionKind(gameServerKind)
		if err := kube.Get(ctx, client.ObjectKey{Namespace: okgNamespace, Name: okgPod(i)}, gs); err != nil {
			return err
		}
		state, _, _ := unstructured.NestedString(gs.Object, "status", "networkStatus", "currentNetworkState")
		external, _, _ := unstructured.NestedSlice(gs.Object, "status", "networkStatus", "externalAddresses")
		got = map[string]string{}
		for _, a := range external {
			ip, _, _ := unstructured.NestedString(a.(map[string]any), "ip")
			ports, _, _ := unstructured.NestedSlice(a.(map[string]any), "ports")
			for _, p := range ports {
				pm := p.(map[string]any)
				proto, _, _ := unstructured.NestedString(pm, "protocol")
				got[proto] = fmt.Sprintf("%s:%v", ip, pm["port"])
			}
		}
		if state != "Ready" || got["TCP"] != want["TCP"] || got["UDP"] != want["UDP"] {
			return fmt.Errorf("GameServer %s: networkStatus %s %v, bound %v", gs.GetName(), state, got, want)
		}
		return nil
	})
	return got
}

// okgAsk sends one message over proto through addr and checks that Pod
// i's game server answered.
func okgAsk(t *testing.T, proto, addr string, i int) {
	t.Helper()
	name, err := deployed.Ask(context.Background(), strings.ToLower(proto), addr, wait)
	if err != nil {
		t.Fatalf("%s through %s: %v", proto, addr, err)
	}
	if name != okgPod(i) {
		t.Fatalf("%s through %s answered by %s, want %s", proto, addr, name, okgPod(i))
	}
}

// setNetworkDisabled sets GameServer i's spec.networkDisabled and waits
// until OKG has put it on the Pod as its label. The value is set again if
// it reads back otherwise (once seen: OKG's GameServer controller wrote its
// older copy back), and how often is logged.
func setNetworkDisabled(t *testing.T, i int, disabled bool) {
	t.Helper()
	ctx := context.Background()
	sets := 0
	eventually(t, fmt.Sprintf("%s networkDisabled %t on the GameServer and its Pod's label", okgPod(i), disabled), func() error {
		gs := &unstructured.Unstructured{}
		gs.SetGroupVersionKind(gameServerKind)
		if err := kube.Get(ctx, client.ObjectKey{Namespace: okgNamespace, Name: okgPod(i)}, gs); err != nil {
			return err
		}
		if have, _, _ := unstructured.NestedBool(gs.Object, "spec", "networkDisabled"); have != disabled {
			_ = unstructured.SetNestedField(gs.Object, disabled, "spec", "networkDisabled")
			if err := kube.Update(ctx, gs); err != nil {
				return err
			}
			sets++
			return fmt.Errorf("set (%d times), reading it back", sets)
		}
		pod := &corev1.Pod{}
		if err := kube.Get(ctx, client.ObjectKey{Namespace: okgNamespace, Name: okgPod(i)}, pod); err != nil {
			return err
		}
		if v := pod.Labels[podannotation.OKGLabelNetworkDisabled]; v != strconv.FormatBool(disabled) {
			return fmt.Errorf("pod label %s=%q", podannotation.OKGLabelNetworkDisabled, v)
		}
		return nil
	})
	if sets > 1 {
		t.Logf("%s: networkDisabled %t set %d times: it read back otherwise in between", okgPod(i), disabled, sets)
	}
}

// okgTargets waits until the listeners of Pod i's addresses forward to its
// Pod IP (in) or to nothing (out), with its PodAddress still bound to the
// same addresses.
func okgTargets(t *testing.T, i int, addrs map[string]string, in bool) {
	t.Helper()
	ctx := context.Background()
	eventually(t, fmt.Sprintf("%s targets in %t", okgPod(i), in), func() error {
		pod := &corev1.Pod{}
		if err := kube.Get(ctx, client.ObjectKey{Namespace: okgNamespace, Name: okgPod(i)}, pod); err != nil {
			return err
		}
		pa := &networkv1alpha1.PodAddress{}
		if err := kube.Get(ctx, client.ObjectKeyFromObject(pod), pa); err != nil {
			return err
		}
		if pa.Spec.Isolated == in {
			return fmt.Errorf("PodAddress isolated %t (Pod labels %v)", pa.Spec.Isolated, pod.Labels)
		}
		lbID := ""
		for _, b := range pa.Status.Bindings {
			if b.Address != addrs[b.Protocol] {
				return fmt.Errorf("%s bound to %s, was %s", b.Protocol, b.Address, addrs[b.Protocol])
			}
			lbID = b.LoadBalancerID
		}
		want := []string{}
		if in {
			want = []string{pod.Status.PodIP}
		}
		return listenerTargets(lbID, addrs, func(proto string, targets []string) error {
			if !slices.Equal(targets, want) {
				return fmt.Errorf("%s %s: targets %v, want %v", proto, addrs[proto], targets, want)
			}
			return nil
		})
	})
}

// listenerTargets calls check with the target IPs of the listener behind
// each address (by protocol) on load balancer lbID.
func listenerTargets(lbID string, addrs map[string]string, check func(proto string, targets []string) error) error {
	lb, ok := cluster.Cloud.Inventory().LoadBalancer(lbID)
	if !ok {
		return fmt.Errorf("no load balancer %s", lbID)
	}
	for proto, addr := range addrs {
		_, port, _ := strings.Cut(addr, ":")
		found := false
		for _, l := range lb.Listeners {
			if l.Protocol != proto || strconv.Itoa(l.Port) != port {
				continue
			}
			found = true
			targets := []string{}
			for _, tg := range l.Targets {
				targets = append(targets, tg.IP)
			}
			if err := check(proto, targets); err != nil {
				return err
			}
		}
		if !found {
			return fmt.Errorf("no %s listener on port %s of %s", proto, port, lbID)
		}
	}
	return nil
}
