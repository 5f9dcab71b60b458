package podcache

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/intern"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
)

// read is every field of a Pod that a controller reads from the cache.
func read() *corev1.Pod {
	now := metav1.Now()
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "game", Name: "gs-0", GenerateName: "gs-", UID: "u-1", ResourceVersion: "42",
			CreationTimestamp: now, DeletionTimestamp: &now, Finalizers: []string{"f"},
			Labels: map[string]string{"app": "gs"},
			Annotations: map[string]string{
				podannotation.AnnotationPorts:  "7777/TCP pool-a; web/TCP pool-a",
				podannotation.AnnotationStatus: "Bound",
			},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "gs", UID: "s-1"}},
		},
		Spec: corev1.PodSpec{
			NodeName:       "node-1",
			HostNetwork:    true,
			ReadinessGates: []corev1.PodReadinessGate{{ConditionType: podannotation.ConditionAddressReady}},
			InitContainers: []corev1.Container{{
				Name: "sidecar", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways),
				Ports: []corev1.ContainerPort{{Name: "metrics", ContainerPort: 9100, Protocol: corev1.ProtocolTCP}},
			}},
			Containers: []corev1.Container{{
				Name: "server",
				Ports: []corev1.ContainerPort{
					{ContainerPort: 7777, HostPort: 30777, Protocol: corev1.ProtocolTCP},
					{Name: "web", ContainerPort: 8080, Protocol: corev1.ProtocolTCP},
				},
			}},
		},
		Status: corev1.PodStatus{
			Phase:      corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}, {Type: podannotation.ConditionAddressReady, Status: corev1.ConditionFalse, Reason: "Allocated"}},
			HostIP:     "10.0.0.1", HostIPs: []corev1.HostIP{{IP: "10.0.0.1"}},
			PodIP: "172.16.0.5", PodIPs: []corev1.PodIP{{IP: "172.16.0.5"}},
		},
	}
}

// withUnread adds what no controller reads, large in real Pods.
func withUnread(p *corev1.Pod) *corev1.Pod {
	p = p.DeepCopy()
	p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}}
	p.Spec.Volumes = []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}}}
	p.Spec.Tolerations = []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists}}
	p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{}}
	p.Spec.ServiceAccountName = "gs"
	for _, cs := range [][]corev1.Container{p.Spec.Containers, p.Spec.InitContainers} {
		for i := range cs {
			cs[i].Image = "registry.example/gs:1.0"
			cs[i].Command = []string{"/server", "--port=7777"}
			cs[i].Env = []corev1.EnvVar{{Name: "BIG", Value: strings.Repeat("x", 4096)}}
			cs[i].VolumeMounts = []corev1.VolumeMount{{Name: "config", MountPath: "/etc/gs"}}
			cs[i].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(7777)}}}
		}
	}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "server", Ready: true, Image: "registry.example/gs:1.0", ImageID: "sha256:abc"}}
	p.Status.QOSClass = corev1.PodQOSBestEffort
	return p
}

// TestSlimKeepsWhatControllersRead: a Pod with every field the controllers
// read, plus what they do not, comes out of the transform as exactly the
// former.
func TestSlimKeepsWhatControllersRead(t *testing.T) {
	want := read()
	got, err := Transform(intern.New())(withUnread(want))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Slim:\n got %+v\nwant %+v", got, want)
	}
}

// TestSlimDropsLargeFields: env, volumes, images, probes, container
// statuses and managed fields are not cached.
func TestSlimDropsLargeFields(t *testing.T) {
	got := Slim(intern.New(), withUnread(read()))
	if got.ManagedFields != nil || got.Spec.Volumes != nil || got.Spec.Tolerations != nil || got.Spec.Affinity != nil ||
		got.Spec.ServiceAccountName != "" || got.Status.ContainerStatuses != nil || got.Status.QOSClass != "" {
		t.Errorf("kept a field no controller reads: %+v", got)
	}
	for _, c := range append(got.Spec.InitContainers, got.Spec.Containers...) {
		if c.Env != nil || c.Image != "" || c.Command != nil || c.VolumeMounts != nil || c.ReadinessProbe != nil {
			t.Errorf("container %s kept a field no controller reads: %+v", c.Name, c)
		}
	}
}

// TestSlimReadsTheSame: what the PodAddress controller derives from a Pod
// (its request, each port with its hostPort, by number and by name,
// sidecar ports included, its readiness gates) is the same from the slim
// Pod as from the whole one.
func TestSlimReadsTheSame(t *testing.T) {
	full := withUnread(read())
	slim := Slim(intern.New(), full)
	reqFull, askedFull, errFull := podannotation.Parse(full)
	reqSlim, askedSlim, errSlim := podannotation.Parse(slim)
	if !askedFull || errFull != nil || !reflect.DeepEqual(reqFull, reqSlim) || askedSlim != askedFull || errSlim != nil {
		t.Fatalf("Parse: full %+v %v %v, slim %+v %v %v", reqFull, askedFull, errFull, reqSlim, askedSlim, errSlim)
	}
	for _, port := range []intstr.IntOrString{intstr.FromInt32(7777), intstr.FromString("web"), intstr.FromString("metrics")} {
		pr := v1alpha1.PortRequest{Port: port, Protocol: "TCP"}
		p1, proto1, host1, err1 := podannotation.ResolvePort(full, pr)
		p2, proto2, host2, err2 := podannotation.ResolvePort(slim, pr)
		if err1 != nil || p1 != p2 || proto1 != proto2 || host1 != host2 || err2 != nil {
			t.Errorf("ResolvePort(%s): full %d %s %d %v, slim %d %s %d %v", port.String(), p1, proto1, host1, err1, p2, proto2, host2, err2)
		}
	}
	if _, _, host, _ := podannotation.ResolvePort(slim, v1alpha1.PortRequest{Port: intstr.FromInt32(7777)}); host != 30777 {
		t.Errorf("hostPort of 7777: %d, want 30777", host)
	}
	if g1, g2 := podannotation.ReadinessGates(full), podannotation.ReadinessGates(slim); !reflect.DeepEqual(g1, g2) || len(g2) != 1 {
		t.Errorf("ReadinessGates: full %v, slim %v", g1, g2)
	}
}

// TestTransformPassesOthers: only Pods are slimmed.
func TestTransformPassesOthers(t *testing.T) {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: corev1.NodeSpec{ProviderID: "qcloud:///ins-1"}}
	got, err := Transform(intern.New())(n)
	if err != nil || got != n || n.Spec.ProviderID == "" {
		t.Errorf("Transform(Node) = %v, %v", got, err)
	}
}
