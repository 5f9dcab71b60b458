// Package fake is an in-memory VPC region of EIPs for the controllers' unit
// tests: addresses with their states and bindings, the ENIs and instances
// they bind to, tasks that run until the test ends them, the writes made,
// and errors to inject. It answers as the client does, without its rate
// limits or batching.
package fake

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"

	sdkerrors "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common/errors"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/vpc"
)

// Cloud is a fake region. Tests set its fields between calls; its methods
// may run concurrently.
type Cloud struct {
	mu        sync.Mutex
	Addresses map[string]*vpc.Address
	// ENIs maps a private IP to the ENI holding it.
	ENIs map[string]string
	// Instances maps a CVM instance to its primary private IP.
	Instances map[string]string
	// Errs makes writes to an address fail.
	Errs   map[string]error
	tasks  map[string]*task
	tokens map[string]allocation
	writes []string
	seq    int
}

// A task moves one address: it is transient until the task ends, then
// takes end (or, when the task fails, goes back to was).
type task struct {
	id, addr string
	was, end vpc.Address
	gone     bool // ends with the address released
	state    string
}

// allocation is the answer to an allocation, given again for its client
// token.
type allocation struct {
	ids  []string
	task string
}

const (
	running   = "RUNNING"
	succeeded = "SUCCESS"
	failed    = "FAILED"
)

// New is an empty region.
func New() *Cloud {
	return &Cloud{
		Addresses: map[string]*vpc.Address{}, ENIs: map[string]string{}, Instances: map[string]string{},
		Errs: map[string]error{}, tasks: map[string]*task{}, tokens: map[string]allocation{},
	}
}

// The cloud's answers for what it does not have, and for a refused state.
var (
	errAddrNotFound = sdkerrors.NewTencentCloudSDKError("InvalidAddressId.NotFound", "address not found", "req")
	errENINotFound  = sdkerrors.NewTencentCloudSDKError("InvalidNetworkInterfaceId.NotFound", "eni not found", "req")
	errInstNotFound = sdkerrors.NewTencentCloudSDKError("InvalidInstanceId.NotFound", "instance not found", "req")
	errNotPermit    = sdkerrors.NewTencentCloudSDKError("InvalidAddressIdStatus.NotPermit", "address status not permit", "req")
	errTaskNotFound = sdkerrors.NewTencentCloudSDKError("InvalidParameterValue", "task not found", "req")
)

func (c *Cloud) write(format string, args ...any) {
	c.writes = append(c.writes, fmt.Sprintf(format, args...))
}

// Log is the writes made, in order.
func (c *Cloud) Log() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.writes)
}

// start puts address id in state while a new task moves it to end; c.mu is
// held.
func (c *Cloud) start(a *vpc.Address, state string, end vpc.Address, gone bool) string {
	c.seq++
	t := &task{id: strconv.Itoa(c.seq), addr: a.ID, was: *a, end: end, gone: gone, state: running}
	c.tasks[t.id] = t
	a.Status = state
	return t.id
}

// Settle ends every running task successfully.
func (c *Cloud) Settle() { c.end(succeeded) }

// Fail ends every running task in failure: the addresses go back to where
// they were.
func (c *Cloud) Fail() { c.end(failed) }

func (c *Cloud) end(state string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range c.tasks {
		if t.state != running {
			continue
		}
		t.state = state
		switch {
		case state == failed:
			*c.Addresses[t.addr] = t.was
		case t.gone:
			delete(c.Addresses, t.addr)
		default:
			*c.Addresses[t.addr] = t.end
		}
	}
}

// settled reports whether a accepts a write now.
func settled(a *vpc.Address) bool {
	return slices.Contains([]string{vpc.StatusUnbind, vpc.StatusBind, vpc.StatusBindENI}, a.Status)
}

// address is the settled address id; c.mu is held.
func (c *Cloud) address(id string) (*vpc.Address, error) {
	a, ok := c.Addresses[id]
	switch {
	case !ok:
		return nil, errAddrNotFound
	case c.Errs[id] != nil:
		return nil, c.Errs[id]
	case !settled(a):
		return nil, errNotPermit
	}
	return a, nil
}

// Allocate creates the addresses CREATING; the same client token returns
// the same addresses.
func (c *Cloud) Allocate(_ context.Context, r vpc.AllocateRequest) ([]string, string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if done, ok := c.tokens[r.ClientToken]; ok && r.ClientToken != "" {
		return done.ids, done.task, nil
	}
	n := max(r.Count, 1)
	var ids []string
	var task string
	for range n {
		c.seq++
		a := &vpc.Address{
			ID: fmt.Sprintf("eip-%d", c.seq), Name: r.Name, PublicIP: fmt.Sprintf("203.0.113.%d", c.seq),
			ISP: cmp(r.ISP, "BGP"), Bandwidth: max(r.Bandwidth, 1), ChargeType: cmp(r.ChargeType, "TRAFFIC_POSTPAID_BY_HOUR"),
			Tags: maps.Clone(r.Tags),
		}
		c.Addresses[a.ID] = a
		end := *a
		end.Status = vpc.StatusUnbind
		task = c.start(a, vpc.StatusCreating, end, false)
		ids = append(ids, a.ID)
	}
	c.tokens[r.ClientToken] = allocation{ids, task}
	c.write("Allocate %v %s", ids, r.Name)
	return ids, task, nil
}

func cmp(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// Describe returns the addresses of ids that exist.
func (c *Cloud) Describe(_ context.Context, ids []string) ([]vpc.Address, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []vpc.Address
	for _, id := range ids {
		if a, ok := c.Addresses[id]; ok {
			out = append(out, *a)
		}
	}
	return out, nil
}

// DescribeByTag returns the addresses tagged key=value, by id.
func (c *Cloud) DescribeByTag(_ context.Context, key, value string) ([]vpc.Address, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []vpc.Address
	for _, id := range slices.Sorted(maps.Keys(c.Addresses)) {
		if a := c.Addresses[id]; a.Tags[key] == value {
			out = append(out, *a)
		}
	}
	return out, nil
}

// Associate binds an unbound address to privateIP of eniID.
func (c *Cloud) Associate(_ context.Context, id, eniID, privateIP string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ENIs[privateIP] != eniID {
		return "", errENINotFound
	}
	return c.bind(id, "", eniID, privateIP)
}

// AssociateInstance binds an unbound address to the primary IP of a CVM
// instance.
func (c *Cloud) AssociateInstance(_ context.Context, id, instanceID string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ip, ok := c.Instances[instanceID]
	if !ok {
		return "", errInstNotFound
	}
	return c.bind(id, instanceID, c.ENIs[ip], ip)
}

// bind starts binding; c.mu is held.
func (c *Cloud) bind(id, instance, eni, ip string) (string, error) {
	a, err := c.address(id)
	if err != nil {
		return "", err
	}
	if a.Status != vpc.StatusUnbind {
		return "", errNotPermit
	}
	end := *a
	end.Status, end.InstanceID, end.ENIID, end.PrivateIP = vpc.StatusBindENI, instance, eni, ip
	if instance != "" {
		end.Status = vpc.StatusBind
	}
	c.write("Associate %s %s%s/%s", id, instance, eni, ip)
	return c.start(a, vpc.StatusBinding, end, false), nil
}

// Disassociate unbinds a bound address.
func (c *Cloud) Disassociate(_ context.Context, id string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	a, err := c.address(id)
	if err != nil {
		return "", err
	}
	if a.Status == vpc.StatusUnbind {
		return "", errNotPermit
	}
	end := *a
	end.Status, end.InstanceID, end.ENIID, end.PrivateIP = vpc.StatusUnbind, "", "", ""
	c.write("Disassociate %s", id)
	return c.start(a, vpc.StatusUnbinding, end, false), nil
}

// Release releases unbound addresses; they are gone once the task ends.
func (c *Cloud) Release(_ context.Context, ids []string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		a, err := c.address(id)
		if err != nil {
			return "", err
		}
		if a.Status != vpc.StatusUnbind {
			return "", errNotPermit
		}
	}
	var task string
	for _, id := range ids {
		a := c.Addresses[id]
		task = c.start(a, vpc.StatusOfflining, *a, true)
	}
	c.write("Release %v", ids)
	return task, nil
}

// Rename sets the name of address id at once, as the API does.
func (c *Cloud) Rename(_ context.Context, id, name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	a, ok := c.Addresses[id]
	if !ok {
		return errAddrNotFound
	}
	if err := c.Errs[id]; err != nil {
		return err
	}
	a.Name = name
	c.write("Rename %s %s", id, name)
	return nil
}

// ENIOf returns the ENI holding privateIP.
func (c *Cloud) ENIOf(_ context.Context, privateIP string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if eni, ok := c.ENIs[privateIP]; ok {
		return eni, nil
	}
	return "", errENINotFound
}

// TaskDone reports whether task id succeeded; a failed task is the error
// vpc.IsTaskFailed recognises, an unknown one an invalid parameter.
func (c *Cloud) TaskDone(_ context.Context, id string) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.tasks[id]
	switch {
	case !ok:
		return false, errTaskNotFound
	case t.state == failed:
		return false, vpc.TaskFailed(id)
	}
	return t.state == succeeded, nil
}
