package emulator

import (
	"math/rand/v2"
	"time"

	clb "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
)

// Task statuses as DescribeTaskStatus reports them.
const (
	taskSucceeded int64 = 0
	taskFailed    int64 = 1
	taskRunning   int64 = 2
)

type taskKind int

const (
	taskModify taskKind = iota // change applied now, served by the data plane at completion
	taskCreate                 // load balancer goes from Status 0 to 1
	taskDelete                 // load balancer leaves the data plane at completion
	taskSync                   // already complete when recorded (Batch*Targets)
	taskEIP                    // vpc EIP task: addresses settle (or roll back) at completion
)

// task is one asynchronous operation, identified by the RequestId of the
// call that started it. While it runs it holds its load balancers busy.
type task struct {
	ID       string    `json:"id"`
	Action   string    `json:"action"`
	DealName string    `json:"dealName,omitempty"`
	LBIDs    []string  `json:"lbIds,omitempty"`
	Status   int64     `json:"status"`
	Message  string    `json:"message,omitempty"`
	Created  time.Time `json:"created"`
	// Service is "vpc" for EIP tasks, whose ids are numeric (DescribeTaskResult).
	Service string   `json:"service,omitempty"`
	EIPIDs  []string `json:"eipIds,omitempty"`

	kind     taskKind
	deadline time.Time // zero: completes before the response is written
	timer    *time.Timer
	settled  bool // state finalised; Status flips once the data plane has it
}

func (e *Emulator) taskDuration(action string) time.Duration {
	if d, ok := e.cfg.ActionTaskDuration[action]; ok {
		return d
	}
	return e.cfg.TaskDuration
}

// beginTask starts the asynchronous task of call c over lbs. It must run
// with e.mu held, after all validation and before the change is applied:
// for a modification it snapshots what the data plane keeps serving.
func (e *Emulator) beginTask(c *call, kind taskKind, lbs ...*lbState) *task {
	t := &task{ID: c.requestID, Action: c.action, Status: taskRunning, Created: c.now, kind: kind}
	for _, lb := range lbs {
		t.LBIDs = append(t.LBIDs, lb.ID)
		if kind == taskModify {
			lb.committed = lb.clone()
		}
		lb.task = t
	}
	e.st.addTask(t, e.cfg.MaxTasks)
	if d := e.taskDuration(c.action); d > 0 {
		t.deadline = c.now.Add(d)
		t.timer = time.AfterFunc(d, func() { e.finishTask(t) })
	}
	c.task = t
	return t
}

// recordSyncTask registers an already completed task, so that callers that
// poll DescribeTaskStatus after a synchronous Batch call still get Status 0.
func (e *Emulator) recordSyncTask(c *call, lbIDs ...string) {
	t := &task{ID: c.requestID, Action: c.action, LBIDs: lbIDs, Status: taskSucceeded,
		Created: c.now, kind: taskSync, settled: true}
	e.st.addTask(t, e.cfg.MaxTasks)
	c.changed = true
}

func (s *store) addTask(t *task, limit int) {
	s.tasks[t.ID] = t
	s.taskOrder = append(s.taskOrder, t.ID)
	for len(s.tasks) > limit && len(s.taskOrder) > 0 {
		id := s.taskOrder[0]
		s.taskOrder = s.taskOrder[1:]
		old, ok := s.tasks[id]
		if !ok {
			continue
		}
		if old.Status == taskRunning {
			s.taskOrder = append(s.taskOrder, id) // never forget a running task
			if old == t {
				break
			}
			continue
		}
		delete(s.tasks, id)
		if old.DealName != "" && s.deals[old.DealName] == id {
			delete(s.deals, old.DealName)
		}
	}
}

// finishTask completes t: it settles the state (or rolls it back when a
// fault makes the task fail), pushes the routes to the data plane and only
// then reports the final status, so Status 0 means traffic flows.
func (e *Emulator) finishTask(t *task) {
	e.dpMu.Lock()
	defer e.dpMu.Unlock()

	e.mu.Lock()
	// A timer that fired just before Close or Reset has nothing left to do.
	if e.closed.Load() || e.st.tasks[t.ID] != t || t.settled {
		e.mu.Unlock()
		return
	}
	failed, msg := false, ""
	if f := e.faults.Load(); f != nil {
		failed, msg = f.taskFails(t.Action)
	}
	if failed {
		e.countInjected("TaskFailed")
	}
	now := e.cfg.Clock()
	st := e.st
	if t.kind == taskEIP {
		e.settleEIPTask(t, failed, now)
	}
	for _, id := range t.LBIDs {
		switch t.kind {
		case taskCreate:
			lb := st.lbs[id]
			if lb == nil || lb.task != t {
				continue
			}
			if failed {
				e.releaseLB(lb)
				delete(st.lbs, id)
				continue
			}
			lb.Status, lb.StatusTime = 1, now
		case taskModify:
			lb := st.lbs[id]
			if lb == nil || lb.task != t {
				continue
			}
			if failed && lb.committed != nil {
				restored := lb.committed
				restored.task = t
				st.lbs[id] = restored
				continue
			}
			lb.committed = nil
		case taskDelete:
			lb := st.dying[id]
			if lb == nil {
				continue
			}
			delete(st.dying, id)
			if failed {
				lb.committed = nil
				st.lbs[id] = lb
				continue
			}
			e.releaseLB(lb)
		}
	}
	t.settled = true
	routes, push := e.routesLocked()
	e.mu.Unlock()

	if push {
		e.applyRoutes(routes)
	}

	e.mu.Lock()
	if failed {
		t.Status, t.Message = taskFailed, msg
	} else {
		t.Status = taskSucceeded
	}
	for _, id := range t.LBIDs {
		if lb := e.st.lbs[id]; lb != nil && lb.task == t {
			lb.task, lb.committed = nil, nil
		}
	}
	e.mu.Unlock()
	e.markDirty()
}

// isBusy reports whether a write to lb must answer ResourceInOperating.
func (lb *lbState) isBusy() bool {
	return lb.task != nil && lb.task.Status == taskRunning
}

// newDealName imitates the order numbers of CreateLoadBalancer: the date
// followed by 15 digits.
func newDealName(now time.Time) string {
	b := []byte(beijing(now).Format("20060102"))
	for range 15 {
		b = append(b, byte('0'+rand.IntN(10)))
	}
	return string(b)
}

func (e *Emulator) describeTaskStatus(c *call) (any, *apiError) {
	var req clb.DescribeTaskStatusRequestParams
	if err := decode(c, &req); err != nil {
		return nil, err
	}
	id, deal := str(req.TaskId), str(req.DealName)
	if id == "" && deal == "" {
		return nil, missing("TaskId")
	}
	e.mu.RLock()
	defer e.mu.RUnlock()
	if id == "" {
		id = e.st.deals[deal]
		if id == "" {
			return nil, errorf(codeInvalidParameter, "DealName %s not found.", deal)
		}
	}
	t, ok := e.st.tasks[id]
	if !ok || t.Service != "" {
		return nil, errorf(codeInvalidParameter, "TaskId %s not found.", id)
	}
	resp := &clb.DescribeTaskStatusResponseParams{
		Status:          ptr(t.Status),
		LoadBalancerIds: strPtrs(t.LBIDs),
		RequestId:       &c.requestID,
	}
	if t.Status == taskFailed {
		resp.Message = ptr(t.Message)
	}
	return resp, nil
}

// TaskStatus returns the status DescribeTaskStatus would report for id
// (0 done, 1 failed, 2 running) and whether the task is known.
func (e *Emulator) TaskStatus(id string) (int64, bool) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	t, ok := e.st.tasks[id]
	if !ok {
		return 0, false
	}
	return t.Status, true
}
