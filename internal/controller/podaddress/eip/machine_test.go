package eip

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	sdkerrors "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/vpc"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/vpc/fake"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/mr"
)

// region is the fake VPC region with errors injected per method, for
// the calls the fake itself cannot fail (reads, allocations).
type region struct {
	*fake.Cloud
	errs  map[string]error
	noIDs bool // Allocate answers no address and no error
	// during, when set, runs while an allocation is out.
	during func()
}

func (r *region) Allocate(ctx context.Context, req vpc.AllocateRequest) ([]string, string, error) {
	if err := r.errs["Allocate"]; err != nil {
		return nil, "", err
	}
	if r.during != nil {
		r.during()
	}
	if r.noIDs {
		return nil, "", nil
	}
	return r.Cloud.Allocate(ctx, req)
}

func (r *region) Describe(ctx context.Context, ids []string) ([]vpc.Address, error) {
	if err := r.errs["Describe"]; err != nil {
		return nil, err
	}
	return r.Cloud.Describe(ctx, ids)
}

func (r *region) DescribeByTag(ctx context.Context, key, value string) ([]vpc.Address, error) {
	if err := r.errs["DescribeByTag"]; err != nil {
		return nil, err
	}
	return r.Cloud.DescribeByTag(ctx, key, value)
}

func (r *region) ENIOf(ctx context.Context, ip string) (string, error) {
	if err := r.errs["ENIOf"]; err != nil {
		return "", err
	}
	return r.Cloud.ENIOf(ctx, ip)
}

func (r *region) TaskDone(ctx context.Context, id string) (bool, error) {
	if err := r.errs["TaskDone"]; err != nil {
		return false, err
	}
	return r.Cloud.TaskDone(ctx, id)
}

func (r *region) Release(ctx context.Context, ids []string) (string, error) {
	if err := r.errs["Release"]; err != nil {
		return "", err
	}
	return r.Cloud.Release(ctx, ids)
}

// Errors as the cloud answers them, classified by the vpc package.
var (
	errBoom      = errors.New("boom")
	errInvalid   = sdkerrors.NewTencentCloudSDKError("InvalidParameterValue.Range", "bandwidth out of range", "req")
	errQuota     = sdkerrors.NewTencentCloudSDKError("AddressQuotaLimitExceeded", "quota", "req")
	errDaily     = sdkerrors.NewTencentCloudSDKError("AddressQuotaLimitExceeded.DailyAllocate", "daily", "req")
	errNotFound  = sdkerrors.NewTencentCloudSDKError("InvalidAddressId.NotFound", "not found", "req")
	errNotPermit = sdkerrors.NewTencentCloudSDKError("InvalidAddressIdStatus.NotPermit", "busy", "req")
)

const (
	podIP  = "10.0.0.5"
	eni    = "eni-1"
	paUID  = "uid-pa"
	testNS = "ns"
)

// testClock is the Machine's clock: new owner tags carry its time.
var testClock = time.Unix(1700000000, 0)

func testPA(req *v1alpha1.EIPRequest, e *v1alpha1.EIPBinding) *v1alpha1.PodAddress {
	pa := &v1alpha1.PodAddress{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "pod-0", UID: paUID}}
	pa.Spec.EIP, pa.Status.EIP = req, e
	return pa
}

// addr is an EIP of the PodAddress in status; with eni and ip it is
// bound there.
func addr(id, status, eniID, ip string) *vpc.Address {
	return &vpc.Address{
		ID: id, Status: status, PublicIP: "203.0.113.9", ISP: "BGP", ChargeType: "TRAFFIC_POSTPAID_BY_HOUR", Bandwidth: 10,
		ENIID: eniID, PrivateIP: ip, Tags: map[string]string{TagOwner: paUID, mr.TagNamespace: testNS},
	}
}

// rec is a status.eip in state that records EIP id (none for "").
func rec(state, id string) *v1alpha1.EIPBinding {
	e := &v1alpha1.EIPBinding{State: state, AddressID: id, OwnerTag: paUID, ISP: "BGP", ChargeType: "TRAFFIC_POSTPAID_BY_HOUR", Bandwidth: 10}
	if id != "" {
		e.PublicIP = "203.0.113.9"
	}
	return e
}

// with returns e changed by f.
func with(e *v1alpha1.EIPBinding, f func(*v1alpha1.EIPBinding)) *v1alpha1.EIPBinding {
	f(e)
	return e
}

func bw10() *v1alpha1.EIPRequest { return &v1alpha1.EIPRequest{Bandwidth: ptr.To[int64](10)} }

// recorder is the Machine's status callback: it keeps what each call
// recorded, and fails every call with err.
type recorder struct {
	records []*v1alpha1.EIPBinding
	err     error
}

func (r *recorder) record(_ context.Context, pa *v1alpha1.PodAddress) error {
	r.records = append(r.records, pa.Status.EIP.DeepCopy())
	return r.err
}

func isWait(err error) bool        { var e *WaitError; return errors.As(err, &e) }
func isInvalid(err error) bool     { var e *InvalidError; return errors.As(err, &e) }
func isUnavailable(err error) bool { var e *UnavailableError; return errors.As(err, &e) }

func TestDrive(t *testing.T) {
	ctx := context.Background()
	// associating starts an association of eip-1 with the Pod IP in c
	// and records its task in e.
	associating := func(c *fake.Cloud, e *v1alpha1.EIPBinding) {
		c.Addresses["eip-1"], c.ENIs[podIP] = addr("eip-1", vpc.StatusUnbind, "", ""), eni
		e.TaskID, _ = c.Associate(ctx, "eip-1", eni, podIP)
	}
	newTag := paUID + "-1700000000000000000"

	type want struct {
		done    bool
		wait    time.Duration
		err     string               // a substring of the error
		errIs   func(error) bool     // the error's type, when it matters
		eip     *v1alpha1.EIPBinding // status.eip after the drive
		records int                  // status writes
		writes  []string             // cloud writes during the drive
	}
	cases := map[string]struct {
		reason string
		req    *v1alpha1.EIPRequest
		eip    *v1alpha1.EIPBinding
		cloud  func(c *fake.Cloud, e *v1alpha1.EIPBinding)
		errs   map[string]error
		noIDs  bool
		recErr error
		goal   Goal
		fresh  bool
		want   want
	}{
		"NoEIP": {
			reason: "A PodAddress without an EIP has nothing to drive.",
			goal:   Goal{IP: podIP},
			want:   want{done: true},
		},
		"TaskRunning": {
			reason: "A task under way is looked at again after TaskPoll; nothing is recorded.",
			eip:    with(rec(v1alpha1.EIPAssociating, "eip-1"), func(e *v1alpha1.EIPBinding) { e.ENIID, e.PrivateIP = eni, podIP }),
			cloud:  associating,
			goal:   Goal{IP: podIP},
			want: want{wait: TaskPoll, eip: with(rec(v1alpha1.EIPAssociating, "eip-1"), func(e *v1alpha1.EIPBinding) {
				e.ENIID, e.PrivateIP, e.TaskID = eni, podIP, "1"
			})},
		},
		"TaskAssociated": {
			reason: "An association task that succeeded makes the EIP Associated, which is the goal.",
			eip:    with(rec(v1alpha1.EIPAssociating, "eip-1"), func(e *v1alpha1.EIPBinding) { e.ENIID, e.PrivateIP = eni, podIP }),
			cloud: func(c *fake.Cloud, e *v1alpha1.EIPBinding) {
				associating(c, e)
				c.Settle()
			},
			goal: Goal{IP: podIP},
			want: want{done: true, records: 1, eip: with(rec(v1alpha1.EIPAssociated, "eip-1"), func(e *v1alpha1.EIPBinding) {
				e.ENIID, e.PrivateIP = eni, podIP
			})},
		},
		"TaskFailed": {
			reason: "A failed task is spent: the address is read to learn where it is, and the association sent again.",
			eip:    with(rec(v1alpha1.EIPAssociating, "eip-1"), func(e *v1alpha1.EIPBinding) { e.ENIID, e.PrivateIP = eni, podIP }),
			cloud: func(c *fake.Cloud, e *v1alpha1.EIPBinding) {
				associating(c, e)
				c.Fail()
			},
			goal: Goal{IP: podIP},
			want: want{wait: TaskPoll, records: 2, writes: []string{"Associate eip-1 eni-1/10.0.0.5"},
				eip: with(rec(v1alpha1.EIPAssociating, "eip-1"), func(e *v1alpha1.EIPBinding) { e.ENIID, e.PrivateIP, e.TaskID = eni, podIP, "2" })},
		},
		"TaskUnknown": {
			reason: "A task that cannot be asked about is spent too: the address, associated already, says the EIP is Associated.",
			eip: with(rec(v1alpha1.EIPAssociating, "eip-1"), func(e *v1alpha1.EIPBinding) {
				e.ENIID, e.PrivateIP, e.TaskID = eni, podIP, "7"
			}),
			cloud: func(c *fake.Cloud, _ *v1alpha1.EIPBinding) {
				c.Addresses["eip-1"] = addr("eip-1", vpc.StatusBindENI, eni, podIP)
			},
			errs: map[string]error{"TaskDone": errBoom},
			goal: Goal{IP: podIP},
			want: want{done: true, records: 2, eip: with(rec(v1alpha1.EIPAssociated, "eip-1"), func(e *v1alpha1.EIPBinding) {
				e.ENIID, e.PrivateIP = eni, podIP
			})},
		},
		"TaskDisassociated": {
			reason: "A disassociation task that succeeded leaves the EIP Allocated, with no interface: the goal of a Pod without an IP.",
			eip:    with(rec(v1alpha1.EIPDisassociating, "eip-1"), func(e *v1alpha1.EIPBinding) { e.ENIID, e.PrivateIP = eni, podIP }),
			cloud: func(c *fake.Cloud, e *v1alpha1.EIPBinding) {
				c.Addresses["eip-1"] = addr("eip-1", vpc.StatusBindENI, eni, podIP)
				e.TaskID, _ = c.Disassociate(ctx, "eip-1")
				c.Settle()
			},
			want: want{done: true, records: 1, eip: rec(v1alpha1.EIPAllocated, "eip-1")},
		},
		"TaskReleased": {
			reason: "A release task that succeeded drops the record.",
			eip:    rec(v1alpha1.EIPReleasing, "eip-1"),
			cloud: func(c *fake.Cloud, e *v1alpha1.EIPBinding) {
				c.Addresses["eip-1"] = addr("eip-1", vpc.StatusUnbind, "", "")
				e.TaskID, _ = c.Release(ctx, []string{"eip-1"})
				c.Settle()
			},
			goal: Goal{Release: true},
			want: want{done: true, records: 1},
		},
		"AllocateFresh": {
			reason: "An allocation this reconcile recorded cannot have been sent: it is sent without looking for an earlier one.",
			req:    bw10(),
			eip:    rec(v1alpha1.EIPAllocating, ""),
			errs:   map[string]error{"DescribeByTag": errBoom},
			goal:   Goal{IP: podIP},
			fresh:  true,
			want: want{wait: TaskPoll, records: 1, writes: []string{"Allocate [eip-1] ns/pod-0"},
				eip: with(rec(v1alpha1.EIPAllocating, "eip-1"), func(e *v1alpha1.EIPBinding) { e.PublicIP, e.TaskID = "", "2" })},
		},
		"AllocatedBefore": {
			reason: "An allocation whose answer was lost is found by its owner tag; extra EIPs of the tag are released, the first is associated.",
			req:    bw10(),
			eip:    rec(v1alpha1.EIPAllocating, ""),
			cloud: func(c *fake.Cloud, _ *v1alpha1.EIPBinding) {
				c.Addresses["eip-2"], c.Addresses["eip-1"] = addr("eip-2", vpc.StatusUnbind, "", ""), addr("eip-1", vpc.StatusUnbind, "", "")
				c.ENIs[podIP] = eni
			},
			goal: Goal{IP: podIP},
			want: want{wait: TaskPoll, records: 4, writes: []string{"Release [eip-2]", "Associate eip-1 eni-1/10.0.0.5"},
				eip: with(rec(v1alpha1.EIPAssociating, "eip-1"), func(e *v1alpha1.EIPBinding) { e.ENIID, e.PrivateIP, e.TaskID = eni, podIP, "2" })},
		},
		"LookError": {
			reason: "Without knowing whether an earlier allocation landed, nothing is allocated.",
			eip:    rec(v1alpha1.EIPAllocating, ""),
			errs:   map[string]error{"DescribeByTag": errBoom},
			goal:   Goal{IP: podIP},
			want:   want{err: "cannot look for an EIP allocated before", eip: rec(v1alpha1.EIPAllocating, "")},
		},
		"ReleaseExtraError": {
			reason: "An extra EIP that cannot be released is an error; the found one is not recorded yet.",
			eip:    rec(v1alpha1.EIPAllocating, ""),
			cloud: func(c *fake.Cloud, _ *v1alpha1.EIPBinding) {
				c.Addresses["eip-2"], c.Addresses["eip-1"] = addr("eip-2", vpc.StatusUnbind, "", ""), addr("eip-1", vpc.StatusUnbind, "", "")
				c.Errs["eip-2"] = errBoom
			},
			goal: Goal{IP: podIP},
			want: want{err: "cannot release the extra EIPs [eip-2]", eip: rec(v1alpha1.EIPAllocating, "")},
		},
		"NothingForAGonePod": {
			reason: "An allocation never sent is dropped, not sent, for a Pod that is gone.",
			eip:    rec(v1alpha1.EIPAllocating, ""),
			goal:   Goal{Hold: true},
			want:   want{done: true, records: 1},
		},
		"AllocateInvalid": {
			reason: "A request the cloud refuses drops the record, so that a changed request is allocated as it is then.",
			eip:    rec(v1alpha1.EIPAllocating, ""),
			errs:   map[string]error{"Allocate": errInvalid},
			goal:   Goal{IP: podIP},
			fresh:  true,
			want:   want{err: "the cloud refuses the EIP", errIs: isInvalid, records: 1},
		},
		"AllocateInvalidRecordError": {
			reason: "If the dropped record cannot be written, that error is returned.",
			eip:    rec(v1alpha1.EIPAllocating, ""),
			errs:   map[string]error{"Allocate": errInvalid},
			recErr: errBoom,
			goal:   Goal{IP: podIP},
			fresh:  true,
			want:   want{err: "cannot record the EIP's state", records: 1},
		},
		"QuotaExceeded": {
			reason: "The account's quota reached: no EIP now, the record stays for the next attempt.",
			eip:    rec(v1alpha1.EIPAllocating, ""),
			errs:   map[string]error{"Allocate": errQuota},
			goal:   Goal{IP: podIP},
			fresh:  true,
			want:   want{err: "the account's EIP quota is reached", errIs: isUnavailable, eip: rec(v1alpha1.EIPAllocating, "")},
		},
		"DailyLimit": {
			reason: "The daily allocation limit reached: no EIP now.",
			eip:    rec(v1alpha1.EIPAllocating, ""),
			errs:   map[string]error{"Allocate": errDaily},
			goal:   Goal{IP: podIP},
			fresh:  true,
			want:   want{err: "the daily EIP allocation limit is reached", errIs: isUnavailable, eip: rec(v1alpha1.EIPAllocating, "")},
		},
		"AllocateError": {
			reason: "Any other allocation error is returned.",
			eip:    rec(v1alpha1.EIPAllocating, ""),
			errs:   map[string]error{"Allocate": errBoom},
			goal:   Goal{IP: podIP},
			fresh:  true,
			want:   want{err: "cannot allocate an EIP", eip: rec(v1alpha1.EIPAllocating, "")},
		},
		"AllocateNoAddress": {
			reason: "An allocation that answers no address is an error, not an EIP without an id.",
			eip:    rec(v1alpha1.EIPAllocating, ""),
			noIDs:  true,
			goal:   Goal{IP: podIP},
			fresh:  true,
			want:   want{err: "AllocateAddresses returned no address", eip: rec(v1alpha1.EIPAllocating, "")},
		},
		"DescribeError": {
			reason: "An EIP that cannot be read is an error.",
			eip:    rec(v1alpha1.EIPAllocating, "eip-1"),
			errs:   map[string]error{"Describe": errBoom},
			goal:   Goal{IP: podIP},
			want:   want{err: "cannot describe EIP eip-1", eip: rec(v1alpha1.EIPAllocating, "eip-1")},
		},
		"AllocatedGone": {
			reason: "An allocated EIP that is gone is allocated again under a new owner tag.",
			req:    bw10(),
			eip:    rec(v1alpha1.EIPAllocating, "eip-1"),
			goal:   Goal{IP: podIP},
			want: want{wait: TaskPoll, records: 2, writes: []string{"Allocate [eip-1] ns/pod-0"},
				eip: with(rec(v1alpha1.EIPAllocating, "eip-1"), func(e *v1alpha1.EIPBinding) { e.OwnerTag, e.TaskID = newTag, "2" })},
		},
		"StillCreating": {
			reason: "An EIP still being created is waited for.",
			eip:    rec(v1alpha1.EIPAllocating, "eip-1"),
			cloud: func(c *fake.Cloud, _ *v1alpha1.EIPBinding) {
				c.Addresses["eip-1"] = addr("eip-1", vpc.StatusCreating, "", "")
			},
			goal: Goal{IP: podIP},
			want: want{wait: TaskPoll, eip: rec(v1alpha1.EIPAllocating, "eip-1")},
		},
		"StaleReplaced": {
			reason: "An EIP allocated with attributes the request no longer asks for, and never associated, is released to be allocated anew.",
			req:    &v1alpha1.EIPRequest{Bandwidth: ptr.To[int64](20)},
			eip:    rec(v1alpha1.EIPAllocating, "eip-1"),
			cloud: func(c *fake.Cloud, _ *v1alpha1.EIPBinding) {
				c.Addresses["eip-1"] = addr("eip-1", vpc.StatusUnbind, "", "")
			},
			goal: Goal{IP: podIP},
			want: want{wait: TaskPoll, records: 2, writes: []string{"Release [eip-1]"},
				eip: with(rec(v1alpha1.EIPReleasing, "eip-1"), func(e *v1alpha1.EIPBinding) { e.TaskID = "1" })},
		},
		"NotItsOwn": {
			reason: "A recorded EIP whose owner tags name another namespace is treated as gone and never touched.",
			eip:    rec(v1alpha1.EIPAllocating, "eip-1"),
			cloud: func(c *fake.Cloud, _ *v1alpha1.EIPBinding) {
				a := addr("eip-1", vpc.StatusUnbind, "", "")
				a.Tags[mr.TagNamespace] = "team-b"
				c.Addresses["eip-1"] = a
			},
			goal: Goal{Hold: true},
			want: want{done: true, records: 2},
		},
		"ReleaseGoal": {
			reason: "An Allocated EIP whose goal is release is released.",
			eip:    rec(v1alpha1.EIPAllocated, "eip-1"),
			cloud: func(c *fake.Cloud, _ *v1alpha1.EIPBinding) {
				c.Addresses["eip-1"] = addr("eip-1", vpc.StatusUnbind, "", "")
			},
			goal: Goal{Release: true},
			want: want{wait: TaskPoll, records: 2, writes: []string{"Release [eip-1]"},
				eip: with(rec(v1alpha1.EIPReleasing, "eip-1"), func(e *v1alpha1.EIPBinding) { e.TaskID = "1" })},
		},
		"AllocatedNoIP": {
			reason: "An Allocated EIP of a Pod without an IP is where it should be.",
			eip:    rec(v1alpha1.EIPAllocated, "eip-1"),
			errs:   map[string]error{"ENIOf": errBoom, "Describe": errBoom},
			want:   want{done: true, eip: rec(v1alpha1.EIPAllocated, "eip-1")},
		},
		"NoENIYet": {
			reason: "A Pod IP no network interface holds yet is a wait on the CNI, said in the message.",
			eip:    rec(v1alpha1.EIPAllocated, "eip-1"),
			goal:   Goal{IP: podIP},
			want:   want{err: "no network interface holds the Pod IP 10.0.0.5 yet", errIs: isWait, eip: rec(v1alpha1.EIPAllocated, "eip-1")},
		},
		"ENIOfError": {
			reason: "An error finding the interface is returned.",
			eip:    rec(v1alpha1.EIPAllocated, "eip-1"),
			errs:   map[string]error{"ENIOf": errBoom},
			goal:   Goal{IP: podIP},
			want:   want{err: "cannot find the network interface of 10.0.0.5", eip: rec(v1alpha1.EIPAllocated, "eip-1")},
		},
		"PodMoved": {
			reason: "An EIP being associated with an IP the Pod no longer has is disassociated first, then associated with the new one.",
			eip:    with(rec(v1alpha1.EIPAssociating, "eip-1"), func(e *v1alpha1.EIPBinding) { e.ENIID, e.PrivateIP = eni, podIP }),
			cloud: func(c *fake.Cloud, _ *v1alpha1.EIPBinding) {
				c.Addresses["eip-1"] = addr("eip-1", vpc.StatusUnbind, "", "")
				c.ENIs["10.0.0.6"] = "eni-2"
			},
			goal: Goal{IP: "10.0.0.6"},
			want: want{wait: TaskPoll, records: 4, writes: []string{"Associate eip-1 eni-2/10.0.0.6"},
				eip: with(rec(v1alpha1.EIPAssociating, "eip-1"), func(e *v1alpha1.EIPBinding) { e.ENIID, e.PrivateIP, e.TaskID = "eni-2", "10.0.0.6", "1" })},
		},
		"AssociatingGone": {
			reason: "An EIP gone while being associated is allocated again, with the attributes recorded.",
			eip:    with(rec(v1alpha1.EIPAssociating, "eip-1"), func(e *v1alpha1.EIPBinding) { e.ENIID, e.PrivateIP = eni, podIP }),
			goal:   Goal{IP: podIP},
			want: want{wait: TaskPoll, records: 2, writes: []string{"Allocate [eip-1] ns/pod-0"},
				eip: with(rec(v1alpha1.EIPAllocating, "eip-1"), func(e *v1alpha1.EIPBinding) { e.OwnerTag, e.TaskID = newTag, "2" })},
		},
		"AssociatingBusy": {
			reason: "An EIP in a transient state is looked at again shortly.",
			eip:    with(rec(v1alpha1.EIPAssociating, "eip-1"), func(e *v1alpha1.EIPBinding) { e.ENIID, e.PrivateIP = eni, podIP }),
			cloud: func(c *fake.Cloud, _ *v1alpha1.EIPBinding) {
				c.Addresses["eip-1"] = addr("eip-1", vpc.StatusBinding, "", "")
			},
			goal: Goal{IP: podIP},
			want: want{wait: TaskPoll, eip: with(rec(v1alpha1.EIPAssociating, "eip-1"), func(e *v1alpha1.EIPBinding) { e.ENIID, e.PrivateIP = eni, podIP })},
		},
		"BoundElsewhere": {
			reason: "An EIP still bound where an earlier Pod was is disassociated before it is associated.",
			eip:    with(rec(v1alpha1.EIPAssociating, "eip-1"), func(e *v1alpha1.EIPBinding) { e.ENIID, e.PrivateIP = eni, podIP }),
			cloud: func(c *fake.Cloud, _ *v1alpha1.EIPBinding) {
				c.Addresses["eip-1"] = addr("eip-1", vpc.StatusBindENI, "eni-9", "10.0.0.9")
			},
			goal: Goal{IP: podIP},
			want: want{wait: TaskPoll, records: 2, writes: []string{"Disassociate eip-1"},
				eip: with(rec(v1alpha1.EIPDisassociating, "eip-1"), func(e *v1alpha1.EIPBinding) { e.ENIID, e.PrivateIP, e.TaskID = eni, podIP, "1" })},
		},
		"AssociateRefusedBusy": {
			reason: "An association the cloud refuses for the EIP's state is asked again shortly.",
			eip:    with(rec(v1alpha1.EIPAssociating, "eip-1"), func(e *v1alpha1.EIPBinding) { e.ENIID, e.PrivateIP = eni, podIP }),
			cloud: func(c *fake.Cloud, _ *v1alpha1.EIPBinding) {
				c.Addresses["eip-1"], c.ENIs[podIP], c.Errs["eip-1"] = addr("eip-1", vpc.StatusUnbind, "", ""), eni, errNotPermit
			},
			goal: Goal{IP: podIP},
			want: want{wait: TaskPoll, eip: with(rec(v1alpha1.EIPAssociating, "eip-1"), func(e *v1alpha1.EIPBinding) { e.ENIID, e.PrivateIP = eni, podIP })},
		},
		"AssociateError": {
			reason: "A failed association is returned.",
			eip:    with(rec(v1alpha1.EIPAssociating, "eip-1"), func(e *v1alpha1.EIPBinding) { e.ENIID, e.PrivateIP = eni, podIP }),
			cloud: func(c *fake.Cloud, _ *v1alpha1.EIPBinding) {
				c.Addresses["eip-1"], c.ENIs[podIP], c.Errs["eip-1"] = addr("eip-1", vpc.StatusUnbind, "", ""), eni, errBoom
			},
			goal: Goal{IP: podIP},
			want: want{err: "cannot associate EIP eip-1 with 10.0.0.5",
				eip: with(rec(v1alpha1.EIPAssociating, "eip-1"), func(e *v1alpha1.EIPBinding) { e.ENIID, e.PrivateIP = eni, podIP })},
		},
		"AssociatedDone": {
			reason: "An EIP Associated with the Pod's IP is done without a cloud call.",
			eip:    with(rec(v1alpha1.EIPAssociated, "eip-1"), func(e *v1alpha1.EIPBinding) { e.ENIID, e.PrivateIP = eni, podIP }),
			errs:   map[string]error{"Describe": errBoom, "TaskDone": errBoom},
			goal:   Goal{IP: podIP},
			want:   want{done: true, eip: with(rec(v1alpha1.EIPAssociated, "eip-1"), func(e *v1alpha1.EIPBinding) { e.ENIID, e.PrivateIP = eni, podIP })},
		},
		"AssociatedReleased": {
			reason: "An Associated EIP to be released is disassociated first.",
			eip:    with(rec(v1alpha1.EIPAssociated, "eip-1"), func(e *v1alpha1.EIPBinding) { e.ENIID, e.PrivateIP = eni, podIP }),
			cloud: func(c *fake.Cloud, _ *v1alpha1.EIPBinding) {
				c.Addresses["eip-1"] = addr("eip-1", vpc.StatusBindENI, eni, podIP)
			},
			goal: Goal{Release: true},
			want: want{wait: TaskPoll, records: 2, writes: []string{"Disassociate eip-1"},
				eip: with(rec(v1alpha1.EIPDisassociating, "eip-1"), func(e *v1alpha1.EIPBinding) { e.ENIID, e.PrivateIP, e.TaskID = eni, podIP, "1" })},
		},
		"DisassociatingGoneRelease": {
			reason: "An EIP gone while being disassociated for release leaves nothing to release.",
			eip:    with(rec(v1alpha1.EIPDisassociating, "eip-1"), func(e *v1alpha1.EIPBinding) { e.ENIID, e.PrivateIP = eni, podIP }),
			goal:   Goal{Release: true},
			want:   want{done: true, records: 1},
		},
		"DisassociatingGoneHold": {
			reason: "An EIP gone while a gone Pod's EIP is held is not allocated again for nobody.",
			eip:    with(rec(v1alpha1.EIPDisassociating, "eip-1"), func(e *v1alpha1.EIPBinding) { e.ENIID, e.PrivateIP = eni, podIP }),
			goal:   Goal{Hold: true},
			want:   want{done: true, records: 2},
		},
		"DisassociatingBusy": {
			reason: "An EIP being unbound is looked at again shortly.",
			eip:    with(rec(v1alpha1.EIPDisassociating, "eip-1"), func(e *v1alpha1.EIPBinding) { e.ENIID, e.PrivateIP = eni, podIP }),
			cloud: func(c *fake.Cloud, _ *v1alpha1.EIPBinding) {
				c.Addresses["eip-1"] = addr("eip-1", vpc.StatusUnbinding, eni, podIP)
			},
			goal: Goal{Hold: true},
			want: want{wait: TaskPoll, eip: with(rec(v1alpha1.EIPDisassociating, "eip-1"), func(e *v1alpha1.EIPBinding) { e.ENIID, e.PrivateIP = eni, podIP })},
		},
		"DisassociateError": {
			reason: "A failed disassociation is returned.",
			eip:    with(rec(v1alpha1.EIPDisassociating, "eip-1"), func(e *v1alpha1.EIPBinding) { e.ENIID, e.PrivateIP = eni, podIP }),
			cloud: func(c *fake.Cloud, _ *v1alpha1.EIPBinding) {
				c.Addresses["eip-1"], c.Errs["eip-1"] = addr("eip-1", vpc.StatusBindENI, eni, podIP), errBoom
			},
			goal: Goal{Hold: true},
			want: want{err: "cannot disassociate EIP eip-1",
				eip: with(rec(v1alpha1.EIPDisassociating, "eip-1"), func(e *v1alpha1.EIPBinding) { e.ENIID, e.PrivateIP = eni, podIP })},
		},
		"ReleasingGone": {
			reason: "An EIP gone while being released is released.",
			eip:    rec(v1alpha1.EIPReleasing, "eip-1"),
			goal:   Goal{Release: true},
			want:   want{done: true, records: 1},
		},
		"ReleasingBusy": {
			reason: "An EIP going offline is looked at again shortly.",
			eip:    rec(v1alpha1.EIPReleasing, "eip-1"),
			cloud: func(c *fake.Cloud, _ *v1alpha1.EIPBinding) {
				c.Addresses["eip-1"] = addr("eip-1", vpc.StatusOfflining, "", "")
			},
			goal: Goal{Release: true},
			want: want{wait: TaskPoll, eip: rec(v1alpha1.EIPReleasing, "eip-1")},
		},
		"ReleasingBound": {
			reason: "A bound EIP is disassociated before it is released.",
			eip:    rec(v1alpha1.EIPReleasing, "eip-1"),
			cloud: func(c *fake.Cloud, _ *v1alpha1.EIPBinding) {
				c.Addresses["eip-1"] = addr("eip-1", vpc.StatusBindENI, eni, podIP)
			},
			goal: Goal{Release: true},
			want: want{wait: TaskPoll, records: 2, writes: []string{"Disassociate eip-1"},
				eip: with(rec(v1alpha1.EIPDisassociating, "eip-1"), func(e *v1alpha1.EIPBinding) { e.TaskID = "1" })},
		},
		"ReleaseNotFound": {
			reason: "An EIP the release does not find is gone: the record is dropped.",
			eip:    rec(v1alpha1.EIPReleasing, "eip-1"),
			cloud: func(c *fake.Cloud, _ *v1alpha1.EIPBinding) {
				c.Addresses["eip-1"] = addr("eip-1", vpc.StatusUnbind, "", "")
			},
			errs: map[string]error{"Release": errNotFound},
			goal: Goal{Release: true},
			want: want{done: true, records: 1},
		},
		"ReleaseRefusedBusy": {
			reason: "A release the cloud refuses for the EIP's state is asked again shortly.",
			eip:    rec(v1alpha1.EIPReleasing, "eip-1"),
			cloud: func(c *fake.Cloud, _ *v1alpha1.EIPBinding) {
				c.Addresses["eip-1"] = addr("eip-1", vpc.StatusUnbind, "", "")
			},
			errs: map[string]error{"Release": errNotPermit},
			goal: Goal{Release: true},
			want: want{wait: TaskPoll, eip: rec(v1alpha1.EIPReleasing, "eip-1")},
		},
		"ReleaseError": {
			reason: "A failed release is returned.",
			eip:    rec(v1alpha1.EIPReleasing, "eip-1"),
			cloud: func(c *fake.Cloud, _ *v1alpha1.EIPBinding) {
				c.Addresses["eip-1"] = addr("eip-1", vpc.StatusUnbind, "", "")
			},
			errs: map[string]error{"Release": errBoom},
			goal: Goal{Release: true},
			want: want{err: "cannot release EIP eip-1", eip: rec(v1alpha1.EIPReleasing, "eip-1")},
		},
		"UnknownState": {
			reason: "A state the machine does not know is an error, not a guess.",
			eip:    rec("Sideways", "eip-1"),
			goal:   Goal{IP: podIP},
			want:   want{err: `unknown EIP state "Sideways"`, eip: rec("Sideways", "eip-1")},
		},
		"RecordError": {
			reason: "A step that cannot be recorded stops the drive before the next cloud call.",
			eip:    rec(v1alpha1.EIPAllocated, "eip-1"),
			cloud: func(c *fake.Cloud, _ *v1alpha1.EIPBinding) {
				c.Addresses["eip-1"] = addr("eip-1", vpc.StatusUnbind, "", "")
			},
			recErr: errBoom,
			goal:   Goal{Release: true},
			want:   want{err: "cannot record the EIP's state", records: 1, eip: rec(v1alpha1.EIPReleasing, "eip-1")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := fake.New()
			var e *v1alpha1.EIPBinding
			if tc.eip != nil {
				e = tc.eip.DeepCopy()
			}
			if tc.cloud != nil {
				tc.cloud(c, e)
			}
			before := len(c.Log())
			r := &recorder{err: tc.recErr}
			m := &Machine{clock: func() time.Time { return testClock }, record: r.record}
			pa := testPA(tc.req, e)

			done, wait, err := m.Drive(ctx, pa, &region{Cloud: c, errs: tc.errs, noIDs: tc.noIDs}, tc.goal, tc.fresh)

			if tc.want.err == "" && err != nil {
				t.Fatalf("%s\nDrive(...): %v", tc.reason, err)
			}
			if tc.want.err != "" && (err == nil || !strings.Contains(err.Error(), tc.want.err)) {
				t.Fatalf("%s\nDrive(...): error %v, want one containing %q", tc.reason, err, tc.want.err)
			}
			if tc.want.errIs != nil && !tc.want.errIs(err) {
				t.Errorf("%s\nDrive(...): error %T is not of the type wanted", tc.reason, err)
			}
			if done != tc.want.done || wait != tc.want.wait {
				t.Errorf("%s\nDrive(...): done %t, wait %s; want %t, %s", tc.reason, done, wait, tc.want.done, tc.want.wait)
			}
			if diff := cmp.Diff(tc.want.eip, pa.Status.EIP); diff != "" {
				t.Errorf("%s\nstatus.eip: -want +got:\n%s", tc.reason, diff)
			}
			if len(r.records) != tc.want.records {
				t.Errorf("%s\n%d status writes, want %d: %v", tc.reason, len(r.records), tc.want.records, r.records)
			}
			if diff := cmp.Diff(tc.want.writes, c.Log()[before:], cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\ncloud writes: -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}
