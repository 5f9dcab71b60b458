package emulator

import (
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	vpcapi "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/vpc/v20170312"
)

// The vpc part of the emulator: elastic public IPs (EIPs) and the elastic
// network interfaces (ENIs) they bind to, on the same endpoint and wire
// protocol as clb (service vpc, version 2017-03-12).

// EIP statuses as DescribeAddresses reports them.
const (
	eipCreating  = "CREATING"
	eipBinding   = "BINDING"
	eipBind      = "BIND"
	eipBindENI   = "BIND_ENI" // bound to an ENI that no instance holds
	eipUnbinding = "UNBINDING"
	eipUnbind    = "UNBIND"
	eipOfflining = "OFFLINING"
)

// vpc error codes, spelled as the real API.
const (
	codeAddressQuota        = "AddressQuotaLimitExceeded"
	codeAddressDaily        = "AddressQuotaLimitExceeded.DailyAllocate"
	codeAddressNotFound     = "InvalidAddressId.NotFound"
	codeAddressStatus       = "InvalidAddressIdStatus.NotPermit"
	codeAddressIDMalformed  = "InvalidParameterValue.AddressIdMalformed"
	codeBandwidthRange      = "InvalidParameterValue.BandwidthOutOfRange"
	codeResourceNotFound    = "ResourceNotFound"
	codeParamConflict       = "InvalidParameterConflict"
	codeMissingEntity       = "InvalidParameterValue.MissingAssociateEntity"
	codePrivateIPBound      = "InvalidPrivateIpAddress.AlreadyBindEip"
	codeInstanceBound       = "InvalidInstanceId.AlreadyBindEip"
	codeVPCInvalidFilter    = "InvalidParameter.InvalidFilter"
	codeVPCValueLimit       = "InvalidParameterValue.LimitExceeded"
	codeVPCFilterLimit      = "LimitExceeded.NumberOfFilters"
	codeVPCCoexist          = "InvalidParameter.Coexist"
	codeVPCTooLong          = "InvalidParameterValue.TooLong"
	codeVPCMalformed        = "InvalidParameterValue.Malformed"
	maxEIPsPerAllocate      = 100
	maxVPCFilters           = 10
	maxVPCFilterValues      = 100
	maxVPCPageSize          = 100
	defaultVPCPageSize      = 20
	maxAddressNameLength    = 128
	firstVPCTaskID          = 100000000
	eipIDPrefix, eniIDPrefx = "eip-", "eni-"
)

var (
	eipIDPattern = regexp.MustCompile(`^eip-[a-z0-9]{8}$`)
)

// eipMaxBandwidth is the bandwidth ceiling (Mbps) of a charge type, as
// documented for standard accounts; false for an unknown charge type.
func eipMaxBandwidth(charge string) (int64, bool) {
	switch charge {
	case "TRAFFIC_POSTPAID_BY_HOUR", "BANDWIDTH_POSTPAID_BY_HOUR":
		return 100, true
	case "BANDWIDTH_PREPAID_BY_MONTH":
		return 200, true
	case "BANDWIDTH_PACKAGE":
		return 2000, true
	}
	return 0, false
}

func eipISPOK(isp string) bool {
	switch isp {
	case "BGP", "CMCC", "CTCC", "CUCC":
		return true
	}
	return false
}

// eipState is one EIP. JSON tags make it the persisted form.
type eipState struct {
	ID         string    `json:"id"`
	Seq        uint64    `json:"seq"`
	Name       string    `json:"name"`
	IP         string    `json:"ip"`
	Region     string    `json:"region"`
	Status     string    `json:"status"`
	ISP        string    `json:"isp"`
	ChargeType string    `json:"chargeType"`
	Bandwidth  int64     `json:"bandwidth"`
	Tags       []tag     `json:"tags,omitempty"`
	Created    time.Time `json:"created"`
	InstanceID string    `json:"instanceId,omitempty"`
	ENIID      string    `json:"eniId,omitempty"`
	PrivateIP  string    `json:"privateIp,omitempty"`

	// Idle accounting: IdleSeconds is closed idle time, IdleSince the start
	// of the current idle spell (zero while bound).
	IdleSeconds float64   `json:"idleSeconds"`
	IdleSince   time.Time `json:"idleSince,omitzero"`

	task   *task     // running task holding the address
	before *eipState // state before task, restored if the task fails
}

// eniState is one elastic network interface with its private IPs.
type eniState struct {
	ID         string    `json:"id"`
	Region     string    `json:"region"`
	InstanceID string    `json:"instanceId,omitempty"`
	VpcID      string    `json:"vpcId"`
	Primary    bool      `json:"primary"`
	IPs        []eniIP   `json:"ips"`
	Created    time.Time `json:"created"`
}

type eniIP struct {
	IP      string `json:"ip"`
	Primary bool   `json:"primary"`
}

type eipToken struct {
	Fingerprint string   `json:"fingerprint"`
	IDs         []string `json:"ids"`
	TaskID      string   `json:"taskId"`
}

// vpcStore is the vpc part of store, guarded by Emulator.mu.
type vpcStore struct {
	eips      map[string]*eipState
	eipSeq    uint64
	eipIPs    map[string]string // public IP -> EIP id
	eipCursor int
	enis      map[string]*eniState
	eniByIP   map[string]string    // private IP -> ENI id
	daily     map[string]int       // "<region>/<UTC date>" -> EIPs allocated
	tokens    map[string]*eipToken // AllocateAddresses ClientToken
	taskSeq   uint64
	// releasedIdle is the idle time of EIPs already released, so that the
	// total idle cost survives their release.
	releasedIdle float64
}

func newVPCStore() vpcStore {
	return vpcStore{
		eips: map[string]*eipState{}, eipIPs: map[string]string{}, enis: map[string]*eniState{},
		eniByIP: map[string]string{}, daily: map[string]int{}, tokens: map[string]*eipToken{},
		taskSeq: firstVPCTaskID,
	}
}

// VPCActions lists every vpc action the emulator implements.
func VPCActions() []string {
	return []string{
		"AllocateAddresses", "DescribeAddresses", "AssociateAddress", "DisassociateAddress",
		"ReleaseAddresses", "ModifyAddressAttribute", "DescribeTaskResult", "DescribeNetworkInterfaces",
	}
}

func lookupVPCHandler(action string) handler {
	switch action {
	case "AllocateAddresses":
		return (*Emulator).allocateAddresses
	case "DescribeAddresses":
		return (*Emulator).describeAddresses
	case "AssociateAddress":
		return (*Emulator).associateAddress
	case "DisassociateAddress":
		return (*Emulator).disassociateAddress
	case "ReleaseAddresses":
		return (*Emulator).releaseAddresses
	case "ModifyAddressAttribute":
		return (*Emulator).modifyAddressAttribute
	case "DescribeTaskResult":
		return (*Emulator).describeTaskResult
	case "DescribeNetworkInterfaces":
		return (*Emulator).describeNetworkInterfaces
	}
	return nil
}

// serviceOfAction names the service that implements a bare action name.
func serviceOfAction(action string) string {
	switch {
	case lookupVPCHandler(action) != nil:
		return vpcServiceName
	case lookupTagHandler(action) != nil:
		return tagServiceName
	case lookupCAMHandler(action) != nil:
		return camServiceName
	}
	return serviceName
}

// vpcCAMResources lists the CAM resources a vpc call acts on: EIPs are cvm
// resources ("qcs::cvm:<region>:uin/<uin>:eip/<id>"), ENIs vpc ones
// ("qcs::vpc:<region>:uin/<uin>:eni/<id>"). A call naming none acts on
// every resource of its kind ("eip/*", "eni/*").
func vpcCAMResources(region, action string, body []byte) []string {
	eip := "qcs::cvm:" + region + ":uin/" + EmulatedUIN + ":eip/"
	eni := "qcs::vpc:" + region + ":uin/" + EmulatedUIN + ":eni/"
	var ids struct {
		AddressId           *string
		AddressIds          []*string
		NetworkInterfaceId  *string
		NetworkInterfaceIds []*string
	}
	_ = json.Unmarshal(body, &ids) // a malformed body is the handler's error to report
	var out []string
	for _, id := range append(ids.AddressIds, ids.AddressId) {
		if id != nil && *id != "" {
			out = append(out, eip+*id)
		}
	}
	for _, id := range append(ids.NetworkInterfaceIds, ids.NetworkInterfaceId) {
		if id != nil && *id != "" {
			out = append(out, eni+*id)
		}
	}
	if len(out) == 0 {
		if action == "DescribeNetworkInterfaces" {
			return []string{eni + "*"}
		}
		return []string{eip + "*"}
	}
	return out
}

// ---- EIP state helpers (all called with e.mu held) ----

// setIdle starts or ends an idle spell of a at now.
func (a *eipState) setIdle(idle bool, now time.Time) {
	switch {
	case idle && a.IdleSince.IsZero():
		a.IdleSince = now
	case !idle && !a.IdleSince.IsZero():
		if d := now.Sub(a.IdleSince); d > 0 {
			a.IdleSeconds += d.Seconds()
		}
		a.IdleSince = time.Time{}
	}
}

// idleAt is a's total idle time up to now.
func (a *eipState) idleAt(now time.Time) float64 {
	s := a.IdleSeconds
	if !a.IdleSince.IsZero() {
		if d := now.Sub(a.IdleSince); d > 0 {
			s += d.Seconds()
		}
	}
	return s
}

func (a *eipState) busy() bool { return a.task != nil && a.task.Status == taskRunning }

// boundStatus is the settled status of an address bound to its ENI.
func (e *Emulator) boundStatus(a *eipState) string {
	if eni := e.st.vpc.enis[a.ENIID]; eni != nil && eni.InstanceID == "" {
		return eipBindENI
	}
	return eipBind
}

func (e *Emulator) allocEIPIP(id string) (string, *apiError) {
	vs := &e.st.vpc
	base, _ := parseIPv4(e.cfg.EIPBase) // validated in New
	size := e.cfg.EIPPoolSize
	for i := 0; i < size; i++ {
		idx := (vs.eipCursor + i) % size
		v := base + uint32(idx)
		if last := v & 0xff; last == 0 || last == 0xff {
			continue
		}
		ip := formatIPv4(v)
		if _, used := vs.eipIPs[ip]; used {
			continue
		}
		vs.eipCursor = (idx + 1) % size
		vs.eipIPs[ip] = id
		return ip, nil
	}
	return "", errorf(codeResourceInsufficient, "No public address is left in the pool of %d addresses from %s.", size, e.cfg.EIPBase)
}

// dropEIP forgets a released (or failed) address and keeps its idle time.
func (e *Emulator) dropEIP(a *eipState, now time.Time) {
	vs := &e.st.vpc
	a.setIdle(false, now)
	vs.releasedIdle += a.IdleSeconds
	delete(vs.eips, a.ID)
	if vs.eipIPs[a.IP] == a.ID {
		delete(vs.eipIPs, a.IP)
	}
}

func dailyKey(region string, now time.Time) string {
	return region + "/" + now.UTC().Format(time.DateOnly)
}

// beginEIPTask starts the asynchronous task of c over addrs, snapshotting
// each so that a failed task can restore it. Its id is numeric, as
// DescribeTaskResult takes a uint64.
func (e *Emulator) beginEIPTask(c *call, addrs ...*eipState) *task {
	vs := &e.st.vpc
	vs.taskSeq++
	t := &task{ID: strconv.FormatUint(vs.taskSeq, 10), Action: c.action, Status: taskRunning, Created: c.now,
		kind: taskEIP, Service: vpcServiceName}
	for _, a := range addrs {
		t.EIPIDs = append(t.EIPIDs, a.ID)
		snap := *a
		snap.task, snap.before = nil, nil
		a.before, a.task = &snap, t
	}
	e.st.addTask(t, e.cfg.MaxTasks)
	if d := e.taskDuration(c.action); d > 0 {
		t.deadline = c.now.Add(d)
		t.timer = time.AfterFunc(d, func() { e.finishTask(t) })
	}
	c.task = t
	return t
}

// settleEIPTask completes the addresses of an EIP task: transient states
// become final, or, when the task failed, the state before it comes back
// (a failed allocation frees its addresses). Called by finishTask with e.mu
// held.
func (e *Emulator) settleEIPTask(t *task, failed bool, now time.Time) {
	vs := &e.st.vpc
	for _, id := range t.EIPIDs {
		a := vs.eips[id]
		if a == nil || a.task != t {
			continue
		}
		before := a.before
		a.task, a.before = nil, nil
		if failed {
			if a.Status == eipCreating {
				a.IdleSeconds, a.IdleSince = 0, time.Time{} // never existed: nothing to bill
				e.dropEIP(a, now)
				continue
			}
			if before != nil {
				a.Status, a.InstanceID, a.ENIID, a.PrivateIP = before.Status, before.InstanceID, before.ENIID, before.PrivateIP
			}
			a.setIdle(a.Status == eipUnbind, now)
			continue
		}
		switch a.Status {
		case eipCreating, eipUnbinding:
			a.Status = eipUnbind
		case eipBinding:
			a.Status = e.boundStatus(a)
		case eipOfflining:
			e.dropEIP(a, now)
		}
	}
}

// settleLoadedEIPs finishes the transient states a saved state file holds:
// their tasks are treated as completed, as the clb ones are.
func (e *Emulator) settleLoadedEIPs(now time.Time) {
	for _, a := range e.st.vpc.eips {
		switch a.Status {
		case eipCreating, eipUnbinding:
			a.Status = eipUnbind
		case eipBinding:
			a.Status = e.boundStatus(a)
		case eipOfflining:
			e.dropEIP(a, now)
		}
	}
}

// ---- handlers ----

func (e *Emulator) allocateAddresses(c *call) (any, *apiError) {
	var r vpcapi.AllocateAddressesRequestParams
	if err := decode(c, &r); err != nil {
		return nil, err
	}
	count := i64(r.AddressCount, 1)
	if count < 1 || count > maxEIPsPerAllocate {
		return nil, errorf(codeRange, "AddressCount %d is out of range [1, %d].", count, maxEIPsPerAllocate)
	}
	isp := str(r.InternetServiceProvider)
	if isp == "" {
		isp = "BGP"
	}
	if !eipISPOK(isp) {
		return nil, errorf(codeInvalidValue, "InternetServiceProvider `%s` is not one of BGP, CMCC, CTCC, CUCC.", isp)
	}
	charge := str(r.InternetChargeType)
	if charge == "" {
		charge = "TRAFFIC_POSTPAID_BY_HOUR"
	}
	maxBW, ok := eipMaxBandwidth(charge)
	if !ok {
		return nil, errorf(codeInvalidValue, "InternetChargeType `%s` is not supported.", charge)
	}
	bw := i64(r.InternetMaxBandwidthOut, 1)
	if bw < 1 || bw > maxBW {
		return nil, errorf(codeBandwidthRange, "InternetMaxBandwidthOut %d is out of range [1, %d] for %s.", bw, maxBW, charge)
	}
	if t := str(r.AddressType); t != "" && t != "EIP" {
		return nil, errorf(codeUnsupportedOp, "AddressType `%s` is not supported by the emulator (EIP only).", t)
	}
	name := str(r.AddressName)
	if len([]rune(name)) > maxAddressNameLength {
		return nil, errorf(codeVPCTooLong, "AddressName is longer than %d characters.", maxAddressNameLength)
	}
	if len(r.Tags) > maxTags {
		return nil, errorf(codeInvalidValue, "At most %d tags are allowed.", maxTags)
	}
	var tags []tag
	for _, t := range r.Tags {
		if t == nil || str(t.Key) == "" {
			return nil, errorf("InvalidParameterValue.InvalidTag", "Every tag needs a Key.")
		}
		tags = append(tags, tag{Key: *t.Key, Value: str(t.Value)})
	}
	token := str(r.ClientToken)
	if len(token) > 64 {
		return nil, errorf(codeVPCTooLong, "ClientToken is longer than 64 characters.")
	}

	e.mu.Lock()
	defer e.mu.Unlock()
	vs := &e.st.vpc
	fp := ""
	if token != "" {
		clean := r
		clean.ClientToken = nil
		b, _ := json.Marshal(clean)
		fp = c.region + "|" + string(b)
		if rec, ok := vs.tokens[token]; ok {
			if rec.Fingerprint != fp {
				return nil, errorf(codeInvalidValue, "ClientToken `%s` was used with other parameters.", token)
			}
			return &vpcapi.AllocateAddressesResponseParams{AddressSet: strPtrs(slices.Clone(rec.IDs)), TaskId: ptr(rec.TaskID), RequestId: &c.requestID}, nil
		}
	}
	held := 0
	for _, a := range vs.eips {
		if a.Region == c.region {
			held++
		}
	}
	if held+int(count) > e.cfg.EIPQuota {
		return nil, errorf(codeAddressQuota, "The account holds %d of its %d EIPs in %s; %d more do not fit.", held, e.cfg.EIPQuota, c.region, count)
	}
	dk := dailyKey(c.region, c.now)
	if vs.daily[dk]+int(count) > e.cfg.EIPDailyAllocateLimit {
		return nil, errorf(codeAddressDaily, "The account allocated %d of its %d EIPs for today (UTC) in %s; %d more do not fit.",
			vs.daily[dk], e.cfg.EIPDailyAllocateLimit, c.region, count)
	}
	addrs := make([]*eipState, 0, count)
	for range count {
		id := e.st.newID(eipIDPrefix)
		ip, err := e.allocEIPIP(id)
		if err != nil {
			for _, a := range addrs {
				delete(vs.eips, a.ID)
				delete(vs.eipIPs, a.IP)
			}
			return nil, err
		}
		vs.eipSeq++
		a := &eipState{ID: id, Seq: vs.eipSeq, Name: name, IP: ip, Region: c.region, Status: eipCreating,
			ISP: isp, ChargeType: charge, Bandwidth: bw, Tags: slices.Clone(tags), Created: c.now}
		a.setIdle(true, c.now)
		vs.eips[id] = a
		addrs = append(addrs, a)
	}
	vs.daily[dk] += int(count)
	t := e.beginEIPTask(c, addrs...)
	if token != "" {
		vs.tokens[token] = &eipToken{Fingerprint: fp, IDs: slices.Clone(t.EIPIDs), TaskID: t.ID}
	}
	return &vpcapi.AllocateAddressesResponseParams{AddressSet: strPtrs(slices.Clone(t.EIPIDs)), TaskId: ptr(t.ID), RequestId: &c.requestID}, nil
}

// checkAddressID validates the shape of an EIP id.
func checkAddressID(id string) *apiError {
	if id == "" {
		return missing("AddressId")
	}
	if !eipIDPattern.MatchString(id) {
		return errorf(codeAddressIDMalformed, "AddressId `%s` is malformed (want eip-xxxxxxxx).", id)
	}
	return nil
}

// address returns the EIP id of region, or InvalidAddressId.NotFound.
// Called with e.mu held.
func (e *Emulator) address(region, id string) (*eipState, *apiError) {
	if err := checkAddressID(id); err != nil {
		return nil, err
	}
	a := e.st.vpc.eips[id]
	if a == nil || a.Region != region {
		return nil, errorf(codeAddressNotFound, "The EIP `%s` does not exist.", id)
	}
	return a, nil
}

func statusNotPermit(a *eipState, op string) *apiError {
	return errorf(codeAddressStatus, "The EIP `%s` is %s; %s is not permitted in that status.", a.ID, a.Status, op)
}

func (e *Emulator) associateAddress(c *call) (any, *apiError) {
	var req vpcapi.AssociateAddressRequestParams
	if err := decode(c, &req); err != nil {
		return nil, err
	}
	id, ins, eniID, ip := str(req.AddressId), str(req.InstanceId), str(req.NetworkInterfaceId), str(req.PrivateIpAddress)
	if err := checkAddressID(id); err != nil {
		return nil, err
	}
	switch {
	case ins != "" && eniID != "":
		return nil, errorf(codeParamConflict, "An EIP binds to an instance or to a private IP of an ENI, not both.")
	case ins == "" && eniID == "":
		return nil, errorf(codeMissingEntity, "Name an InstanceId, or a NetworkInterfaceId with a PrivateIpAddress.")
	case eniID != "" && ip == "":
		return nil, missing("PrivateIpAddress")
	case ins != "" && ip != "":
		return nil, errorf(codeParamConflict, "PrivateIpAddress goes with NetworkInterfaceId, not with InstanceId.")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	a, err := e.address(c.region, id)
	if err != nil {
		return nil, err
	}
	vs := &e.st.vpc
	var eni *eniState
	if ins != "" {
		eni = e.primaryENI(c.region, ins)
		if eni == nil {
			return nil, errorf(codeResourceNotFound, "The instance `%s` does not exist (no primary ENI in %s).", ins, c.region)
		}
		ip = eni.primaryIP()
	} else {
		eni = vs.enis[eniID]
		if eni == nil || eni.Region != c.region {
			return nil, errorf(codeResourceNotFound, "The ENI `%s` does not exist.", eniID)
		}
		if !eni.has(ip) {
			return nil, errorf(codeInvalidValue, "The private IP `%s` is not on the ENI `%s`.", ip, eniID)
		}
	}
	if a.Status != eipUnbind || a.busy() {
		return nil, statusNotPermit(a, "AssociateAddress")
	}
	for _, o := range vs.eips {
		if o != a && o.ENIID == eni.ID && o.PrivateIP == ip {
			if ins != "" {
				return nil, errorf(codeInstanceBound, "The instance `%s` already has the EIP `%s`.", ins, o.ID)
			}
			return nil, errorf(codePrivateIPBound, "The private IP `%s` already has the EIP `%s`.", ip, o.ID)
		}
	}
	t := e.beginEIPTask(c, a)
	a.Status, a.InstanceID, a.ENIID, a.PrivateIP = eipBinding, eni.InstanceID, eni.ID, ip
	a.setIdle(false, c.now)
	return &vpcapi.AssociateAddressResponseParams{TaskId: ptr(t.ID), RequestId: &c.requestID}, nil
}

func (e *Emulator) disassociateAddress(c *call) (any, *apiError) {
	var req vpcapi.DisassociateAddressRequestParams
	if err := decode(c, &req); err != nil {
		return nil, err
	}
	if boolean(req.ReallocateNormalPublicIp) {
		return nil, errorf(codeUnsupportedOp, "ReallocateNormalPublicIp is not supported by the emulator.")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	a, err := e.address(c.region, str(req.AddressId))
	if err != nil {
		return nil, err
	}
	if (a.Status != eipBind && a.Status != eipBindENI) || a.busy() {
		return nil, statusNotPermit(a, "DisassociateAddress")
	}
	t := e.beginEIPTask(c, a)
	a.Status, a.InstanceID, a.ENIID, a.PrivateIP = eipUnbinding, "", "", ""
	a.setIdle(true, c.now)
	return &vpcapi.DisassociateAddressResponseParams{TaskId: ptr(t.ID), RequestId: &c.requestID}, nil
}

func (e *Emulator) releaseAddresses(c *call) (any, *apiError) {
	var req vpcapi.ReleaseAddressesRequestParams
	if err := decode(c, &req); err != nil {
		return nil, err
	}
	ids := strs(req.AddressIds)
	if len(ids) == 0 {
		return nil, missing("AddressIds")
	}
	if len(ids) > maxVPCPageSize {
		return nil, errorf(codeVPCValueLimit, "At most %d AddressIds per call.", maxVPCPageSize)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	addrs := make([]*eipState, 0, len(ids))
	seen := map[string]bool{}
	for _, id := range ids {
		a, err := e.address(c.region, id)
		if err != nil {
			return nil, err
		}
		if seen[id] {
			return nil, errorf(codeDuplicate, "AddressId `%s` is given twice.", id)
		}
		seen[id] = true
		if a.Status != eipUnbind || a.busy() {
			return nil, statusNotPermit(a, "ReleaseAddresses")
		}
		addrs = append(addrs, a)
	}
	t := e.beginEIPTask(c, addrs...)
	for _, a := range addrs {
		a.Status = eipOfflining
	}
	return &vpcapi.ReleaseAddressesResponseParams{TaskId: ptr(t.ID), RequestId: &c.requestID}, nil
}

func (e *Emulator) modifyAddressAttribute(c *call) (any, *apiError) {
	var req vpcapi.ModifyAddressAttributeRequestParams
	if err := decode(c, &req); err != nil {
		return nil, err
	}
	if req.EipDirectConnection != nil {
		return nil, errorf(codeUnsupportedOp, "EipDirectConnection is not supported by the emulator.")
	}
	name := str(req.AddressName)
	if req.AddressName == nil {
		return nil, missing("AddressName")
	}
	if len([]rune(name)) > maxAddressNameLength {
		return nil, errorf(codeVPCTooLong, "AddressName is longer than %d characters.", maxAddressNameLength)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	a, err := e.address(c.region, str(req.AddressId))
	if err != nil {
		return nil, err
	}
	if a.Status == eipOfflining {
		return nil, errorf("UnsupportedOperation.AddressStatusNotPermit", "The EIP `%s` is being released.", a.ID)
	}
	a.Name = name
	c.changed = true
	return &vpcapi.ModifyAddressAttributeResponseParams{RequestId: &c.requestID}, nil
}

func (e *Emulator) describeTaskResult(c *call) (any, *apiError) {
	var req vpcapi.DescribeTaskResultRequestParams
	if err := decode(c, &req); err != nil {
		return nil, err
	}
	if req.TaskId == nil {
		if req.DealName != nil {
			return nil, errorf(codeInvalidParameter, "DealName `%s` not found: EIPs allocated by the emulator are postpaid and have no deal.", *req.DealName)
		}
		return nil, missing("TaskId")
	}
	e.mu.RLock()
	defer e.mu.RUnlock()
	t := e.st.tasks[strconv.FormatUint(*req.TaskId, 10)]
	if t == nil || t.Service != vpcServiceName {
		return nil, errorf(codeInvalidParameter, "TaskId %d not found.", *req.TaskId)
	}
	result := "SUCCESS"
	switch t.Status {
	case taskRunning:
		result = "RUNNING"
	case taskFailed:
		result = "FAILED"
	}
	return &vpcapi.DescribeTaskResultResponseParams{TaskId: req.TaskId, Result: &result, RequestId: &c.requestID}, nil
}

// vpcFilter is a parsed Filters entry.
type vpcFilter struct {
	name   string
	values []string
}

func parseVPCFilters(fs []*vpcapi.Filter) ([]vpcFilter, *apiError) {
	if len(fs) > maxVPCFilters {
		return nil, errorf(codeVPCFilterLimit, "At most %d Filters per call.", maxVPCFilters)
	}
	out := make([]vpcFilter, 0, len(fs))
	for _, f := range fs {
		if f == nil || str(f.Name) == "" {
			return nil, missing("Filters.Name")
		}
		if len(f.Values) > maxVPCFilterValues {
			return nil, errorf(codeVPCValueLimit, "At most %d values per filter.", maxVPCFilterValues)
		}
		out = append(out, vpcFilter{name: *f.Name, values: strs(f.Values)})
	}
	return out, nil
}

// page applies Offset/Limit (default 20, at most 100).
func page(total int, offset, limit *int64) (int, int, *apiError) {
	off, lim := i64(offset, 0), i64(limit, defaultVPCPageSize)
	if off < 0 || lim < 0 {
		return 0, 0, errorf(codeInvalidParameter, "Offset and Limit must not be negative.")
	}
	if lim > maxVPCPageSize {
		return 0, 0, errorf(codeVPCValueLimit, "Limit %d exceeds %d.", lim, maxVPCPageSize)
	}
	if lim == 0 {
		lim = defaultVPCPageSize
	}
	start := min(int(off), total)
	return start, min(start+int(lim), total), nil
}

func tagMatch(tags []tag, key string, values []string, byValue bool) bool {
	for _, t := range tags {
		switch {
		case byValue && slices.Contains(values, t.Value):
			return true
		case !byValue && key == "" && slices.Contains(values, t.Key):
			return true
		case !byValue && key != "" && t.Key == key && slices.Contains(values, t.Value):
			return true
		}
	}
	return false
}

func (e *Emulator) describeAddresses(c *call) (any, *apiError) {
	var req vpcapi.DescribeAddressesRequestParams
	if err := decode(c, &req); err != nil {
		return nil, err
	}
	ids := strs(req.AddressIds)
	if len(ids) > 0 && len(req.Filters) > 0 {
		return nil, errorf(codeInvalidParameter, "AddressIds and Filters cannot be given together.")
	}
	if len(ids) > maxVPCPageSize {
		return nil, errorf(codeVPCValueLimit, "At most %d AddressIds per call.", maxVPCPageSize)
	}
	for _, id := range ids {
		if !eipIDPattern.MatchString(id) {
			return nil, errorf(codeAddressIDMalformed, "AddressId `%s` is malformed (want eip-xxxxxxxx).", id)
		}
	}
	filters, ferr := parseVPCFilters(req.Filters)
	if ferr != nil {
		return nil, ferr
	}
	// indexed: the injected tag index lag (Faults.TagFilterLagSeconds) has
	// passed since the EIP was allocated with its tags.
	lag := e.tagLag()
	indexed := func(a *eipState) bool { return lag <= 0 || c.now.Sub(a.Created) >= lag }
	var match []func(a *eipState) bool
	for _, f := range filters {
		vals := f.values
		field := func(get func(a *eipState) string) func(a *eipState) bool {
			return func(a *eipState) bool { return slices.Contains(vals, get(a)) }
		}
		var m func(a *eipState) bool
		switch name := f.name; {
		case name == "address-id":
			m = field(func(a *eipState) string { return a.ID })
		case name == "address-name":
			m = field(func(a *eipState) string { return a.Name })
		case name == "address-ip":
			m = field(func(a *eipState) string { return a.IP })
		case name == "address-status":
			m = field(func(a *eipState) string { return a.Status })
		case name == "instance-id":
			m = field(func(a *eipState) string { return a.InstanceID })
		case name == "private-ip-address":
			m = field(func(a *eipState) string { return a.PrivateIP })
		case name == "network-interface-id":
			m = field(func(a *eipState) string { return a.ENIID })
		case name == "address-isp":
			m = field(func(a *eipState) string { return a.ISP })
		case name == "address-type":
			m = field(func(*eipState) string { return "EIP" })
		case name == "is-arrears":
			m = func(*eipState) bool {
				return slices.ContainsFunc(vals, func(v string) bool { return strings.EqualFold(v, "FALSE") })
			}
		case name == "tag-key":
			m = func(a *eipState) bool { return indexed(a) && tagMatch(a.Tags, "", vals, false) }
		case name == "tag-value":
			m = func(a *eipState) bool { return indexed(a) && tagMatch(a.Tags, "", vals, true) }
		case strings.HasPrefix(name, "tag:") && len(name) > len("tag:"):
			key := strings.TrimPrefix(name, "tag:")
			m = func(a *eipState) bool { return indexed(a) && tagMatch(a.Tags, key, vals, false) }
		default:
			return nil, errorf(codeVPCInvalidFilter, "The filter `%s` is not supported.", name)
		}
		match = append(match, m)
	}

	e.mu.RLock()
	defer e.mu.RUnlock()
	var found []*eipState
	for _, a := range e.st.vpc.eips {
		if a.Region != c.region || (len(ids) > 0 && !slices.Contains(ids, a.ID)) {
			continue
		}
		ok := true
		for _, m := range match {
			ok = ok && m(a)
		}
		if ok {
			found = append(found, a)
		}
	}
	slices.SortFunc(found, func(x, y *eipState) int { return int(x.Seq) - int(y.Seq) })
	start, end, perr := page(len(found), req.Offset, req.Limit)
	if perr != nil {
		return nil, perr
	}
	set := make([]*vpcapi.Address, 0, end-start)
	for _, a := range found[start:end] {
		set = append(set, a.toJSON())
	}
	return &vpcapi.DescribeAddressesResponseParams{TotalCount: ptr(int64(len(found))), AddressSet: set, RequestId: &c.requestID}, nil
}

func (a *eipState) toJSON() *vpcapi.Address {
	out := &vpcapi.Address{
		AddressId: ptr(a.ID), AddressName: ptr(a.Name), AddressStatus: ptr(a.Status), AddressIp: ptr(a.IP),
		CreatedTime: ptr(a.Created.UTC().Format("2006-01-02T15:04:05Z")),
		IsArrears:   ptr(false), IsBlocked: ptr(false), IsEipDirectConnection: ptr(false),
		AddressType: ptr("EIP"), CascadeRelease: ptr(false), InternetServiceProvider: ptr(a.ISP),
		LocalBgp: ptr(false), Bandwidth: ptr(uint64(a.Bandwidth)), InternetChargeType: ptr(a.ChargeType),
		TagSet:     []*vpcapi.Tag{},
		InstanceId: optional(a.InstanceID), NetworkInterfaceId: optional(a.ENIID), PrivateAddressIp: optional(a.PrivateIP),
	}
	for _, t := range a.Tags {
		out.TagSet = append(out.TagSet, &vpcapi.Tag{Key: ptr(t.Key), Value: ptr(t.Value)})
	}
	return out
}

// optional is nil for "", as the API answers null for absent bindings.
func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// ---- ENIs ----

func (n *eniState) has(ip string) bool {
	return slices.ContainsFunc(n.IPs, func(x eniIP) bool { return x.IP == ip })
}

func (n *eniState) primaryIP() string {
	for _, x := range n.IPs {
		if x.Primary {
			return x.IP
		}
	}
	return ""
}

// primaryENI is the primary ENI of instance in region, or nil. Called with
// e.mu held.
func (e *Emulator) primaryENI(region, instance string) *eniState {
	for _, n := range e.st.vpc.enis {
		if n.Region == region && n.InstanceID == instance && n.Primary {
			return n
		}
	}
	return nil
}

// addENILocked creates an ENI. Called with e.mu held.
func (e *Emulator) addENILocked(region, instance string, primary bool, ips []string, now time.Time) (*eniState, error) {
	vs := &e.st.vpc
	if len(ips) == 0 {
		return nil, errString("an ENI needs at least one private IP")
	}
	seen := map[string]bool{}
	for _, ip := range ips {
		if _, err := parseIPv4(ip); err != nil {
			return nil, errString("private IP " + strconv.Quote(ip) + " is not an IPv4 address")
		}
		if id, used := vs.eniByIP[ip]; used || seen[ip] {
			return nil, errString("private IP " + ip + " is already on " + id)
		}
		seen[ip] = true
	}
	if primary && instance == "" {
		return nil, errString("a primary ENI belongs to an instance")
	}
	if primary && e.primaryENI(region, instance) != nil {
		return nil, errString("instance " + instance + " already has a primary ENI")
	}
	n := &eniState{ID: e.st.newID(eniIDPrefx), Region: region, InstanceID: instance, VpcID: e.defaultVPC(region).ID,
		Primary: primary, Created: now}
	for i, ip := range ips {
		n.IPs = append(n.IPs, eniIP{IP: ip, Primary: i == 0})
		vs.eniByIP[ip] = n.ID
	}
	vs.enis[n.ID] = n
	return n, nil
}

type errString string

func (e errString) Error() string { return "emulator: " + string(e) }

// AddENI creates an ENI in region ("" for Config.Region) holding the
// private IPs (the first is its primary IP). With an instance id, the
// instance's first ENI becomes its primary ENI: AssociateAddress by
// InstanceId binds to that ENI's primary IP. It returns the ENI id.
func (e *Emulator) AddENI(region, instanceID string, ips ...string) (string, error) {
	if region == "" {
		region = e.cfg.Region
	}
	if !e.regionExists(region) {
		return "", errString("region " + region + " does not exist")
	}
	e.mu.Lock()
	primary := instanceID != "" && e.primaryENI(region, instanceID) == nil
	n, err := e.addENILocked(region, instanceID, primary, ips, e.cfg.Clock())
	e.mu.Unlock()
	if err != nil {
		return "", err
	}
	e.markDirty()
	return n.ID, nil
}

func (e *Emulator) describeNetworkInterfaces(c *call) (any, *apiError) {
	var req vpcapi.DescribeNetworkInterfacesRequestParams
	if err := decode(c, &req); err != nil {
		return nil, err
	}
	ids := strs(req.NetworkInterfaceIds)
	if len(ids) > 0 && len(req.Filters) > 0 {
		return nil, errorf(codeVPCCoexist, "NetworkInterfaceIds and Filters cannot be given together.")
	}
	if len(ids) > maxVPCPageSize {
		return nil, errorf(codeVPCValueLimit, "At most %d NetworkInterfaceIds per call.", maxVPCPageSize)
	}
	for _, id := range ids {
		if !strings.HasPrefix(id, eniIDPrefx) {
			return nil, errorf(codeVPCMalformed, "NetworkInterfaceId `%s` is malformed (want eni-xxxxxxxx).", id)
		}
	}
	filters, ferr := parseVPCFilters(req.Filters)
	if ferr != nil {
		return nil, ferr
	}
	exact := false
	for _, f := range filters {
		if f.name == "ip-exact-match" && len(f.values) > 0 {
			exact = strings.EqualFold(f.values[0], "true")
		}
	}
	var match []func(n *eniState) bool
	var lookupIPs []string // exact private IPs asked for, for AutoENI
	for _, f := range filters {
		vals := f.values
		var m func(n *eniState) bool
		switch name := f.name; name {
		case "ip-exact-match":
			continue
		case "network-interface-id":
			m = func(n *eniState) bool { return slices.Contains(vals, n.ID) }
		case "attachment.instance-id":
			m = func(n *eniState) bool { return slices.Contains(vals, n.InstanceID) }
		case "is-primary":
			m = func(n *eniState) bool {
				return slices.ContainsFunc(vals, func(v string) bool { return strings.EqualFold(v, strconv.FormatBool(n.Primary)) })
			}
		case "address-ip":
			// One value matches as an IP suffix unless ip-exact-match; several match exactly.
			suffix := len(vals) == 1 && !exact
			if !suffix {
				lookupIPs = append(lookupIPs, vals...)
			} else if _, err := parseIPv4(vals[0]); err == nil {
				lookupIPs = append(lookupIPs, vals[0])
			}
			m = func(n *eniState) bool {
				return slices.ContainsFunc(n.IPs, func(x eniIP) bool {
					if suffix {
						return strings.HasSuffix(x.IP, vals[0])
					}
					return slices.Contains(vals, x.IP)
				})
			}
		default:
			return nil, errorf("InvalidParameter.FilterInvalidKey", "The filter `%s` is not supported.", name)
		}
		match = append(match, m)
	}
	off, lim := int64(0), int64(defaultVPCPageSize)
	if req.Offset != nil {
		off = int64(min(*req.Offset, 1<<40))
	}
	if req.Limit != nil {
		lim = int64(min(*req.Limit, 1<<40))
	}

	if e.cfg.AutoENI && len(lookupIPs) > 0 {
		e.mu.Lock()
		for _, ip := range lookupIPs {
			if _, known := e.st.vpc.eniByIP[ip]; !known {
				if _, err := e.addENILocked(c.region, "", false, []string{ip}, c.now); err == nil {
					c.changed = true
				}
			}
		}
		e.mu.Unlock()
	}

	e.mu.RLock()
	defer e.mu.RUnlock()
	var found []*eniState
	for _, n := range e.st.vpc.enis {
		if n.Region != c.region || (len(ids) > 0 && !slices.Contains(ids, n.ID)) {
			continue
		}
		ok := true
		for _, m := range match {
			ok = ok && m(n)
		}
		if ok {
			found = append(found, n)
		}
	}
	if len(ids) > 0 && len(found) < len(ids) {
		for _, id := range ids {
			if !slices.ContainsFunc(found, func(n *eniState) bool { return n.ID == id }) {
				return nil, errorf(codeResourceNotFound, "The ENI `%s` does not exist.", id)
			}
		}
	}
	slices.SortFunc(found, func(x, y *eniState) int {
		if c := x.Created.Compare(y.Created); c != 0 {
			return c
		}
		return strings.Compare(x.ID, y.ID)
	})
	start, end, perr := page(len(found), &off, &lim)
	if perr != nil {
		return nil, perr
	}
	set := make([]*vpcapi.NetworkInterface, 0, end-start)
	for _, n := range found[start:end] {
		set = append(set, e.eniJSON(n))
	}
	return &vpcapi.DescribeNetworkInterfacesResponseParams{NetworkInterfaceSet: set, TotalCount: ptr(uint64(len(found))), RequestId: &c.requestID}, nil
}

func (e *Emulator) eniJSON(n *eniState) *vpcapi.NetworkInterface {
	state := "AVAILABLE"
	out := &vpcapi.NetworkInterface{
		NetworkInterfaceId: ptr(n.ID), NetworkInterfaceName: ptr(n.ID), NetworkInterfaceDescription: ptr(""),
		SubnetId: ptr("subnet-emulated"), VpcId: ptr(n.VpcID), GroupSet: []*string{},
		Primary: ptr(n.Primary), MacAddress: ptr(macOf(n.ID)), State: ptr(state), NetworkInterfaceState: ptr(state),
		Zone: ptr(defaultZone(n.Region)), CreatedTime: ptr(formatTime(n.Created)), TagSet: []*vpcapi.Tag{},
		EniType: ptr(uint64(0)),
	}
	if n.InstanceID != "" {
		out.Attachment = &vpcapi.NetworkInterfaceAttachment{InstanceId: ptr(n.InstanceID), DeviceIndex: ptr(uint64(0)),
			InstanceAccountId: ptr(EmulatedUIN), AttachTime: ptr(formatTime(n.Created))}
		out.NetworkInterfaceState = ptr("INUSE")
	}
	for _, x := range n.IPs {
		p := &vpcapi.PrivateIpAddressSpecification{PrivateIpAddress: ptr(x.IP), Primary: ptr(x.Primary), Description: ptr(""),
			IsWanIpBlocked: ptr(false), State: ptr("AVAILABLE")}
		for _, a := range e.st.vpc.eips {
			if a.ENIID == n.ID && a.PrivateIP == x.IP {
				p.AddressId, p.PublicIpAddress = ptr(a.ID), ptr(a.IP)
			}
		}
		out.PrivateIpAddressSet = append(out.PrivateIpAddressSet, p)
	}
	return out
}

// macOf derives a stable locally administered MAC address from an id.
func macOf(id string) string {
	var h uint32 = 2166136261
	for i := 0; i < len(id); i++ {
		h = (h ^ uint32(id[i])) * 16777619
	}
	const hx = "0123456789abcdef"
	b := []byte("52:54:00:00:00:00")
	for i, pos := range []int{9, 12, 15} {
		v := byte(h >> (8 * i))
		b[pos], b[pos+1] = hx[v>>4], hx[v&0xf]
	}
	return string(b)
}

// ---- inventory, idle accounting and admin ----

// InventoryEIP is one EIP in the inventory.
type InventoryEIP struct {
	ID          string            `json:"AddressId"`
	Name        string            `json:"AddressName"`
	IP          string            `json:"AddressIp"`
	Region      string            `json:"Region"`
	Status      string            `json:"AddressStatus"`
	Busy        bool              `json:"Busy"` // a task is running
	InstanceID  string            `json:"InstanceId,omitempty"`
	ENIID       string            `json:"NetworkInterfaceId,omitempty"`
	PrivateIP   string            `json:"PrivateIpAddress,omitempty"`
	Tags        map[string]string `json:"Tags,omitempty"`
	IdleSeconds float64           `json:"IdleSeconds"`
}

// InventoryENI is one ENI in the inventory.
type InventoryENI struct {
	ID         string   `json:"NetworkInterfaceId"`
	Region     string   `json:"Region"`
	InstanceID string   `json:"InstanceId,omitempty"`
	Primary    bool     `json:"Primary"`
	IPs        []string `json:"PrivateIpAddresses"` // the primary IP first
}

// vpcInventory fills the EIPs and ENIs of inv. Called with e.mu held.
func (e *Emulator) vpcInventory(inv *Inventory) {
	now := e.cfg.Clock()
	inv.EIPs, inv.ENIs = []InventoryEIP{}, []InventoryENI{}
	for _, a := range e.st.vpc.eips {
		ie := InventoryEIP{ID: a.ID, Name: a.Name, IP: a.IP, Region: a.Region, Status: a.Status, Busy: a.busy(),
			InstanceID: a.InstanceID, ENIID: a.ENIID, PrivateIP: a.PrivateIP, IdleSeconds: a.idleAt(now)}
		if len(a.Tags) > 0 {
			ie.Tags = map[string]string{}
			for _, t := range a.Tags {
				ie.Tags[t.Key] = t.Value
			}
		}
		inv.EIPs = append(inv.EIPs, ie)
	}
	slices.SortFunc(inv.EIPs, func(a, b InventoryEIP) int { return strings.Compare(a.ID, b.ID) })
	for _, n := range e.st.vpc.enis {
		ie := InventoryENI{ID: n.ID, Region: n.Region, InstanceID: n.InstanceID, Primary: n.Primary}
		for _, x := range n.IPs {
			ie.IPs = append(ie.IPs, x.IP)
		}
		inv.ENIs = append(inv.ENIs, ie)
	}
	slices.SortFunc(inv.ENIs, func(a, b InventoryENI) int { return strings.Compare(a.ID, b.ID) })
}

// EIP returns the inventory entry of the EIP with id, if present.
func (inv Inventory) EIP(id string) (InventoryEIP, bool) {
	for _, a := range inv.EIPs {
		if a.ID == id {
			return a, true
		}
	}
	return InventoryEIP{}, false
}

// EIPIdle is the idle-time account of EIPs: the time each spent allocated
// but bound to nothing, on the emulator's clock. An EIP is idle from its
// allocation until an AssociateAddress is accepted, and again from an
// accepted DisassociateAddress until it is bound again or released.
type EIPIdle struct {
	Addresses []EIPIdleAddress `json:"Addresses"`
	// ReleasedIdleSeconds is the idle time of EIPs released since the last
	// reset; TotalIdleSeconds adds that of the EIPs held now.
	ReleasedIdleSeconds float64 `json:"ReleasedIdleSeconds"`
	TotalIdleSeconds    float64 `json:"TotalIdleSeconds"`
}

// EIPIdleAddress is the idle time of one EIP held now.
type EIPIdleAddress struct {
	ID          string  `json:"AddressId"`
	Idle        bool    `json:"Idle"` // idle at the moment
	IdleSeconds float64 `json:"IdleSeconds"`
}

// EIPIdle reports the idle time of every EIP, held or released.
func (e *Emulator) EIPIdle() EIPIdle {
	e.mu.RLock()
	defer e.mu.RUnlock()
	now := e.cfg.Clock()
	out := EIPIdle{Addresses: []EIPIdleAddress{}, ReleasedIdleSeconds: e.st.vpc.releasedIdle}
	out.TotalIdleSeconds = out.ReleasedIdleSeconds
	for _, a := range e.st.vpc.eips {
		s := a.idleAt(now)
		out.Addresses = append(out.Addresses, EIPIdleAddress{ID: a.ID, Idle: !a.IdleSince.IsZero(), IdleSeconds: s})
		out.TotalIdleSeconds += s
	}
	slices.SortFunc(out.Addresses, func(a, b EIPIdleAddress) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// ENIJSON is the admin form of AddENI.
type ENIJSON struct {
	Region             string   `json:"Region,omitempty"`
	InstanceID         string   `json:"InstanceId,omitempty"`
	PrivateIPAddresses []string `json:"PrivateIpAddresses"`
}
