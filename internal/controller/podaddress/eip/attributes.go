package eip

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/vpc"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/mr"
)

// AllocateRequest is the AllocateAddresses call of pa's recorded
// allocation (status.eip Allocating): the attributes recorded with it, not
// the request's now, so that a call sent again (its answer lost, or a
// killed provider's call landing late) has the same ClientToken and
// parameters and returns the same EIP rather than being refused or
// allocating a second one. The token derives from the owner tag and those
// attributes, so a later allocation of other attributes under the same
// owner tag (a replacement) is a new call.
func AllocateRequest(pa *v1alpha1.PodAddress) vpc.AllocateRequest {
	e := pa.Status.EIP
	isp, charge, bw := e.ISP, e.ChargeType, e.Bandwidth
	if bw == 0 { // recorded before attributes were: the request's
		isp, charge, bw = attributes(pa.Spec.EIP)
	}
	sum := sha256.Sum256([]byte(strings.Join([]string{e.OwnerTag, isp, charge, strconv.FormatInt(bw, 10)}, "|")))
	return vpc.AllocateRequest{
		Count: 1, Name: pa.GetNamespace() + "/" + pa.GetName(),
		ISP: isp, ChargeType: charge, Bandwidth: bw,
		Tags:        ownerTags(v1alpha1.PodAddressKind, pa, TagOwner, e.OwnerTag),
		ClientToken: hex.EncodeToString(sum[:16]),
	}
}

// attributes are the ISP, charge type and bandwidth an EIP request asks
// for, with the API's defaults filled in.
func attributes(req *v1alpha1.EIPRequest) (isp, charge string, bw int64) {
	a := req.Attributes()
	return a.ISP, a.ChargeType, a.Bandwidth
}

// requested records in e the attributes of the allocation it starts.
func requested(e *v1alpha1.EIPBinding, req *v1alpha1.EIPRequest) {
	e.ISP, e.ChargeType, e.Bandwidth = attributes(req)
}

// stale reports whether the EIP of e, allocated (or taken warm) with the
// attributes e records, is not what req asks for now.
func stale(e *v1alpha1.EIPBinding, req *v1alpha1.EIPRequest) bool {
	if e.Bandwidth == 0 {
		return false // recorded before attributes were
	}
	isp, charge, bw := attributes(req)
	return e.ISP != isp || e.ChargeType != charge || e.Bandwidth != bw
}

// newOwnerTag is the owner tag of an allocation made again for pa: its
// UID and the time, unique per allocation, at most 64 characters (the
// client token's limit).
func (m *Machine) newOwnerTag(pa *v1alpha1.PodAddress) string {
	return fmt.Sprintf("%s-%d", pa.GetUID(), m.clock().UnixNano())
}

func (m *Machine) recordEIP(ctx context.Context, pa *v1alpha1.PodAddress) error {
	return errors.Wrap(m.record(ctx, pa), "cannot record the EIP's state")
}

// describe reads the EIP id that pa records; found is false when it does
// not exist, or when it is not pa's: its owner tags name another namespace
// or none. Whoever may edit a namespace may write a PodAddress's status
// (Crossplane grants edit on every kind of the package), so a recorded id
// is trusted only as far as the cloud object's owner tags agree: a forged
// one is dropped as gone, never associated, disassociated or released.
func describe(ctx context.Context, c API, pa *v1alpha1.PodAddress, id string) (vpc.Address, bool, error) {
	as, err := c.Describe(ctx, []string{id})
	if vpc.IsNotFound(err) {
		return vpc.Address{}, false, nil
	}
	if err != nil {
		return vpc.Address{}, false, errors.Wrapf(err, "cannot describe EIP %s", id)
	}
	for _, ad := range as {
		if ad.ID == id {
			if !ownedBy(ad.Tags, pa) {
				log.FromContext(ctx).Info("the EIP a PodAddress records is not its own (owner tags); treated as gone, nothing is done to it",
					"podAddress", pa.GetNamespace()+"/"+pa.GetName(), "eip", id, "tags", ad.Tags)
				return vpc.Address{}, false, nil
			}
			return ad, true, nil
		}
	}
	return vpc.Address{}, false, nil
}

// ownedBy reports whether an EIP with tags may be pa's: its owner tags
// name pa's namespace, or (an EIP tagged before EIPs carried their
// namespace) its owner tag was made for pa.
func ownedBy(tags map[string]string, pa *v1alpha1.PodAddress) bool {
	if ns, known := mr.OwnerNamespace(tags); known && ns == pa.GetNamespace() {
		return true
	}
	_, hasNS := tags[mr.TagNamespace]
	return !hasNS && strings.HasPrefix(tags[TagOwner], string(pa.GetUID())) && pa.GetUID() != ""
}

// busy: the address is in a transient state; calls on it are refused.
func busy(status string) bool {
	switch status {
	case "CREATING", "BINDING", "UNBINDING", "OFFLINING":
		return true
	}
	return false
}

func bound(ad vpc.Address) bool {
	return ad.ENIID != "" || ad.InstanceID != "" || ad.PrivateIP != "" || ad.Status == "BIND" || ad.Status == "BIND_ENI"
}

func fill(e *v1alpha1.EIPBinding, ad vpc.Address) {
	e.PublicIP, e.ISP, e.Bandwidth, e.ChargeType = ad.PublicIP, ad.ISP, ad.Bandwidth, ad.ChargeType
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// ownerTags are the tags of an EIP allocated for o: key=value, which finds
// it again, and the namespace, kind and name of o (mr.OwnerTags without
// the UID tag, which the managed Address kind uses to adopt), so that no
// other namespace may import it.
func ownerTags(kind string, o metav1.Object, key, value string) map[string]string {
	return map[string]string{key: value, mr.TagNamespace: o.GetNamespace(), mr.TagKind: kind, mr.TagName: o.GetName()}
}
