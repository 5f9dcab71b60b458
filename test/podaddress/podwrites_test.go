package podaddress

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// TestPodWritesPolicy sends, with the provider's identity (Crossplane's
// grants, the Pod address feature's RBAC and
// examples/provider/pod-writes-policy.yaml), the Pod writes the provider
// makes, which pass, and writes its RBAC alone would let through but the
// policy refuses: a label, the image, another annotation, another
// condition, the Pod IP, a finalizer. Each refusal names what was wrong,
// and the Pod keeps what it had. The same writes by the admin pass: the
// policy binds only the provider.
func TestPodWritesPolicy(t *testing.T) {
	ctx := context.Background()
	provider := providerClient(t)
	ns := namespace(t)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "game", Labels: map[string]string{"app": "game"},
		Annotations: map[string]string{ourPorts: "7777 pool", "team.example.com/owner": "a"}}}
	pod.Spec.Containers = []corev1.Container{{Name: "s", Image: "example/server:1"}}
	pod.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: podannotation.ConditionAddressReady}}
	if err := kube.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	pod.Status.PodIP = "10.45.0.1"
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
	if err := kube.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(pod)
	patch := func(c client.Client, status bool, body string) error {
		p := client.RawPatch(types.StrategicMergePatchType, []byte(body))
		target := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: pod.Name}}
		if status {
			return c.Status().Patch(ctx, target, p)
		}
		return c.Patch(ctx, target, p)
	}

	refused := []struct {
		what, body, want string
		status           bool
	}{
		{what: "a label", body: `{"metadata":{"labels":{"app":"other"}}}`, want: "may not change a Pod's labels"},
		{what: "the image", body: `{"spec":{"containers":[{"name":"s","image":"evil/server:1"}]}}`, want: "may not change a Pod's spec"},
		{what: "another annotation", body: `{"metadata":{"annotations":{"team.example.com/owner":"b"}}}`, want: "not team.example.com/owner"},
		{what: "a new annotation", body: `{"metadata":{"annotations":{"example.com/new":"x"}}}`, want: "not example.com/new"},
		{what: "a request annotation", body: `{"metadata":{"annotations":{"` + ourPorts + `":"7777 other"}}}`, want: "not " + ourPorts},
		{what: "an annotation removed", body: `{"metadata":{"annotations":{"team.example.com/owner":null}}}`, want: "not team.example.com/owner"},
		{what: "an annotation of the owner named", body: `{"metadata":{"annotations":{"team.example.com/owner":"b","` + podannotation.AnnotationNamedAddresses + `":"team.example.com/owner"}}}`, want: "not team.example.com/owner"},
		{what: "a finalizer", body: `{"metadata":{"finalizers":["example.com/hold"]}}`, want: "finalizers or owner references"},
		{what: "another condition", status: true, body: `{"status":{"conditions":[{"type":"PodScheduled","status":"False"}]}}`, want: "only its own conditions"},
		{what: "a new condition", status: true, body: `{"status":{"conditions":[{"type":"Ready","status":"True"}]}}`, want: "only its own conditions"},
		{what: "the Pod IP", status: true, body: `{"status":{"podIP":"10.45.0.2","podIPs":[{"ip":"10.45.0.2"},{"$patch":"replace"}]}}`, want: "nothing of a Pod's status"},
		{what: "the phase", status: true, body: `{"status":{"phase":"Failed"}}`, want: "nothing of a Pod's status"},
		{what: "a label through the status", status: true, body: `{"metadata":{"labels":{"app":"other"}}}`, want: "may not change a Pod's labels"},
	}
	// The API server enforces a new policy a moment after it is created.
	eventually(t, "the policy refuses "+refused[0].what, func() error {
		err := patch(provider, refused[0].status, refused[0].body)
		if err == nil {
			// Put it back for the next try.
			if err := patch(kube, false, `{"metadata":{"labels":{"app":"game"}}}`); err != nil {
				t.Fatal(err)
			}
		}
		return wantRefused(err, refused[0].want)
	})
	for _, c := range refused[1:] {
		if err := wantRefused(patch(provider, c.status, c.body), c.want); err != nil {
			t.Errorf("%s: %v", c.what, err)
		}
	}
	after := &corev1.Pod{}
	if err := kube.Get(ctx, key, after); err != nil {
		t.Fatal(err)
	}
	if after.Labels["app"] != "game" || after.Spec.Containers[0].Image != "example/server:1" || after.Annotations["team.example.com/owner"] != "a" ||
		after.Annotations[ourPorts] != "7777 pool" || len(after.Finalizers) != 0 || after.Status.PodIP != "10.45.0.1" ||
		len(after.Status.Conditions) != 1 || after.Status.Conditions[0].Status != corev1.ConditionTrue {
		t.Errorf("the refused writes changed the Pod: %+v", after)
	}

	// What the provider writes: its result annotations, an annotation the
	// request names with the record of it, and its address condition with
	// annotations in one status write; later the named one removed.
	allowed := []struct {
		what, body string
		status     bool
	}{
		{what: "the result annotations", body: `{"metadata":{"annotations":{"` + podannotation.AnnotationAddresses + `":"[]","` + podannotation.AnnotationStatus + `":"NotReady"}}}`},
		{what: "a named address annotation", body: `{"metadata":{"annotations":{"game.example.com/address":"1.2.3.4:7777","` + podannotation.AnnotationNamedAddresses + `":"game.example.com/address"}}}`},
		{what: "the address condition", status: true, body: `{"metadata":{"annotations":{"` + podannotation.AnnotationStatus + `":"Ready"}},"status":{"conditions":[{"type":"` +
			podannotation.ConditionAddressReady + `","status":"True","reason":"Bound"}]}}`},
		{what: "bcs's condition", status: true, body: `{"status":{"conditions":[{"type":"` + podannotation.BCSConditionPortBindingReady + `","status":"True"}]}}`},
		{what: "the named annotation removed", body: `{"metadata":{"annotations":{"game.example.com/address":null,"` + podannotation.AnnotationNamedAddresses + `":null}}}`},
	}
	for _, c := range allowed {
		if err := patch(provider, c.status, c.body); err != nil {
			t.Errorf("%s: %v", c.what, err)
		}
	}
	if err := kube.Get(ctx, key, after); err != nil {
		t.Fatal(err)
	}
	if after.Annotations[podannotation.AnnotationStatus] != "Ready" || len(after.Status.Conditions) != 3 {
		t.Errorf("the allowed writes did not land: annotations %v, conditions %+v", after.Annotations, after.Status.Conditions)
	}
	if _, ok := after.Annotations["game.example.com/address"]; ok {
		t.Errorf("the named address annotation was not removed: %v", after.Annotations)
	}
	// A key the provider recorded once is no licence: gone from the record,
	// it is another annotation again.
	if err := wantRefused(patch(provider, false, `{"metadata":{"annotations":{"game.example.com/address":"x"}}}`), "not game.example.com/address"); err != nil {
		t.Errorf("a named annotation no longer recorded: %v", err)
	}

	// The admin is not the provider: the policy lets its writes through.
	if err := patch(kube, false, `{"metadata":{"labels":{"app":"other"}}}`); err != nil {
		t.Errorf("the admin's label patch: %v", err)
	}
}

// wantRefused says what is wrong unless err is the API server's refusal
// with a message that contains want.
func wantRefused(err error, want string) error {
	switch {
	case err == nil:
		return errorString("allowed, want refused")
	case !kerrors.IsForbidden(err) && !kerrors.IsInvalid(err):
		return err
	case !strings.Contains(err.Error(), want):
		return errorString("refused with " + err.Error() + ", want a message with " + want)
	}
	return nil
}

type errorString string

func (e errorString) Error() string { return string(e) }

// TestNamespacePolicy: with the provider's identity (its RBAC may create
// any namespace), examples/provider/namespace-policy.yaml lets it create
// tke-port-pools and refuses any other name, saying so.
func TestNamespacePolicy(t *testing.T) {
	ctx := context.Background()
	provider := providerClient(t)
	other := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "made-by-the-provider"}}
	t.Cleanup(func() { _ = kube.Delete(context.Background(), other) })
	// The API server enforces a new policy a moment after it is created.
	eventually(t, "the policy refuses namespace "+other.Name, func() error {
		err := provider.Create(ctx, other.DeepCopy())
		switch {
		case err == nil:
			_ = kube.Delete(ctx, other)
			return errors.New("created")
		case !kerrors.IsForbidden(err) || !strings.Contains(err.Error(), "may create only the namespace "+podannotation.TKEPoolNamespace):
			return errors.Errorf("refused for another reason: %v", err)
		}
		return nil
	})
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: podannotation.TKEPoolNamespace}}
	if err := provider.Create(ctx, ns); err != nil && !kerrors.IsAlreadyExists(err) {
		t.Errorf("the provider cannot create %s: %v", ns.Name, err)
	}
}

// providerClient is a client with the provider's identity: Crossplane's
// grants, the Pod address feature's RBAC and its admission policies.
func providerClient(t *testing.T) client.Client {
	t.Helper()
	cfg, err := env.AsProvider(context.Background(), testenv.FeaturePodAddresses)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
