package mr

import (
	"context"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

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
