package seal

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
)

var made = time.Date(2026, 12, 7, 6, 0, 0, 0, time.UTC)

func record(name string) *v1alpha1.PodAddress {
	pa := &v1alpha1.PodAddress{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: name, UID: types.UID("uid-" + name),
		CreationTimestamp: metav1.NewTime(made)}}
	pa.Status.State = v1alpha1.StateBound
	pa.Status.BoundAt = &metav1.Time{Time: made.Add(1500 * time.Millisecond)}
	pa.Status.Bindings = []v1alpha1.PortBinding{{Pool: "team-b/pool", Protocol: "TCP", ContainerPort: 7000, LoadBalancerID: "lb-1", Port: 40000,
		ListenerIDs: map[string]string{"TCP": "lbl-1", "UDP": "lbl-2"}, TargetIP: "10.0.0.9", TargetPort: 7000}}
	pa.Status.EIP = &v1alpha1.EIPBinding{State: "Bound", AddressID: "eip-1"}
	return pa
}

func created(s *Sealer, at time.Time) *v1alpha1.PodAddress {
	pa := record("gs-0")
	pa.Status = v1alpha1.PodAddressStatus{}
	if err := v1alpha1.SetCreatedBindings(pa, record("gs-0").Status.Bindings); err != nil {
		panic(err)
	}
	s.SealCreated(pa, at)
	return pa
}

// roundTrip is what a reader gets back from the API server: JSON.
func roundTrip(t *testing.T, pa *v1alpha1.PodAddress) *v1alpha1.PodAddress {
	t.Helper()
	raw, err := json.Marshal(pa)
	if err != nil {
		t.Fatal(err)
	}
	out := &v1alpha1.PodAddress{}
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatal(err)
	}
	return out
}

func scheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestCheck(t *testing.T) {
	s := Ephemeral()
	sealed := func(change func(*v1alpha1.PodAddress)) *v1alpha1.PodAddress {
		pa := record("gs-0")
		if err := s.Seal(pa); err != nil {
			t.Fatal(err)
		}
		change(pa)
		return pa
	}
	legacy := New(s.key, false)
	cases := map[string]struct {
		s      *Sealer
		pa     *v1alpha1.PodAddress
		reason string // "" trusted
	}{
		"sealed status":                        {s: s, pa: sealed(func(*v1alpha1.PodAddress) {})},
		"sealed status read back from JSON":    {s: s, pa: roundTrip(t, sealed(func(*v1alpha1.PodAddress) {}))},
		"a binding changed after sealing":      {s: s, pa: sealed(func(pa *v1alpha1.PodAddress) { pa.Status.Bindings[0].LoadBalancerID = "lb-b" }), reason: "not written by the provider"},
		"a target added after sealing":         {s: s, pa: sealed(func(pa *v1alpha1.PodAddress) { pa.Status.Bindings[0].TargetIP = "10.9.9.9" }), reason: "not written by the provider"},
		"an EIP id written after sealing":      {s: s, pa: sealed(func(pa *v1alpha1.PodAddress) { pa.Status.EIP.AddressID = "eip-b" }), reason: "not written by the provider"},
		"a sealed status copied to another":    {s: s, pa: sealed(func(pa *v1alpha1.PodAddress) { pa.UID = "uid-other" }), reason: "not written by the provider"},
		"the same status in another namespace": {s: s, pa: sealed(func(pa *v1alpha1.PodAddress) { pa.Namespace = "team-b" }), reason: "not written by the provider"},
		"sealed with another key":              {s: Ephemeral(), pa: sealed(func(*v1alpha1.PodAddress) {}), reason: "not written by the provider"},
		"no seal once all are sealed":          {s: s, pa: record("gs-0"), reason: "not written by the provider"},
		"no seal before all are sealed":        {s: legacy, pa: record("gs-0")},
		"a wrong seal before all are sealed":   {s: legacy, pa: sealed(func(pa *v1alpha1.PodAddress) { pa.Status.Bindings[0].Port = 1 }), reason: "not written by the provider"},
		"no records":                           {s: s, pa: &v1alpha1.PodAddress{}},
		"sealed create record":                 {s: s, pa: created(s, made.Add(time.Second))},
		"create record read back from JSON":    {s: s, pa: roundTrip(t, created(s, made))},
		"create record sealed long before":     {s: s, pa: created(s, made.Add(-MaxCreateSkew-time.Minute)), reason: "made at another time"},
		"create record changed after sealing": {s: s, pa: func() *v1alpha1.PodAddress {
			pa := created(s, made)
			pa.Annotations[v1alpha1.AnnotationCreatedBindings] = "[]"
			return pa
		}(), reason: "not written by the provider"},
		"create record without seal": {s: s, pa: func() *v1alpha1.PodAddress {
			pa := created(s, made)
			delete(pa.Annotations, v1alpha1.AnnotationCreatedSeal)
			return pa
		}(), reason: "not written by the provider"},
		"create record with an unreadable seal": {s: s, pa: func() *v1alpha1.PodAddress {
			pa := created(s, made)
			pa.Annotations[v1alpha1.AnnotationCreatedSeal] = "soon.abc"
			return pa
		}(), reason: "not written by the provider"},
		"create record without seal before all are sealed": {s: legacy, pa: func() *v1alpha1.PodAddress {
			pa := created(s, made)
			delete(pa.Annotations, v1alpha1.AnnotationCreatedSeal)
			return pa
		}()},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := tc.s.Check(tc.pa)
			switch {
			case tc.reason == "" && err != nil:
				t.Fatalf("Check: %v; want trusted", err)
			case tc.reason != "" && (err == nil || !strings.Contains(err.Error(), tc.reason)):
				t.Fatalf("Check: %v; want an error saying %q", err, tc.reason)
			}
		})
	}
}

func TestSealNeedsUID(t *testing.T) {
	pa := record("gs-0")
	pa.UID = ""
	if err := Ephemeral().Seal(pa); err == nil {
		t.Fatal("sealed a status with no uid")
	}
}

func TestTrust(t *testing.T) {
	s := Ephemeral()
	forged := created(s, made)
	forged.Status = record("gs-0").Status // written by someone else over a sealed create record
	if err := s.Trust(forged); err == nil {
		t.Fatal("trusted a forged status")
	}
	if forged.StatusWritten() || len(forged.RecordedBindings()) != 0 {
		t.Errorf("records left after Trust: status %+v, recorded %+v", forged.Status, forged.RecordedBindings())
	}
	why, ok := s.Ignored(forged.UID)
	if !ok || !strings.Contains(why, "not written by the provider") {
		t.Errorf("Ignored = %q, %v", why, ok)
	}
	if _, ok := s.Ignored(forged.UID); ok {
		t.Error("Ignored told the same reason twice")
	}
	good := record("gs-0")
	if err := s.Seal(good); err != nil {
		t.Fatal(err)
	}
	if err := s.Trust(good); err != nil || len(good.Status.Bindings) != 1 {
		t.Errorf("Trust dropped a sealed record: %v", err)
	}
}

func TestReader(t *testing.T) {
	s := Ephemeral()
	good, bad := record("good"), record("bad")
	if err := s.Seal(good); err != nil {
		t.Fatal(err)
	}
	kube := fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(good, bad).WithStatusSubresource(good, bad).Build()
	r := Reader(kube, s)
	l := &v1alpha1.PodAddressList{}
	if err := r.List(context.Background(), l); err != nil {
		t.Fatal(err)
	}
	for _, pa := range l.Items {
		if got, want := len(pa.Status.Bindings), map[string]int{"good": 1, "bad": 0}[pa.Name]; got != want {
			t.Errorf("List: %s has %d bindings, want %d", pa.Name, got, want)
		}
	}
	pa := &v1alpha1.PodAddress{}
	if err := r.Get(context.Background(), client.ObjectKeyFromObject(bad), pa); err != nil || len(pa.Status.Bindings) != 0 {
		t.Errorf("Get: %v, %d bindings; want the forged ones dropped", err, len(pa.Status.Bindings))
	}
	injected := errors.New("injected")
	failing := Reader(fake.NewClientBuilder().WithScheme(scheme(t)).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
			return injected
		},
		List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
			return injected
		},
	}).Build(), s)
	if err := failing.Get(context.Background(), client.ObjectKeyFromObject(bad), pa); !errors.Is(err, injected) {
		t.Errorf("Get error = %v", err)
	}
	if err := failing.List(context.Background(), l); !errors.Is(err, injected) {
		t.Errorf("List error = %v", err)
	}
}

func TestLoad(t *testing.T) {
	ctx := context.Background()
	kube := fake.NewClientBuilder().WithScheme(scheme(t)).Build()
	first, err := Load(ctx, kube, DefaultNamespace)
	if err != nil {
		t.Fatal(err)
	}
	if first.SealedAll() {
		t.Error("a new key says every record is sealed before the migrator ran")
	}
	again, err := Load(ctx, kube, DefaultNamespace)
	if err != nil {
		t.Fatal(err)
	}
	pa := record("gs-0")
	if err := first.Seal(pa); err != nil {
		t.Fatal(err)
	}
	if err := New(again.key, true).Check(pa); err != nil {
		t.Errorf("a second Load has another key: %v", err)
	}
	short := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: SecretName}, Data: map[string][]byte{keyField: []byte("short")}}
	if err := kube.Create(ctx, short); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(ctx, kube, "other"); err == nil || !strings.Contains(err.Error(), "at least 32 bytes") {
		t.Errorf("Load of a short key: %v", err)
	}
	broken := fake.NewClientBuilder().WithScheme(scheme(t)).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
			return errors.New("injected")
		},
	}).Build()
	if _, err := Load(ctx, broken, DefaultNamespace); err == nil || !strings.Contains(err.Error(), "injected") {
		t.Errorf("Load with a failing API: %v", err)
	}
}

func TestMigrator(t *testing.T) {
	ctx := context.Background()
	kube := fake.NewClientBuilder().WithScheme(scheme(t)).WithStatusSubresource(&v1alpha1.PodAddress{}).Build()
	s, err := Load(ctx, kube, DefaultNamespace)
	if err != nil {
		t.Fatal(err)
	}
	// Written by a version without seals: a status, a create record, and
	// a PodAddress with no records.
	withStatus := record("status")
	withCreate := created(s, made)
	withCreate.Name = "create"
	delete(withCreate.Annotations, v1alpha1.AnnotationCreatedSeal)
	empty := &v1alpha1.PodAddress{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "empty"}}
	for _, pa := range []*v1alpha1.PodAddress{withStatus, withCreate, empty} {
		st := pa.Status
		if err := kube.Create(ctx, pa); err != nil {
			t.Fatal(err)
		}
		pa.Status = st
		if pa.StatusWritten() {
			if err := kube.Status().Update(ctx, pa); err != nil {
				t.Fatal(err)
			}
		}
	}
	m := &Migrator{Sealer: s, Kube: kube, Namespace: DefaultNamespace, Log: logging.NewNopLogger()}
	if !m.NeedLeaderElection() {
		t.Error("the migrator runs in every replica")
	}
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if !s.SealedAll() {
		t.Fatal("not marked sealed after the migration")
	}
	for _, name := range []string{"status", "create", "empty"} {
		pa := &v1alpha1.PodAddress{}
		if err := kube.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: name}, pa); err != nil {
			t.Fatal(err)
		}
		if err := s.Check(pa); err != nil {
			t.Errorf("%s after the migration: %v", name, err)
		}
	}
	reloaded, err := Load(ctx, kube, DefaultNamespace)
	if err != nil || !reloaded.SealedAll() {
		t.Errorf("a restarted provider does not see the migration done: %v", err)
	}
	// Done once: a second start writes nothing.
	calls := 0
	counting := fake.NewClientBuilder().WithScheme(scheme(t)).WithInterceptorFuncs(interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, l client.ObjectList, o ...client.ListOption) error {
			calls++
			return c.List(ctx, l, o...)
		},
	}).Build()
	if err := (&Migrator{Sealer: reloaded, Kube: counting, Namespace: DefaultNamespace, Log: logging.NewNopLogger()}).Start(ctx); err != nil || calls != 0 {
		t.Errorf("second start: %v, %d lists", err, calls)
	}
}

// TestMigratorRetries: a failing API server is retried, not given up on.
func TestMigratorRetries(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fails := 1
	kube := fake.NewClientBuilder().WithScheme(scheme(t)).WithInterceptorFuncs(interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, l client.ObjectList, o ...client.ListOption) error {
			if fails > 0 {
				fails--
				return errors.New("injected")
			}
			return c.List(ctx, l, o...)
		},
	}).Build()
	s, err := Load(ctx, kube, DefaultNamespace)
	if err != nil {
		t.Fatal(err)
	}
	if err := (&Migrator{Sealer: s, Kube: kube, Namespace: DefaultNamespace, Log: logging.NewNopLogger()}).Start(ctx); err != nil {
		t.Fatal(err)
	}
	if !s.SealedAll() || fails != 0 {
		t.Errorf("sealedAll %v after %d failures left", s.SealedAll(), fails)
	}
}
