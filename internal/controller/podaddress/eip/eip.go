// Package eip gives a PodAddress an EIP of its own: its state machine (take
// a warm EIP or allocate one, associate it with the Pod IP's network
// interface, disassociate, release), one recorded step at a time, each
// step written through the caller's status callback before the next cloud
// call; the warm pools of PodAddressPolicies; and the retry spacing of
// PodAddresses that get none.
package eip

import (
	"context"
	"fmt"
	"slices"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	clusterv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/cluster/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/vpc"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/mr"
)

const (
	// TagOwner is the tag an EIP of a PodAddress is allocated with; its
	// value is the PodAddress's UID (status.eip.ownerTag). It finds an EIP
	// whose allocation was sent but whose answer was never recorded.
	TagOwner = mr.TagEIPOwner
	// TagWarmPool marks the EIPs of a warm pool; its value is the
	// namespace/name of the PodAddressPolicy.
	TagWarmPool = mr.TagEIPWarmPool

	// TaskPoll is how soon a reconcile looks again at an EIP task
	// (allocate, associate, disassociate, release); no worker waits on it.
	TaskPoll = 250 * time.Millisecond
	// steps bounds the cloud steps of one reconcile.
	steps = 12
	// maxBackoff caps the retry interval of a PodAddress whose EIP
	// cannot be allocated (quota, daily limit) and has no fallback.
	maxBackoff = 5 * time.Minute
)

// API is what the Machine and the Warmer need of a region's VPC client:
// *vpc.Client serves it, and so does the fake region of the unit tests.
type API interface {
	Allocate(ctx context.Context, r vpc.AllocateRequest) ([]string, string, error)
	Describe(ctx context.Context, ids []string) ([]vpc.Address, error)
	DescribeByTag(ctx context.Context, key, value string) ([]vpc.Address, error)
	Associate(ctx context.Context, id, eniID, privateIP string) (string, error)
	Disassociate(ctx context.Context, id string) (string, error)
	Release(ctx context.Context, ids []string) (string, error)
	ENIOf(ctx context.Context, privateIP string) (string, error)
	TaskDone(ctx context.Context, taskID string) (bool, error)
}

// Clients hands out the API of a provider config's credentials and
// region. A func rather than *vpc.Pool, whose Client returns the concrete
// type, so that tests hand out a fake region.
type Clients func(clients.Config) (API, error)

// poolClients is the clients of pool; nil for no pool.
func poolClients(pool *vpc.Pool) Clients {
	if pool == nil {
		return nil
	}
	return func(cfg clients.Config) (API, error) {
		c, err := pool.Client(cfg)
		if err != nil {
			return nil, err
		}
		return c, nil
	}
}

// Active reports whether pa holds (or may hold) an EIP: it asked for
// one and did not fall back to ports.
func Active(pa *v1alpha1.PodAddress) bool {
	return pa.Status.EIP != nil && pa.Status.EIP.State != v1alpha1.EIPFallback
}

// Client returns the VPC client of pa's EIP and its region: through the
// provider config its status records (the grant's when it was
// allocated), else the one its request names, else ClusterProviderConfig
// "default" (PodAddresses recorded before grants).
func (m *Machine) Client(ctx context.Context, pa *v1alpha1.PodAddress) (API, string, error) {
	ref := xpv2.ProviderConfigReference{Kind: clusterv1alpha1.ClusterProviderConfigKind, Name: "default"}
	switch {
	case pa.Status.EIP != nil && pa.Status.EIP.ProviderConfigRef != nil:
		ref = *pa.Status.EIP.ProviderConfigRef
	case pa.Spec.EIP != nil && pa.Spec.EIP.ProviderConfigRef != nil:
		ref = *pa.Spec.EIP.ProviderConfigRef
	}
	return m.ClientOf(ctx, ref, pa.GetNamespace())
}

// ClientOf returns the VPC client of the provider config ref (a
// ProviderConfig of namespace, or a ClusterProviderConfig) and its region.
func (m *Machine) ClientOf(ctx context.Context, ref xpv2.ProviderConfigReference, namespace string) (API, string, error) {
	if m.vpc == nil {
		return nil, "", errors.New("this provider runs without a VPC client: EIPs cannot be managed")
	}
	cfg, err := clients.Resolve(ctx, m.kube, ref, namespace)
	if err != nil {
		return nil, "", err
	}
	c, err := m.vpc(cfg)
	return c, cfg.Region, errors.Wrapf(err, "cannot build a VPC client for region %s", cfg.Region)
}

// An UnavailableError says that no EIP can be allocated now: the account's quota
// or the daily allocation limit is reached.
type UnavailableError struct{ Reason string }

func (e *UnavailableError) Error() string { return e.Reason }

// An InvalidError says that the cloud refuses the request as it is (e.g.
// a bandwidth out of the charge type's range); nothing was allocated.
type InvalidError struct{ Msg string }

func (e *InvalidError) Error() string { return e.Msg }

// A WaitError is a wait on something outside the provider (the Pod's IP
// on no network interface yet); its message is the PodAddress's.
type WaitError struct{ Msg string }

func (e *WaitError) Error() string { return e.Msg }

// A Machine moves the EIPs of PodAddresses. record writes a PodAddress's
// status: every step is recorded through it before the next cloud call.
type Machine struct {
	kube   client.Reader
	vpc    Clients
	warm   *Warmer
	grants *Grants
	clock  func() time.Time
	record func(context.Context, *v1alpha1.PodAddress) error
}

// NewMachine returns a Machine that takes warm EIPs from warm (nil for
// none), counts EIPs against grants and allocates through the clients of
// vpc.
func NewMachine(kube client.Reader, pool *vpc.Pool, warm *Warmer, grants *Grants, clock func() time.Time, record func(context.Context, *v1alpha1.PodAddress) error) *Machine {
	return NewMachineWith(kube, poolClients(pool), warm, grants, clock, record)
}

// NewMachineWith returns a Machine that allocates through the clients
// cloud hands out (nil for none): the unit tests' fake regions.
func NewMachineWith(kube client.Reader, cloud Clients, warm *Warmer, grants *Grants, clock func() time.Time, record func(context.Context, *v1alpha1.PodAddress) error) *Machine {
	return &Machine{kube: kube, vpc: cloud, warm: warm, grants: grants, clock: clock, record: record}
}

// Progress says what an EIP waits for.
func Progress(e *v1alpha1.EIPBinding) string {
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

// Start records where pa's EIP comes from before any cloud call: an EIP
// of its policy's warm pool, or an allocation (state Allocating with the
// owner tag), counted against grant gr (a GrantQuotaError when its quota
// is used up) and allocated through its provider config. fresh is true
// for an allocation this call recorded: nothing can have been sent for it
// yet.
func (m *Machine) Start(ctx context.Context, pa *v1alpha1.PodAddress, region string, gr *v1alpha1.EIPGrant) (fresh bool, err error) {
	key := client.ObjectKeyFromObject(pa)
	ref := gr.Spec.ProviderConfigRef
	e := &v1alpha1.EIPBinding{Region: region, Grant: gr.GetName(), ProviderConfigRef: &ref}
	if pool, ok := WarmKey(pa); ok && m.warm != nil && m.warmOf(pool) == gr.GetName() {
		if ad, ok := m.warm.take(pool, pa.Spec.EIP); ok {
			if err := m.grants.Reserve(ctx, gr, key, pool); err != nil {
				m.warm.giveBack(pool, ad)
				return false, err
			}
			// Allocating with an id: it is described (and waited for, if
			// still being created) before it is associated.
			e.State, e.AddressID, e.WarmPool, e.OwnerTag = v1alpha1.EIPAllocating, ad.ID, pool, string(pa.GetUID())
			fill(e, ad)
			pa.Status.EIP = e
			if err := m.record(ctx, pa); err != nil {
				pa.Status.EIP = nil
				m.warm.giveBack(pool, ad)
				m.grants.warmBack(pool)
				m.grants.Observe(pa)
				return false, errors.Wrap(err, "cannot record the warm EIP taken")
			}
			return false, nil
		}
	}
	if err := m.grants.Reserve(ctx, gr, key, ""); err != nil {
		return false, err
	}
	e.State, e.OwnerTag = v1alpha1.EIPAllocating, string(pa.GetUID())
	requested(e, pa.Spec.EIP)
	pa.Status.EIP = e
	if err := m.record(ctx, pa); err != nil {
		pa.Status.EIP = nil
		m.grants.Observe(pa)
		return false, errors.Wrap(err, "cannot record the EIP allocation")
	}
	return true, nil
}

// warmOf is the grant of a warm pool's EIPs.
func (m *Machine) warmOf(pool string) string {
	g, _, _ := m.grants.WarmGrant(pool)
	return g
}

// A Goal is where a PodAddress's EIP should be: associated with ip
// ("" for not associated), or released. Hold is the goal of a gone Pod:
// an EIP that exists is kept, not associated, and none is allocated.
type Goal struct {
	IP      string
	Release bool
	Hold    bool
}

// Drive moves pa's EIP towards goal, a recorded step at a time, until
// it is there (done), waits on the cloud (wait), or fails. fresh says the
// Allocating state was recorded by this reconcile, so no allocation can
// have been sent for it.
func (m *Machine) Drive(ctx context.Context, pa *v1alpha1.PodAddress, c API, goal Goal, fresh bool) (done bool, wait time.Duration, err error) {
	for range steps {
		if pa.Status.EIP == nil {
			return true, 0, nil
		}
		done, wait, err = m.step(ctx, pa, c, goal, fresh)
		if done || wait > 0 || err != nil {
			return done, wait, err
		}
		fresh = false
	}
	return false, TaskPoll, nil
}

// step takes one step; it returns neither done nor a wait when it made
// progress (recorded a new state) and another step may follow.
func (m *Machine) step(ctx context.Context, pa *v1alpha1.PodAddress, c API, goal Goal, fresh bool) (bool, time.Duration, error) {
	e := pa.Status.EIP
	if e.TaskID != "" {
		ok, err := c.TaskDone(ctx, e.TaskID)
		if err == nil && !ok {
			return false, TaskPoll, nil
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
		return false, 0, m.recordEIP(ctx, pa)
	}

	switch e.State {
	case v1alpha1.EIPAllocating:
		if e.AddressID == "" {
			return m.allocate(ctx, pa, c, goal, fresh)
		}
		ad, found, err := describe(ctx, c, pa, e.AddressID)
		switch {
		case err != nil:
			return false, 0, err
		case !found:
			// Gone: allocate again (or nothing to release), under a new
			// owner tag, as the old one's client token names the old EIP,
			// with the attributes the grant admitted when they were
			// recorded (a changed request is a replacement, see stale).
			e.AddressID, e.OwnerTag = "", m.newOwnerTag(pa)
		case ad.Status == "CREATING":
			return false, TaskPoll, nil
		case goal.IP != "" && !goal.Release && !goal.Hold && stale(e, pa.Spec.EIP):
			// Allocated as the request was when it was recorded, and the
			// request changed since: no Pod was told this EIP yet, so it
			// is released and one with the new attributes allocated.
			e.State = v1alpha1.EIPReleasing
		default:
			fill(e, ad)
			e.State = v1alpha1.EIPAllocated
		}
		return false, 0, m.recordEIP(ctx, pa)

	case v1alpha1.EIPAllocated:
		switch {
		case goal.Release:
			e.State = v1alpha1.EIPReleasing
			return false, 0, m.recordEIP(ctx, pa)
		case goal.IP == "":
			return true, 0, nil
		}
		eni, err := c.ENIOf(ctx, goal.IP)
		if vpc.IsNotFound(err) || err == nil && eni == "" {
			return false, 0, &WaitError{Msg: fmt.Sprintf("no network interface holds the Pod IP %s yet (the EIP needs a VPC-CNI Pod IP)", goal.IP)}
		}
		if err != nil {
			return false, 0, errors.Wrapf(err, "cannot find the network interface of %s", goal.IP)
		}
		e.State, e.ENIID, e.PrivateIP = v1alpha1.EIPAssociating, eni, goal.IP
		return false, 0, m.recordEIP(ctx, pa)

	case v1alpha1.EIPAssociating:
		if goal.Release || goal.IP != e.PrivateIP {
			return m.disassociateFirst(ctx, pa)
		}
		ad, found, err := describe(ctx, c, pa, e.AddressID)
		switch {
		case err != nil:
			return false, 0, err
		case !found:
			m.reallocate(pa)
			return false, 0, m.recordEIP(ctx, pa)
		case ad.ENIID == e.ENIID && ad.PrivateIP == e.PrivateIP && !busy(ad.Status):
			e.State = v1alpha1.EIPAssociated
			return false, 0, m.recordEIP(ctx, pa)
		case busy(ad.Status):
			return false, TaskPoll, nil
		case bound(ad):
			// Bound elsewhere (where an earlier Pod was): undo first.
			return m.disassociateFirst(ctx, pa)
		}
		task, err := c.Associate(ctx, e.AddressID, e.ENIID, e.PrivateIP)
		return m.sent(ctx, pa, task, err, fmt.Sprintf("associate EIP %s with %s", e.AddressID, e.PrivateIP))

	case v1alpha1.EIPAssociated:
		if !goal.Release && goal.IP == e.PrivateIP {
			return true, 0, nil
		}
		return m.disassociateFirst(ctx, pa)

	case v1alpha1.EIPDisassociating:
		ad, found, err := describe(ctx, c, pa, e.AddressID)
		switch {
		case err != nil:
			return false, 0, err
		case !found:
			m.reallocate(pa)
			if goal.Release {
				pa.Status.EIP = nil
			}
			return false, 0, m.recordEIP(ctx, pa)
		case busy(ad.Status):
			return false, TaskPoll, nil
		case !bound(ad):
			e.State, e.ENIID, e.PrivateIP = v1alpha1.EIPAllocated, "", ""
			return false, 0, m.recordEIP(ctx, pa)
		}
		task, err := c.Disassociate(ctx, e.AddressID)
		return m.sent(ctx, pa, task, err, "disassociate EIP "+e.AddressID)

	case v1alpha1.EIPReleasing:
		ad, found, err := describe(ctx, c, pa, e.AddressID)
		switch {
		case err != nil:
			return false, 0, err
		case !found:
			pa.Status.EIP = nil
			return false, 0, m.recordEIP(ctx, pa)
		case busy(ad.Status):
			return false, TaskPoll, nil
		case bound(ad):
			return m.disassociateFirst(ctx, pa)
		}
		task, err := c.Release(ctx, []string{e.AddressID})
		switch {
		case vpc.IsNotFound(err):
			pa.Status.EIP = nil
		case vpc.IsBusy(err):
			return false, TaskPoll, nil
		case err != nil:
			return false, 0, errors.Wrapf(err, "cannot release EIP %s", e.AddressID)
		default:
			e.TaskID = task
		}
		return false, 0, m.recordEIP(ctx, pa)
	}
	return false, 0, errors.Errorf("unknown EIP state %q", e.State)
}

// disassociateFirst records that pa's EIP is to be disassociated next.
func (m *Machine) disassociateFirst(ctx context.Context, pa *v1alpha1.PodAddress) (bool, time.Duration, error) {
	pa.Status.EIP.State = v1alpha1.EIPDisassociating
	return false, 0, m.recordEIP(ctx, pa)
}

// sent records the task of a call on pa's EIP; a busy EIP is asked again
// shortly.
func (m *Machine) sent(ctx context.Context, pa *v1alpha1.PodAddress, task string, err error, what string) (bool, time.Duration, error) {
	if vpc.IsBusy(err) {
		return false, TaskPoll, nil
	}
	if err != nil {
		return false, 0, errors.Wrap(err, "cannot "+what)
	}
	pa.Status.EIP.TaskID = task
	return false, 0, m.recordEIP(ctx, pa)
}

// reallocate starts pa's EIP over: the one it had is gone, so another is
// allocated, under a new owner tag (the old one's client token names the
// old EIP), with the attributes recorded (admitted by its grant).
func (m *Machine) reallocate(pa *v1alpha1.PodAddress) {
	e := pa.Status.EIP
	e.State, e.AddressID, e.ENIID, e.PrivateIP, e.OwnerTag = v1alpha1.EIPAllocating, "", "", "", m.newOwnerTag(pa)
	if e.Bandwidth == 0 {
		requested(e, pa.Spec.EIP)
	}
}

// allocate serves state Allocating before an id is known. Unless this
// reconcile recorded the state (fresh), an earlier allocation may have
// been sent and its answer lost: the owner tag finds what it made. Extra
// EIPs of the tag (never recorded, so never bound) are released.
func (m *Machine) allocate(ctx context.Context, pa *v1alpha1.PodAddress, c API, goal Goal, fresh bool) (bool, time.Duration, error) {
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
			return false, 0, m.recordEIP(ctx, pa)
		}
	}
	if goal.Release || goal.Hold {
		// Nothing was allocated, and nothing is for a Pod that is gone.
		pa.Status.EIP = nil
		return false, 0, m.recordEIP(ctx, pa)
	}
	ids, task, err := c.Allocate(ctx, AllocateRequest(pa))
	switch {
	case vpc.IsInvalid(err):
		// Refused as asked: nothing was allocated, and the record goes so
		// that a changed request is allocated as it is then.
		pa.Status.EIP = nil
		if rerr := m.recordEIP(ctx, pa); rerr != nil {
			return false, 0, rerr
		}
		return false, 0, &InvalidError{Msg: "the cloud refuses the EIP: " + err.Error()}
	case vpc.IsQuotaExceeded(err):
		return false, 0, &UnavailableError{Reason: "the account's EIP quota is reached"}
	case vpc.IsDailyLimit(err):
		return false, 0, &UnavailableError{Reason: "the daily EIP allocation limit is reached"}
	case err != nil:
		return false, 0, errors.Wrap(err, "cannot allocate an EIP")
	case len(ids) == 0:
		return false, 0, errors.New("AllocateAddresses returned no address")
	}
	e.AddressID, e.TaskID = ids[0], task
	return false, 0, m.recordEIP(ctx, pa)
}

// Release disassociates and releases a PodAddress's EIP (deletion, or
// a held EIP whose time is up); done once it is gone.
func (m *Machine) Release(ctx context.Context, pa *v1alpha1.PodAddress) (bool, time.Duration, error) {
	return m.driveActive(ctx, pa, Goal{Release: true})
}

// Detach disassociates the EIP of a Pod that is gone: another Pod may
// get its IP. An EIP that exists is kept (held); an allocation that
// never got one is dropped rather than sent (again) for nobody.
func (m *Machine) Detach(ctx context.Context, pa *v1alpha1.PodAddress) (bool, time.Duration, error) {
	return m.driveActive(ctx, pa, Goal{Hold: true})
}

// driveActive drives pa's EIP, if it has one, to goal.
func (m *Machine) driveActive(ctx context.Context, pa *v1alpha1.PodAddress, goal Goal) (bool, time.Duration, error) {
	if !Active(pa) {
		return true, 0, nil
	}
	c, _, err := m.Client(ctx, pa)
	if err != nil {
		return false, 0, err
	}
	return m.Drive(ctx, pa, c, goal, false)
}
