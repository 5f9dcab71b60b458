// Package randhostport gives Pods random host ports at admission, as
// bcs-webhook-server's randhostport plugin did: a Pod annotated
// randhostport.webhook.bkbcs.tencent.com: "true" gets, for each container
// port its ports.randhostport.webhook.bkbcs.tencent.com annotation lists, a
// hostPort from a range (the least used one), the environment variables
// that tell its processes the node's address and the port, a label per
// port, and a required pod anti-affinity per port, so that two Pods with
// the same hostPort are never scheduled onto one node.
package randhostport

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// AnnotationEnabled set to "true" asks for random host ports.
	AnnotationEnabled = "randhostport.webhook.bkbcs.tencent.com"
	// AnnotationPorts lists the container ports, by number or name,
	// comma separated, e.g. "8080,metric".
	AnnotationPorts = "ports.randhostport.webhook.bkbcs.tencent.com"
	// LabelSuffix makes the label of a host port: <port>.randhostport...:
	// "<port>". The anti-affinity selects it, and the allocator counts it.
	LabelSuffix = "." + AnnotationEnabled

	// EnvPortPrefix + container port holds the host port.
	EnvPortPrefix = "BCS_RANDHOSTPORT_FOR_CONTAINER_PORT_"
	// EnvHostIP, EnvPodName and EnvPodNamespace come from the downward
	// API.
	EnvHostIP       = "BCS_RANDHOSTPORT_HOSTIP"
	EnvPodName      = "BCS_RANDHOSTPORT_POD_NAME"
	EnvPodNamespace = "BCS_RANDHOSTPORT_POD_NAMESPACE"

	// TopologyKey keeps two Pods with one host port off a node.
	TopologyKey = "kubernetes.io/hostname"
)

// Asked reports whether pod asks for random host ports.
func Asked(pod *corev1.Pod) bool {
	return pod.Annotations[AnnotationEnabled] == "true"
}

// ContainerPorts resolves the ports annotation of pod to the container
// port numbers it names, in the annotation's order, each once. An entry is
// a number or the name of a port of a container (or of an init
// container); an error says which entry is wrong.
func ContainerPorts(pod *corev1.Pod) ([]int32, error) {
	v, ok := pod.Annotations[AnnotationPorts]
	if !ok || strings.TrimSpace(v) == "" {
		return nil, fmt.Errorf("annotation %s is %q: it must list the container ports (numbers or names, comma separated) that get a random hostPort", AnnotationPorts, v)
	}
	var out []int32
	for entry := range strings.SplitSeq(v, ",") {
		entry = strings.TrimSpace(entry)
		n, err := resolve(pod, entry)
		if err != nil {
			return nil, fmt.Errorf("annotation %s %q: %w", AnnotationPorts, v, err)
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out, nil
}

func resolve(pod *corev1.Pod, entry string) (int32, error) {
	if entry == "" {
		return 0, fmt.Errorf("an empty entry")
	}
	n, err := strconv.ParseInt(entry, 10, 32)
	for _, c := range containers(pod) {
		for _, p := range c.Ports {
			if (err == nil && int64(p.ContainerPort) == n) || (err != nil && p.Name == entry) {
				if p.HostPort != 0 {
					return 0, fmt.Errorf("container %s port %s already has hostPort %d", c.Name, entry, p.HostPort)
				}
				return p.ContainerPort, nil
			}
		}
	}
	if err == nil {
		return 0, fmt.Errorf("no container declares port %s", entry)
	}
	return 0, fmt.Errorf("no container declares a port named %q", entry)
}

// containers are the Pod's containers and init containers, for reading.
func containers(pod *corev1.Pod) []*corev1.Container {
	var out []*corev1.Container
	for i := range pod.Spec.InitContainers {
		out = append(out, &pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		out = append(out, &pod.Spec.Containers[i])
	}
	return out
}

// Label is the label key of a host port.
func Label(hostPort int32) string { return strconv.Itoa(int(hostPort)) + LabelSuffix }

// HostPorts returns the host ports pod's labels record.
func HostPorts(labels map[string]string) []int32 {
	var out []int32
	for k, v := range labels {
		p, ok := strings.CutSuffix(k, LabelSuffix)
		if !ok || p != v {
			continue
		}
		if n, err := strconv.ParseInt(p, 10, 32); err == nil {
			out = append(out, int32(n))
		}
	}
	slices.Sort(out)
	return out
}

// Mutate gives pod hostPorts[i] for containerPorts[i]: as hostPort of every
// declaration of that container port, as the environment variable
// BCS_RANDHOSTPORT_FOR_CONTAINER_PORT_<port> of every container and init
// container (with the node's IP, the Pod's name and namespace), as a label
// and as a required pod anti-affinity term per host port.
func Mutate(pod *corev1.Pod, containerPorts, hostPorts []int32) {
	env := make([]corev1.EnvVar, 0, len(containerPorts)+3)
	for i, cp := range containerPorts {
		env = append(env, corev1.EnvVar{Name: EnvPortPrefix + strconv.Itoa(int(cp)), Value: strconv.Itoa(int(hostPorts[i]))})
	}
	env = append(env,
		fieldEnv(EnvHostIP, "status.hostIP"),
		fieldEnv(EnvPodName, "metadata.name"),
		fieldEnv(EnvPodNamespace, "metadata.namespace"))
	for _, c := range containers(pod) {
		for j := range c.Ports {
			if i := slices.Index(containerPorts, c.Ports[j].ContainerPort); i >= 0 {
				c.Ports[j].HostPort = hostPorts[i]
			}
		}
		c.Env = setEnv(c.Env, env)
	}

	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	if pod.Spec.Affinity == nil {
		pod.Spec.Affinity = &corev1.Affinity{}
	}
	if pod.Spec.Affinity.PodAntiAffinity == nil {
		pod.Spec.Affinity.PodAntiAffinity = &corev1.PodAntiAffinity{}
	}
	aa := pod.Spec.Affinity.PodAntiAffinity
	for _, hp := range hostPorts {
		k, v := Label(hp), strconv.Itoa(int(hp))
		pod.Labels[k] = v
		aa.RequiredDuringSchedulingIgnoredDuringExecution = append(aa.RequiredDuringSchedulingIgnoredDuringExecution, corev1.PodAffinityTerm{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{k: v}},
			TopologyKey:   TopologyKey,
		})
	}
}

func fieldEnv(name, path string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path}}}
}

// setEnv sets each of vars in env, replacing a variable of the same name.
func setEnv(env, vars []corev1.EnvVar) []corev1.EnvVar {
	for _, v := range vars {
		if i := slices.IndexFunc(env, func(e corev1.EnvVar) bool { return e.Name == v.Name }); i >= 0 {
			env[i] = v
			continue
		}
		env = append(env, v)
	}
	return env
}
