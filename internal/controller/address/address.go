// Package address manages elastic public IPs (EIPs) as Address managed
// resources: allocate, bind to an ENI private IP or a CVM instance, rename,
// re-bind, unbind and release.
//
// EIP writes are asynchronous. Observe acts only once the address has
// settled: its own status is not transient (CREATING, BINDING, UNBINDING,
// OFFLINING) and the last task the provider started has ended, like the
// LoadBalancer's; a failed task shows in status.atProvider.task.
package address

import (
	"context"
	"slices"
	"sync"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/vpc/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/tcapi"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/vpc"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/mr"
)

// ConnPublicIP is the connection detail key of the address.
const ConnPublicIP = "publicIp"

// Setup adds the Address controller.
func Setup(mgr ctrl.Manager, o controller.Options, pool *vpc.Pool) error {
	return mr.Setup(mgr, o, pool, mr.Kind[*v1alpha1.Address, *vpc.Client]{
		GVK:    v1alpha1.AddressGroupVersionKind,
		Object: func() *v1alpha1.Address { return &v1alpha1.Address{} },
		New: func(c *vpc.Client, kube client.Client) managed.TypedExternalClient[*v1alpha1.Address] {
			return &external{c: c, owners: mr.Owners{Kube: kube}}
		},
		Options: []managed.ReconcilerOption{managed.WithPollIntervalHook(newTaskPoll(time.Now).interval)},
	})
}

const (
	// taskPoll is how soon an Address whose own task (bind, unbind,
	// release) runs is looked at again. The address stays Ready while it
	// moves, so the full poll interval would separate the unbind, the
	// bind and seeing it bound; EIP tasks take a second or two.
	taskPoll = 500 * time.Millisecond
	// taskPollFor bounds the quick polls of one task: one still running
	// after that is looked at with the normal interval.
	taskPollFor = time.Minute
)

// A taskPoller remembers when this process first saw each running task,
// to bound its quick polls.
type taskPoller struct {
	mu    sync.Mutex
	now   func() time.Time
	since map[string]time.Time // task id -> first seen running
}

func newTaskPoll(now func() time.Time) *taskPoller {
	return &taskPoller{now: now, since: map[string]time.Time{}}
}

// interval is the poll hook: taskPoll while the address's own task runs
// (for at most taskPollFor), else what every kind polls at.
func (p *taskPoller) interval(mg resource.Managed, d time.Duration) time.Duration {
	d = mr.PollInterval(mg, d)
	cr, ok := mg.(*v1alpha1.Address)
	if !ok || d <= taskPoll {
		return d
	}
	t := cr.Status.AtProvider.Task
	if t.State != mr.TaskRunning || t.ID == "" {
		return d
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	// Forget tasks long over, so the map holds only recent ones; a task
	// forgotten and seen again gets at most another taskPollFor.
	for id, at := range p.since {
		if now.Sub(at) > 10*taskPollFor {
			delete(p.since, id)
		}
	}
	first, seen := p.since[t.ID]
	if !seen {
		p.since[t.ID], first = now, now
	}
	if now.Sub(first) > taskPollFor {
		return d
	}
	return taskPoll
}

// api is what this controller needs of the cloud client.
type api interface {
	Allocate(ctx context.Context, r vpc.AllocateRequest) ([]string, string, error)
	Describe(ctx context.Context, ids []string) ([]vpc.Address, error)
	DescribeByTag(ctx context.Context, key, value string) ([]vpc.Address, error)
	Associate(ctx context.Context, id, eniID, privateIP string) (string, error)
	AssociateInstance(ctx context.Context, id, instanceID string) (string, error)
	Disassociate(ctx context.Context, id string) (string, error)
	Release(ctx context.Context, ids []string) (string, error)
	Rename(ctx context.Context, id, name string) error
	ENIOf(ctx context.Context, privateIP string) (string, error)
	TaskDone(ctx context.Context, taskID string) (bool, error)
}

// tasks reads EIP tasks for mr.Check.
type tasks struct{ c api }

func (t tasks) TaskStatus(ctx context.Context, id string) (clb.TaskState, string, error) {
	done, err := t.c.TaskDone(ctx, id)
	switch {
	case vpc.IsTaskFailed(err):
		return clb.TaskFailed, err.Error(), nil
	case vpc.IsInvalid(err):
		// The API no longer knows the task: it ended long ago.
		return clb.TaskSucceeded, "", tcapi.LocalErr("describe task result", tcapi.NotFound, err.Error())
	case err != nil:
		return clb.TaskRunning, "", err
	case done:
		return clb.TaskSucceeded, "", nil
	}
	return clb.TaskRunning, "", nil
}

type external struct {
	c      api
	owners mr.Owners
}

// settled reports whether no asynchronous change is under way, so the
// address accepts writes.
func settled(status string) bool {
	return slices.Contains([]string{vpc.StatusUnbind, vpc.StatusBind, vpc.StatusBindENI}, status)
}

func (e *external) Observe(ctx context.Context, cr *v1alpha1.Address) (managed.ExternalObservation, error) {
	// A deletion goes on: what it may touch is decided by the owner tags
	// of the cloud object, not by the spec.
	if err := mr.CheckTags("spec.forProvider.tags", cr.Spec.ForProvider.Tags); err != nil && !meta.WasDeleted(cr) {
		return managed.ExternalObservation{}, err
	}
	a, adopted, err := e.find(ctx, cr)
	if err != nil || a == nil {
		return managed.ExternalObservation{}, err
	}
	if err := e.owners.Check(ctx, cr, mr.Manage, "address "+a.ID, a.ID, a.Tags); err != nil {
		return mr.Refuse(cr, err)
	}
	if adopted {
		meta.SetExternalName(cr, a.ID)
	}
	running, err := mr.Check(ctx, tasks{e.c}, cr, &cr.Status.AtProvider.Task)
	if err != nil {
		return managed.ExternalObservation{}, errors.Wrap(err, "cannot check the address's task")
	}
	cr.Status.AtProvider = vpc.ObserveAddress(*a, cr.Status.AtProvider.Task)
	lateInit := mr.MayLateInitialize(cr) && vpc.LateInitAddress(&cr.Spec.ForProvider, *a)

	switch a.Status {
	case vpc.StatusCreating:
		cr.SetConditions(xpv2.Creating())
	case vpc.StatusOfflining:
		cr.SetConditions(xpv2.Deleting())
	default:
		cr.SetConditions(xpv2.Available())
	}
	obs := managed.ExternalObservation{
		ResourceExists:          true,
		ResourceUpToDate:        true,
		ResourceLateInitialized: lateInit || adopted,
		ConnectionDetails:       managed.ConnectionDetails{ConnPublicIP: []byte(a.PublicIP)},
	}
	// A binding or unbinding refuses writes; drift is acted on once the
	// address has settled.
	if !running && settled(a.Status) {
		obs.Diff = vpc.DiffAddress(cr)
		obs.ResourceUpToDate = obs.Diff == ""
	}
	return obs, nil
}

// find returns the address of cr: by its external name, or, when none is
// saved yet, by the UID tag of an allocation whose answer was lost; the
// caller saves the id of one found by tag once its owner is checked.
func (e *external) find(ctx context.Context, cr *v1alpha1.Address) (*vpc.Address, bool, error) {
	if id := meta.GetExternalName(cr); id != "" {
		found, err := e.c.Describe(ctx, []string{id})
		if err != nil || len(found) == 0 {
			return nil, false, errors.Wrap(err, "cannot describe address")
		}
		return &found[0], false, nil
	}
	found, err := e.c.DescribeByTag(ctx, mr.TagUID, string(cr.GetUID()))
	if err != nil || len(found) == 0 {
		return nil, false, errors.Wrap(err, "cannot look for an address allocated earlier")
	}
	return &found[0], true, nil
}

// owned checks the owner tags Observe just read into the status, so that
// Update and Delete never write an address of another namespace even when
// called without that Observe.
func (e *external) owned(ctx context.Context, cr *v1alpha1.Address) error {
	return e.owners.Check(ctx, cr, mr.Manage, "address "+meta.GetExternalName(cr), meta.GetExternalName(cr), cr.Status.AtProvider.Tags)
}

func (e *external) Create(ctx context.Context, cr *v1alpha1.Address) (managed.ExternalCreation, error) {
	if err := mr.CheckTags("spec.forProvider.tags", cr.Spec.ForProvider.Tags); err != nil {
		return managed.ExternalCreation{}, err
	}
	cr.SetConditions(xpv2.Creating())
	// The allocation's task is not tracked: Observe reads the address's
	// own state.
	ids, _, err := e.c.Allocate(ctx, AllocateRequest(cr))
	return mr.Created(cr, ids, "", err, "allocate address", true)
}

// Update renames the address and moves its binding one step: an address
// bound elsewhere is unbound first, and bound as wanted once Observe sees it
// unbound.
func (e *external) Update(ctx context.Context, cr *v1alpha1.Address) (managed.ExternalUpdate, error) {
	if err := e.owned(ctx, cr); err != nil {
		return managed.ExternalUpdate{}, err
	}
	id := meta.GetExternalName(cr)
	at := cr.Status.AtProvider
	if want := vpc.AddressName(cr); want != at.Name {
		if err := e.c.Rename(ctx, id, want); err != nil {
			return managed.ExternalUpdate{}, errors.Wrap(err, "cannot rename address")
		}
	}
	as := cr.Spec.ForProvider.Association
	if vpc.MatchesAssociation(as, at) {
		return managed.ExternalUpdate{}, nil
	}
	if at.BoundTo != "" || at.InstanceID != "" {
		task, err := e.c.Disassociate(ctx, id)
		return mr.Updated(&cr.Status.AtProvider.Task, task, err, "unbind address")
	}
	var task string
	var err error
	switch {
	case as.InstanceID != nil:
		task, err = e.c.AssociateInstance(ctx, id, *as.InstanceID)
	case as.NetworkInterfaceID != nil:
		task, err = e.c.Associate(ctx, id, *as.NetworkInterfaceID, clb.Deref(as.PrivateIPAddress))
	default:
		ip := clb.Deref(as.PrivateIPAddress)
		var eni string
		if eni, err = e.c.ENIOf(ctx, ip); err != nil {
			return managed.ExternalUpdate{}, errors.Wrap(err, "cannot find the network interface of "+ip)
		}
		task, err = e.c.Associate(ctx, id, eni, ip)
	}
	return mr.Updated(&cr.Status.AtProvider.Task, task, err, "bind address")
}

// Delete unbinds a bound address, then releases it; each step waits for the
// address to settle, and the reconciler comes back until it is gone.
func (e *external) Delete(ctx context.Context, cr *v1alpha1.Address) (managed.ExternalDelete, error) {
	cr.SetConditions(xpv2.Deleting())
	id := meta.GetExternalName(cr)
	at := cr.Status.AtProvider
	if !settled(at.Status) || (at.Task.State == mr.TaskRunning && at.Task.Operation == mr.OpDelete) {
		return managed.ExternalDelete{}, nil
	}
	if err := e.owned(ctx, cr); err != nil {
		return managed.ExternalDelete{}, err
	}
	release := at.BoundTo == "" && at.InstanceID == ""
	var task string
	var err error
	if release {
		task, err = e.c.Release(ctx, []string{id})
	} else {
		task, err = e.c.Disassociate(ctx, id)
	}
	switch {
	case vpc.IsNotFound(err):
		return managed.ExternalDelete{}, nil
	case err != nil && release:
		return managed.ExternalDelete{}, errors.Wrap(err, "cannot release address")
	case err != nil:
		return managed.ExternalDelete{}, errors.Wrap(err, "cannot unbind address")
	}
	mr.Started(&cr.Status.AtProvider.Task, mr.OpDelete, task)
	return managed.ExternalDelete{}, nil
}

func (e *external) Disconnect(context.Context) error { return nil }
