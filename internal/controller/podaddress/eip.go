package podaddress

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	clusterv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/cluster/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/vpc"
)

const (
	// TagOwner is the tag an EIP of a PodAddress is allocated with; its
	// value is the PodAddress's UID (status.eip.ownerTag). It finds an EIP
	// whose allocation was sent but whose answer was never recorded.
	TagOwner = "network.tencentcloud.m.crossplane.io/owner"
	// TagWarmPool marks the EIPs of a warm pool; its value is the
	// namespace/name of the PodAddressPolicy.
	TagWarmPool = "network.tencentcloud.m.crossplane.io/warm-pool"

	// eipTaskPoll is how soon a reconcile looks again at an EIP task
	// (allocate, associate, disassociate, release); no worker waits on it.
	eipTaskPoll = 250 * time.Millisecond
	// eipSteps bounds the cloud steps of one reconcile.
	eipSteps = 12
	// eipMaxBackoff caps the retry interval of a PodAddress whose EIP
	// cannot be allocated (quota, daily limit) and has no fallback.
	eipMaxBackoff = 5 * time.Minute

	reasonEIPFallback    event.Reason = "EIPFallback"
	reasonEIPUnavailable event.Reason = "EIPQuotaExceeded"
)

// eipActive reports whether pa holds (or may hold) an EIP: it asked for
// one and did not fall back to ports.
func eipActive(pa *v1alpha1.PodAddress) bool {
	return pa.Status.EIP != nil && pa.Status.EIP.State != v1alpha1.EIPFallback
}

// eipClient returns the VPC client of pa's EIP and its region.
func (r *Reconciler) eipClient(ctx context.Context, pa *v1alpha1.PodAddress) (*vpc.Client, string, error) {
	if r.vpc == nil {
		return nil, "", errors.New("this provider runs without a VPC client: EIPs cannot be managed")
	}
	ref := xpv2.ProviderConfigReference{Kind: clusterv1alpha1.ClusterProviderConfigKind, Name: "default"}
	if pa.Spec.EIP != nil && pa.Spec.EIP.ProviderConfigRef != nil {
		ref = *pa.Spec.EIP.ProviderConfigRef
	}
	cfg, err := clients.Resolve(ctx, r.kube, ref, pa.GetNamespace())
	if err != nil {
		return nil, "", err
	}
	c, err := r.vpc.Client(cfg)
	return c, cfg.Region, errors.Wrapf(err, "cannot build a VPC client for region %s", cfg.Region)
}

// A noEIPError says that no EIP can be allocated now: the account's quota
// or the daily allocation limit is reached.
type noEIPError struct{ reason string }

func (e *noEIPError) Error() string { return e.reason }

// A waitError is a wait on something outside the provider (the Pod's IP
// on no network interface yet); its message is the PodAddress's.
type waitError struct{ msg string }

func (e *waitError) Error() string { return e.msg }

// bindEIP brings a live Pod's PodAddress that asks for an EIP to Bound:
// take a warm EIP or allocate one, associate it with the Pod IP's network
// interface, tell the Pod. Each cloud call is recorded in status.eip before
// it is sent; tasks are checked on later reconciles.
func (r *Reconciler) bindEIP(ctx context.Context, pa *v1alpha1.PodAddress, pod *corev1.Pod, a *ask) (reconcile.Result, error) {
	if e := pa.Status.EIP; e != nil && e.State == v1alpha1.EIPFallback {
		return r.bind(ctx, pa, pod, a)
	}
	if pa.Status.State == v1alpha1.StateQuotaExceeded {
		if d, ok := r.eipRetry.pending(client.ObjectKeyFromObject(pa), time.Now()); ok {
			return reconcile.Result{RequeueAfter: d}, nil
		}
	}
	c, region, err := r.eipClient(ctx, pa)
	if err != nil {
		res, uerr := r.setState(ctx, pa, v1alpha1.StatePending, err.Error(), reconcile.Result{RequeueAfter: waitForPorts})
		return res, errors.Join(uerr, r.tellPod(ctx, pod, a, pa, v1alpha1.StatePending, err.Error()))
	}
	fresh := false
	if pa.Status.EIP == nil {
		if fresh, err = r.startEIP(ctx, pa, region); err != nil {
			return reconcile.Result{}, err
		}
	}
	goal := eipGoal{ip: pod.Status.PodIP}
	if pa.Spec.Isolated {
		goal.ip = ""
	}
	done, wait, err := r.driveEIP(ctx, pa, c, goal, fresh)
	if err == nil && pa.Status.EIP == nil {
		// Released to be allocated again with the request's attributes
		// (see eipStep): the next reconcile records the new allocation.
		return reconcile.Result{RequeueAfter: eipTaskPoll}, nil
	}
	var noEIP *noEIPError
	var waiting *waitError
	switch {
	case errors.As(err, &noEIP):
		return r.noEIP(ctx, pa, pod, a, noEIP.reason)
	case errors.As(err, &waiting):
		res, uerr := r.setState(ctx, pa, v1alpha1.StateWaitBackend, waiting.msg, reconcile.Result{RequeueAfter: waitForPorts})
		return res, errors.Join(uerr, r.tellPod(ctx, pod, a, pa, v1alpha1.StateWaitBackend, waiting.msg))
	case err != nil:
		_, _ = r.setState(ctx, pa, pa.Status.State, err.Error(), reconcile.Result{})
		return reconcile.Result{}, err
	case !done:
		state, msg := v1alpha1.StateAllocated, "EIP "+eipProgress(pa.Status.EIP)
		res, uerr := r.setState(ctx, pa, state, msg, reconcile.Result{RequeueAfter: wait})
		return res, errors.Join(uerr, r.tellPod(ctx, pod, a, pa, state, msg))
	}
	r.eipRetry.reset(client.ObjectKeyFromObject(pa))
	e := pa.Status.EIP
	switch {
	case pa.Spec.Isolated:
		const msg = "isolated: the EIP is kept, not associated"
		was := pa.Status.State
		if _, err := r.setState(ctx, pa, v1alpha1.StateIsolated, msg, reconcile.Result{}); err != nil {
			return reconcile.Result{}, err
		}
		if was != v1alpha1.StateIsolated {
			r.podEvent(pod, event.Normal(reasonIsolated, "out of service, EIP kept: "+told(pa)))
		}
		return reconcile.Result{}, r.tellPod(ctx, pod, a, pa, v1alpha1.StateIsolated, msg)
	case goal.ip == "":
		const msg = "the EIP is allocated; waiting for the Pod's IP"
		res, uerr := r.setState(ctx, pa, v1alpha1.StateWaitBackend, msg, reconcile.Result{})
		return res, errors.Join(uerr, r.tellPod(ctx, pod, a, pa, v1alpha1.StateWaitBackend, msg))
	}
	if pa.Status.State != v1alpha1.StateBound || pa.Status.BoundAt == nil {
		now := metaTime(r.clock())
		pa.Status.BoundAt = now
		if _, err := r.setState(ctx, pa, v1alpha1.StateBound, "", reconcile.Result{}); err != nil {
			return reconcile.Result{}, err
		}
		r.metrics.bound(pa, pod, now.Time)
		r.podEvent(pod, event.Normal(reasonBound, fmt.Sprintf("EIP %s (%s) on %s/%s", e.PublicIP, e.AddressID, e.ENIID, e.PrivateIP)))
	}
	return reconcile.Result{}, r.tellPod(ctx, pod, a, pa, v1alpha1.StateBound, "")
}

// eipProgress says what an EIP waits for.
func eipProgress(e *v1alpha1.EIPBinding) string {
	if e == nil {
		return "not allocated"
	}
	s := e.State
	if e.AddressID != "" {
		s = e.AddressID + " " + s
	}
	if e.TaskID != "" {
		s += " (task " + e.TaskID + ")"
	}
	return s
}

// told is what the Pod's address condition says once bound.
func told(pa *v1alpha1.PodAddress) string {
	if e := pa.Status.EIP; e != nil && e.State != v1alpha1.EIPFallback {
		return fmt.Sprintf("EIP %s (%s)", e.PublicIP, e.AddressID)
	}
	return addresses(pa.Status.Bindings)
}

// startEIP records where pa's EIP comes from before any cloud call: an EIP
// of its policy's warm pool, or an allocation (state Allocating with the
// owner tag). fresh is true for an allocation this call recorded: nothing
// can have been sent for it yet.
func (r *Reconciler) startEIP(ctx context.Context, pa *v1alpha1.PodAddress, region string) (fresh bool, err error) {
	e := &v1alpha1.EIPBinding{Region: region}
	if key, ok := warmKey(pa); ok && r.warm != nil {
		if ad, ok := r.warm.take(key, pa.Spec.EIP); ok {
			// Allocating with an id: it is described (and waited for, if
			// still being created) before it is associated.
			e.State, e.AddressID, e.WarmPool, e.OwnerTag = v1alpha1.EIPAllocating, ad.ID, key, string(pa.GetUID())
			fill(e, ad)
			pa.Status.EIP = e
			if err := r.writeStatus(ctx, pa); err != nil {
				pa.Status.EIP = nil
				r.warm.giveBack(key, ad)
				return false, errors.Wrap(err, "cannot record the warm EIP taken")
			}
			return false, nil
		}
	}
	e.State, e.OwnerTag = v1alpha1.EIPAllocating, string(pa.GetUID())
	requested(e, pa.Spec.EIP)
	pa.Status.EIP = e
	if err := r.writeStatus(ctx, pa); err != nil {
		pa.Status.EIP = nil
		return false, errors.Wrap(err, "cannot record the EIP allocation")
	}
	return true, nil
}

// noEIP handles an EIP that cannot be allocated: with a fallback pool the
// Pod gets its ports instead (and is told so); without one the PodAddress
// is QuotaExceeded and tries again with a doubling backoff.
func (r *Reconciler) noEIP(ctx context.Context, pa *v1alpha1.PodAddress, pod *corev1.Pod, a *ask, reason string) (reconcile.Result, error) {
	if fb := pa.Spec.EIP.FallbackPool; fb != nil {
		pa.Status.EIP = &v1alpha1.EIPBinding{State: v1alpha1.EIPFallback, Reason: reason}
		msg := fmt.Sprintf("no EIP (%s); falling back to ports of pool %s", reason, fb.Key(pa.GetNamespace()))
		if _, err := r.setState(ctx, pa, v1alpha1.StatePending, msg, reconcile.Result{}); err != nil {
			return reconcile.Result{}, err
		}
		r.podEvent(pod, event.Warning(reasonEIPFallback, errors.New(msg)))
		return r.bind(ctx, pa, pod, a)
	}
	d := r.eipRetry.next(client.ObjectKeyFromObject(pa), time.Now())
	msg := fmt.Sprintf("no EIP: %s; trying again in %s", reason, d)
	if pa.Status.State != v1alpha1.StateQuotaExceeded {
		r.podEvent(pod, event.Warning(reasonEIPUnavailable, errors.New(msg)))
	}
	res, err := r.setState(ctx, pa, v1alpha1.StateQuotaExceeded, msg, reconcile.Result{RequeueAfter: d})
	return res, errors.Join(err, r.tellPod(ctx, pod, a, pa, v1alpha1.StateQuotaExceeded, msg))
}

// An eipGoal is where a PodAddress's EIP should be: associated with ip
// ("" for not associated), or released.
type eipGoal struct {
	ip      string
	release bool
}

// driveEIP moves pa's EIP towards goal, a recorded step at a time, until
// it is there (done), waits on the cloud (wait), or fails. fresh says the
// Allocating state was recorded by this reconcile, so no allocation can
// have been sent for it.
func (r *Reconciler) driveEIP(ctx context.Context, pa *v1alpha1.PodAddress, c *vpc.Client, goal eipGoal, fresh bool) (done bool, wait time.Duration, err error) {
	for range eipSteps {
		if pa.Status.EIP == nil {
			return true, 0, nil
		}
		done, wait, err = r.eipStep(ctx, pa, c, goal, fresh)
		if done || wait > 0 || err != nil {
			return done, wait, err
		}
		fresh = false
	}
	return false, eipTaskPoll, nil
}

// eipStep takes one step; it returns neither done nor a wait when it made
// progress (recorded a new state) and another step may follow.
func (r *Reconciler) eipStep(ctx context.Context, pa *v1alpha1.PodAddress, c *vpc.Client, goal eipGoal, fresh bool) (bool, time.Duration, error) {
	e := pa.Status.EIP
	if e.TaskID != "" {
		ok, err := c.TaskDone(ctx, e.TaskID)
		if err == nil && !ok {
			return false, eipTaskPoll, nil
		}
		// Done, or failed (or unknown): the task is spent. A failed one
		// leaves the state as recorded, and the step below reads the
		// address to learn where it really is.
		e.TaskID = ""
		if err == nil {
			switch e.State {
			case v1alpha1.EIPAssociating:
				e.State = v1alpha1.EIPAssociated
			case v1alpha1.EIPDisassociating:
				e.State, e.ENIID, e.PrivateIP = v1alpha1.EIPAllocated, "", ""
			case v1alpha1.EIPReleasing:
				pa.Status.EIP = nil
			}
		}
		return false, 0, r.recordEIP(ctx, pa)
	}

	switch e.State {
	case v1alpha1.EIPAllocating:
		if e.AddressID == "" {
			return r.allocateEIP(ctx, pa, c, goal, fresh)
		}
		ad, found, err := describe(ctx, c, e.AddressID)
		switch {
		case err != nil:
			return false, 0, err
		case !found:
			// Gone: allocate again (or nothing to release), under a new
			// owner tag, as the old one's client token names the old EIP.
			e.AddressID, e.OwnerTag = "", r.newOwnerTag(pa)
			requested(e, pa.Spec.EIP)
		case ad.Status == "CREATING":
			return false, eipTaskPoll, nil
		case goal.ip != "" && !goal.release && stale(e, pa.Spec.EIP):
			// Allocated as the request was when it was recorded, and the
			// request changed since: no Pod was told this EIP yet, so it
			// is released and one with the new attributes allocated.
			e.State = v1alpha1.EIPReleasing
		default:
			fill(e, ad)
			e.State = v1alpha1.EIPAllocated
		}
		return false, 0, r.recordEIP(ctx, pa)

	case v1alpha1.EIPAllocated:
		switch {
		case goal.release:
			e.State = v1alpha1.EIPReleasing
			return false, 0, r.recordEIP(ctx, pa)
		case goal.ip == "":
			return true, 0, nil
		}
		eni, err := c.ENIOf(ctx, goal.ip)
		if vpc.IsNotFound(err) || err == nil && eni == "" {
			return false, 0, &waitError{msg: fmt.Sprintf("no network interface holds the Pod IP %s yet (the EIP needs a VPC-CNI Pod IP)", goal.ip)}
		}
		if err != nil {
			return false, 0, errors.Wrapf(err, "cannot find the network interface of %s", goal.ip)
		}
		e.State, e.ENIID, e.PrivateIP = v1alpha1.EIPAssociating, eni, goal.ip
		return false, 0, r.recordEIP(ctx, pa)

	case v1alpha1.EIPAssociating:
		if goal.release || goal.ip != e.PrivateIP {
			e.State = v1alpha1.EIPDisassociating
			return false, 0, r.recordEIP(ctx, pa)
		}
		ad, found, err := describe(ctx, c, e.AddressID)
		switch {
		case err != nil:
			return false, 0, err
		case !found:
			e.State, e.AddressID, e.ENIID, e.PrivateIP, e.OwnerTag = v1alpha1.EIPAllocating, "", "", "", r.newOwnerTag(pa)
			requested(e, pa.Spec.EIP)
			return false, 0, r.recordEIP(ctx, pa)
		case ad.ENIID == e.ENIID && ad.PrivateIP == e.PrivateIP && !busy(ad.Status):
			e.State = v1alpha1.EIPAssociated
			return false, 0, r.recordEIP(ctx, pa)
		case busy(ad.Status):
			return false, eipTaskPoll, nil
		case bound(ad):
			// Bound elsewhere (where an earlier Pod was): undo first.
			e.State = v1alpha1.EIPDisassociating
			return false, 0, r.recordEIP(ctx, pa)
		}
		task, err := c.Associate(ctx, e.AddressID, e.ENIID, e.PrivateIP)
		if vpc.IsBusy(err) {
			return false, eipTaskPoll, nil
		}
		if err != nil {
			return false, 0, errors.Wrapf(err, "cannot associate EIP %s with %s", e.AddressID, e.PrivateIP)
		}
		e.TaskID = task
		return false, 0, r.recordEIP(ctx, pa)

	case v1alpha1.EIPAssociated:
		if !goal.release && goal.ip == e.PrivateIP {
			return true, 0, nil
		}
		e.State = v1alpha1.EIPDisassociating
		return false, 0, r.recordEIP(ctx, pa)

	case v1alpha1.EIPDisassociating:
		ad, found, err := describe(ctx, c, e.AddressID)
		switch {
		case err != nil:
			return false, 0, err
		case !found:
			e.State, e.AddressID, e.ENIID, e.PrivateIP, e.OwnerTag = v1alpha1.EIPAllocating, "", "", "", r.newOwnerTag(pa)
			requested(e, pa.Spec.EIP)
			if goal.release {
				pa.Status.EIP = nil
			}
			return false, 0, r.recordEIP(ctx, pa)
		case busy(ad.Status):
			return false, eipTaskPoll, nil
		case !bound(ad):
			e.State, e.ENIID, e.PrivateIP = v1alpha1.EIPAllocated, "", ""
			return false, 0, r.recordEIP(ctx, pa)
		}
		task, err := c.Disassociate(ctx, e.AddressID)
		if vpc.IsBusy(err) {
			return false, eipTaskPoll, nil
		}
		if err != nil {
			return false, 0, errors.Wrapf(err, "cannot disassociate EIP %s", e.AddressID)
		}
		e.TaskID = task
		return false, 0, r.recordEIP(ctx, pa)

	case v1alpha1.EIPReleasing:
		ad, found, err := describe(ctx, c, e.AddressID)
		switch {
		case err != nil:
			return false, 0, err
		case !found:
			pa.Status.EIP = nil
			return false, 0, r.recordEIP(ctx, pa)
		case busy(ad.Status):
			return false, eipTaskPoll, nil
		case bound(ad):
			e.State = v1alpha1.EIPDisassociating
			return false, 0, r.recordEIP(ctx, pa)
		}
		task, err := c.Release(ctx, []string{e.AddressID})
		switch {
		case vpc.IsNotFound(err):
			pa.Status.EIP = nil
		case vpc.IsBusy(err):
			return false, eipTaskPoll, nil
		case err != nil:
			return false, 0, errors.Wrapf(err, "cannot release EIP %s", e.AddressID)
		default:
			e.TaskID = task
		}
		return false, 0, r.recordEIP(ctx, pa)
	}
	return false, 0, errors.Errorf("unknown EIP state %q", e.State)
}

// allocateEIP serves state Allocating before an id is known. Unless this
// reconcile recorded the state (fresh), an earlier allocation may have
// been sent and its answer lost: the owner tag finds what it made. Extra
// EIPs of the tag (never recorded, so never bound) are released.
func (r *Reconciler) allocateEIP(ctx context.Context, pa *v1alpha1.PodAddress, c *vpc.Client, goal eipGoal, fresh bool) (bool, time.Duration, error) {
	e := pa.Status.EIP
	if !fresh {
		found, err := c.DescribeByTag(ctx, TagOwner, e.OwnerTag)
		if err != nil {
			return false, 0, errors.Wrap(err, "cannot look for an EIP allocated before")
		}
		if len(found) > 0 {
			slices.SortFunc(found, func(a, b vpc.Address) int { return compareStrings(a.ID, b.ID) })
			if len(found) > 1 {
				extra := make([]string, 0, len(found)-1)
				for _, ad := range found[1:] {
					extra = append(extra, ad.ID)
				}
				if _, err := c.Release(ctx, extra); err != nil && !vpc.IsNotFound(err) {
					return false, 0, errors.Wrapf(err, "cannot release the extra EIPs %v", extra)
				}
			}
			// Still Allocating: the next step describes it, and replaces
			// it if the request changed since it was recorded.
			e.AddressID = found[0].ID
			return false, 0, r.recordEIP(ctx, pa)
		}
	}
	if goal.release {
		pa.Status.EIP = nil // nothing was allocated
		return false, 0, r.recordEIP(ctx, pa)
	}
	ids, task, err := c.Allocate(ctx, AllocateRequest(pa))
	switch {
	case vpc.IsQuotaExceeded(err):
		return false, 0, &noEIPError{reason: "the account's EIP quota is reached"}
	case vpc.IsDailyLimit(err):
		return false, 0, &noEIPError{reason: "the daily EIP allocation limit is reached"}
	case err != nil:
		return false, 0, errors.Wrap(err, "cannot allocate an EIP")
	case len(ids) == 0:
		return false, 0, errors.New("AllocateAddresses returned no address")
	}
	e.AddressID, e.TaskID = ids[0], task
	return false, 0, r.recordEIP(ctx, pa)
}

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
		Tags:        map[string]string{TagOwner: e.OwnerTag},
		ClientToken: hex.EncodeToString(sum[:16]),
	}
}

// attributes are the ISP, charge type and bandwidth an EIP request asks
// for, with the API's defaults filled in.
func attributes(req *v1alpha1.EIPRequest) (isp, charge string, bw int64) {
	isp, charge, bw = "BGP", "TRAFFIC_POSTPAID_BY_HOUR", 1
	if req == nil {
		return isp, charge, bw
	}
	if req.ISP != "" {
		isp = req.ISP
	}
	if req.InternetChargeType != "" {
		charge = req.InternetChargeType
	}
	if req.Bandwidth != nil {
		bw = *req.Bandwidth
	}
	return isp, charge, bw
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
func (r *Reconciler) newOwnerTag(pa *v1alpha1.PodAddress) string {
	return fmt.Sprintf("%s-%d", pa.GetUID(), r.clock().UnixNano())
}

func (r *Reconciler) recordEIP(ctx context.Context, pa *v1alpha1.PodAddress) error {
	return errors.Wrap(r.writeStatus(ctx, pa), "cannot record the EIP's state")
}

// describe reads one EIP; found is false when it does not exist.
func describe(ctx context.Context, c *vpc.Client, id string) (vpc.Address, bool, error) {
	as, err := c.Describe(ctx, []string{id})
	if vpc.IsNotFound(err) {
		return vpc.Address{}, false, nil
	}
	if err != nil {
		return vpc.Address{}, false, errors.Wrapf(err, "cannot describe EIP %s", id)
	}
	for _, ad := range as {
		if ad.ID == id {
			return ad, true, nil
		}
	}
	return vpc.Address{}, false, nil
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

// releaseEIP disassociates and releases a PodAddress's EIP (deletion, or
// a held EIP whose time is up); done once it is gone.
func (r *Reconciler) releaseEIP(ctx context.Context, pa *v1alpha1.PodAddress) (bool, time.Duration, error) {
	if !eipActive(pa) {
		return true, 0, nil
	}
	c, _, err := r.eipClient(ctx, pa)
	if err != nil {
		return false, 0, err
	}
	return r.driveEIP(ctx, pa, c, eipGoal{release: true}, false)
}

// detachEIP disassociates the EIP of a Pod that is gone: another Pod may
// get its IP. The EIP is kept (held).
func (r *Reconciler) detachEIP(ctx context.Context, pa *v1alpha1.PodAddress) (bool, time.Duration, error) {
	if !eipActive(pa) {
		return true, 0, nil
	}
	c, _, err := r.eipClient(ctx, pa)
	if err != nil {
		return false, 0, err
	}
	return r.driveEIP(ctx, pa, c, eipGoal{}, false)
}

// An eipRetry spaces the allocation attempts of PodAddresses that cannot
// get an EIP: 1 s, doubling, up to eipMaxBackoff. The wait is per attempt:
// reconciles in between (the PodAddress's own status write wakes one) ask
// pending and wait out the rest instead of trying, and doubling, again.
type eipRetry struct {
	mu   sync.Mutex
	last map[types.NamespacedName]time.Duration
	due  map[types.NamespacedName]time.Time
}

// next records a failed attempt of k now and returns the wait before the
// next one.
func (b *eipRetry) next(k types.NamespacedName, now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.last == nil {
		b.last, b.due = map[types.NamespacedName]time.Duration{}, map[types.NamespacedName]time.Time{}
	}
	d := min(max(2*b.last[k], time.Second), eipMaxBackoff)
	b.last[k], b.due[k] = d, now.Add(d)
	return d
}

// pending returns how long k must still wait before its next attempt.
func (b *eipRetry) pending(k types.NamespacedName, now time.Time) (time.Duration, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	d := b.due[k].Sub(now)
	return d, d > 0
}

func (b *eipRetry) reset(k types.NamespacedName) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.last, k)
	delete(b.due, k)
}

// portRequests are the ports a PodAddress binds: its own, or, for a Pod
// that fell back from an EIP, one port of the fallback pool per container
// port the Pod declares (with its protocol).
func portRequests(pa *v1alpha1.PodAddress, pod *corev1.Pod) ([]v1alpha1.PortRequest, error) {
	e := pa.Status.EIP
	if pa.Spec.EIP == nil || e == nil || e.State != v1alpha1.EIPFallback {
		return pa.Spec.Ports, nil
	}
	fb := pa.Spec.EIP.FallbackPool
	if fb == nil {
		return nil, errors.New("the Pod fell back from an EIP to ports, but its request names no fallbackPool any more")
	}
	var out []v1alpha1.PortRequest
	seen := map[string]bool{}
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			proto := string(p.Protocol)
			if proto == "" {
				proto = v1alpha1.ProtocolTCP
			}
			if proto != v1alpha1.ProtocolTCP && proto != v1alpha1.ProtocolUDP {
				continue // SCTP: no load balancer forwards it
			}
			k := fmt.Sprintf("%d/%s", p.ContainerPort, proto)
			if seen[k] {
				continue
			}
			seen[k] = true
			out = append(out, v1alpha1.PortRequest{Port: intstr.FromInt32(p.ContainerPort), Protocol: proto, Pools: []v1alpha1.PoolRef{*fb}})
		}
	}
	if len(out) == 0 {
		return nil, errors.Errorf("no EIP (%s), and the Pod declares no TCP or UDP container port to give a port of fallback pool %s", e.Reason, fb.Key(pa.GetNamespace()))
	}
	return out, nil
}
