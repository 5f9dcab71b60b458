package v1alpha1

import (
	"encoding/json"
	"strings"
)

// AnnotationCreatedBindings is the record a PodAddress is created with
// when its Pod already has its IP: the bindings (ports and targets) the
// provider allocated for it before the create, as JSON. The status
// subresource drops a status sent with a create, so the record travels in
// metadata; it lets the create itself record what may be registered,
// and the first status write be Bound.
//
// It is the record only while the status has never been written; every
// status write carries the bindings from then on, and the annotation is
// left as it was (removing it would cost a write).
const AnnotationCreatedBindings = "network.tencentcloud.crossplane.io/created-bindings"

// AnnotationCreatedSeal is the provider's signature over the create
// record (AnnotationCreatedBindings), the PodAddress's name and the time
// it was made; a create record without a valid one is ignored.
const AnnotationCreatedSeal = "network.tencentcloud.crossplane.io/created-seal"

// SetCreatedBindings puts bs in pa's create record.
func SetCreatedBindings(pa *PodAddress, bs []PortBinding) error {
	raw, err := json.Marshal(bs)
	if err != nil {
		return err
	}
	a := pa.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[AnnotationCreatedBindings] = string(raw)
	pa.SetAnnotations(a)
	return nil
}

// statusUnwritten reports whether nothing was ever written to s: every
// status write sets a state, a condition, bindings or an EIP.
func statusUnwritten(s PodAddressStatus) bool {
	return s.State == "" && len(s.Bindings) == 0 && s.EIP == nil && len(s.Conditions) == 0 && s.Seal == ""
}

// StatusWritten reports whether pa's status was ever written.
func (pa *PodAddress) StatusWritten() bool { return !statusUnwritten(pa.Status) }

// RecordedBindings returns the bindings pa records: its status's, or,
// while its status has never been written, those it was created with. An
// unreadable record gives none; the provider never writes one.
func (pa *PodAddress) RecordedBindings() []PortBinding {
	if !statusUnwritten(pa.Status) {
		return pa.Status.Bindings
	}
	raw, ok := pa.GetAnnotations()[AnnotationCreatedBindings]
	if !ok {
		return nil
	}
	var bs []PortBinding
	if json.Unmarshal([]byte(raw), &bs) != nil {
		return nil
	}
	return bs
}

// AdoptCreatedBindings moves pa's create record into its status, in
// memory, while the status has never been written, so that the record is
// read as any status; the next status write persists it there.
func (pa *PodAddress) AdoptCreatedBindings() {
	if statusUnwritten(pa.Status) {
		pa.Status.Bindings = pa.RecordedBindings()
	}
}

// policySourcePrefix starts the PodAddressSpec.Source of a policy's
// PodAddresses.
const policySourcePrefix = "policy/"

// PolicySource is the PodAddressSpec.Source of the PodAddresses a policy
// of this name asked for.
func PolicySource(policy string) string { return policySourcePrefix + policy }

// ParsePolicySource returns the policy a PolicySource names; ok is false
// for any other source (a Pod's annotation, a composition) and for one
// naming no policy.
func ParsePolicySource(source string) (policy string, ok bool) {
	policy, ok = strings.CutPrefix(source, policySourcePrefix)
	return policy, ok && policy != ""
}
