package mr

import (
	"context"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
)

// Task operations, as recorded in status.atProvider.task.operation.
const (
	OpCreate = "Create"
	OpUpdate = "Update"
	OpDelete = "Delete"
)

// Task states, as recorded in status.atProvider.task.state.
const (
	TaskRunning   = "Running"
	TaskSucceeded = "Succeeded"
	TaskFailed    = "Failed"
)

// A TaskChecker reports the state of an asynchronous cloud task.
type TaskChecker interface {
	TaskStatus(ctx context.Context, taskID string) (clb.TaskState, string, error)
}

// StartedByCreate records the task a Create started. Create may persist
// only annotations, so the task id goes there; Observe moves it to status.
func StartedByCreate(mg resource.Object, taskID string) {
	if taskID != "" {
		meta.AddAnnotations(mg, map[string]string{v1alpha1.AnnotationTask: taskID})
	}
}

// Created ends a Create that sent one write: the first of ids is the
// external name and the task is recorded. With no id, a resource Observe
// finds by its tags (tagged) waits for that; any other is an error.
func Created(mg resource.Managed, ids []string, task string, err error, what string, tagged bool) (managed.ExternalCreation, error) {
	if err != nil {
		return managed.ExternalCreation{}, errors.Wrap(err, "cannot "+what)
	}
	if len(ids) == 0 {
		if tagged {
			// The id is not known yet; the UID tag finds it on the next Observe.
			return managed.ExternalCreation{}, nil
		}
		return managed.ExternalCreation{}, errors.Errorf("cannot %s: the cloud returned no id", what)
	}
	meta.SetExternalName(mg, ids[0])
	StartedByCreate(mg, task)
	return managed.ExternalCreation{}, nil
}

// Updated ends an Update that sent one write.
func Updated(st *v1alpha1.TaskStatus, task string, err error, what string) (managed.ExternalUpdate, error) {
	if err != nil {
		return managed.ExternalUpdate{}, errors.Wrap(err, "cannot "+what)
	}
	Started(st, OpUpdate, task)
	return managed.ExternalUpdate{}, nil
}

// Deleting marks mg Deleting and reports whether its deletion task still
// runs: the reconciler comes back to verify.
func Deleting(mg resource.Managed, st v1alpha1.TaskStatus) bool {
	mg.SetConditions(xpv2.Deleting())
	return st.Operation == OpDelete && st.State == TaskRunning
}

// Deleted ends a Delete that sent one write (what is the object deleted);
// a resource already gone is deleted.
func Deleted(st *v1alpha1.TaskStatus, task string, err error, what string) (managed.ExternalDelete, error) {
	if clb.IsNotFound(err) {
		return managed.ExternalDelete{}, nil
	}
	if err != nil {
		return managed.ExternalDelete{}, errors.Wrap(err, "cannot delete "+what)
	}
	Started(st, OpDelete, task)
	return managed.ExternalDelete{}, nil
}

// Started records a task that Update or Delete started; the reconciler
// persists status after both.
func Started(st *v1alpha1.TaskStatus, op, taskID string) {
	if taskID == "" {
		return
	}
	*st = v1alpha1.TaskStatus{ID: taskID, Operation: op, State: TaskRunning}
}

// Pending returns the task a resource still waits for, if any: a running
// task in status, or a Create task in the annotation that status has not
// seen yet.
func Pending(mg resource.Object, st v1alpha1.TaskStatus) (id, op string) {
	if st.State == TaskRunning && st.ID != "" {
		return st.ID, st.Operation
	}
	if a := mg.GetAnnotations()[v1alpha1.AnnotationTask]; a != "" && a != st.ID {
		return a, OpCreate
	}
	return "", ""
}

// Check looks up the pending task of a resource and records its state in
// st. It returns true while the task is still running. A task the cloud no
// longer knows is taken as finished: tasks are forgotten after a while, and
// the resource's own state is what Observe reads next.
func Check(ctx context.Context, c TaskChecker, mg resource.Object, st *v1alpha1.TaskStatus) (running bool, err error) {
	id, op := Pending(mg, *st)
	if id == "" {
		return false, nil
	}
	state, msg, err := c.TaskStatus(ctx, id)
	switch {
	case clb.IsNotFound(err):
		*st = v1alpha1.TaskStatus{ID: id, Operation: op, State: TaskSucceeded}
		return false, nil
	case err != nil:
		return false, err
	}
	*st = v1alpha1.TaskStatus{ID: id, Operation: op, State: state.String(), Message: msg}
	return state == clb.TaskRunning, nil
}
