package emulator_test

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clb "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common"
	vpc "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/vpc/v20170312"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator/emulatortest"
)

var eipIDRe = regexp.MustCompile(`^eip-[a-z0-9]{8}$`)

// vpcEnv starts an emulator and returns it with a vpc and a clb client on
// its one endpoint.
func vpcEnv(t *testing.T, cfg emulator.Config) (*emulator.Emulator, string, *vpc.Client) {
	t.Helper()
	e, endpoint := emulatortest.Start(t, cfg)
	return e, endpoint, emulatortest.DefaultVPCClient(t, endpoint)
}

// allocate allocates n EIPs and waits for the task; mutate may change the request.
func allocate(t *testing.T, c *vpc.Client, n int64, mutate func(*vpc.AllocateAddressesRequest)) []string {
	t.Helper()
	req := vpc.NewAllocateAddressesRequest()
	req.AddressCount = common.Int64Ptr(n)
	if mutate != nil {
		mutate(req)
	}
	resp, err := c.AllocateAddresses(req)
	must(t, err)
	if r := waitEIPTask(t, c, *resp.Response.TaskId); r != "SUCCESS" {
		t.Fatalf("AllocateAddresses task %s", r)
	}
	return common.StringValues(resp.Response.AddressSet)
}

// taskResult asks DescribeTaskResult once.
func taskResult(t *testing.T, c *vpc.Client, id string) string {
	t.Helper()
	n, err := parseTaskID(id)
	must(t, err)
	req := vpc.NewDescribeTaskResultRequest()
	req.TaskId = common.Uint64Ptr(n)
	resp, err := c.DescribeTaskResult(req)
	must(t, err)
	if *resp.Response.TaskId != n {
		t.Fatalf("DescribeTaskResult answered task %d, asked %d", *resp.Response.TaskId, n)
	}
	return *resp.Response.Result
}

func parseTaskID(id string) (uint64, error) {
	var n uint64
	err := json.Unmarshal([]byte(id), &n)
	return n, err
}

// waitEIPTask polls DescribeTaskResult until the task is no longer RUNNING.
func waitEIPTask(t *testing.T, c *vpc.Client, id string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if r := taskResult(t, c, id); r != "RUNNING" {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("vpc task %s still running after 10s", id)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// address describes one EIP by id; nil when it does not exist.
func address(t *testing.T, c *vpc.Client, id string) *vpc.Address {
	t.Helper()
	req := vpc.NewDescribeAddressesRequest()
	req.AddressIds = common.StringPtrs([]string{id})
	resp, err := c.DescribeAddresses(req)
	must(t, err)
	if len(resp.Response.AddressSet) == 0 {
		return nil
	}
	return resp.Response.AddressSet[0]
}

func associateENI(c *vpc.Client, id, eni, ip string) (string, error) {
	req := vpc.NewAssociateAddressRequest()
	req.AddressId, req.NetworkInterfaceId, req.PrivateIpAddress = &id, &eni, &ip
	resp, err := c.AssociateAddress(req)
	if err != nil {
		return "", err
	}
	return *resp.Response.TaskId, nil
}

func disassociate(c *vpc.Client, id string) (string, error) {
	req := vpc.NewDisassociateAddressRequest()
	req.AddressId = &id
	resp, err := c.DisassociateAddress(req)
	if err != nil {
		return "", err
	}
	return *resp.Response.TaskId, nil
}

func release(c *vpc.Client, ids ...string) (string, error) {
	req := vpc.NewReleaseAddressesRequest()
	req.AddressIds = common.StringPtrs(ids)
	resp, err := c.ReleaseAddresses(req)
	if err != nil {
		return "", err
	}
	return *resp.Response.TaskId, nil
}

func filter(name string, values ...string) *vpc.Filter {
	return &vpc.Filter{Name: &name, Values: common.StringPtrs(values)}
}

// describeFiltered returns the ids DescribeAddresses finds with filters.
func describeFiltered(t *testing.T, c *vpc.Client, filters ...*vpc.Filter) []string {
	t.Helper()
	req := vpc.NewDescribeAddressesRequest()
	req.Filters = filters
	req.Limit = common.Int64Ptr(100)
	resp, err := c.DescribeAddresses(req)
	must(t, err)
	var ids []string
	for _, a := range resp.Response.AddressSet {
		ids = append(ids, *a.AddressId)
	}
	slices.Sort(ids)
	return ids
}

// TestVPCAddressLifecycle walks one EIP through every state with 50 ms
// tasks, so that the transient states are seen, and checks both services
// answer on the one endpoint.
func TestVPCAddressLifecycle(t *testing.T) {
	cfg := instant()
	cfg.TaskDuration = 200 * time.Millisecond
	e, endpoint, c := vpcEnv(t, cfg)
	eni := emulatortest.AddENI(t, e, "", "10.1.0.5", "10.1.0.6")

	req := vpc.NewAllocateAddressesRequest()
	req.AddressName = common.StringPtr("game-1")
	req.InternetMaxBandwidthOut = common.Int64Ptr(10)
	req.InternetChargeType = common.StringPtr("BANDWIDTH_POSTPAID_BY_HOUR")
	req.Tags = []*vpc.Tag{{Key: common.StringPtr("owner"), Value: common.StringPtr("pod-uid-1")}}
	resp, err := c.AllocateAddresses(req)
	must(t, err)
	id := *resp.Response.AddressSet[0]
	if !eipIDRe.MatchString(id) || len(resp.Response.AddressSet) != 1 {
		t.Fatalf("AddressSet = %v", common.StringValues(resp.Response.AddressSet))
	}
	a := address(t, c, id)
	if *a.AddressStatus != "CREATING" || taskResult(t, c, *resp.Response.TaskId) != "RUNNING" {
		t.Fatalf("just allocated: status %s", *a.AddressStatus)
	}
	if r := waitEIPTask(t, c, *resp.Response.TaskId); r != "SUCCESS" {
		t.Fatalf("allocate task %s", r)
	}
	a = address(t, c, id)
	if *a.AddressStatus != "UNBIND" || *a.AddressName != "game-1" || *a.Bandwidth != 10 ||
		*a.InternetChargeType != "BANDWIDTH_POSTPAID_BY_HOUR" || *a.InternetServiceProvider != "BGP" ||
		len(a.TagSet) != 1 || *a.TagSet[0].Value != "pod-uid-1" || a.NetworkInterfaceId != nil {
		t.Fatalf("allocated address %+v", a)
	}

	task, err := associateENI(c, id, eni, "10.1.0.6")
	must(t, err)
	if s := *address(t, c, id).AddressStatus; s != "BINDING" {
		t.Fatalf("status after AssociateAddress = %s, want BINDING", s)
	}
	if r := waitEIPTask(t, c, task); r != "SUCCESS" {
		t.Fatalf("associate task %s", r)
	}
	a = address(t, c, id)
	// The ENI belongs to no instance: the real API calls that BIND_ENI.
	if *a.AddressStatus != "BIND_ENI" || *a.NetworkInterfaceId != eni || *a.PrivateAddressIp != "10.1.0.6" {
		t.Fatalf("bound address %+v", a)
	}
	// The ENI shows the EIP on that private IP.
	ereq := vpc.NewDescribeNetworkInterfacesRequest()
	ereq.NetworkInterfaceIds = common.StringPtrs([]string{eni})
	eresp, err := c.DescribeNetworkInterfaces(ereq)
	must(t, err)
	ips := eresp.Response.NetworkInterfaceSet[0].PrivateIpAddressSet
	if len(ips) != 2 || ips[0].AddressId != nil || ips[1].AddressId == nil || *ips[1].AddressId != id || *ips[1].PublicIpAddress != *a.AddressIp {
		t.Fatalf("ENI private IPs %+v", ips)
	}

	mreq := vpc.NewModifyAddressAttributeRequest()
	mreq.AddressId, mreq.AddressName = &id, common.StringPtr("renamed")
	_, err = c.ModifyAddressAttribute(mreq)
	must(t, err)

	task, err = disassociate(c, id)
	must(t, err)
	if s := *address(t, c, id).AddressStatus; s != "UNBINDING" {
		t.Fatalf("status after DisassociateAddress = %s, want UNBINDING", s)
	}
	waitEIPTask(t, c, task)
	if a = address(t, c, id); *a.AddressStatus != "UNBIND" || *a.AddressName != "renamed" || a.PrivateAddressIp != nil {
		t.Fatalf("unbound address %+v", a)
	}

	task, err = release(c, id)
	must(t, err)
	if s := *address(t, c, id).AddressStatus; s != "OFFLINING" {
		t.Fatalf("status after ReleaseAddresses = %s, want OFFLINING", s)
	}
	_, err = c.ModifyAddressAttribute(mreq)
	wantCode(t, err, "UnsupportedOperation.AddressStatusNotPermit")
	if r := waitEIPTask(t, c, task); r != "SUCCESS" {
		t.Fatalf("release task %s", r)
	}
	if address(t, c, id) != nil || len(e.Inventory().EIPs) != 0 {
		t.Fatal("released address still described")
	}

	// The clb service still answers on the same endpoint.
	_, err = emulatortest.DefaultClient(t, endpoint).DescribeQuota(clb.NewDescribeQuotaRequest())
	must(t, err)
	if e.CallCount("AllocateAddresses") != 1 || e.Calls()["DescribeTaskResult"]["OK"] == 0 {
		t.Fatalf("vpc calls not counted: %v", e.Calls())
	}
}

func TestVPCAssociateInstance(t *testing.T) {
	e, _, c := vpcEnv(t, instant())
	primary := emulatortest.AddENI(t, e, "ins-abcd1234", "10.2.0.2", "10.2.0.3")
	emulatortest.AddENI(t, e, "ins-abcd1234", "10.2.0.9") // a secondary ENI of the same instance
	ids := allocate(t, c, 2, nil)

	req := vpc.NewAssociateAddressRequest()
	req.AddressId, req.InstanceId = &ids[0], common.StringPtr("ins-abcd1234")
	resp, err := c.AssociateAddress(req)
	must(t, err)
	waitEIPTask(t, c, *resp.Response.TaskId)
	a := address(t, c, ids[0])
	// By instance, the EIP goes to the primary IP of the primary ENI.
	if *a.AddressStatus != "BIND" || *a.InstanceId != "ins-abcd1234" || *a.NetworkInterfaceId != primary || *a.PrivateAddressIp != "10.2.0.2" {
		t.Fatalf("instance-bound address %+v", a)
	}
	req.AddressId = &ids[1]
	_, err = c.AssociateAddress(req)
	wantCode(t, err, "InvalidInstanceId.AlreadyBindEip")
	req.InstanceId = common.StringPtr("ins-00000000")
	_, err = c.AssociateAddress(req)
	wantCode(t, err, "ResourceNotFound")
	if got := describeFiltered(t, c, filter("instance-id", "ins-abcd1234")); !slices.Equal(got, ids[:1]) {
		t.Fatalf("instance-id filter found %v", got)
	}
}

func TestVPCErrorCodes(t *testing.T) {
	cfg := instant()
	cfg.ActionTaskDuration = map[string]time.Duration{"AssociateAddress": time.Minute}
	e, endpoint, c := vpcEnv(t, cfg)
	eni := emulatortest.AddENI(t, e, "", "10.3.0.1", "10.3.0.2")
	ids := allocate(t, c, 3, nil)
	bound := ids[0]
	binding, err := associateENI(c, bound, eni, "10.3.0.1") // stays BINDING: the task takes a minute
	must(t, err)
	if taskResult(t, c, binding) != "RUNNING" {
		t.Fatal("associate task not running")
	}

	_, err = associateENI(c, "eip-bad", eni, "10.3.0.2")
	wantCode(t, err, "InvalidParameterValue.AddressIdMalformed")
	_, err = associateENI(c, "eip-00000000", eni, "10.3.0.2")
	wantCode(t, err, "InvalidAddressId.NotFound")
	_, err = associateENI(c, bound, eni, "10.3.0.2")
	wantCode(t, err, "InvalidAddressIdStatus.NotPermit") // binding
	_, err = associateENI(c, ids[1], "eni-00000000", "10.3.0.2")
	wantCode(t, err, "ResourceNotFound")
	_, err = associateENI(c, ids[1], eni, "10.9.9.9")
	wantCode(t, err, "InvalidParameterValue")
	_, err = associateENI(c, ids[1], eni, "10.3.0.1")
	wantCode(t, err, "InvalidPrivateIpAddress.AlreadyBindEip")
	both := vpc.NewAssociateAddressRequest()
	both.AddressId, both.InstanceId, both.NetworkInterfaceId = &ids[1], common.StringPtr("ins-1"), &eni
	_, err = c.AssociateAddress(both)
	wantCode(t, err, "InvalidParameterConflict")
	neither := vpc.NewAssociateAddressRequest()
	neither.AddressId = &ids[1]
	_, err = c.AssociateAddress(neither)
	wantCode(t, err, "InvalidParameterValue.MissingAssociateEntity")

	_, err = disassociate(c, ids[1])
	wantCode(t, err, "InvalidAddressIdStatus.NotPermit") // not bound
	_, err = release(c, ids[1], bound)
	wantCode(t, err, "InvalidAddressIdStatus.NotPermit") // one is binding
	_, err = release(c, "eip-00000000")
	wantCode(t, err, "InvalidAddressId.NotFound")
	if address(t, c, ids[1]) == nil {
		t.Fatal("a refused ReleaseAddresses released part of its addresses")
	}

	bad := func(mutate func(*vpc.AllocateAddressesRequest), want string) {
		t.Helper()
		req := vpc.NewAllocateAddressesRequest()
		mutate(req)
		_, err := c.AllocateAddresses(req)
		wantCode(t, err, want)
	}
	bad(func(r *vpc.AllocateAddressesRequest) { r.AddressCount = common.Int64Ptr(0) }, "InvalidParameterValue.Range")
	bad(func(r *vpc.AllocateAddressesRequest) { r.InternetMaxBandwidthOut = common.Int64Ptr(101) }, "InvalidParameterValue.BandwidthOutOfRange")
	bad(func(r *vpc.AllocateAddressesRequest) { r.InternetServiceProvider = common.StringPtr("XYZ") }, "InvalidParameterValue")

	dreq := vpc.NewDescribeAddressesRequest()
	dreq.AddressIds = common.StringPtrs(ids[:1])
	dreq.Filters = []*vpc.Filter{filter("address-status", "UNBIND")}
	_, err = c.DescribeAddresses(dreq)
	wantCode(t, err, "InvalidParameter")
	dreq = vpc.NewDescribeAddressesRequest()
	dreq.Filters = []*vpc.Filter{filter("colour", "blue")}
	_, err = c.DescribeAddresses(dreq)
	wantCode(t, err, "InvalidParameter.InvalidFilter")
	dreq = vpc.NewDescribeAddressesRequest()
	for range 11 {
		dreq.Filters = append(dreq.Filters, filter("address-status", "UNBIND"))
	}
	_, err = c.DescribeAddresses(dreq)
	wantCode(t, err, "LimitExceeded.NumberOfFilters")
	nreq := vpc.NewDescribeNetworkInterfacesRequest()
	nreq.Filters = []*vpc.Filter{filter("private-ip-address", "10.3.0.1")} // the EIP filter name, not the ENI one
	_, err = c.DescribeNetworkInterfaces(nreq)
	wantCode(t, err, "InvalidParameter.FilterInvalidKey")
	dreq = vpc.NewDescribeAddressesRequest()
	dreq.Limit = common.Int64Ptr(101)
	_, err = c.DescribeAddresses(dreq)
	wantCode(t, err, "InvalidParameterValue.LimitExceeded")
	dreq = vpc.NewDescribeAddressesRequest()
	dreq.AddressIds = common.StringPtrs([]string{"eip-x"})
	_, err = c.DescribeAddresses(dreq)
	wantCode(t, err, "InvalidParameterValue.AddressIdMalformed")

	treq := vpc.NewDescribeTaskResultRequest()
	treq.TaskId = common.Uint64Ptr(1)
	_, err = c.DescribeTaskResult(treq)
	wantCode(t, err, "InvalidParameter")

	// An action clb has is not a vpc action, and the reverse.
	vreq := vpc.NewDescribeAddressesRequest()
	vreq.Init().WithApiInfo("vpc", "2017-03-12", "DescribeLoadBalancers")
	vresp := vpc.NewDescribeAddressesResponse()
	msg := wantCode(t, c.Send(vreq, vresp), "InvalidAction")
	if !strings.Contains(msg, "vpc 2017-03-12") {
		t.Fatalf("InvalidAction message %q does not name the vpc service", msg)
	}
	creq := clb.NewDescribeQuotaRequest()
	creq.Init().WithApiInfo("clb", "2018-03-17", "AllocateAddresses")
	wantCode(t, emulatortest.DefaultClient(t, endpoint).Send(creq, clb.NewDescribeQuotaResponse()), "InvalidAction")
	vreq = vpc.NewDescribeAddressesRequest()
	vreq.Init().WithApiInfo("vpc", "2018-03-17", "DescribeAddresses")
	wantCode(t, c.Send(vreq, vpc.NewDescribeAddressesResponse()), "NoSuchVersion")
}

func TestVPCQuotaAndDailyLimit(t *testing.T) {
	cfg := instant()
	cfg.EIPQuota, cfg.EIPDailyAllocateLimit = 3, 5
	e, _, c := vpcEnv(t, cfg)
	ids := allocate(t, c, 2, nil)
	req := vpc.NewAllocateAddressesRequest()
	req.AddressCount = common.Int64Ptr(2)
	_, err := c.AllocateAddresses(req)
	wantCode(t, err, "AddressQuotaLimitExceeded") // 2 + 2 > 3, and nothing was allocated
	if n := len(e.Inventory().EIPs); n != 2 {
		t.Fatalf("%d EIPs after a refused allocation, want 2", n)
	}
	ids = append(ids, allocate(t, c, 1, nil)...)
	_, err = release(c, ids...)
	must(t, err)
	allocate(t, c, 2, nil) // 5 allocated today: the daily limit is reached, the quota is not
	_, err = c.AllocateAddresses(vpc.NewAllocateAddressesRequest())
	wantCode(t, err, "AddressQuotaLimitExceeded.DailyAllocate")
	// Quotas are per region.
	other := emulatortest.NewVPCClient(t, e.Endpoint(), emulator.DefaultSecretID, emulator.DefaultSecretKey, "ap-shanghai")
	allocate(t, other, 3, nil)
}

func TestVPCDescribePagingAndFilters(t *testing.T) {
	cfg := instant()
	cfg.EIPQuota = 30
	e, _, c := vpcEnv(t, cfg)
	tagged := func(team string) func(*vpc.AllocateAddressesRequest) {
		return func(r *vpc.AllocateAddressesRequest) {
			r.Tags = []*vpc.Tag{{Key: common.StringPtr("team"), Value: &team}}
			r.AddressName = common.StringPtr("eip-of-" + team)
		}
	}
	a := allocate(t, c, 15, tagged("a"))
	b := allocate(t, c, 10, tagged("b"))
	all := append(slices.Clone(a), b...)

	var seen []string
	for off := int64(0); off < 30; off += 7 {
		req := vpc.NewDescribeAddressesRequest()
		req.Offset, req.Limit = common.Int64Ptr(off), common.Int64Ptr(7)
		resp, err := c.DescribeAddresses(req)
		must(t, err)
		if *resp.Response.TotalCount != 25 {
			t.Fatalf("TotalCount = %d, want 25", *resp.Response.TotalCount)
		}
		for _, x := range resp.Response.AddressSet {
			seen = append(seen, *x.AddressId)
		}
	}
	resp, err := c.DescribeAddresses(vpc.NewDescribeAddressesRequest())
	must(t, err)
	if len(resp.Response.AddressSet) != 20 {
		t.Fatalf("default page holds %d, want 20", len(resp.Response.AddressSet))
	}
	if !slices.Equal(seen, all) {
		t.Fatalf("pages gave %v, want every address once in allocation order %v", seen, all)
	}

	sorted := func(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }
	if got := describeFiltered(t, c, filter("tag:team", "b")); !slices.Equal(got, sorted(b)) {
		t.Fatalf("tag:team=b found %v", got)
	}
	if got := describeFiltered(t, c, filter("tag-key", "team")); len(got) != 25 {
		t.Fatalf("tag-key=team found %d", len(got))
	}
	if got := describeFiltered(t, c, filter("tag:team", "c")); len(got) != 0 {
		t.Fatalf("tag:team=c found %v", got)
	}
	if got := describeFiltered(t, c, filter("address-name", "eip-of-a"), filter("address-id", a[3], b[0])); !slices.Equal(got, a[3:4]) {
		t.Fatalf("name AND id filters found %v", got)
	}
	ip := *address(t, c, b[2]).AddressIp
	if got := describeFiltered(t, c, filter("address-ip", ip)); !slices.Equal(got, b[2:3]) {
		t.Fatalf("address-ip found %v", got)
	}
	eni := emulatortest.AddENI(t, e, "", "10.4.0.1")
	task, err := associateENI(c, a[0], eni, "10.4.0.1")
	must(t, err)
	waitEIPTask(t, c, task)
	for _, f := range []*vpc.Filter{filter("private-ip-address", "10.4.0.1"), filter("network-interface-id", eni), filter("address-status", "BIND_ENI")} {
		if got := describeFiltered(t, c, f); !slices.Equal(got, a[:1]) {
			t.Fatalf("filter %s found %v", *f.Name, got)
		}
	}
	if got := describeFiltered(t, c, filter("address-status", "UNBIND")); len(got) != 24 {
		t.Fatalf("UNBIND filter found %d, want 24", len(got))
	}
	if got := describeFiltered(t, c, filter("is-arrears", "TRUE")); len(got) != 0 {
		t.Fatalf("is-arrears=TRUE found %v", got)
	}
}

func TestVPCDescribeNetworkInterfaces(t *testing.T) {
	cfg := instant()
	cfg.AutoENI = true
	e, _, c := vpcEnv(t, cfg)
	n1 := emulatortest.AddENI(t, e, "ins-11111111", "10.5.0.11", "10.5.0.12")
	n2 := emulatortest.AddENI(t, e, "", "10.5.1.12")
	find := func(fs ...*vpc.Filter) []string {
		t.Helper()
		req := vpc.NewDescribeNetworkInterfacesRequest()
		req.Filters = fs
		resp, err := c.DescribeNetworkInterfaces(req)
		must(t, err)
		var ids []string
		for _, n := range resp.Response.NetworkInterfaceSet {
			ids = append(ids, *n.NetworkInterfaceId)
		}
		if int(*resp.Response.TotalCount) != len(ids) {
			t.Fatalf("TotalCount %d for %d ENIs", *resp.Response.TotalCount, len(ids))
		}
		return ids
	}
	if got := find(filter("address-ip", "10.5.0.12"), filter("ip-exact-match", "true")); !slices.Equal(got, []string{n1}) {
		t.Fatalf("exact address-ip found %v", got)
	}
	if got := find(filter("address-ip", ".12")); len(got) != 2 {
		t.Fatalf("address-ip suffix .12 found %v, want both ENIs", got)
	}
	if got := find(filter("attachment.instance-id", "ins-11111111")); !slices.Equal(got, []string{n1}) {
		t.Fatalf("attachment.instance-id found %v", got)
	}
	if got := find(filter("is-primary", "true")); !slices.Equal(got, []string{n1}) {
		t.Fatalf("is-primary found %v", got)
	}
	_ = n2
	// AutoENI: a private IP nobody registered gets an ENI when looked up exactly.
	auto := find(filter("address-ip", "10.6.0.7"), filter("ip-exact-match", "true"))
	if len(auto) != 1 || auto[0] == n1 || auto[0] == n2 {
		t.Fatalf("AutoENI lookup found %v", auto)
	}
	if again := find(filter("address-ip", "10.6.0.7"), filter("ip-exact-match", "true")); !slices.Equal(again, auto) {
		t.Fatalf("second lookup found %v, want the same ENI %v", again, auto)
	}

	req := vpc.NewDescribeNetworkInterfacesRequest()
	req.NetworkInterfaceIds = common.StringPtrs([]string{"eni-00000000"})
	_, err := c.DescribeNetworkInterfaces(req)
	wantCode(t, err, "ResourceNotFound")
	req.Filters = []*vpc.Filter{filter("address-ip", "10.5.0.11")}
	_, err = c.DescribeNetworkInterfaces(req)
	wantCode(t, err, "InvalidParameter.Coexist")

	req = vpc.NewDescribeNetworkInterfacesRequest()
	req.Limit = common.Uint64Ptr(2)
	resp, err := c.DescribeNetworkInterfaces(req)
	must(t, err)
	if len(resp.Response.NetworkInterfaceSet) != 2 || *resp.Response.TotalCount != 3 {
		t.Fatalf("page of 2: %d ENIs, TotalCount %d", len(resp.Response.NetworkInterfaceSet), *resp.Response.TotalCount)
	}
	req.Offset = common.Uint64Ptr(2)
	resp, err = c.DescribeNetworkInterfaces(req)
	must(t, err)
	if len(resp.Response.NetworkInterfaceSet) != 1 {
		t.Fatalf("second page: %d ENIs, want 1", len(resp.Response.NetworkInterfaceSet))
	}
}

// TestEIPIdleAccounting moves the emulator's clock (within the signature
// window) and reads what idle EIPs cost, through the Go method and the
// admin endpoint.
func TestEIPIdleAccounting(t *testing.T) {
	var offset atomic.Int64
	cfg := instant()
	cfg.Clock = func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	advance := func(d time.Duration) { offset.Add(int64(d)) }
	e, endpoint, c := vpcEnv(t, cfg)
	eni := emulatortest.AddENI(t, e, "", "10.7.0.1")
	ids := allocate(t, c, 2, nil)
	advance(60 * time.Second)
	task, err := associateENI(c, ids[0], eni, "10.7.0.1") // ids[0] stops being idle after ~60 s
	must(t, err)
	waitEIPTask(t, c, task)
	advance(30 * time.Second)
	task, err = disassociate(c, ids[0])
	must(t, err)
	waitEIPTask(t, c, task)
	advance(10 * time.Second)
	task, err = release(c, ids[0])
	must(t, err)
	waitEIPTask(t, c, task)

	idle := e.EIPIdle()
	near := func(got, want float64) bool { return got >= want && got < want+5 } // the real clock runs too
	if !near(idle.ReleasedIdleSeconds, 70) {
		t.Fatalf("released EIP idle %.1f s, want 70 (60 before binding + 10 after)", idle.ReleasedIdleSeconds)
	}
	if len(idle.Addresses) != 1 || idle.Addresses[0].ID != ids[1] || !idle.Addresses[0].Idle || !near(idle.Addresses[0].IdleSeconds, 100) {
		t.Fatalf("held EIP idle %+v, want %s idle for 100 s", idle.Addresses, ids[1])
	}
	if !near(idle.TotalIdleSeconds, 170) {
		t.Fatalf("total idle %.1f s, want 170", idle.TotalIdleSeconds)
	}

	resp, err := http.Get("http://" + endpoint + "/_emulator/eip-idle")
	must(t, err)
	defer resp.Body.Close()
	var viaAdmin emulator.EIPIdle
	must(t, json.NewDecoder(resp.Body).Decode(&viaAdmin))
	if !near(viaAdmin.TotalIdleSeconds, 170) || len(viaAdmin.Addresses) != 1 {
		t.Fatalf("admin eip-idle %+v", viaAdmin)
	}
	if inv, _ := e.Inventory().EIP(ids[1]); !near(inv.IdleSeconds, 100) {
		t.Fatalf("inventory idle %.1f s", inv.IdleSeconds)
	}
}

func TestVPCRateLimitOwnBuckets(t *testing.T) {
	cfg := instant()
	cfg.RateLimit = 20
	e, endpoint, c := vpcEnv(t, cfg)
	limited := 0
	for range 30 {
		if _, err := c.DescribeAddresses(vpc.NewDescribeAddressesRequest()); err != nil {
			wantCode(t, err, "RequestLimitExceeded")
			limited++
		}
	}
	if limited < 5 || limited > 15 {
		t.Fatalf("%d of 30 back-to-back DescribeAddresses throttled, want about 10", limited)
	}
	// Other vpc actions and the clb actions have their own buckets.
	_, err := c.DescribeNetworkInterfaces(vpc.NewDescribeNetworkInterfacesRequest())
	must(t, err)
	_, err = emulatortest.DefaultClient(t, endpoint).DescribeQuota(clb.NewDescribeQuotaRequest())
	must(t, err)
	if got := e.Calls()["DescribeAddresses"]["RequestLimitExceeded"]; got != limited {
		t.Fatalf("counters saw %d throttled calls, the client %d", got, limited)
	}
}

func TestVPCFaultsAndFailedTasks(t *testing.T) {
	e, _, c := vpcEnv(t, instant())
	eni := emulatortest.AddENI(t, e, "", "10.8.0.1")
	must(t, e.SetFaults(emulator.Faults{Rules: []emulator.FaultRule{{Action: "AllocateAddresses", Code: "InternalError", Count: 1}}}))
	_, err := c.AllocateAddresses(vpc.NewAllocateAddressesRequest())
	wantCode(t, err, "InternalError")
	ids := allocate(t, c, 1, nil) // the rule fired its one time

	must(t, e.SetFaults(emulator.Faults{TaskFailureRate: 1, TaskFailureActions: []string{"AssociateAddress", "AllocateAddresses"}}))
	task, err := associateENI(c, ids[0], eni, "10.8.0.1")
	must(t, err)
	if r := waitEIPTask(t, c, task); r != "FAILED" {
		t.Fatalf("associate task %s, want FAILED", r)
	}
	if a := address(t, c, ids[0]); *a.AddressStatus != "UNBIND" || a.NetworkInterfaceId != nil {
		t.Fatalf("a failed association left %+v", a)
	}
	resp, err := c.AllocateAddresses(vpc.NewAllocateAddressesRequest())
	must(t, err)
	if r := waitEIPTask(t, c, *resp.Response.TaskId); r != "FAILED" {
		t.Fatalf("allocate task %s, want FAILED", r)
	}
	if address(t, c, *resp.Response.AddressSet[0]) != nil {
		t.Fatal("a failed allocation left its address")
	}
	if idle := e.EIPIdle(); idle.ReleasedIdleSeconds != 0 {
		t.Fatalf("a failed allocation was billed %.3f idle seconds", idle.ReleasedIdleSeconds)
	}
	if got := e.FaultsInjected()["TaskFailed"]; got != 2 {
		t.Fatalf("TaskFailed injected %d times, want 2", got)
	}
}

func TestVPCCAMPolicy(t *testing.T) {
	e, _, c := vpcEnv(t, instant())
	ids := allocate(t, c, 2, nil)
	p, err := emulator.ParseCAMPolicy([]byte(`{"version":"2.0","statement":[
		{"effect":"allow","action":["vpc:DescribeAddresses","vpc:ReleaseAddresses","vpc:DescribeTaskResult"],"resource":"*"},
		{"effect":"deny","action":"vpc:ReleaseAddresses","resource":"qcs::cvm:ap-guangzhou:uin/100000000001:eip/` + ids[0] + `"}]}`))
	must(t, err)
	e.SetCAMPolicy(emulator.DefaultSecretID, p)
	_, err = c.DescribeAddresses(vpc.NewDescribeAddressesRequest())
	must(t, err)
	_, err = c.AllocateAddresses(vpc.NewAllocateAddressesRequest())
	msg := wantCode(t, err, "UnauthorizedOperation")
	if !strings.Contains(msg, "vpc:AllocateAddresses") || !strings.Contains(msg, ":eip/*") {
		t.Fatalf("message %q does not name the vpc action and the eip resource", msg)
	}
	_, err = release(c, ids[0])
	wantCode(t, err, "UnauthorizedOperation")
	_, err = release(c, ids[1])
	must(t, err)

	// Bare action names in SetPolicy belong to the service that has them.
	e.SetPolicy(emulator.DefaultSecretID, []string{"DescribeAddresses"})
	_, err = c.DescribeAddresses(vpc.NewDescribeAddressesRequest())
	must(t, err)
	_, err = c.DescribeNetworkInterfaces(vpc.NewDescribeNetworkInterfacesRequest())
	wantCode(t, err, "UnauthorizedOperation")
}

func TestVPCAllocateClientToken(t *testing.T) {
	e, _, c := vpcEnv(t, instant())
	req := vpc.NewAllocateAddressesRequest()
	req.AddressCount, req.ClientToken = common.Int64Ptr(2), common.StringPtr("token-1")
	r1, err := c.AllocateAddresses(req)
	must(t, err)
	r2, err := c.AllocateAddresses(req)
	must(t, err)
	if !slices.Equal(common.StringValues(r1.Response.AddressSet), common.StringValues(r2.Response.AddressSet)) ||
		*r1.Response.TaskId != *r2.Response.TaskId || len(e.Inventory().EIPs) != 2 {
		t.Fatalf("a retried allocation with the same ClientToken allocated again: %v then %v",
			common.StringValues(r1.Response.AddressSet), common.StringValues(r2.Response.AddressSet))
	}
	req.AddressCount = common.Int64Ptr(3)
	_, err = c.AllocateAddresses(req)
	wantCode(t, err, "InvalidParameterValue")
}

func TestVPCPersistence(t *testing.T) {
	cfg := instant()
	cfg.StateFile = filepath.Join(t.TempDir(), "cloud.json")
	cfg.EIPQuota = 3
	e1, endpoint1, err := emulator.Start(cfg)
	must(t, err)
	c1 := emulatortest.DefaultVPCClient(t, endpoint1)
	eni, err := e1.AddENI("", "ins-22222222", "10.9.0.1")
	must(t, err)
	ids := allocate(t, c1, 2, nil)
	task, err := associateENI(c1, ids[0], eni, "10.9.0.1")
	must(t, err)
	waitEIPTask(t, c1, task)
	before := e1.Inventory()
	must(t, e1.Close())

	e2, endpoint2 := emulatortest.Start(t, cfg)
	c2 := emulatortest.DefaultVPCClient(t, endpoint2)
	after := e2.Inventory()
	key := func(inv emulator.Inventory) (out []string) {
		for _, a := range inv.EIPs {
			out = append(out, a.ID+"/"+a.IP+"/"+a.Status+"/"+a.ENIID)
		}
		return out
	}
	if !slices.Equal(key(after), key(before)) || len(after.EIPs) != 2 || len(after.ENIs) != 1 {
		t.Fatalf("restored EIPs %+v ENIs %+v, had %+v", after.EIPs, after.ENIs, before.EIPs)
	}
	if a := address(t, c2, ids[0]); *a.AddressStatus != "BIND" || *a.NetworkInterfaceId != eni {
		t.Fatalf("restored binding %+v", a)
	}
	if r := taskResult(t, c2, task); r != "SUCCESS" {
		t.Fatalf("restored task %s", r)
	}
	// The quota counts restored addresses; new ids never repeat old ones.
	fresh := allocate(t, c2, 1, nil)
	if slices.Contains(ids, fresh[0]) {
		t.Fatalf("id %s given twice across a restart", fresh[0])
	}
	_, err = c2.AllocateAddresses(vpc.NewAllocateAddressesRequest())
	wantCode(t, err, "AddressQuotaLimitExceeded")
}

func TestVPCAdminENIsAndInventory(t *testing.T) {
	e, endpoint, c := vpcEnv(t, instant())
	body := strings.NewReader(`{"InstanceId":"ins-33333333","PrivateIpAddresses":["10.10.0.1","10.10.0.2"]}`)
	resp, err := http.Post("http://"+endpoint+"/_emulator/enis", "application/json", body)
	must(t, err)
	var eni emulator.InventoryENI
	must(t, json.NewDecoder(resp.Body).Decode(&eni))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !eni.Primary || !slices.Equal(eni.IPs, []string{"10.10.0.1", "10.10.0.2"}) {
		t.Fatalf("admin ENI %d %+v", resp.StatusCode, eni)
	}
	resp, err = http.Post("http://"+endpoint+"/_emulator/enis", "application/json", strings.NewReader(`{"PrivateIpAddresses":["10.10.0.2"]}`))
	must(t, err)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("a private IP on two ENIs answered %d", resp.StatusCode)
	}
	ids := allocate(t, c, 1, func(r *vpc.AllocateAddressesRequest) {
		r.Tags = []*vpc.Tag{{Key: common.StringPtr("k"), Value: common.StringPtr("v")}}
	})
	req := vpc.NewAssociateAddressRequest()
	req.AddressId, req.InstanceId = &ids[0], common.StringPtr("ins-33333333")
	_, err = c.AssociateAddress(req)
	must(t, err)

	resp, err = http.Get("http://" + endpoint + "/_emulator/inventory")
	must(t, err)
	var inv emulator.Inventory
	must(t, json.NewDecoder(resp.Body).Decode(&inv))
	resp.Body.Close()
	a, ok := inv.EIP(ids[0])
	if !ok || a.Status != "BIND" || a.ENIID != eni.ID || a.PrivateIP != "10.10.0.1" || a.Tags["k"] != "v" || a.IP == "" || len(inv.ENIs) != 1 {
		t.Fatalf("inventory EIP %+v, ENIs %+v", a, inv.ENIs)
	}
	_ = e
}

// TestEIPConcurrentAllocateRelease runs many clients allocating and
// releasing at once: no id or address is handed out twice and the account
// never holds more than its quota.
func TestEIPConcurrentAllocateRelease(t *testing.T) {
	cfg := instant()
	cfg.EIPQuota, cfg.EIPDailyAllocateLimit = 20, 100000
	e, _, c := vpcEnv(t, cfg)
	// A pooled transport, closed before the emulator: connections the pool
	// dialled but never used would hold up the emulator's shutdown.
	transport := emulatortest.Transport()
	c.WithHttpTransport(transport)
	t.Cleanup(transport.CloseIdleConnections)
	var (
		mu      sync.Mutex
		ids     = map[string]bool{}
		twice   []string
		refused atomic.Int64
		over    atomic.Int64
		wg      sync.WaitGroup
	)
	for w := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 25 {
				req := vpc.NewAllocateAddressesRequest()
				req.AddressCount = common.Int64Ptr(int64(1 + (w+i)%3))
				resp, err := c.AllocateAddresses(req)
				if err != nil {
					if code(err) != "AddressQuotaLimitExceeded" {
						t.Errorf("allocate: %v", err)
						return
					}
					refused.Add(1)
					continue
				}
				got := common.StringValues(resp.Response.AddressSet)
				if n := len(e.Inventory().EIPs); n > cfg.EIPQuota {
					over.Store(int64(n))
				}
				mu.Lock()
				for _, id := range got {
					if ids[id] {
						twice = append(twice, id)
					}
					ids[id] = true
				}
				mu.Unlock()
				if _, err := release(c, got...); err != nil {
					t.Errorf("release %v: %v", got, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if len(twice) > 0 || over.Load() > 0 {
		t.Fatalf("ids given twice: %v; the account held %d EIPs at once (quota %d)", twice, over.Load(), cfg.EIPQuota)
	}
	if len(ids) < 100 || len(e.Inventory().EIPs) != 0 {
		t.Fatalf("%d EIPs allocated (%d refused by quota), %d left", len(ids), refused.Load(), len(e.Inventory().EIPs))
	}
	t.Logf("%d EIPs allocated and released by 12 workers, %d allocations refused by the quota", len(ids), refused.Load())
}

// TestVPCServiceDispatch: the Go SDK names vpc in its credential scope; an
// SDK that signs the host's first label ("127") is routed by X-TC-Version.
// A vpc scope on a clb request, or a clb scope on a vpc action, is refused.
func TestVPCServiceDispatch(t *testing.T) {
	_, endpoint := emulatortest.Start(t, instant())
	vpcCall := func(scope string) *http.Request {
		r := tc3Request(t, endpoint, endpoint, "", scope, scope)
		r.Header.Set("X-TC-Action", "DescribeAddresses") // the body {} and the signed headers stay valid
		r.Header.Set("X-TC-Version", "2017-03-12")
		return r
	}
	for _, scope := range []string{"vpc", "127"} {
		if code, msg := send(t, vpcCall(scope)); code != "" {
			t.Fatalf("scope %s: %s: %s", scope, code, msg)
		}
	}
	if code, _ := send(t, vpcCall("clb")); code != "NoSuchVersion" {
		t.Fatalf("clb scope with the vpc version: %q, want NoSuchVersion", code)
	}
	r := tc3Request(t, endpoint, endpoint, "", "vpc", "vpc") // DescribeQuota, a clb action, signed for vpc
	if code, msg := send(t, r); code != "NoSuchVersion" || !strings.Contains(msg, "vpc") {
		t.Fatalf("vpc scope on a clb call: %q %q, want NoSuchVersion for vpc", code, msg)
	}
}

// TestVPCTagFilterLag: with the tag index lag fault, tag filters miss an
// EIP until that long after its allocation; filters by id still find it.
func TestVPCTagFilterLag(t *testing.T) {
	var ahead atomic.Int64 // the emulator's clock runs ahead by this much
	cfg := instant()
	cfg.Clock = func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }
	e, _, c := vpcEnv(t, cfg)
	must(t, e.SetFaults(emulator.Faults{TagFilterLagSeconds: 30}))
	ids := allocate(t, c, 1, func(r *vpc.AllocateAddressesRequest) {
		r.Tags = []*vpc.Tag{{Key: common.StringPtr("team"), Value: common.StringPtr("a")}}
	})
	if got := describeFiltered(t, c, filter("tag:team", "a")); len(got) != 0 {
		t.Fatalf("tag:team=a found %v at once, want nothing before the lag", got)
	}
	if got := describeFiltered(t, c, filter("address-id", ids[0])); len(got) != 1 {
		t.Fatalf("address-id found %v, want %s", got, ids[0])
	}
	ahead.Store(int64(30 * time.Second))
	if got := describeFiltered(t, c, filter("tag:team", "a"), filter("tag-key", "team")); !slices.Equal(got, ids) {
		t.Fatalf("tag filters found %v after the lag, want %v", got, ids)
	}
}
