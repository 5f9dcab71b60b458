package address

import (
	"testing"
	"time"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/vpc/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/mr"
)

// TestTaskPoll: a Ready address whose own task runs is looked at every
// taskPoll, for at most taskPollFor per task; otherwise at the poll
// interval.
func TestTaskPoll(t *testing.T) {
	now := time.Unix(1000, 0)
	p := newTaskPoll(func() time.Time { return now })
	const poll = 5 * time.Second
	cr := &v1alpha1.Address{}
	cr.SetConditions(xpv2.Available())
	if got := p.interval(cr, poll); got != poll {
		t.Errorf("no task: %s, want %s", got, poll)
	}
	cr.Status.AtProvider.Task = clbv1alpha1.TaskStatus{ID: "task-1", Operation: mr.OpUpdate, State: mr.TaskRunning}
	if got := p.interval(cr, poll); got != taskPoll {
		t.Errorf("task running: %s, want %s", got, taskPoll)
	}
	now = now.Add(taskPollFor / 2)
	if got := p.interval(cr, poll); got != taskPoll {
		t.Errorf("task running for %s: %s, want %s", taskPollFor/2, got, taskPoll)
	}
	now = now.Add(taskPollFor)
	if got := p.interval(cr, poll); got != poll {
		t.Errorf("task running for longer than %s: %s, want %s", taskPollFor, got, poll)
	}
	// The next task of the address is polled quickly again.
	cr.Status.AtProvider.Task.ID = "task-2"
	if got := p.interval(cr, poll); got != taskPoll {
		t.Errorf("next task: %s, want %s", got, taskPoll)
	}
	cr.Status.AtProvider.Task.State = mr.TaskSucceeded
	if got := p.interval(cr, poll); got != poll {
		t.Errorf("task done: %s, want %s", got, poll)
	}
}
