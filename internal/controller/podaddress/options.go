package podaddress

import (
	"time"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/vpc"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/podaddress/pods"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/seal"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/webhook"
)

// Options configure the PodAddress controller beyond crossplane-runtime's
// controller options.
type Options struct {
	// TargetAuditInterval is how often the targets of bound PodAddresses
	// and the pools' listeners are compared with the cloud; 0 disables the
	// audit.
	TargetAuditInterval time.Duration
	// Admission is the Pod admission webhook, which allocates with this
	// controller once it runs; nil when it is not served.
	Admission *webhook.Admission
	// VPC hands out the VPC (EIP) clients of per-Pod EIPs; nil disables
	// them (a PodAddress asking for an EIP says so).
	VPC *vpc.Pool
	// EIPWarmInterval is how often the warm EIP pools are refilled;
	// eip.DefaultWarmInterval when zero.
	EIPWarmInterval time.Duration
	// PodEvents says which Events are written on Pods; warnings only when
	// empty.
	PodEvents PodEvents
	// MaxPortsPerPod bounds the addresses (one per port and pool) one
	// Pod may ask for; a request over it is Invalid before anything is
	// allocated. 0 means no limit; nil means DefaultMaxPortsPerPod.
	MaxPortsPerPod *int
	// PendingHold is how long a Pod that never ran on a node keeps its
	// ports in pools of other namespaces; 0 means for ever; nil means
	// DefaultPendingHold.
	PendingHold *time.Duration
	// RemotePods serves the Pods of other clusters once its Served is
	// called (the RemotePod kind is served); nil serves them at once.
	RemotePods *pods.Remote
	// Seal signs the statuses the controller writes and drops records it
	// did not write; required.
	Seal *seal.Sealer
}

// PodEvents says which Events the controller writes on Pods.
type PodEvents string

const (
	// PodEventsWarnings writes only Warning Events on Pods: what needs a
	// look (an invalid request, no free port). A burst of Pods then costs
	// no Event write per Pod bound.
	PodEventsWarnings PodEvents = "warnings"
	// PodEventsAll also writes a Normal Event per Pod bound, isolated or
	// moved to another load balancer.
	PodEventsAll PodEvents = "all"
)
