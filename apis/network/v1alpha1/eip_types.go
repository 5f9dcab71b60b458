package v1alpha1

import (
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
)

// EIP release policies.
const (
	// EIPReleaseAfterKeep releases the EIP when the Pod is gone and its
	// keep duration (if any) has passed.
	EIPReleaseAfterKeep = "AfterKeepDuration"
	// EIPReleaseNever keeps the EIP of a gone Pod for a Pod of the same
	// name until the PodAddress is deleted, as TKE's
	// eip-claim-delete-policy: Never does.
	EIPReleaseNever = "Never"
)

// States of an EIPBinding.
const (
	// EIPAllocating: the allocation is recorded (with the owner tag) and
	// may have been sent; after a crash the EIP is found by that tag.
	EIPAllocating = "Allocating"
	// EIPAllocated: the EIP exists and is not associated.
	EIPAllocated = "Allocated"
	// EIPAssociating: the association with eniId/privateIp is recorded and
	// may have been sent.
	EIPAssociating = "Associating"
	// EIPAssociated: the EIP forwards to privateIp.
	EIPAssociated = "Associated"
	// EIPDisassociating: the disassociation is recorded and may have been
	// sent.
	EIPDisassociating = "Disassociating"
	// EIPReleasing: the release is recorded and may have been sent.
	EIPReleasing = "Releasing"
	// EIPFallback: no EIP could be allocated; the Pod has ports of the
	// fallback pool instead.
	EIPFallback = "Fallback"
)

// EIPRequest asks for one elastic public IP per Pod, bound to the Pod's
// IP on its elastic network interface (VPC-CNI).
type EIPRequest struct {
	// ISP of the address: BGP (default), CMCC, CTCC or CUCC.
	// +kubebuilder:validation:Enum=BGP;CMCC;CTCC;CUCC
	// +optional
	ISP string `json:"isp,omitempty"`

	// Bandwidth is the outbound bandwidth cap in Mbps (default 1).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100000
	// +optional
	Bandwidth *int64 `json:"bandwidth,omitempty"`

	// InternetChargeType is TRAFFIC_POSTPAID_BY_HOUR (default),
	// BANDWIDTH_POSTPAID_BY_HOUR or BANDWIDTH_PACKAGE.
	// +kubebuilder:validation:Enum=TRAFFIC_POSTPAID_BY_HOUR;BANDWIDTH_POSTPAID_BY_HOUR;BANDWIDTH_PACKAGE
	// +optional
	InternetChargeType string `json:"internetChargeType,omitempty"`

	// ReleasePolicy is AfterKeepDuration (default: released when the Pod
	// is gone and keepDuration has passed) or Never (kept for a Pod of the
	// same name until the PodAddress is deleted).
	// +kubebuilder:validation:Enum=AfterKeepDuration;Never
	// +optional
	ReleasePolicy string `json:"releasePolicy,omitempty"`

	// FallbackPool, when set, gives the Pod a port of this PortPool for
	// each container port it declares when no EIP can be allocated (the
	// account's EIP quota or the daily allocation limit is reached).
	// +optional
	FallbackPool *PoolRef `json:"fallbackPool,omitempty"`

	// ProviderConfigRef, when set, must be the one of the EIPGrant that
	// serves the request: the grant names the account and region.
	// +optional
	ProviderConfigRef *xpv2.ProviderConfigReference `json:"providerConfigRef,omitempty"`

	// Grant names the EIPGrant to allocate under. When empty, the first
	// grant by name that covers the namespace and admits the request.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Grant string `json:"grant,omitempty"`
}

// EIPBinding is the elastic public IP of one Pod. It is recorded before
// each cloud call that changes it, so that a restarted provider knows what
// may have been sent.
type EIPBinding struct {
	// State of the EIP: Allocating, Allocated, Associating, Associated,
	// Disassociating, Releasing or Fallback.
	State string `json:"state"`
	// OwnerTag is the value of the tag network.tencentcloud.m.crossplane.io/owner
	// the EIP is allocated with (the PodAddress's UID): an EIP whose
	// allocation was sent but not recorded is found by it.
	// +optional
	OwnerTag string `json:"ownerTag,omitempty"`
	// Grant is the EIPGrant the EIP counts against.
	// +optional
	Grant string `json:"grant,omitempty"`
	// ProviderConfigRef is the account and region of the EIP (the
	// grant's when it was recorded): its release goes through it also
	// when the grant is gone.
	// +optional
	ProviderConfigRef *xpv2.ProviderConfigReference `json:"providerConfigRef,omitempty"`
	// WarmPool is the warm pool (namespace/policy) the EIP was taken from.
	// +optional
	WarmPool string `json:"warmPool,omitempty"`
	// AddressID is the EIP's id (eip-…).
	// +optional
	AddressID string `json:"addressId,omitempty"`
	// PublicIP is the EIP's address.
	// +optional
	PublicIP string `json:"publicIp,omitempty"`
	// ISP, Bandwidth (Mbps) and ChargeType of the EIP.
	// +optional
	ISP string `json:"isp,omitempty"`
	// +optional
	Bandwidth int64 `json:"bandwidth,omitempty"`
	// +optional
	ChargeType string `json:"chargeType,omitempty"`
	// Region the EIP is in.
	// +optional
	Region string `json:"region,omitempty"`
	// ENIID and PrivateIP are the network interface and the Pod IP the EIP
	// is (being) associated with.
	// +optional
	ENIID string `json:"eniId,omitempty"`
	// +optional
	PrivateIP string `json:"privateIp,omitempty"`
	// TaskID is the asynchronous task of the last call; the state moves
	// on once it is done.
	// +optional
	TaskID string `json:"taskId,omitempty"`
	// Reason says why the Pod fell back to ports (State Fallback).
	// +optional
	Reason string `json:"reason,omitempty"`
}
