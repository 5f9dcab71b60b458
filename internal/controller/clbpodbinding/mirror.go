package clbpodbinding

import (
	"cmp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	networkv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/tkeextend/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
)

// tkeSource is the PodAddressSpec.Source of a Pod that asked in
// tke-extend's syntax.
const tkeSource = "annotation/" + podannotation.SyntaxTKEExtend

// stateOf is the CLBPodBinding state tke-extend shows in the situation
// of a PodAddress in state; false for a state it has no counterpart of.
func stateOf(state string) (string, bool) {
	switch state {
	case networkv1alpha1.StatePending:
		return v1alpha1.BindingStatePending, true
	case networkv1alpha1.StateAllocated:
		return v1alpha1.BindingStateAllocated, true
	case networkv1alpha1.StateBound:
		return v1alpha1.BindingStateBound, true
	case networkv1alpha1.StateWaitBackend:
		return v1alpha1.BindingStateWaitBackend, true
	case networkv1alpha1.StateNoPortAvailable:
		return v1alpha1.BindingStateNoPortAvailable, true
	case networkv1alpha1.StatePoolNotFound:
		return v1alpha1.BindingStatePortPoolNotFound, true
	case networkv1alpha1.StateHeld:
		// The Pod is gone and its ports kept: tke-extend's binding
		// without its Pod.
		return v1alpha1.BindingStateNoBackend, true
	case networkv1alpha1.StateIsolated:
		return v1alpha1.BindingStateDisabled, true
	case networkv1alpha1.StatePoolNotAllowed, networkv1alpha1.StateInvalid:
		// Refusals tke-extend has no name for; the message says which.
		return v1alpha1.BindingStateFailed, true
	}
	return "", false
}

// A mirror is the CLBPodBinding spec and status tke-extend would show for
// a PodAddress.
type mirror struct {
	spec   v1alpha1.CLBBindingSpec
	status v1alpha1.CLBBindingStatus
}

// mirrorOf returns what the CLBPodBinding of pa says, and false when
// tke-extend would have none: pa was not asked for in its syntax, or only
// by clb-hostport-mapping lines (tke-extend binds those through the Node,
// not the Pod). Its input is the PodAddress alone, read through the
// seal: a status the provider did not write is not mirrored.
func mirrorOf(pa *networkv1alpha1.PodAddress) (mirror, bool) {
	if pa.Spec.Source != tkeSource {
		return mirror{}, false
	}
	type portKey struct {
		port     int32
		protocol string
	}
	podIP := map[portKey]bool{}
	var m mirror
	for _, pr := range pa.Spec.Ports {
		if cmp.Or(pr.Backend, pa.Spec.Backend) == networkv1alpha1.BackendHostPort || pr.Port.Type != intstr.Int {
			continue
		}
		podIP[portKey{pr.Port.IntVal, pr.Protocol}] = true
		e := v1alpha1.PortEntry{Port: pr.Port.IntVal, Protocol: podannotation.TKEProtocolName(pr.Protocol)}
		if pr.CertSecret != "" {
			e.CertSecretName = ptr.To(pr.CertSecret)
		}
		for _, ref := range pr.Pools {
			e.Pools = append(e.Pools, podannotation.TKEPoolName(ref.Key(pa.Namespace)))
		}
		m.spec.Ports = append(m.spec.Ports, e)
	}
	if len(m.spec.Ports) == 0 {
		return mirror{}, false
	}
	if pa.Spec.Isolated {
		m.spec.Disabled = ptr.To(true)
	}

	bindings := pa.RecordedBindings()
	for _, b := range bindings {
		if !podIP[portKey{b.ContainerPort, b.Protocol}] {
			continue
		}
		for _, proto := range networkv1alpha1.ListenerProtocols(b.Protocol) {
			s := v1alpha1.PortBindingStatus{
				Port: b.ContainerPort, Protocol: proto, Pool: podannotation.TKEPoolName(b.Pool), Region: b.Region,
				LoadbalancerID: b.LoadBalancerID, LoadbalancerPort: b.Port, ListenerID: b.ListenerIDs[proto],
			}
			if b.EndPort > b.Port {
				s.LoadbalancerEndPort = ptr.To(b.EndPort)
			}
			if b.AddressIPVersion != "" {
				s.AddressIPVersion = ptr.To(b.AddressIPVersion)
			}
			if b.CertID != "" {
				s.CertID = ptr.To(b.CertID)
			}
			m.status.PortBindings = append(m.status.PortBindings, s)
		}
	}
	// tke-extend's order: pool, load balancer, public port, container
	// port, protocol, listener.
	slices.SortFunc(m.status.PortBindings, func(a, b v1alpha1.PortBindingStatus) int {
		return cmp.Or(strings.Compare(a.Pool, b.Pool), strings.Compare(a.LoadbalancerID, b.LoadbalancerID),
			cmp.Compare(a.LoadbalancerPort, b.LoadbalancerPort), cmp.Compare(a.Port, b.Port),
			strings.Compare(a.Protocol, b.Protocol), strings.Compare(a.ListenerID, b.ListenerID))
	})

	m.status.Message = pa.Status.Message
	switch st, known := stateOf(pa.Status.State); {
	case pa.DeletionTimestamp != nil:
		m.status.State = v1alpha1.BindingStateDeleting
	case pa.Status.State == "" && len(bindings) > 0:
		// Created with its ports recorded, status not yet written.
		m.status.State = v1alpha1.BindingStateAllocated
	case pa.Status.State == "":
		m.status.State = v1alpha1.BindingStatePending
	case known:
		m.status.State = st
	default:
		m.status.State = v1alpha1.BindingStateFailed
		m.status.Message = "PodAddress state " + pa.Status.State + ": " + pa.Status.Message
	}
	return m, true
}
