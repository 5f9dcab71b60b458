package clb

import (
	"context"
	"sync"
	"time"

	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
)

// TaskState is the state of an asynchronous CLB task.
type TaskState int

// Task states as DescribeTaskStatus reports them.
const (
	// TaskRunning means the task is in progress (Status 2).
	TaskRunning TaskState = iota
	// TaskSucceeded means the task finished (Status 0).
	TaskSucceeded
	// TaskFailed means the task failed (Status 1); the message says why.
	TaskFailed
)

// String names the state.
func (s TaskState) String() string {
	switch s {
	case TaskSucceeded:
		return "Succeeded"
	case TaskFailed:
		return "Failed"
	default:
		return "Running"
	}
}

// Status codes of DescribeTaskStatus.
const (
	taskStatusSucceeded = 0
	taskStatusFailed    = 1
)

// taskMemoryTTL bounds how long an unchecked task is remembered. CLB tasks
// end in seconds to minutes; a record this old is certainly finished, and
// dropping it keeps memory bounded for load balancers never written again.
const taskMemoryTTL = 30 * time.Minute

// taskMemory remembers, per load balancer, the last task this process
// started on it, so that the next write can tell "busy" without sending.
type taskMemory struct {
	mu     sync.Mutex
	byLB   map[string]taskRecord
	byTask map[string][]string // task id -> load balancer ids
}

type taskRecord struct {
	id      string
	started time.Time
}

func newTaskMemory() *taskMemory {
	return &taskMemory{byLB: map[string]taskRecord{}, byTask: map[string][]string{}}
}

func (m *taskMemory) remember(taskID string, now time.Time, lbIDs ...string) {
	if taskID == "" || len(lbIDs) == 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for lb, rec := range m.byLB {
		if now.Sub(rec.started) > taskMemoryTTL {
			m.dropLocked(lb, rec.id)
		}
	}
	for _, lb := range lbIDs {
		if old, ok := m.byLB[lb]; ok {
			m.dropLocked(lb, old.id)
		}
		m.byLB[lb] = taskRecord{id: taskID, started: now}
		m.byTask[taskID] = append(m.byTask[taskID], lb)
	}
}

func (m *taskMemory) last(lbID string) (taskRecord, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec, ok := m.byLB[lbID]
	return rec, ok
}

// forget drops every record of taskID: it has finished.
func (m *taskMemory) forget(taskID string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, lb := range m.byTask[taskID] {
		m.dropLocked(lb, taskID)
	}
}

// dropLocked removes the record of lb if it still names taskID.
func (m *taskMemory) dropLocked(lb, taskID string) {
	if rec, ok := m.byLB[lb]; ok && rec.id == taskID {
		delete(m.byLB, lb)
	}
	lbs := m.byTask[taskID]
	for i, id := range lbs {
		if id == lb {
			lbs = append(lbs[:i], lbs[i+1:]...)
			break
		}
	}
	if len(lbs) == 0 {
		delete(m.byTask, taskID)
	} else {
		m.byTask[taskID] = lbs
	}
}

func (m *taskMemory) size() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.byLB)
}

// TaskStatus asks DescribeTaskStatus about taskID (a RequestId returned by
// a write). It never waits for the task: callers poll from their next
// reconcile. A finished task is forgotten, so the next write to its load
// balancer needs no check.
func (c *Client) TaskStatus(ctx context.Context, taskID string) (TaskState, string, error) {
	const op = "describe task status"
	p, err := c.describeTask(ctx, taskID)
	if err != nil {
		return TaskRunning, "", wrapErr(op, err)
	}
	st, msg := taskState(p)
	return st, msg, nil
}

// describeTask calls DescribeTaskStatus and forgets the task when it has
// finished.
func (c *Client) describeTask(ctx context.Context, taskID string) (*clbsdk.DescribeTaskStatusResponseParams, error) {
	if taskID == "" {
		return nil, localErr("describe task status", Invalid, "no task id given")
	}
	req := clbsdk.NewDescribeTaskStatusRequest()
	req.TaskId = &taskID
	resp, err := invoke(ctx, c, "DescribeTaskStatus", req, c.sdk.DescribeTaskStatusWithContext)
	if err != nil {
		return nil, err
	}
	if resp.Response == nil || resp.Response.Status == nil {
		return nil, errEmptyAnswer("DescribeTaskStatus")
	}
	if st, _ := taskState(resp.Response); st != TaskRunning {
		c.s.tasks.forget(taskID)
	}
	return resp.Response, nil
}

func taskState(p *clbsdk.DescribeTaskStatusResponseParams) (TaskState, string) {
	msg := ""
	if p.Message != nil {
		msg = *p.Message
	}
	switch *p.Status {
	case taskStatusSucceeded:
		return TaskSucceeded, msg
	case taskStatusFailed:
		return TaskFailed, msg
	default:
		return TaskRunning, msg
	}
}

// ensureIdle returns a Busy error, without sending anything, when the last
// task this process started on lbID is still running. Called with the
// load balancer's write lock held, so the answer stays true until the
// caller's write is sent.
func (c *Client) ensureIdle(ctx context.Context, op, action, lbID string) error {
	rec, ok := c.s.tasks.last(lbID)
	if !ok {
		return nil
	}
	p, err := c.describeTask(ctx, rec.id)
	switch {
	case err == nil:
	case Classify(err) == Invalid || Classify(err) == NotFound:
		// The API no longer knows the task: it finished long ago.
		c.s.tasks.forget(rec.id)
		return nil
	default:
		return wrapErr(op, err)
	}
	if st, _ := taskState(p); st != TaskRunning {
		return nil
	}
	c.s.api.Metrics.Busy.WithLabelValues(action).Inc()
	return localErr(op, Busy, "load balancer "+lbID+" has a task in progress; try again shortly")
}
