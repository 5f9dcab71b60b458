package v1alpha1

import (
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
