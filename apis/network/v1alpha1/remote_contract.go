package v1alpha1

import (
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
)

// Names the provider and the agent agree on, in the cluster's namespace.

// AgentServiceAccount is the ServiceAccount the agent of cluster acts as
// once registered; its Role and RoleBinding share the name.
func AgentServiceAccount(cluster string) string { return cluster + "-agent" }

// BootstrapServiceAccount is the ServiceAccount whose short-lived token an
// admin hands the agent to register: it may only get the WorkloadCluster
// and ask for a token of AgentServiceAccount.
func BootstrapServiceAccount(cluster string) string { return cluster + "-bootstrap" }

// AgentTokenSecret is the Secret in which the provider hands the agent of
// cluster its token (key AgentTokenKey): only the agent and bootstrap
// ServiceAccounts may read it, by name.
func AgentTokenSecret(cluster string) string { return cluster + "-agent-token" }

// AgentTokenKey is the key of the token in AgentTokenSecret.
const AgentTokenKey = "token"

// Lifetimes of the agent's tokens: the CRD refuses others.
const (
	DefaultAgentTokenLifetime = time.Hour
	MinAgentTokenLifetime     = 10 * time.Minute
	MaxAgentTokenLifetime     = 24 * time.Hour
)

// TokenLifetime is the life of the tokens the provider mints for the
// cluster's agent: the spec's, within the CRD's bounds.
func (s WorkloadClusterSpec) TokenLifetime() time.Duration {
	if s.AgentTokenLifetime == nil {
		return DefaultAgentTokenLifetime
	}
	return min(max(s.AgentTokenLifetime.Duration, MinAgentTokenLifetime), MaxAgentTokenLifetime)
}

// AgentLease is the Lease the agent renews as its heartbeat. The provider
// creates it, since RBAC cannot limit create to one name.
func AgentLease(cluster string) string { return cluster + "-agent" }

// DefaultHeartbeatInterval is how often the agent renews its Lease unless
// told otherwise. The Lease's leaseDurationSeconds says how long a renewal
// counts (three intervals), so the provider needs no flag of its own.
const DefaultHeartbeatInterval = 10 * time.Second

// RemotePodName is the name of the RemotePod (and its PodAddress) of the
// Pod podName in namespace podNamespace of a workload cluster. Namespaces
// hold no dot, so the name splits back unambiguously.
func RemotePodName(podNamespace, podName string) string { return podNamespace + "." + podName }

// ParseRemotePodName returns the Pod namespace and name of a RemotePodName.
func ParseRemotePodName(name string) (namespace, pod string, ok bool) {
	namespace, pod, ok = strings.Cut(name, ".")
	return namespace, pod, ok && namespace != "" && pod != ""
}

// WorkloadClusterFinalizer keeps a WorkloadCluster until its RemotePods and
// the agent's identities are deleted.
const WorkloadClusterFinalizer = "network.tencentcloud.crossplane.io/workload-cluster"

// LabelWorkloadCluster names, on the objects the provider creates for a
// WorkloadCluster (ServiceAccounts, Roles, RoleBindings, Lease), the
// cluster they belong to.
const LabelWorkloadCluster = "network.tencentcloud.crossplane.io/workload-cluster"

// Reasons of a WorkloadCluster's Ready condition.
const (
	// ReasonAgentConnected: the agent renewed its Lease within its duration.
	ReasonAgentConnected xpv2.ConditionReason = "AgentConnected"
	// ReasonAwaitingAgent: no agent has registered yet.
	ReasonAwaitingAgent xpv2.ConditionReason = "AwaitingAgent"
	// ReasonAgentDisconnected: the agent's last renewal has expired; its
	// Pods keep their addresses until the disconnect grace period ends.
	ReasonAgentDisconnected xpv2.ConditionReason = "AgentDisconnected"
	// ReasonSuspended: spec.suspend revoked the agent's access.
	ReasonSuspended xpv2.ConditionReason = "Suspended"
	// ReasonMissingCIDRs: the spec declares no Pod or node CIDRs (a
	// cluster stored before they were required), so no Pod is served.
	ReasonMissingCIDRs xpv2.ConditionReason = "MissingCIDRs"
)

// Conditions of a RemotePod's status that say its own health to tools
// that read Crossplane's conditions (Argo CD's built-in check) and that the
// agent does not copy onto the Pod: it copies only the address conditions.
// Healthy, not Ready: an agent from before this rule copies every
// condition, and a Ready would replace the kubelet's own on the Pod.
const (
	// RemotePodHealthy is True while the Pod is served (told Bound), else
	// False with the state as its reason.
	RemotePodHealthy corev1.PodConditionType = "Healthy"
	// RemotePodSynced is False while the Pod's request waits on a person
	// (no free port, no pool, invalid), with the message it is told.
	RemotePodSynced corev1.PodConditionType = "Synced"
)

// Bounds are what a WorkloadCluster lets its agent claim, parsed from its
// spec: the agent writes RemotePod specs and is trusted with nothing else.
// +kubebuilder:object:generate=false
type Bounds struct {
	cluster     string
	namespace   string
	pods, nodes []netip.Prefix
	// pools are PoolKeys; nil allows every pool.
	pools []string
}

// Bounds parses the spec. It fails for a cluster that declares no Pod or
// node CIDRs, or one the CRD would refuse, as no Pod of it can be served.
func (wc *WorkloadCluster) Bounds() (Bounds, error) {
	b := Bounds{cluster: wc.GetName(), namespace: wc.GetNamespace()}
	var err error
	if b.pods, err = parseCIDRs("podCIDRs", wc.Spec.PodCIDRs); err != nil {
		return Bounds{}, fmt.Errorf("WorkloadCluster %s: %w", wc.GetName(), err)
	}
	if b.nodes, err = parseCIDRs("nodeCIDRs", wc.Spec.NodeCIDRs); err != nil {
		return Bounds{}, fmt.Errorf("WorkloadCluster %s: %w", wc.GetName(), err)
	}
	if len(wc.Spec.Pools) > 0 {
		b.pools = []string{}
		for _, p := range wc.Spec.Pools {
			b.pools = append(b.pools, p.Key(wc.GetNamespace()))
		}
	}
	return b, nil
}

func parseCIDRs(field string, cidrs []string) ([]netip.Prefix, error) {
	if len(cidrs) == 0 {
		return nil, fmt.Errorf("spec.%s is empty: none of the cluster's Pods is served until it declares them", field)
	}
	out := make([]netip.Prefix, 0, len(cidrs))
	for _, c := range cidrs {
		p, err := netip.ParsePrefix(c)
		if err != nil {
			return nil, fmt.Errorf("spec.%s: %q is not a CIDR", field, c)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// instanceIDForm is a CVM instance id: "ins-" and eight lowercase letters
// or digits.
var instanceIDForm = regexp.MustCompile(`^ins-[0-9a-z]{8}$`)

// IsInstanceID reports whether id has the form of a CVM instance id.
func IsInstanceID(id string) bool { return instanceIDForm.MatchString(id) }

// Admit checks what the agent says of a Pod against the bounds: every Pod
// IP inside podCIDRs, the node's InternalIP inside nodeCIDRs, the node's
// instance id a CVM instance id. Fields not set yet (a Pod without its IP)
// pass; the error names the first field that does not.
func (b Bounds) Admit(s *RemotePodSpec) error {
	if s.PodIP != "" {
		if err := within("spec.podIP", s.PodIP, "podCIDRs", b.pods, b.cluster); err != nil {
			return err
		}
	}
	for i, ip := range s.PodIPs {
		if err := within(fmt.Sprintf("spec.podIPs[%d]", i), ip, "podCIDRs", b.pods, b.cluster); err != nil {
			return err
		}
	}
	if n := s.Node; n != nil {
		if n.InternalIP != "" {
			if err := within("spec.node.internalIP", n.InternalIP, "nodeCIDRs", b.nodes, b.cluster); err != nil {
				return err
			}
		}
		if n.InstanceID != "" && !IsInstanceID(n.InstanceID) {
			return fmt.Errorf("spec.node.instanceId %q is not a CVM instance id (ins- and 8 lowercase letters or digits)", n.InstanceID)
		}
	}
	return nil
}

func within(field, ip, cidrsField string, cidrs []netip.Prefix, cluster string) error {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return fmt.Errorf("%s %q is not an IP address", field, ip)
	}
	a = a.Unmap()
	for _, p := range cidrs {
		if p.Contains(a) {
			return nil
		}
	}
	s := make([]string, len(cidrs))
	for i, p := range cidrs {
		s[i] = p.String()
	}
	return fmt.Errorf("%s %s is outside the %s of WorkloadCluster %s (%s)", field, ip, cidrsField, cluster, strings.Join(s, ", "))
}

// AllowsPool reports whether the cluster's Pods may use the pool of a
// PoolKey: every pool when spec.pools is not set.
func (b Bounds) AllowsPool(key string) bool {
	return b.pools == nil || slices.Contains(b.pools, key)
}

// PoolsMessage says which pools the cluster allows, for a refusal.
func (b Bounds) PoolsMessage(key string) string {
	return fmt.Sprintf("PortPool %s is not in spec.pools of WorkloadCluster %s (%s)", key, b.cluster, strings.Join(b.pools, ", "))
}
