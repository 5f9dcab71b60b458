package podaddress

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	pcontroller "github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/seal"
)

// TestSlimPodCache: the provider caches Pods without what it does not read
// (env, volumes…), binds one from that cache by a port name only a sidecar
// declares, behind a readiness gate, and its writes to the Pod (annotations
// and condition, patched) leave the dropped fields in place on the API
// server.
func TestSlimPodCache(t *testing.T) {
	startProvider(t)
	ns := namespace(t)
	lb(t, ns, "lb-a", "BGP")
	pool(t, ns, "slim", []string{"lb-a"}, 34000, 34009)
	ctx := context.Background()

	big := strings.Repeat("x", 8192)
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gs-0", Annotations: map[string]string{ourPorts: "metrics slim"}},
		Spec: corev1.PodSpec{
			ReadinessGates: []corev1.PodReadinessGate{{ConditionType: podannotation.ConditionAddressReady}},
			Volumes:        []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			InitContainers: []corev1.Container{{
				Name: "exporter", Image: "example/exporter", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways),
				Ports: []corev1.ContainerPort{{Name: "metrics", ContainerPort: 9100, Protocol: corev1.ProtocolTCP}},
			}},
			Containers: []corev1.Container{{
				Name: "server", Image: "example/server",
				Env:          []corev1.EnvVar{{Name: "BIG", Value: big}},
				VolumeMounts: []corev1.VolumeMount{{Name: "cfg", MountPath: "/etc/gs"}},
				Ports:        []corev1.ContainerPort{{Name: "game", ContainerPort: 7777, Protocol: corev1.ProtocolTCP}},
			}},
		},
	}
	if err := kube.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	setIP(t, p, "172.16.9.1")

	// The cache the provider runs with holds the Pod without env and
	// volumes, with the sidecar's named port.
	c, err := cache.New(env.Config, func() cache.Options {
		o := pcontroller.CacheOptions(nil, seal.Ephemeral())
		o.Scheme = env.Scheme
		return o
	}())
	if err != nil {
		t.Fatal(err)
	}
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() { _ = c.Start(cctx) }()
	eventually(t, "the slim Pod in the provider's cache", func() error {
		got := &corev1.Pod{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(p), got); err != nil {
			return err
		}
		if got.Status.PodIP != "172.16.9.1" {
			return errors.Errorf("podIP %q", got.Status.PodIP)
		}
		if got.Spec.Volumes != nil || got.Spec.Containers[0].Env != nil || got.Spec.Containers[0].Image != "" {
			t.Fatalf("cached Pod keeps what no controller reads: volumes %v, env %d, image %q", got.Spec.Volumes, len(got.Spec.Containers[0].Env), got.Spec.Containers[0].Image)
		}
		if len(got.Spec.InitContainers) != 1 || got.Spec.InitContainers[0].Ports[0].Name != "metrics" || got.Spec.InitContainers[0].RestartPolicy == nil {
			t.Fatalf("cached Pod lost its sidecar's port: %+v", got.Spec.InitContainers)
		}
		return nil
	})

	pa := bound(t, ns, "gs-0")
	if len(pa.Status.Bindings) != 1 || pa.Status.Bindings[0].ContainerPort != 9100 {
		t.Fatalf("bindings %+v, want one to the sidecar's 9100", pa.Status.Bindings)
	}
	eventually(t, "the Pod told, and whole", func() error {
		got := &corev1.Pod{}
		if err := kube.Get(ctx, client.ObjectKeyFromObject(p), got); err != nil {
			return err
		}
		if !slices.ContainsFunc(got.Status.Conditions, func(c corev1.PodCondition) bool {
			return c.Type == podannotation.ConditionAddressReady && c.Status == corev1.ConditionTrue
		}) || got.Annotations[podannotation.AnnotationStatus] == "" {
			return errors.Errorf("not told yet: conditions %v, annotations %v", got.Status.Conditions, got.Annotations)
		}
		if len(got.Spec.Volumes) != 1 || len(got.Spec.Containers[0].Env) != 1 || got.Spec.Containers[0].Env[0].Value != big ||
			got.Spec.Containers[0].Image != "example/server" || got.Status.PodIP != "172.16.9.1" || got.Status.Phase != corev1.PodRunning {
			t.Fatalf("the provider's writes changed fields it does not cache: %+v", got.Spec)
		}
		return nil
	})
}
