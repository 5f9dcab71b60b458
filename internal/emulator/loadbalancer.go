package emulator

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	clb "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
)

const (
	maxCreateNumber     = 20
	maxDescribeLBIDs    = 20
	maxDescribeLBLimit  = 100
	maxDeleteLBIDs      = 20
	maxTags             = 20
	maxFilters          = 10
	maxFilterValues     = 100
	maxClientToken      = 64
	forceDeleteTargets  = 20
	frequencyWindow     = 5 * time.Minute
	frequencyDeletes    = 30
	emulatedAppID       = 1250000000
	defaultBandwidthOut = 10
)

// lbForRead finds a load balancer of the caller's region. Called with e.mu held.
func (e *Emulator) lbForRead(c *call, id string) (*lbState, *apiError) {
	if id == "" {
		return nil, missing("LoadBalancerId")
	}
	lb := e.st.lbs[id]
	if lb == nil || lb.Region != c.region {
		return nil, lbNotFound(id)
	}
	return lb, nil
}

// lbForWrite is lbForRead plus the one-task-per-load-balancer rule and the
// injected busy storm. Called with e.mu held.
func (e *Emulator) lbForWrite(c *call, id string) (*lbState, *apiError) {
	lb, err := e.lbForRead(c, id)
	if err != nil {
		return nil, err
	}
	if lb.isBusy() {
		return nil, busyError(id)
	}
	if f := e.faults.Load(); f != nil && f.busy(id, c.now) {
		e.countInjected(codeResourceInOperating)
		return nil, busyError(id)
	}
	return lb, nil
}

func (e *Emulator) createLoadBalancer(c *call) (any, *apiError) {
	var req clb.CreateLoadBalancerRequestParams
	if err := decode(c, &req); err != nil {
		return nil, err
	}
	spec, apiErr := e.validateCreateLB(c, &req)
	if apiErr != nil {
		return nil, apiErr
	}

	e.mu.Lock()
	defer e.mu.Unlock()
	tokenKey := ""
	if spec.token != "" {
		tokenKey = c.region + "\x00" + spec.token
		if rec, ok := e.st.tokens[tokenKey]; ok {
			if rec.Fingerprint != spec.fingerprint {
				return nil, errorf(codeClientTokenLimit,
					"ClientToken %s was already used by a request with different parameters.", spec.token)
			}
			// A retry: same load balancers, and this RequestId polls the same task.
			if t, ok := e.st.tasks[rec.TaskID]; ok {
				e.st.tasks[c.requestID] = t
				e.st.taskOrder = append(e.st.taskOrder, c.requestID)
			}
			return &clb.CreateLoadBalancerResponseParams{
				LoadBalancerIds: strPtrs(rec.LBIDs), DealName: ptr(rec.DealName), RequestId: &c.requestID,
			}, nil
		}
	}
	used := 0
	for _, lb := range e.st.lbs {
		if lb.Region == c.region && lb.Type == spec.typ {
			used++
		}
	}
	quota := e.cfg.OpenLBQuota
	if spec.typ == "INTERNAL" {
		quota = e.cfg.InternalLBQuota
	}
	if used+spec.number > quota {
		return nil, errorf(codeLimitExceeded,
			"Creating %d %s load balancers would exceed the quota of %d in %s (%d in use).",
			spec.number, spec.typ, quota, c.region, used)
	}
	if spec.vip != "" {
		if owner, taken := e.st.vips[spec.vip]; taken {
			return nil, errorf(codeInvalidValue, "Vip %s is already used by %s.", spec.vip, owner)
		}
	}
	vpc := spec.vpcID
	var numVpc int64
	if vpc == "" {
		v := e.defaultVPC(c.region)
		vpc, numVpc = v.ID, v.Numerical
	} else {
		numVpc = numericalVpc(vpc)
	}

	lbs := make([]*lbState, 0, spec.number)
	for i := 0; i < spec.number; i++ {
		id := e.st.newID("lb-")
		vip := spec.vip
		if vip != "" {
			e.st.vips[vip] = id
		} else {
			alloc := e.allocVIP
			if spec.ipv6Mode != "" {
				alloc = e.allocVIP6
			}
			var err *apiError
			if vip, err = alloc(id); err != nil {
				for _, lb := range lbs {
					e.releaseLB(lb)
				}
				return nil, err
			}
		}
		name := spec.name
		if name == "" || spec.number > 1 || e.nameTaken(c.region, name, "") {
			name = id // the real API generates a name when none is usable
		}
		e.st.lbSeq++
		lb := &lbState{
			ID: id, Seq: e.st.lbSeq, Name: name, Type: spec.typ, Region: c.region,
			VpcID: vpc, NumericalVpcID: numVpc, SubnetID: spec.subnetID, ProjectID: spec.projectID,
			VIP: vip, IPv6Mode: spec.ipv6Mode, VipIsp: spec.isp, Zone: spec.zone, Status: 0, CreateTime: c.now, StatusTime: c.now,
			Tags: spec.tags, ChargeType: spec.chargeType, NetChargeType: spec.netChargeType,
			BandwidthOut: spec.bandwidth, BandwidthPkgType: spec.pkgType, SlaType: spec.slaType,
			PassToTarget: spec.passToTarget, SnatPro: spec.snatPro, DynamicVip: spec.dynamicVip,
		}
		if spec.typ == "OPEN" {
			lb.Domain = fmt.Sprintf("%s-%d.clb.%s-tencentclb.com", id, emulatedAppID, regionShort(c.region))
		}
		e.st.lbs[id] = lb
		lbs = append(lbs, lb)
	}
	t := e.beginTask(c, taskCreate, lbs...)
	t.DealName = newDealName(c.now)
	e.st.deals[t.DealName] = t.ID
	if tokenKey != "" {
		e.st.tokens[tokenKey] = &tokenRecord{Fingerprint: spec.fingerprint, LBIDs: t.LBIDs, DealName: t.DealName, TaskID: t.ID}
	}
	return &clb.CreateLoadBalancerResponseParams{
		LoadBalancerIds: strPtrs(t.LBIDs), DealName: ptr(t.DealName), RequestId: &c.requestID,
	}, nil
}

// lbSpec is a validated CreateLoadBalancer request.
type lbSpec struct {
	typ, name, vpcID, subnetID, isp, zone, vip  string
	ipv6Mode                                    string // empty for IPv4
	chargeType, netChargeType, pkgType, slaType string
	token, fingerprint                          string
	number                                      int
	projectID, bandwidth                        int64
	tags                                        []tag
	passToTarget, snatPro, dynamicVip           bool
}

func (e *Emulator) validateCreateLB(c *call, req *clb.CreateLoadBalancerRequestParams) (*lbSpec, *apiError) {
	s := &lbSpec{typ: str(req.LoadBalancerType), number: 1, projectID: i64(req.ProjectId, 0)}
	switch s.typ {
	case "":
		return nil, missing("LoadBalancerType")
	case "OPEN", "INTERNAL":
	default:
		return nil, errorf(codeInvalidValue, "LoadBalancerType should be OPEN or INTERNAL, got %s.", s.typ)
	}
	if req.Forward != nil && *req.Forward != 1 {
		return nil, errorf(codeInvalidValue, "Forward only supports 1.")
	}
	if req.Number != nil {
		if *req.Number < 1 || *req.Number > maxCreateNumber {
			return nil, errorf(codeRange, "Number should be between 1 and %d.", maxCreateNumber)
		}
		s.number = int(*req.Number)
	}
	if req.LoadBalancerName != nil {
		s.name = *req.LoadBalancerName
		if !nameOK(s.name) {
			return nil, errorf(codeLength, "LoadBalancerName should have 1 to 80 characters.")
		}
	}
	switch v := strings.ToUpper(str(req.AddressIPVersion)); v {
	case "", "IPV4":
	case "IPV6":
		s.ipv6Mode = ipv6ModeNAT64
	case "IPV6FULLCHAIN":
		s.ipv6Mode = ipv6ModeFullChain
	default:
		return nil, errorf(codeInvalidValue, "AddressIPVersion should be IPV4, IPV6 or IPv6FullChain, got %s.", str(req.AddressIPVersion))
	}
	if s.ipv6Mode != "" && s.typ != "OPEN" {
		return nil, errorf(codeInvalidValue, "AddressIPVersion %s only applies to OPEN load balancers.", str(req.AddressIPVersion))
	}
	s.vpcID, s.subnetID = str(req.VpcId), str(req.SubnetId)
	if s.vpcID != "" && !strings.HasPrefix(s.vpcID, "vpc-") {
		return nil, errorf(codeFormatError, "VpcId %s is malformed.", s.vpcID)
	}
	if s.subnetID != "" && !strings.HasPrefix(s.subnetID, "subnet-") {
		return nil, errorf(codeFormatError, "SubnetId %s is malformed.", s.subnetID)
	}
	s.isp = str(req.VipIsp)
	if s.typ == "INTERNAL" {
		if s.vpcID == "" {
			return nil, missing("VpcId")
		}
		if s.subnetID == "" {
			return nil, missing("SubnetId")
		}
		if s.isp != "" {
			return nil, errorf(codeInvalidValue, "VipIsp only applies to OPEN load balancers.")
		}
		s.isp = "INTERNAL"
		if req.DynamicVip != nil && *req.DynamicVip {
			return nil, errorf(codeInvalidValue, "DynamicVip only applies to OPEN load balancers.")
		}
	} else {
		s.dynamicVip = req.DynamicVip != nil && *req.DynamicVip
		switch {
		case s.ipv6Mode == ipv6ModeFullChain && s.subnetID == "":
			return nil, missing("SubnetId") // the IPv6 VIP comes from the subnet's IPv6 range
		case s.ipv6Mode == "" && s.subnetID != "":
			return nil, errorf(codeInvalidValue, "SubnetId cannot be specified for an OPEN IPv4 load balancer.")
		}
		switch s.isp {
		case "":
			s.isp = "BGP"
		case "BGP", "CMCC", "CTCC", "CUCC":
		default:
			return nil, errorf(codeInvalidValue, "VipIsp should be BGP, CMCC, CTCC or CUCC, got %s.", s.isp)
		}
	}
	zone := str(req.MasterZoneId)
	if zone == "" {
		zone = str(req.ZoneId)
	}
	var ok bool
	if s.zone, ok = normalizeZone(c.region, zone); !ok {
		return nil, errorf(codeInvalidValue, "Zone %s does not exist in %s.", zone, c.region)
	}
	if len(req.Tags) > maxTags {
		return nil, errorf(codeLength, "At most %d tags are allowed.", maxTags)
	}
	seen := map[string]bool{}
	for _, t := range req.Tags {
		if t == nil || str(t.TagKey) == "" {
			return nil, missing("Tags.TagKey")
		}
		if seen[*t.TagKey] {
			return nil, errorf(codeDuplicate, "Tag key %s is duplicated.", *t.TagKey)
		}
		seen[*t.TagKey] = true
		s.tags = append(s.tags, tag{Key: *t.TagKey, Value: str(t.TagValue)})
	}
	s.chargeType = str(req.LBChargeType)
	switch s.chargeType {
	case "":
		s.chargeType = "POSTPAID_BY_HOUR"
	case "POSTPAID_BY_HOUR", "PREPAID":
	default:
		return nil, errorf(codeInvalidValue, "LBChargeType should be POSTPAID_BY_HOUR or PREPAID.")
	}
	s.netChargeType, s.bandwidth = "TRAFFIC_POSTPAID_BY_HOUR", defaultBandwidthOut
	if ia := req.InternetAccessible; ia != nil {
		if apiErr := checkInternet(ia); apiErr != nil {
			return nil, apiErr
		}
		if v := str(ia.InternetChargeType); v != "" {
			s.netChargeType = v
		}
		s.bandwidth = i64(ia.InternetMaxBandwidthOut, s.bandwidth)
		s.pkgType = str(ia.BandwidthpkgSubType)
	}
	if s.typ == "OPEN" && s.pkgType == "" {
		s.pkgType = "BGP"
	}
	if v := str(req.Vip); v != "" {
		switch s.ipv6Mode {
		case ipv6ModeNAT64:
			return nil, errorf(codeInvalidValue, "Vip cannot be specified for an IPv6 NAT64 load balancer.")
		case ipv6ModeFullChain:
			a, err := parseULA(v)
			if err != nil {
				return nil, errorf(codeInvalidValue, "Vip %s is not an IPv6 address of the emulated subnet (fd00::/8).", v)
			}
			v = a.String()
		default:
			if _, err := parseIPv4(v); err != nil {
				return nil, errorf(codeInvalidValue, "Vip %s is not a valid IPv4 address.", v)
			}
		}
		if s.number != 1 {
			return nil, errorf(codeInvalidValue, "Vip can only be given when Number is 1.")
		}
		s.vip = v
	}
	s.slaType = str(req.SlaType)
	s.passToTarget, s.snatPro = boolean(req.LoadBalancerPassToTarget), boolean(req.SnatPro)
	if s.token = str(req.ClientToken); s.token != "" {
		if len(s.token) > maxClientToken {
			return nil, errorf(codeLength, "ClientToken should have at most %d characters.", maxClientToken)
		}
		for i := 0; i < len(s.token); i++ {
			if s.token[i] < 0x20 || s.token[i] > 0x7e {
				return nil, errorf(codeInvalidValue, "ClientToken must be printable ASCII.")
			}
		}
		clean := *req
		clean.ClientToken = nil
		b, _ := json.Marshal(clean)
		sum := sha256.Sum256(b)
		s.fingerprint = hex.EncodeToString(sum[:])
	}
	return s, nil
}

func checkInternet(ia *clb.InternetAccessible) *apiError {
	switch v := str(ia.InternetChargeType); v {
	case "", "TRAFFIC_POSTPAID_BY_HOUR", "BANDWIDTH_POSTPAID_BY_HOUR", "BANDWIDTH_PACKAGE", "BANDWIDTH_PREPAID":
	default:
		return errorf(codeInvalidValue, "InternetChargeType %s is not supported.", v)
	}
	if b := ia.InternetMaxBandwidthOut; b != nil && (*b < 1 || *b > 61440) {
		return errorf(codeRange, "InternetMaxBandwidthOut should be between 1 and 61440.")
	}
	return nil
}

// nameTaken reports whether another load balancer of region uses name.
func (e *Emulator) nameTaken(region, name, exceptID string) bool {
	for _, lb := range e.st.lbs {
		if lb.Region == region && lb.Name == name && lb.ID != exceptID {
			return true
		}
	}
	return false
}

// defaultVPC returns the region's "DefaultVPC", created on first use.
func (e *Emulator) defaultVPC(region string) vpcInfo {
	v, ok := e.st.vpcs[region]
	if !ok {
		v = vpcInfo{ID: e.st.newID("vpc-"), Numerical: 100000 + rand.Int64N(900000)}
		e.st.vpcs[region] = v
	}
	return v
}

// numericalVpc derives a stable numeric id for a VPC named by the caller.
func numericalVpc(id string) int64 {
	sum := sha256.Sum256([]byte(id))
	return 100000 + (int64(sum[0])<<8 | int64(sum[1]))
}

func (e *Emulator) describeLoadBalancers(c *call) (any, *apiError) {
	var req clb.DescribeLoadBalancersRequestParams
	if err := decode(c, &req); err != nil {
		return nil, err
	}
	if len(req.LoadBalancerIds) > maxDescribeLBIDs {
		return nil, errorf(codeLength, "LoadBalancerIds should have at most %d members.", maxDescribeLBIDs)
	}
	offset, limit := i64(req.Offset, 0), i64(req.Limit, 20)
	if offset < 0 {
		return nil, errorf(codeRange, "Offset should not be negative.")
	}
	if limit < 1 || limit > maxDescribeLBLimit {
		return nil, errorf(codeRange, "Limit should be between 1 and %d.", maxDescribeLBLimit)
	}
	filters, apiErr := parseLBFilters(req.Filters)
	if apiErr != nil {
		return nil, apiErr
	}
	orderBy := str(req.OrderBy)
	switch orderBy {
	case "", "CreateTime", "LoadBalancerName", "Domain", "LoadBalancerType":
	default:
		return nil, errorf(codeInvalidValue, "OrderBy should be LoadBalancerName, CreateTime, Domain or LoadBalancerType.")
	}
	desc := i64(req.OrderType, 1)
	if desc != 0 && desc != 1 {
		return nil, errorf(codeInvalidValue, "OrderType should be 0 or 1.")
	}
	withCount := false
	for _, f := range strs(req.AdditionalFields) {
		if f != "TargetCount" {
			return nil, errorf(codeInvalidValue, "AdditionalFields only supports TargetCount.")
		}
		withCount = true
	}

	e.mu.RLock()
	defer e.mu.RUnlock()
	ids := strs(req.LoadBalancerIds)
	var matched []*lbState
	for _, lb := range e.st.lbs {
		if lb.Region == c.region && (len(ids) == 0 || slices.Contains(ids, lb.ID)) &&
			lbMatches(lb, &req) && filters.match(lb) {
			matched = append(matched, lb)
		}
	}
	sortLBs(matched, orderBy, desc == 1)
	resp := &clb.DescribeLoadBalancersResponseParams{
		TotalCount:      ptr(uint64(len(matched))),
		LoadBalancerSet: []*clb.LoadBalancer{},
		RequestId:       &c.requestID,
	}
	for i := offset; i < int64(len(matched)) && i < offset+limit; i++ {
		resp.LoadBalancerSet = append(resp.LoadBalancerSet, matched[i].toSDK(withCount))
	}
	return resp, nil
}

func sortLBs(lbs []*lbState, orderBy string, desc bool) {
	key := func(lb *lbState) string {
		switch orderBy {
		case "LoadBalancerName":
			return lb.Name
		case "Domain":
			return lb.Domain
		case "LoadBalancerType":
			return lb.Type
		}
		return ""
	}
	slices.SortFunc(lbs, func(a, b *lbState) int {
		r := strings.Compare(key(a), key(b))
		if r == 0 {
			r = a.CreateTime.Compare(b.CreateTime)
		}
		if r == 0 {
			r = int(a.Seq) - int(b.Seq)
		}
		if desc {
			return -r
		}
		return r
	})
}

// lbMatches applies the plain (non-Filters) criteria of DescribeLoadBalancers.
func lbMatches(lb *lbState, req *clb.DescribeLoadBalancersRequestParams) bool {
	if v := str(req.LoadBalancerType); v != "" && v != lb.Type {
		return false
	}
	if req.Forward != nil && *req.Forward != 1 {
		return false // every emulated instance is a CLB (Forward 1), none classic
	}
	if v := str(req.LoadBalancerName); v != "" && !strings.Contains(lb.Name, v) {
		return false
	}
	if v := str(req.Domain); v != "" && !strings.Contains(lb.Domain, v) {
		return false
	}
	if vips := strs(req.LoadBalancerVips); len(vips) > 0 && !slices.Contains(vips, lb.VIP) {
		return false
	}
	if len(req.BackendPublicIps) > 0 {
		return false // emulated backends have no public address
	}
	if ips := strs(req.BackendPrivateIps); len(ips) > 0 && !lb.hasBackend(ips) {
		return false
	}
	if v := str(req.SearchKey); v != "" && !strings.Contains(lb.Name, v) && !strings.Contains(lb.Domain, v) &&
		!strings.Contains(lb.VIP, v) && !strings.Contains(lb.ID, v) {
		return false
	}
	if req.ProjectId != nil && *req.ProjectId != lb.ProjectID {
		return false
	}
	if req.WithRs != nil && *req.WithRs != -1 && (*req.WithRs == 1) != (lb.targetCount() > 0) {
		return false
	}
	if v := str(req.VpcId); v != "" && v != lb.VpcID {
		return false
	}
	if str(req.SecurityGroup) != "" {
		return false // emulated instances have no security groups
	}
	if v := str(req.MasterZone); v != "" && v != strconv.FormatUint(zoneID(lb.Region, lb.Zone), 10) && v != lb.Zone {
		return false
	}
	return true
}

func (lb *lbState) hasBackend(ips []string) bool {
	for _, l := range lb.Listeners {
		for _, t := range l.Targets {
			if slices.Contains(ips, t.IP) {
				return true
			}
		}
		for _, r := range l.Rules {
			for _, t := range r.Targets {
				if slices.Contains(ips, t.IP) {
					return true
				}
			}
		}
	}
	return false
}

// lbFilters are the parsed Filters of DescribeLoadBalancers.
type lbFilters []lbFilter

type lbFilter struct {
	name   string
	values []string
}

func parseLBFilters(in []*clb.Filter) (lbFilters, *apiError) {
	if len(in) > maxFilters {
		return nil, errorf(codeLength, "At most %d Filters are allowed.", maxFilters)
	}
	out := make(lbFilters, 0, len(in))
	for _, f := range in {
		if f == nil || str(f.Name) == "" {
			return nil, missing("Filters.Name")
		}
		if len(f.Values) == 0 {
			return nil, missing("Filters.Values")
		}
		if len(f.Values) > maxFilterValues {
			return nil, errorf(codeLength, "A filter has at most %d Values.", maxFilterValues)
		}
		name := *f.Name
		switch name {
		case "charge-type", "internet-charge-type", "master-zone-id", "tag-key", "function-name",
			"vip-isp", "sla-type", "exclusive":
		default:
			if !strings.HasPrefix(name, "tag:") || len(name) == len("tag:") {
				return nil, errorf(codeInvalidFilter, "The filter %s is not supported.", name)
			}
		}
		out = append(out, lbFilter{name: name, values: strs(f.Values)})
	}
	return out, nil
}

func (fs lbFilters) match(lb *lbState) bool {
	for _, f := range fs {
		if !f.match(lb) {
			return false
		}
	}
	return true
}

func (f lbFilter) match(lb *lbState) bool {
	in := func(v string) bool { return slices.Contains(f.values, v) }
	switch f.name {
	case "charge-type":
		return in(lb.ChargeType)
	case "internet-charge-type":
		return in(lb.NetChargeType)
	case "master-zone-id":
		return in(strconv.FormatUint(zoneID(lb.Region, lb.Zone), 10)) || in(lb.Zone)
	case "tag-key":
		for _, t := range lb.Tags {
			if in(t.Key) {
				return true
			}
		}
		return false
	case "function-name":
		return false // no SCF backends are emulated
	case "vip-isp":
		return in(lb.VipIsp)
	case "sla-type":
		return in(lb.SlaType)
	case "exclusive":
		return in("0")
	}
	key := strings.TrimPrefix(f.name, "tag:")
	for _, t := range lb.Tags {
		if t.Key == key && in(t.Value) {
			return true
		}
	}
	return false
}

// toSDK renders the load balancer the way DescribeLoadBalancers does,
// filling the fields real clients dereference without nil checks.
func (lb *lbState) toSDK(withTargetCount bool) *clb.LoadBalancer {
	tags := make([]*clb.TagInfo, len(lb.Tags))
	for i, t := range lb.Tags {
		tags[i] = &clb.TagInfo{TagKey: ptr(t.Key), TagValue: ptr(t.Value)}
	}
	flags := []string{"SharedLimitFlag"}
	if lb.DeleteProtect {
		flags = append(flags, "DeleteProtect")
	}
	out := &clb.LoadBalancer{
		LoadBalancerId:   ptr(lb.ID),
		LoadBalancerName: ptr(lb.Name),
		LoadBalancerType: ptr(lb.Type),
		Forward:          ptr(uint64(1)),
		Domain:           ptr(""),
		LoadBalancerVips: []*string{ptr(lb.VIP)},
		Status:           ptr(lb.Status),
		CreateTime:       ptr(formatTime(lb.CreateTime)),
		StatusTime:       ptr(formatTime(lb.StatusTime)),
		ProjectId:        ptr(uint64(lb.ProjectID)),
		VpcId:            ptr(lb.VpcID),
		OpenBgp:          ptr(uint64(0)),
		Snat:             ptr(false),
		Isolation:        ptr(uint64(0)),
		SubnetId:         ptr(lb.SubnetID),
		Tags:             tags,
		SecureGroups:     []*string{},
		TargetRegionInfo: &clb.TargetRegionInfo{
			Region: ptr(lb.Region), VpcId: ptr(lb.VpcID), NumericalVpcId: ptr(lb.NumericalVpcID),
		},
		AnycastZone:      ptr(""),
		AddressIPVersion: ptr("ipv4"),
		NumericalVpcId:   ptr(uint64(lb.NumericalVpcID)),
		VipIsp:           ptr(lb.VipIsp),
		MasterZone:       zoneInfo(lb.Region, lb.Zone),
		ChargeType:       ptr(lb.ChargeType),
		NetworkAttributes: &clb.InternetAccessible{
			InternetChargeType:      ptr(lb.NetChargeType),
			InternetMaxBandwidthOut: ptr(lb.BandwidthOut),
		},
		LogSetId:                 ptr(""),
		LogTopicId:               ptr(""),
		IsDDos:                   ptr(false),
		ConfigId:                 ptr(""),
		LoadBalancerPassToTarget: ptr(lb.PassToTarget),
		ExclusiveCluster:         &clb.ExclusiveCluster{},
		SnatPro:                  ptr(lb.SnatPro),
		SnatIps:                  []*clb.SnatIp{},
		SlaType:                  ptr(lb.SlaType),
		IsBlock:                  ptr(false),
		IsBlockTime:              ptr(""),
		LocalBgp:                 ptr(false),
		MixIpTarget:              ptr(false),
		NfvInfo:                  ptr(""),
		HealthLogSetId:           ptr(""),
		HealthLogTopicId:         ptr(""),
		AttributeFlags:           strPtrs(flags),
		LoadBalancerDomain:       ptr(lb.Domain),
		Egress:                   ptr(""),
		Exclusive:                ptr(uint64(0)),
		AssociateEndpoint:        ptr(""),
	}
	if lb.IPv6Mode != "" {
		// An IPv6 load balancer's address is AddressIPv6 alone; the
		// version is answered in lowercase and the kind in IPv6Mode.
		out.LoadBalancerVips = []*string{}
		out.AddressIPv6 = ptr(lb.VIP)
		out.AddressIPVersion = ptr("ipv6")
		out.IPv6Mode = ptr(lb.IPv6Mode)
	}
	if lb.BandwidthPkgType != "" {
		out.NetworkAttributes.BandwidthpkgSubType = ptr(lb.BandwidthPkgType)
	}
	if lb.DynamicVip {
		// A domain-based load balancer is reached by its name (its VIP
		// may change): the legacy Domain field carries it too.
		out.Domain = ptr(lb.Domain)
	}
	if withTargetCount {
		out.TargetCount = ptr(uint64(lb.targetCount()))
	}
	return out
}

func (e *Emulator) deleteLoadBalancer(c *call) (any, *apiError) {
	var req clb.DeleteLoadBalancerRequestParams
	if err := decode(c, &req); err != nil {
		return nil, err
	}
	if len(req.LoadBalancerIds) == 0 {
		return nil, missing("LoadBalancerIds")
	}
	if len(req.LoadBalancerIds) > maxDeleteLBIDs {
		return nil, errorf(codeLength, "LoadBalancerIds should have at most %d members.", maxDeleteLBIDs)
	}
	force := boolean(req.ForceDelete)
	ids := slices.Compact(slices.Sorted(slices.Values(strs(req.LoadBalancerIds))))

	e.mu.Lock()
	defer e.mu.Unlock()
	lbs := make([]*lbState, 0, len(ids))
	for _, id := range ids {
		lb, err := e.lbForWrite(c, id)
		if err != nil {
			return nil, err
		}
		if lb.DeleteProtect {
			return nil, errorf(codeFailedOperation, "LoadBalancer %s has deletion protection enabled.", id)
		}
		if !force && lb.targetCount() >= forceDeleteTargets {
			return nil, errorf(codeTargetNumCheckRisk,
				"LoadBalancer %s has %d real servers bound; set ForceDelete to delete it.", id, lb.targetCount())
		}
		lbs = append(lbs, lb)
	}
	if !force {
		recent := e.st.deletes[:0]
		for _, at := range e.st.deletes {
			if c.now.Sub(at) < frequencyWindow {
				recent = append(recent, at)
			}
		}
		e.st.deletes = recent
		if len(recent)+len(lbs) >= frequencyDeletes {
			return nil, errorf(codeFrequencyCheckRisk,
				"More than %d load balancers were deleted in 5 minutes; set ForceDelete to continue.", frequencyDeletes)
		}
		for range lbs {
			e.st.deletes = append(e.st.deletes, c.now)
		}
	}
	e.beginTask(c, taskDelete, lbs...)
	for _, lb := range lbs {
		delete(e.st.lbs, lb.ID)
		e.st.dying[lb.ID] = lb
	}
	return &clb.DeleteLoadBalancerResponseParams{RequestId: &c.requestID}, nil
}

func (e *Emulator) modifyLoadBalancerAttributes(c *call) (any, *apiError) {
	var req clb.ModifyLoadBalancerAttributesRequestParams
	if err := decode(c, &req); err != nil {
		return nil, err
	}
	if req.LoadBalancerName != nil && !nameOK(*req.LoadBalancerName) {
		return nil, errorf(codeLength, "LoadBalancerName should have 1 to 80 characters.")
	}
	if ia := req.InternetChargeInfo; ia != nil {
		if err := checkInternet(ia); err != nil {
			return nil, err
		}
	}
	if tr := req.TargetRegionInfo; tr != nil && str(tr.Region) != "" && !e.regionExists(*tr.Region) {
		return nil, errorf(codeRegionNotFound, "The region `%s` does not exist.", *tr.Region)
	}

	e.mu.Lock()
	defer e.mu.Unlock()
	lb, apiErr := e.lbForWrite(c, str(req.LoadBalancerId))
	if apiErr != nil {
		return nil, apiErr
	}
	if req.LoadBalancerName != nil && e.nameTaken(lb.Region, *req.LoadBalancerName, lb.ID) {
		return nil, errorf(codeDuplicate, "LoadBalancerName %s is already used in %s.", *req.LoadBalancerName, lb.Region)
	}
	e.beginTask(c, taskModify, lb)
	if req.LoadBalancerName != nil {
		lb.Name = *req.LoadBalancerName
	}
	if ia := req.InternetChargeInfo; ia != nil {
		if v := str(ia.InternetChargeType); v != "" {
			lb.NetChargeType = v
		}
		lb.BandwidthOut = i64(ia.InternetMaxBandwidthOut, lb.BandwidthOut)
	}
	if req.DeleteProtect != nil {
		lb.DeleteProtect = *req.DeleteProtect
	}
	if req.LoadBalancerPassToTarget != nil {
		lb.PassToTarget = *req.LoadBalancerPassToTarget
	}
	if req.SnatPro != nil {
		lb.SnatPro = *req.SnatPro
	}
	return &clb.ModifyLoadBalancerAttributesResponseParams{RequestId: &c.requestID}, nil
}
