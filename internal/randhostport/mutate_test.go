package randhostport

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	"sigs.k8s.io/yaml"

	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
)

// seedPod is a Pod of the seed's Deployment, before admission.
func seedPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: "nginx-deployment-",
			Labels:       map[string]string{"app": "nginx"},
			Annotations:  map[string]string{AnnotationEnabled: "true", AnnotationPorts: "8080,metric"},
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "nginx", Image: "nginx:1.14.2",
			Ports: []corev1.ContainerPort{{ContainerPort: 8080, Protocol: corev1.ProtocolTCP}, {Name: "metric", ContainerPort: 8081, Protocol: corev1.ProtocolTCP}},
		}}},
	}
}

// Golden reads testdata/injected-pod.yaml, the seed's injected Pod.
func golden(t *testing.T) *corev1.Pod {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "injected-pod.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	p := &corev1.Pod{}
	if err := yaml.UnmarshalStrict(raw, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestMutateGolden: the seed's Pod with the ports 29001 and 29002 is the
// golden injected Pod.
func TestMutateGolden(t *testing.T) {
	p := seedPod()
	cps, err := ContainerPorts(p)
	if err != nil || len(cps) != 2 || cps[0] != 8080 || cps[1] != 8081 {
		t.Fatalf("ContainerPorts: %v, %v; want [8080 8081]", cps, err)
	}
	Mutate(p, cps, []int32{29001, 29002})
	want := golden(t)
	p.TypeMeta = want.TypeMeta
	if d := cmp.Diff(want, p); d != "" {
		t.Errorf("mutated Pod differs from testdata/injected-pod.yaml (-want +got):\n%s", d)
	}
	if got := HostPorts(p.Labels); len(got) != 2 || got[0] != 29001 || got[1] != 29002 {
		t.Errorf("HostPorts of the labels: %v", got)
	}
}

// TestContainerPortsMalformed: every wrong annotation is refused with a
// message naming the annotation and the entry.
func TestContainerPortsMalformed(t *testing.T) {
	for value, want := range map[string]string{
		"":           "must list the container ports",
		"8080,,8081": "an empty entry",
		"9090":       "no container declares port 9090",
		"8080,web":   `no container declares a port named "web"`,
	} {
		p := seedPod()
		p.Annotations[AnnotationPorts] = value
		_, err := ContainerPorts(p)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), AnnotationPorts) {
			t.Errorf("%q: %v, want an error about %s saying %q", value, err, AnnotationPorts, want)
		}
	}
	p := seedPod()
	delete(p.Annotations, AnnotationPorts)
	if _, err := ContainerPorts(p); err == nil {
		t.Error("no ports annotation: want an error")
	}
	p = seedPod()
	p.Spec.Containers[0].Ports[0].HostPort = 80
	if _, err := ContainerPorts(p); err == nil || !strings.Contains(err.Error(), "already has hostPort 80") {
		t.Errorf("a port with a hostPort: %v", err)
	}
	// A port named twice, by number and by name, is one port.
	p = seedPod()
	p.Annotations[AnnotationPorts] = "metric, 8081 ,8080"
	if cps, err := ContainerPorts(p); err != nil || len(cps) != 2 || cps[0] != 8081 {
		t.Errorf("metric,8081,8080: %v %v, want [8081 8080]", cps, err)
	}
}

func request(t *testing.T, p *corev1.Pod, dryRun bool) admission.Request {
	t.Helper()
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: raw}, DryRun: ptr.To(dryRun),
	}}
}

// TestHandleCounts: admitted ports are counted until their Pod appears
// (and then as the Pod's), a dry run counts nothing, a Pod that never
// appears stops counting when its reservation expires, and a Pod that
// terminates or is deleted frees its ports.
func TestHandleCounts(t *testing.T) {
	w := New(Range{100, 103}, logging.NewNopLogger())
	now := time.Now()
	w.now = func() time.Time { return now }
	close(w.ready)
	ctx := context.Background()

	if r := w.Handle(ctx, request(t, seedPod(), true)); !r.Allowed || len(r.Patches) == 0 {
		t.Fatalf("dry run: %+v", r.Result)
	}
	if lo, hi := w.alloc.Spread(); lo != 0 || hi != 0 {
		t.Errorf("a dry run left counts %d..%d", lo, hi)
	}
	if r := w.Handle(ctx, request(t, seedPod(), false)); !r.Allowed || len(r.Patches) == 0 {
		t.Fatalf("admission: %+v", r.Result)
	}
	if w.alloc.Count(100) != 1 || w.alloc.Count(101) != 1 {
		t.Fatalf("reserved counts: %d %d, want 1 1", w.alloc.Count(100), w.alloc.Count(101))
	}
	// The Pod appears: it takes the reservation over, counted once.
	created := seedPod()
	created.UID = types.UID("a")
	Mutate(created, []int32{8080, 8081}, []int32{100, 101})
	w.observe(created)
	w.observe(created)
	if w.alloc.Count(100) != 1 || len(w.reserved) != 0 {
		t.Errorf("after the Pod appeared: count %d, reservations %d; want 1, 0", w.alloc.Count(100), len(w.reserved))
	}
	// Admitted, never created: counted until the reservation expires.
	w.Handle(ctx, request(t, seedPod(), false))
	if w.alloc.Count(102) != 1 {
		t.Fatalf("second Pod's port 102 count %d, want 1", w.alloc.Count(102))
	}
	w.expire()
	if w.alloc.Count(102) != 1 {
		t.Error("reservation expired early")
	}
	now = now.Add(DefaultReservation)
	w.expire()
	if w.alloc.Count(102) != 0 || w.alloc.Count(103) != 0 {
		t.Errorf("after the reservation: counts %d %d, want 0 0", w.alloc.Count(102), w.alloc.Count(103))
	}
	// The created Pod terminates: its ports are free.
	created.Status.Phase = corev1.PodSucceeded
	w.observe(created)
	if w.alloc.Count(100) != 0 {
		t.Errorf("a terminated Pod still counted: %d", w.alloc.Count(100))
	}

	// Malformed: refused with the reason.
	bad := seedPod()
	bad.Annotations[AnnotationPorts] = "web"
	if r := w.Handle(ctx, request(t, bad, false)); r.Allowed || !strings.Contains(r.Result.Message, `no container declares a port named "web"`) {
		t.Errorf("malformed: allowed %v, %q", r.Allowed, r.Result.Message)
	}
	// Not asking: admitted as it is.
	off := seedPod()
	off.Annotations[AnnotationEnabled] = "false"
	if r := w.Handle(ctx, request(t, off, false)); !r.Allowed || len(r.Patches) != 0 {
		t.Errorf("a Pod not asking was changed: %+v", r.Patches)
	}
	// More ports than the range has: refused.
	many := seedPod()
	for i := range 4 {
		many.Spec.Containers[0].Ports = append(many.Spec.Containers[0].Ports, corev1.ContainerPort{ContainerPort: int32(9000 + i)})
	}
	many.Annotations[AnnotationPorts] = "8080,8081,9000,9001,9002"
	if r := w.Handle(ctx, request(t, many, false)); r.Allowed || !strings.Contains(r.Result.Message, "range 100-103 has 4") {
		t.Errorf("five ports of four: allowed %v, %q", r.Allowed, r.Result.Message)
	}
}

// TestHandleWaitsForCounts: before the counts are rebuilt, a Pod is not
// given ports that may be taken.
func TestHandleWaitsForCounts(t *testing.T) {
	w := New(Range{100, 103}, logging.NewNopLogger())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if r := w.Handle(ctx, request(t, seedPod(), false)); r.Allowed || r.Result.Code != 503 {
		t.Errorf("before the counts: allowed %v, %+v", r.Allowed, r.Result)
	}
}
