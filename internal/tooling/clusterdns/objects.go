package clusterdns

import (
	"fmt"
	"net/netip"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/node"
)

// The objects' names. The Service keeps the name kube-dns that tools and
// charts expect of a cluster's DNS.
const (
	Namespace   = "kube-system"
	Name        = "coredns"
	ServiceName = "kube-dns"
)

// Ports inside the Pod: all above 1023, so CoreDNS runs as the image's
// non-root user with no capability; the Service maps 53 to dnsPort.
const (
	dnsPort    = 1053
	healthPort = 8080
	readyPort  = 8181
)

// podLabels select CoreDNS's Pod; k8s-app=kube-dns is what tools look for.
func podLabels() map[string]string { return map[string]string{"k8s-app": "kube-dns"} }

// zones are the names CoreDNS answers for: the cluster domain and the
// reverse zones of the Pod and Service ranges. Any other name is REFUSED.
func zones() []string {
	return []string{node.ClusterDomain, reverseZone(node.ServiceCIDR()), reverseZone(node.PodCIDR())}
}

// reverseZone is the in-addr.arpa zone of an IPv4 prefix whose length is a
// multiple of 8 (the kubernetes plugin serves whole octets).
func reverseZone(p netip.Prefix) string {
	if !p.Addr().Is4() || p.Bits()%8 != 0 {
		panic(fmt.Sprintf("clusterdns: %s is not an IPv4 range on an octet boundary", p))
	}
	b := p.Masked().Addr().As4()
	var labels []string
	for i := p.Bits()/8 - 1; i >= 0; i-- {
		labels = append(labels, fmt.Sprint(b[i]))
	}
	return strings.Join(append(labels, "in-addr.arpa"), ".")
}

// corefile has one server block and no plugin that asks another server:
// names outside zones() get REFUSED, never an upstream's answer. Pod
// records are off, so CoreDNS needs to watch no Pods.
func corefile() string {
	zs := zones()
	listen := make([]string, len(zs))
	for i, z := range zs {
		listen[i] = fmt.Sprintf("%s:%d", z, dnsPort)
	}
	return fmt.Sprintf(`%s {
    errors
    health :%d
    ready :%d
    kubernetes %s {
        pods disabled
    }
}
`, strings.Join(listen, " "), healthPort, readyPort, strings.Join(zs, " "))
}

// objects are what Install applies, image being the CoreDNS image's
// reference.
func objects(image string) []client.Object {
	meta := func(kind, apiVersion string) (metav1.TypeMeta, metav1.ObjectMeta) {
		return metav1.TypeMeta{Kind: kind, APIVersion: apiVersion}, metav1.ObjectMeta{Namespace: Namespace, Name: Name, Labels: podLabels()}
	}
	sa := &corev1.ServiceAccount{}
	sa.TypeMeta, sa.ObjectMeta = meta("ServiceAccount", "v1")

	role := &rbacv1.ClusterRole{}
	role.TypeMeta, role.ObjectMeta = meta("ClusterRole", "rbac.authorization.k8s.io/v1")
	role.Namespace = ""
	role.Rules = []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"services", "namespaces"}, Verbs: []string{"list", "watch"}},
		{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
	}
	binding := &rbacv1.ClusterRoleBinding{}
	binding.TypeMeta, binding.ObjectMeta = meta("ClusterRoleBinding", "rbac.authorization.k8s.io/v1")
	binding.Namespace = ""
	binding.RoleRef = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: Name}
	binding.Subjects = []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: Namespace, Name: Name}}

	cm := &corev1.ConfigMap{}
	cm.TypeMeta, cm.ObjectMeta = meta("ConfigMap", "v1")
	cm.Data = map[string]string{"Corefile": corefile()}

	dep := &appsv1.Deployment{}
	dep.TypeMeta, dep.ObjectMeta = meta("Deployment", "apps/v1")
	dep.Spec = appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](1),
		Selector: &metav1.LabelSelector{MatchLabels: podLabels()},
		Template: corev1.PodTemplateSpec{
			// The Corefile's hash rolls the Pod when the Corefile changes:
			// CoreDNS reads it once, at start.
			ObjectMeta: metav1.ObjectMeta{Labels: podLabels(), Annotations: map[string]string{"ptn/corefile": hash(corefile())}},
			Spec:       podSpec(image),
		},
	}

	svc := &corev1.Service{}
	svc.TypeMeta, svc.ObjectMeta = meta("Service", "v1")
	svc.Name = ServiceName
	svc.Spec = corev1.ServiceSpec{
		Selector:  podLabels(),
		ClusterIP: node.DNSIP,
		Ports: []corev1.ServicePort{
			{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53, TargetPort: intstr.FromString("dns")},
			{Name: "dns-tcp", Protocol: corev1.ProtocolTCP, Port: 53, TargetPort: intstr.FromString("dns-tcp")},
		},
	}
	return []client.Object{sa, role, binding, cm, dep, svc}
}

// podSpec: dnsPolicy Default, as CoreDNS must not be its own resolver (and
// the node gives Default Pods no resolver at all).
func podSpec(image string) corev1.PodSpec {
	httpProbe := func(path string, port int) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromInt(port)}},
			PeriodSeconds: 2, FailureThreshold: 5,
		}
	}
	return corev1.PodSpec{
		ServiceAccountName: Name,
		DNSPolicy:          corev1.DNSDefault,
		Containers: []corev1.Container{{
			Name:  "coredns",
			Image: image,
			Args:  []string{"-conf", "/etc/coredns/Corefile"},
			Ports: []corev1.ContainerPort{
				{Name: "dns", ContainerPort: dnsPort, Protocol: corev1.ProtocolUDP},
				{Name: "dns-tcp", ContainerPort: dnsPort, Protocol: corev1.ProtocolTCP},
				{Name: "health", ContainerPort: healthPort, Protocol: corev1.ProtocolTCP},
				{Name: "ready", ContainerPort: readyPort, Protocol: corev1.ProtocolTCP},
			},
			LivenessProbe:  httpProbe("/health", healthPort),
			ReadinessProbe: httpProbe("/ready", readyPort),
			VolumeMounts:   []corev1.VolumeMount{{Name: "config", MountPath: "/etc/coredns", ReadOnly: true}},
			SecurityContext: &corev1.SecurityContext{
				RunAsNonRoot:             ptr.To(true),
				AllowPrivilegeEscalation: ptr.To(false),
				ReadOnlyRootFilesystem:   ptr.To(true),
				Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			},
		}},
		Volumes: []corev1.Volume{{
			Name: "config",
			VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: Name},
			}},
		}},
	}
}
