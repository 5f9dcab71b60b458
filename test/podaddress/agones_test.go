package podaddress

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/gameserver"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv/suite"
)

const agonesCRD = "gameservers.agones.dev"

// TestAgonesGameServer: the provider (safe-start, as its ServiceAccount
// with the Pod address RBAC) runs before the GameServer kind is served; an
// Agones-labelled Pod still gets its address. Then our stand-in of Agones'
// GameServer CRD is installed and examples/agones/gameserver.yaml applied;
// its Pod, made as Agones makes it (the GameServer's name, label and
// controller reference, the template's annotations and the spec's port),
// binds, and the GameServer carries the Pod's address annotations, beside
// its own. Pods that are not the GameServer's (another name with its
// label and controller reference; its name and label without the
// reference) write nothing on it. The Pod's deletion removes the keys, and
// only those. A provider started without the gate (the kind served at
// start) does the same for a second GameServer, and removes the keys of a
// GameServer that has no Pod when it starts.
func TestAgonesGameServer(t *testing.T) {
	ctx := context.Background()
	removeAgonesCRD(t)
	t.Cleanup(func() { removeAgonesCRD(t) })
	stop := startProvider(t, suite.SafeStart(), suite.AsProvider(testenv.FeaturePodAddresses))
	ns := namespace(t)
	objs, err := testenv.ReadYAML(filepath.Join(testenv.RepoRoot(), "examples", "agones", "gameserver.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var gs *unstructured.Unstructured
	for _, o := range objs {
		o.SetNamespace(ns)
		if o.GetKind() == "GameServer" {
			gs = o
			continue
		}
		if err := kube.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	if gs == nil {
		t.Fatal("examples/agones/gameserver.yaml has no GameServer")
	}
	pp := &clbv1alpha1.PortPool{}
	pp.SetNamespace(ns)
	pp.SetName("agones-udp")
	waitReady(t, pp)
	ask := map[string]string{podannotation.AnnotationPorts: "7654/UDP agones-udp"}
	udp := corev1.ContainerPort{ContainerPort: 7654, Protocol: corev1.ProtocolUDP}

	// No GameServer kind: the labelled Pod is served as any other.
	early := pod(t, ns, "early", "10.27.0.1", ask, udp)
	early.Labels[gameserver.Label] = "early"
	early.OwnerReferences = []metav1.OwnerReference{{APIVersion: "agones.dev/v1", Kind: "GameServer", Name: "early", UID: uuid.NewUUID(), Controller: ptr.To(true)}}
	if err := kube.Update(ctx, early); err != nil {
		t.Fatal(err)
	}
	bound(t, ns, early.Name)
	podAnnotation(t, early, podannotation.AnnotationStatus, podannotation.StatusReady)

	installAgonesCRD(t)
	gs.SetAnnotations(map[string]string{"team.example.com/owner": "blue"})
	if err := kube.Create(ctx, gs); err != nil {
		t.Fatal(err)
	}
	tmpl, _, err := unstructured.NestedStringMap(gs.Object, "spec", "template", "metadata", "annotations")
	if err != nil {
		t.Fatal(err)
	}
	own := agonesPod(t, gs, gs.GetName(), tmpl, true, "10.27.0.2", udp)
	bound(t, ns, own.Name)
	carries(t, gs, own)

	// Not the GameServer's Pods: another name with its label and
	// controller reference, and a Pod of its name and label that it does
	// not control. The victim starts with a key of ours that nothing
	// wrote; a reconcile that follows their addresses removes it, and
	// writes none of theirs.
	victim := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "agones.dev/v1", "kind": "GameServer",
		"metadata": map[string]any{"namespace": ns, "name": "victim"}, "spec": map[string]any{}}}
	if err := kube.Create(ctx, victim); err != nil {
		t.Fatal(err)
	}
	other := agonesPod(t, victim, "intruder", ask, true, "10.27.0.3", udp)
	unowned := agonesPod(t, victim, victim.GetName(), ask, false, "10.27.0.4", udp)
	for _, p := range []*corev1.Pod{other, unowned} {
		bound(t, ns, p.Name)
		podAnnotation(t, p, podannotation.AnnotationStatus, podannotation.StatusReady)
	}
	if err := kube.Patch(ctx, victim, client.RawPatch(types.MergePatchType,
		fmt.Appendf(nil, `{"metadata":{"annotations":{%q:"planted"}}}`, podannotation.AnnotationAddresses))); err != nil {
		t.Fatal(err)
	}
	// A change of the unowned Pod's controller reference asks for the
	// victim again, now that both Pods carry their addresses.
	eventually(t, "point the unowned Pod at another owner", func() error {
		p := &corev1.Pod{}
		if err := kube.Get(ctx, client.ObjectKeyFromObject(unowned), p); err != nil {
			return err
		}
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "agones.dev/v1", Kind: "GameServer", Name: victim.GetName(), UID: uuid.NewUUID(), Controller: ptr.To(true)}}
		return kube.Update(ctx, p)
	})
	eventually(t, "the planted key removed from the victim", func() error {
		got := getGameServer(t, victim)
		if c := gameserver.Carried(got.GetAnnotations()); len(c) != 0 {
			return errors.Errorf("the victim carries %v", c)
		}
		return nil
	})

	// The Pod's deletion takes the keys off, and nothing else.
	deletePod(t, own)
	uncarried(t, gs)

	// Without the gate (the kind served at start): the same for a new
	// GameServer.
	stop()
	stop = startProvider(t, suite.AsProvider(testenv.FeaturePodAddresses))
	second := gs.DeepCopy()
	second.SetName("second")
	second.SetResourceVersion("")
	second.SetUID("")
	second.SetManagedFields(nil)
	second.SetCreationTimestamp(metav1.Time{})
	second.SetGeneration(0)
	if err := kube.Create(ctx, second); err != nil {
		t.Fatal(err)
	}
	second = getGameServer(t, second)
	p2 := agonesPod(t, second, second.GetName(), tmpl, true, "10.27.0.5", udp)
	bound(t, ns, p2.Name)
	carries(t, second, p2)
	deletePod(t, p2)
	uncarried(t, second)

	// A GameServer left with keys of ours and no Pod, as when its Pod was
	// deleted while the provider was down: the provider removes them when
	// it starts, with no Pod event to ask for it.
	stop()
	orphan := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "agones.dev/v1", "kind": "GameServer",
		"metadata": map[string]any{"namespace": ns, "name": "orphan", "annotations": map[string]any{
			"team.example.com/owner": "blue", podannotation.AnnotationAddresses: "198.51.100.7:7000/UDP", podannotation.AnnotationStatus: podannotation.StatusReady,
		}}, "spec": map[string]any{}}}
	if err := kube.Create(ctx, orphan); err != nil {
		t.Fatal(err)
	}
	startProvider(t, suite.AsProvider(testenv.FeaturePodAddresses))
	uncarried(t, orphan)
}

// uncarried waits until the GameServer carries none of the address
// annotations, and still its own.
func uncarried(t *testing.T, gs *unstructured.Unstructured) {
	t.Helper()
	eventually(t, "the address keys removed from the GameServer", func() error {
		got := getGameServer(t, gs)
		if c := gameserver.Carried(got.GetAnnotations()); len(c) != 0 {
			return errors.Errorf("the GameServer still carries %v", c)
		}
		if got.GetAnnotations()["team.example.com/owner"] != "blue" {
			return errors.Errorf("the GameServer's own annotation is gone: %v", got.GetAnnotations())
		}
		return nil
	})
}

// agonesPod creates the Pod of GameServer gs as Agones would (controller
// reference to gs when owned), named name, with the given annotations and
// port, and sets its IP.
func agonesPod(t *testing.T, gs *unstructured.Unstructured, name string, annotations map[string]string, owned bool, ip string, port corev1.ContainerPort) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: gs.GetNamespace(), Name: name, Annotations: maps.Clone(annotations),
			Labels: map[string]string{gameserver.Label: gs.GetName()}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "simple-game-server", Image: "example/server", Ports: []corev1.ContainerPort{port}}}},
	}
	if owned {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "agones.dev/v1", Kind: "GameServer", Name: gs.GetName(), UID: gs.GetUID(), Controller: ptr.To(true)}}
	}
	if err := kube.Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	setIP(t, p, ip)
	return p
}

// carries waits until the GameServer carries exactly the address
// annotations its Pod carries, with its status Ready.
func carries(t *testing.T, gs *unstructured.Unstructured, p *corev1.Pod) {
	t.Helper()
	eventually(t, "the GameServer carries its Pod's addresses", func() error {
		got := &corev1.Pod{}
		if err := kube.Get(context.Background(), client.ObjectKeyFromObject(p), got); err != nil {
			return err
		}
		want := gameserver.Carried(got.Annotations)
		if want[podannotation.AnnotationStatus] != podannotation.StatusReady || want[podannotation.AnnotationAddresses] == "" {
			return errors.Errorf("the Pod is not told yet: %v", want)
		}
		g := getGameServer(t, gs)
		if have := gameserver.Carried(g.GetAnnotations()); !maps.Equal(have, want) {
			return errors.Errorf("the GameServer carries %v, its Pod %v", have, want)
		}
		if g.GetAnnotations()["team.example.com/owner"] != "blue" {
			return errors.Errorf("the GameServer's own annotation is gone: %v", g.GetAnnotations())
		}
		return nil
	})
}

func getGameServer(t *testing.T, gs *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(gameserver.GroupVersionKind())
	if err := kube.Get(context.Background(), client.ObjectKeyFromObject(gs), got); err != nil {
		t.Fatal(err)
	}
	return got
}

// installAgonesCRD installs the GameServer stand-in and waits until the
// API server serves the kind.
func installAgonesCRD(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	if _, err := testenv.Apply(ctx, kube, filepath.Join("testdata", "agones-gameserver-crd.yaml")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "GameServers served", func() error {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(gameserver.GroupVersionKind().GroupVersion().WithKind("GameServerList"))
		return kube.List(ctx, l)
	})
}

// removeAgonesCRD deletes the stand-in, if there, and waits until it is
// gone: the other tests of the package run without the kind.
func removeAgonesCRD(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: agonesCRD}}
	if err := kube.Delete(ctx, crd); client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	eventually(t, "the GameServer CRD gone", func() error {
		err := kube.Get(ctx, client.ObjectKeyFromObject(crd), crd)
		if kerrors.IsNotFound(err) {
			return nil
		}
		return errors.Errorf("still there (%v)", err)
	})
}
