package vpc

import (
	"context"
	"maps"
	"slices"
	"strconv"

	vpcsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/vpc/v20170312"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/tcapi"
)

// Address is one EIP as DescribeAddresses reports it.
type Address struct {
	ID, Name, PublicIP string
	// Status is the API's AddressStatus: CREATING, BINDING, BIND,
	// UNBINDING, UNBIND, OFFLINING, BIND_ENI.
	Status string
	// ISP is the line: BGP, CMCC, CTCC, CUCC.
	ISP string
	// Bandwidth is the outbound cap in Mbps.
	Bandwidth int64
	// ChargeType is the InternetChargeType, e.g. TRAFFIC_POSTPAID_BY_HOUR.
	ChargeType string
	// InstanceID is the CVM instance it is bound to, if any.
	InstanceID string
	// ENIID is the NetworkInterfaceId it is bound to, if any.
	ENIID string
	// PrivateIP is the private IP it is bound to, if any.
	PrivateIP string
	Tags      map[string]string
}

// Address statuses the callers act on.
const (
	StatusCreating  = "CREATING"
	StatusBinding   = "BINDING"
	StatusBind      = "BIND"
	StatusBindENI   = "BIND_ENI"
	StatusUnbinding = "UNBINDING"
	StatusUnbind    = "UNBIND"
	StatusOfflining = "OFFLINING"
)

// AllocateRequest is what AllocateAddresses is asked for.
type AllocateRequest struct {
	// Count is how many EIPs; 0 means 1.
	Count int64
	Name  string
	// ISP is the InternetServiceProvider; empty means the API's default (BGP).
	ISP string
	// ChargeType is the InternetChargeType; empty means the API's default.
	ChargeType string
	// Bandwidth is InternetMaxBandwidthOut in Mbps; 0 means the API's default.
	Bandwidth int64
	// Tags are set on the new EIPs. Tag them with something identifying the
	// caller, so that an allocation whose answer was lost can be found with
	// DescribeByTag.
	Tags map[string]string
	// ClientToken makes the call idempotent: repeating it with the same
	// token and parameters returns the same EIPs.
	ClientToken string
}

func addressOf(a *vpcsdk.Address) Address {
	out := Address{
		ID: str(a.AddressId), Name: str(a.AddressName), PublicIP: str(a.AddressIp), Status: str(a.AddressStatus),
		ISP: str(a.InternetServiceProvider), ChargeType: str(a.InternetChargeType),
		InstanceID: str(a.InstanceId), ENIID: str(a.NetworkInterfaceId), PrivateIP: str(a.PrivateAddressIp),
	}
	if a.Bandwidth != nil {
		out.Bandwidth = int64(*a.Bandwidth) //nolint:gosec // Mbps, far below 2^63
	}
	if len(a.TagSet) > 0 {
		out.Tags = make(map[string]string, len(a.TagSet))
		for _, t := range a.TagSet {
			out.Tags[str(t.Key)] = str(t.Value)
		}
	}
	return out
}

// Allocate allocates EIPs and returns their ids and the task id.
func (c *Client) Allocate(ctx context.Context, r AllocateRequest) (ids []string, taskID string, err error) {
	const op = "allocate addresses"
	req := vpcsdk.NewAllocateAddressesRequest()
	req.AddressCount = ptr(max(r.Count, 1))
	if r.Name != "" {
		req.AddressName = &r.Name
	}
	if r.ISP != "" {
		req.InternetServiceProvider = &r.ISP
	}
	if r.ChargeType != "" {
		req.InternetChargeType = &r.ChargeType
	}
	if r.Bandwidth > 0 {
		req.InternetMaxBandwidthOut = &r.Bandwidth
	}
	if r.ClientToken != "" {
		req.ClientToken = &r.ClientToken
	}
	for _, k := range slices.Sorted(maps.Keys(r.Tags)) {
		req.Tags = append(req.Tags, &vpcsdk.Tag{Key: ptr(k), Value: ptr(r.Tags[k])})
	}
	resp, err := invoke(ctx, c, "AllocateAddresses", req, c.sdk.AllocateAddressesWithContext)
	if err != nil {
		return nil, "", wrapErr(op, err)
	}
	if resp.Response == nil {
		return nil, "", emptyAnswer(op)
	}
	for _, id := range resp.Response.AddressSet {
		ids = append(ids, str(id))
	}
	return ids, str(resp.Response.TaskId), nil
}

// Describe returns the addresses of ids that exist, in the order of ids;
// ids that do not exist are left out. Concurrent callers are coalesced
// into DescribeAddresses calls of up to 100 ids.
func (c *Client) Describe(ctx context.Context, ids []string) ([]Address, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	found, err := c.describes.Do(ctx, "", ids)
	if err != nil {
		return nil, wrapErr("describe addresses", err)
	}
	out := make([]Address, 0, len(ids))
	for _, id := range ids {
		if a, ok := found[id]; ok {
			out = append(out, a)
		}
	}
	return out, nil
}

// flushDescribe describes the ids of every waiting caller, 100 per call.
// A malformed id fails only the callers who asked for it.
func (c *Client) flushDescribe(ctx context.Context, _ string, reqs []*tcapi.Pending[[]string, map[string]Address]) {
	const op, action = "describe addresses", "DescribeAddresses"
	reqs = tcapi.Live(reqs)
	found := map[string]Address{}
	failed := callPerID(reqs, func(err error) bool { return IsInvalid(err) }, func(ids []string) error {
		req := vpcsdk.NewDescribeAddressesRequest()
		req.AddressIds = ptrs(ids)
		req.Limit = ptr(int64(maxDescribePage))
		c.api.Metrics.BatchSize.WithLabelValues(action).Observe(float64(len(ids)))
		resp, err := invoke(ctx, c, action, req, c.sdk.DescribeAddressesWithContext)
		if err != nil {
			return wrapErr(op, err)
		}
		if resp.Response == nil {
			return emptyAnswer(op)
		}
		for _, a := range resp.Response.AddressSet {
			found[str(a.AddressId)] = addressOf(a)
		}
		return nil
	})
	for _, p := range reqs {
		if err := firstErr(p.In, failed); err != nil {
			p.Reply(nil, err)
			continue
		}
		own := make(map[string]Address, len(p.In))
		for _, id := range p.In {
			if a, ok := found[id]; ok {
				own[id] = a
			}
		}
		p.Reply(own, nil)
	}
}

// DescribeByTag returns every address of the region tagged key=value,
// page by page, e.g. to find what an allocation whose answer was lost
// left behind.
func (c *Client) DescribeByTag(ctx context.Context, key, value string) ([]Address, error) {
	const op = "describe addresses by tag"
	if key == "" {
		return nil, tcapi.LocalErr(op, tcapi.Invalid, "no tag key given")
	}
	var out []Address
	for offset := int64(0); ; offset += maxDescribePage {
		req := vpcsdk.NewDescribeAddressesRequest()
		req.Filters = []*vpcsdk.Filter{{Name: ptr("tag:" + key), Values: []*string{&value}}}
		req.Offset, req.Limit = ptr(offset), ptr(int64(maxDescribePage))
		resp, err := invoke(ctx, c, "DescribeAddresses", req, c.sdk.DescribeAddressesWithContext)
		if err != nil {
			return nil, wrapErr(op, err)
		}
		if resp.Response == nil {
			return nil, emptyAnswer(op)
		}
		for _, a := range resp.Response.AddressSet {
			out = append(out, addressOf(a))
		}
		if len(resp.Response.AddressSet) < maxDescribePage || int64(len(out)) >= derefInt(resp.Response.TotalCount) {
			return out, nil
		}
	}
}

// Associate binds address id to privateIP on the ENI eniID.
func (c *Client) Associate(ctx context.Context, id, eniID, privateIP string) (taskID string, err error) {
	req := vpcsdk.NewAssociateAddressRequest()
	req.AddressId, req.NetworkInterfaceId, req.PrivateIpAddress = &id, &eniID, &privateIP
	return c.associate(ctx, req)
}

// AssociateInstance binds address id to the primary private IP of a CVM
// instance.
func (c *Client) AssociateInstance(ctx context.Context, id, instanceID string) (taskID string, err error) {
	req := vpcsdk.NewAssociateAddressRequest()
	req.AddressId, req.InstanceId = &id, &instanceID
	return c.associate(ctx, req)
}

func (c *Client) associate(ctx context.Context, req *vpcsdk.AssociateAddressRequest) (string, error) {
	const op = "associate address"
	resp, err := invoke(ctx, c, "AssociateAddress", req, c.sdk.AssociateAddressWithContext)
	if err != nil {
		return "", wrapErr(op, err)
	}
	if resp.Response == nil {
		return "", emptyAnswer(op)
	}
	return str(resp.Response.TaskId), nil
}

// Disassociate unbinds address id from whatever it is bound to.
func (c *Client) Disassociate(ctx context.Context, id string) (taskID string, err error) {
	const op = "disassociate address"
	req := vpcsdk.NewDisassociateAddressRequest()
	req.AddressId = &id
	resp, err := invoke(ctx, c, "DisassociateAddress", req, c.sdk.DisassociateAddressWithContext)
	if err != nil {
		return "", wrapErr(op, err)
	}
	if resp.Response == nil {
		return "", emptyAnswer(op)
	}
	return str(resp.Response.TaskId), nil
}

// Release releases unbound addresses. Concurrent callers are coalesced
// into ReleaseAddresses calls of up to 100 ids; an id that is missing or
// still bound fails only its callers. A caller whose ids landed in
// different calls gets the task id of the last one.
func (c *Client) Release(ctx context.Context, ids []string) (taskID string, err error) {
	if len(ids) == 0 {
		return "", nil
	}
	task, err := c.releases.Do(ctx, "", ids)
	return task, wrapErr("release addresses", err)
}

func (c *Client) flushRelease(ctx context.Context, _ string, reqs []*tcapi.Pending[[]string, string]) {
	const op, action = "release addresses", "ReleaseAddresses"
	reqs = tcapi.Live(reqs)
	tasks := map[string]string{}
	// The API refuses the whole call for one missing or bound id, so such
	// refusals are narrowed down to the ids concerned.
	split := func(err error) bool { return IsNotFound(err) || IsBusy(err) || IsInvalid(err) }
	failed := callPerID(reqs, split, func(ids []string) error {
		req := vpcsdk.NewReleaseAddressesRequest()
		req.AddressIds = ptrs(ids)
		c.api.Metrics.BatchSize.WithLabelValues(action).Observe(float64(len(ids)))
		resp, err := invoke(ctx, c, action, req, c.sdk.ReleaseAddressesWithContext)
		if err != nil {
			return wrapErr(op, err)
		}
		if resp.Response == nil {
			return emptyAnswer(op)
		}
		for _, id := range ids {
			tasks[id] = str(resp.Response.TaskId)
		}
		return nil
	})
	for _, p := range reqs {
		if err := firstErr(p.In, failed); err != nil {
			p.Reply("", err)
			continue
		}
		p.Reply(tasks[p.In[len(p.In)-1]], nil)
	}
}

// Rename sets the name of address id (ModifyAddressAttribute).
func (c *Client) Rename(ctx context.Context, id, name string) error {
	const op = "rename address"
	req := vpcsdk.NewModifyAddressAttributeRequest()
	req.AddressId, req.AddressName = &id, &name
	if _, err := invoke(ctx, c, "ModifyAddressAttribute", req, c.sdk.ModifyAddressAttributeWithContext); err != nil {
		return wrapErr(op, err)
	}
	return nil
}

// ENIOf returns the ENI that holds privateIP, e.g. a Pod's IP under
// VPC-CNI; a NotFound error when no ENI holds it.
func (c *Client) ENIOf(ctx context.Context, privateIP string) (eniID string, err error) {
	const op = "find the network interface of a private IP"
	req := vpcsdk.NewDescribeNetworkInterfacesRequest()
	req.Filters = []*vpcsdk.Filter{
		{Name: ptr("address-ip"), Values: []*string{&privateIP}},
		{Name: ptr("ip-exact-match"), Values: []*string{ptr("true")}}, // else one IP matches as a suffix
	}
	resp, err := invoke(ctx, c, "DescribeNetworkInterfaces", req, c.sdk.DescribeNetworkInterfacesWithContext)
	if err != nil {
		return "", wrapErr(op, err)
	}
	if resp.Response == nil {
		return "", emptyAnswer(op)
	}
	for _, n := range resp.Response.NetworkInterfaceSet {
		if id := str(n.NetworkInterfaceId); id != "" {
			return id, nil
		}
	}
	return "", tcapi.LocalErr(op, tcapi.NotFound, "no network interface holds "+privateIP)
}

// TaskDone reports whether the asynchronous task taskID has ended
// successfully; a task that FAILED is an error.
func (c *Client) TaskDone(ctx context.Context, taskID string) (bool, error) {
	const op = "describe task result"
	n, perr := strconv.ParseUint(taskID, 10, 64)
	if perr != nil {
		return false, tcapi.LocalErr(op, tcapi.Invalid, "task id "+strconv.Quote(taskID)+" is not a number")
	}
	req := vpcsdk.NewDescribeTaskResultRequest()
	req.TaskId = &n
	resp, err := invoke(ctx, c, "DescribeTaskResult", req, c.sdk.DescribeTaskResultWithContext)
	if err != nil {
		return false, wrapErr(op, err)
	}
	if resp.Response == nil || resp.Response.Result == nil {
		return false, emptyAnswer(op)
	}
	switch r := *resp.Response.Result; r {
	case "SUCCESS":
		return true, nil
	case "FAILED":
		return false, TaskFailed(taskID)
	default:
		return false, nil
	}
}

// emptyAnswer reports an answer without the Response envelope, which the
// SDK turns into a nil Response rather than an error.
func emptyAnswer(op string) error {
	return tcapi.LocalErr(op, tcapi.Transient, "the API answered without a Response")
}

// callPerID sends the ids of reqs, each once, through call in chunks of up
// to 100, halving a refused chunk while split says the refusal may concern
// only some ids. It returns the error of each id that failed.
func callPerID[R any](reqs []*tcapi.Pending[[]string, R], split func(error) bool, call func([]string) error) map[string]error {
	seen := map[string]bool{}
	var ids []string
	for _, p := range reqs {
		for _, id := range p.In {
			if !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
	}
	failed := map[string]error{}
	tcapi.CallIsolatingIf(ids, maxAddressIDs, split, call, func(ids []string, err error) {
		for _, id := range ids {
			failed[id] = err
		}
	})
	return failed
}

func firstErr(ids []string, failed map[string]error) error {
	for _, id := range ids {
		if err := failed[id]; err != nil {
			return err
		}
	}
	return nil
}

func ptrs(ss []string) []*string {
	out := make([]*string, len(ss))
	for i := range ss {
		out[i] = &ss[i]
	}
	return out
}

func derefInt(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}
