package emulator

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	clb "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
)

const (
	maxRegisterTargets        = 20
	maxBatchTargets           = 500
	maxBatchWeightRules       = 100
	maxBatchWeightRuleTargets = 50
	maxDescribeTargetsIDs     = 20
	maxTargetHealthLBs        = 30
	defaultTargetWeight       = 10
	maxTargetWeight           = 100
)

// newTarget validates one backend given by InstanceId or EniIp.
func (e *Emulator) newTarget(instanceID, eniIP *string, port, weight *int64, tagv *string, c *call) (*targetState, *apiError) {
	if port == nil {
		return nil, missing("Targets.Port")
	}
	if *port < portMin || *port > portMax {
		return nil, errorf(codeRange, "Targets.Port should be between 1 and 65535.")
	}
	w := i64(weight, defaultTargetWeight)
	if w < 0 || w > maxTargetWeight {
		return nil, errorf(codeRange, "Targets.Weight should be between 0 and 100.")
	}
	t := &targetState{Port: *port, Weight: w, Tag: str(tagv), RegisteredTime: c.now}
	ins, ip := str(instanceID), str(eniIP)
	switch {
	case ins != "" && ip != "":
		return nil, errorf(codeInvalidParameter, "InstanceId and EniIp cannot both be set for one target.")
	case ins != "":
		if !strings.HasPrefix(ins, "ins-") {
			return nil, errorf(codeFormatError, "InstanceId %s is malformed.", ins)
		}
		t.Type, t.InstanceID, t.IP = "CVM", ins, e.instanceIP(ins)
	case ip != "":
		a, err := netip.ParseAddr(ip)
		if err != nil {
			return nil, errorf(codeInvalidValue, "EniIp %s is not an IP address.", ip)
		}
		t.Type, t.IP = "ENI", a.String()
	default:
		return nil, missing("Targets.InstanceId")
	}
	return t, nil
}

// checkFamily refuses a target whose address family lb cannot forward
// to: an IPv6FullChain load balancer takes IPv6 addresses (given as
// EniIp: an InstanceId names a primary IPv4), the others IPv4 ones (an
// IPv6 NAT64 load balancer translates its IPv6 VIP to IPv4 targets).
func (lb *lbState) checkFamily(t *targetState) *apiError {
	a, err := netip.ParseAddr(t.IP)
	v6 := err == nil && a.Is6() && !a.Is4In6()
	switch {
	case lb.IPv6Mode == ipv6ModeFullChain && !v6:
		return errorf(codeInvalidValue, "Target %s is not an IPv6 address: IPv6FullChain load balancer %s takes IPv6 targets (by EniIp).", t, lb.ID)
	case lb.IPv6Mode != ipv6ModeFullChain && v6:
		return errorf(codeInvalidValue, "Target %s is an IPv6 address: load balancer %s takes IPv4 targets.", t, lb.ID)
	}
	return nil
}

func (t *targetState) String() string {
	if t.InstanceID != "" {
		return fmt.Sprintf("%s:%d", t.InstanceID, t.Port)
	}
	return fmt.Sprintf("%s:%d", t.IP, t.Port)
}

// targetList returns the backend list of a listener (L4) or of one of its
// rules (L7, by LocationId or Domain+Url).
func targetList(l *listenerState, locationID, domain, url string) (*[]*targetState, *apiError) {
	if !isL7(l.Protocol) {
		if locationID != "" || domain != "" || url != "" {
			return nil, errorf(codeInvalidParameter, "Listener %s is a %s listener and has no rules.", l.ID, l.Protocol)
		}
		return &l.Targets, nil
	}
	var r *ruleState
	switch {
	case locationID != "":
		if r = l.rule(locationID); r == nil {
			return nil, locationNotFound(locationID)
		}
	case domain != "" && url != "":
		if r = l.ruleByDomainURL(domain, url); r == nil {
			return nil, errorf(codeLocationNotFound, "No rule of %s matches domain %s and url %s.", l.ID, domain, url)
		}
	default:
		return nil, missing("LocationId")
	}
	return &r.Targets, nil
}

// checkRangeTarget rejects a target whose mapped port range would leave
// the port space: listener port P+i forwards to target port T+i.
func checkRangeTarget(l *listenerState, t *targetState) *apiError {
	if l.EndPort != 0 && t.Port+(l.EndPort-l.Port) > portMax {
		return errorf(codeRange, "Target port %d cannot map the %d ports of listener %s.", t.Port, l.EndPort-l.Port+1, l.ID)
	}
	return nil
}

func indexOfTarget(list []*targetState, k targetKey) int {
	return slices.IndexFunc(list, func(t *targetState) bool { return t.key() == k })
}

// targetsFromRequest validates the Targets of a single-listener call.
func (e *Emulator) targetsFromRequest(c *call, in []*clb.Target, needWeight bool, weight *int64) ([]*targetState, *apiError) {
	if len(in) == 0 {
		return nil, missing("Targets")
	}
	if len(in) > maxRegisterTargets {
		return nil, errorf(codeLength, "Targets should have at most %d members.", maxRegisterTargets)
	}
	out := make([]*targetState, 0, len(in))
	for _, t := range in {
		if t == nil {
			return nil, missing("Targets.Port")
		}
		w := t.Weight
		if w == nil {
			w = weight
		}
		if needWeight && w == nil {
			return nil, missing("Weight")
		}
		ts, err := e.newTarget(t.InstanceId, t.EniIp, t.Port, w, t.Tag, c)
		if err != nil {
			return nil, err
		}
		if slices.ContainsFunc(out, func(o *targetState) bool { return o.key() == ts.key() }) {
			return nil, errorf(codeDuplicate, "Target %s is duplicated in Targets.", ts)
		}
		out = append(out, ts)
	}
	return out, nil
}

// singleListenerTargets resolves the load balancer, listener and backend
// list of RegisterTargets, DeregisterTargets and ModifyTargetWeight.
func (e *Emulator) singleListenerTargets(c *call, lbID, listenerID, loc, domain, url *string) (*lbState, *[]*targetState, *listenerState, *apiError) {
	if str(listenerID) == "" {
		return nil, nil, nil, missing("ListenerId")
	}
	lb, err := e.lbForWrite(c, str(lbID))
	if err != nil {
		return nil, nil, nil, err
	}
	l := lb.listener(*listenerID)
	if l == nil {
		return nil, nil, nil, listenerNotFound(*listenerID)
	}
	list, err := targetList(l, str(loc), str(domain), str(url))
	if err != nil {
		return nil, nil, nil, err
	}
	return lb, list, l, nil
}

func (e *Emulator) registerTargets(c *call) (any, *apiError) {
	var req clb.RegisterTargetsRequestParams
	if err := decode(c, &req); err != nil {
		return nil, err
	}
	targets, apiErr := e.targetsFromRequest(c, req.Targets, false, nil)
	if apiErr != nil {
		return nil, apiErr
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	lb, list, l, apiErr := e.singleListenerTargets(c, req.LoadBalancerId, req.ListenerId, req.LocationId, req.Domain, req.Url)
	if apiErr != nil {
		return nil, apiErr
	}
	for _, t := range targets {
		if indexOfTarget(*list, t.key()) >= 0 {
			return nil, errorf(codeDuplicate, "Target %s is already bound to %s.", t, l.ID)
		}
		if err := checkRangeTarget(l, t); err != nil {
			return nil, err
		}
		if err := lb.checkFamily(t); err != nil {
			return nil, err
		}
	}
	if len(*list)+len(targets) > e.cfg.TargetQuota {
		return nil, errorf(codeLimitExceeded, "Binding %d more targets to %s would exceed the quota %d.", len(targets), l.ID, e.cfg.TargetQuota)
	}
	e.beginTask(c, taskModify, lb)
	*list = append(*list, targets...)
	return &clb.RegisterTargetsResponseParams{RequestId: &c.requestID}, nil
}

func (e *Emulator) deregisterTargets(c *call) (any, *apiError) {
	var req clb.DeregisterTargetsRequestParams
	if err := decode(c, &req); err != nil {
		return nil, err
	}
	targets, apiErr := e.targetsFromRequest(c, req.Targets, false, nil)
	if apiErr != nil {
		return nil, apiErr
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	lb, list, l, apiErr := e.singleListenerTargets(c, req.LoadBalancerId, req.ListenerId, req.LocationId, req.Domain, req.Url)
	if apiErr != nil {
		return nil, apiErr
	}
	for _, t := range targets {
		if indexOfTarget(*list, t.key()) < 0 {
			return nil, errorf(codeInvalidParameter, "Target %s is not bound to %s.", t, l.ID)
		}
	}
	e.beginTask(c, taskModify, lb)
	*list = slices.DeleteFunc(*list, func(b *targetState) bool {
		return slices.ContainsFunc(targets, func(t *targetState) bool { return t.key() == b.key() })
	})
	return &clb.DeregisterTargetsResponseParams{RequestId: &c.requestID}, nil
}

func (e *Emulator) modifyTargetWeight(c *call) (any, *apiError) {
	var req clb.ModifyTargetWeightRequestParams
	if err := decode(c, &req); err != nil {
		return nil, err
	}
	targets, apiErr := e.targetsFromRequest(c, req.Targets, true, req.Weight)
	if apiErr != nil {
		return nil, apiErr
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	lb, list, l, apiErr := e.singleListenerTargets(c, req.LoadBalancerId, req.ListenerId, req.LocationId, req.Domain, req.Url)
	if apiErr != nil {
		return nil, apiErr
	}
	for _, t := range targets {
		if indexOfTarget(*list, t.key()) < 0 {
			return nil, errorf(codeInvalidParameter, "Target %s is not bound to %s.", t, l.ID)
		}
	}
	e.beginTask(c, taskModify, lb)
	for _, t := range targets {
		(*list)[indexOfTarget(*list, t.key())].Weight = t.Weight
	}
	return &clb.ModifyTargetWeightResponseParams{RequestId: &c.requestID}, nil
}

func (e *Emulator) batchModifyTargetWeight(c *call) (any, *apiError) {
	var req clb.BatchModifyTargetWeightRequestParams
	if err := decode(c, &req); err != nil {
		return nil, err
	}
	if len(req.ModifyList) == 0 {
		return nil, missing("ModifyList")
	}
	if len(req.ModifyList) > maxBatchWeightRules {
		return nil, errorf(codeLength, "ModifyList should have at most %d members.", maxBatchWeightRules)
	}
	type change struct {
		listenerID, loc, domain, url string
		targets                      []*targetState
	}
	changes := make([]change, 0, len(req.ModifyList))
	total := 0
	for _, m := range req.ModifyList {
		if m == nil || str(m.ListenerId) == "" {
			return nil, missing("ModifyList.ListenerId")
		}
		if len(m.Targets) > maxBatchWeightRuleTargets {
			return nil, errorf(codeLength, "ModifyList.Targets should have at most %d members.", maxBatchWeightRuleTargets)
		}
		total += len(m.Targets)
		if total > maxBatchTargets {
			return nil, errorf(codeLength, "ModifyList should hold at most %d targets in total.", maxBatchTargets)
		}
		//nolint:staticcheck // Domain and Url are deprecated in the SDK but the API still honours them.
		ch := change{listenerID: *m.ListenerId, loc: str(m.LocationId), domain: str(m.Domain), url: str(m.Url)}
		if len(m.Targets) == 0 {
			return nil, missing("ModifyList.Targets")
		}
		for _, t := range m.Targets {
			if t == nil {
				return nil, missing("ModifyList.Targets.Port")
			}
			w := t.Weight
			if w == nil {
				w = m.Weight
			}
			if w == nil {
				return nil, missing("ModifyList.Weight")
			}
			ts, err := e.newTarget(t.InstanceId, t.EniIp, t.Port, w, nil, c)
			if err != nil {
				return nil, err
			}
			ch.targets = append(ch.targets, ts)
		}
		changes = append(changes, ch)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	lb, apiErr := e.lbForWrite(c, str(req.LoadBalancerId))
	if apiErr != nil {
		return nil, apiErr
	}
	// Validate everything first: the call applies all changes or none.
	for _, ch := range changes {
		l := lb.listener(ch.listenerID)
		if l == nil {
			return nil, listenerNotFound(ch.listenerID)
		}
		list, err := targetList(l, ch.loc, ch.domain, ch.url)
		if err != nil {
			return nil, err
		}
		for _, t := range ch.targets {
			if indexOfTarget(*list, t.key()) < 0 {
				return nil, errorf(codeInvalidParameter, "Target %s is not bound to %s.", t, l.ID)
			}
		}
	}
	e.beginTask(c, taskModify, lb)
	for _, ch := range changes {
		list, _ := targetList(lb.listener(ch.listenerID), ch.loc, ch.domain, ch.url)
		for _, t := range ch.targets {
			(*list)[indexOfTarget(*list, t.key())].Weight = t.Weight
		}
	}
	return &clb.BatchModifyTargetWeightResponseParams{RequestId: &c.requestID}, nil
}

// batchGroup is the part of a Batch*Targets call that targets one listener;
// a group succeeds or fails as a whole, as FailListenerIdSet reports.
type batchGroup struct {
	listenerID string
	targets    []*targetState
	locations  []string
}

func (e *Emulator) batchGroups(c *call, in []*clb.BatchTarget) ([]*batchGroup, *apiError) {
	if len(in) == 0 {
		return nil, missing("Targets")
	}
	if len(in) > maxBatchTargets {
		return nil, errorf(codeLength, "Targets should have at most %d members.", maxBatchTargets)
	}
	var groups []*batchGroup
	for _, t := range in {
		if t == nil || str(t.ListenerId) == "" {
			return nil, missing("Targets.ListenerId")
		}
		if t.Port == nil {
			return nil, missing("Targets.Port")
		}
		ts, err := e.newTarget(t.InstanceId, t.EniIp, t.Port, t.Weight, t.Tag, c)
		if err != nil {
			return nil, err
		}
		i := slices.IndexFunc(groups, func(g *batchGroup) bool { return g.listenerID == *t.ListenerId })
		if i < 0 {
			groups = append(groups, &batchGroup{listenerID: *t.ListenerId})
			i = len(groups) - 1
		}
		groups[i].targets = append(groups[i].targets, ts)
		groups[i].locations = append(groups[i].locations, str(t.LocationId))
	}
	return groups, nil
}

// batchTargets runs BatchRegisterTargets (register=true) or
// BatchDeregisterTargets. Both apply synchronously, report per-listener
// failures in FailListenerIdSet and Message instead of failing the call,
// and still record a completed task for their RequestId.
func (e *Emulator) batchTargets(c *call, lbID *string, in []*clb.BatchTarget, register bool) ([]*string, *string, *apiError) {
	groups, apiErr := e.batchGroups(c, in)
	if apiErr != nil {
		return nil, nil, apiErr
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	lb, apiErr := e.lbForWrite(c, str(lbID))
	if apiErr != nil {
		return nil, nil, apiErr
	}
	var failed, msgs []string
	for _, g := range groups {
		if msg := e.applyBatchGroup(lb, g, register); msg != "" {
			failed, msgs = append(failed, g.listenerID), append(msgs, msg)
			continue
		}
		c.changed = true
	}
	e.recordSyncTask(c, lb.ID)
	return strPtrs(failed), ptr(strings.Join(msgs, " ")), nil
}

// applyBatchGroup validates a group against lb and applies it when valid,
// returning the failure message otherwise.
func (e *Emulator) applyBatchGroup(lb *lbState, g *batchGroup, register bool) string {
	l := lb.listener(g.listenerID)
	if l == nil {
		return fmt.Sprintf("Listener %s not exists.", g.listenerID)
	}
	lists := make([]*[]*targetState, len(g.targets))
	added := map[*[]*targetState]int{}
	seen := map[targetKey]*[]*targetState{}
	for i, t := range g.targets {
		list, err := targetList(l, g.locations[i], "", "")
		if err != nil {
			return err.Message
		}
		if prev, dup := seen[t.key()]; dup && prev == list {
			return fmt.Sprintf("Target %s is duplicated for %s.", t, l.ID)
		}
		seen[t.key()] = list
		bound := indexOfTarget(*list, t.key()) >= 0
		switch {
		case register && bound:
			return fmt.Sprintf("Target %s is already bound to %s.", t, l.ID)
		case !register && !bound:
			return fmt.Sprintf("Target %s is not bound to %s.", t, l.ID)
		}
		if register {
			if err := checkRangeTarget(l, t); err != nil {
				return err.Message
			}
			if err := lb.checkFamily(t); err != nil {
				return err.Message
			}
			added[list]++
			if len(*list)+added[list] > e.cfg.TargetQuota {
				return fmt.Sprintf("Listener %s would exceed the target quota %d.", l.ID, e.cfg.TargetQuota)
			}
		}
		lists[i] = list
	}
	for i, t := range g.targets {
		list := lists[i]
		if register {
			*list = append(*list, t)
		} else {
			i := indexOfTarget(*list, t.key())
			*list = slices.Delete(*list, i, i+1)
		}
	}
	return ""
}

func (e *Emulator) batchRegisterTargets(c *call) (any, *apiError) {
	var req clb.BatchRegisterTargetsRequestParams
	if err := decode(c, &req); err != nil {
		return nil, err
	}
	failed, msg, err := e.batchTargets(c, req.LoadBalancerId, req.Targets, true)
	if err != nil {
		return nil, err
	}
	return &clb.BatchRegisterTargetsResponseParams{FailListenerIdSet: failed, Message: msg, RequestId: &c.requestID}, nil
}

func (e *Emulator) batchDeregisterTargets(c *call) (any, *apiError) {
	var req clb.BatchDeregisterTargetsRequestParams
	if err := decode(c, &req); err != nil {
		return nil, err
	}
	failed, msg, err := e.batchTargets(c, req.LoadBalancerId, req.Targets, false)
	if err != nil {
		return nil, err
	}
	return &clb.BatchDeregisterTargetsResponseParams{FailListenerIdSet: failed, Message: msg, RequestId: &c.requestID}, nil
}

// targetFilter holds the Filters of DescribeTargets.
type targetFilter struct {
	locations, ips, tags []string
}

func (f targetFilter) active() bool { return f.locations != nil || f.ips != nil || f.tags != nil }

func (f targetFilter) keep(t *targetState) bool {
	return (f.ips == nil || slices.Contains(f.ips, t.IP)) && (f.tags == nil || slices.Contains(f.tags, t.Tag))
}

func (e *Emulator) describeTargets(c *call) (any, *apiError) {
	var req clb.DescribeTargetsRequestParams
	if err := decode(c, &req); err != nil {
		return nil, err
	}
	if len(req.ListenerIds) > maxDescribeTargetsIDs {
		return nil, errorf(codeLength, "ListenerIds should have at most %d members.", maxDescribeTargetsIDs)
	}
	proto := str(req.Protocol)
	if proto != "" && !validProtocol(proto) {
		return nil, errorf(codeInvalidValue, "Protocol should be one of TCP, UDP, HTTP, HTTPS, TCP_SSL and QUIC, got %s.", proto)
	}
	var f targetFilter
	for _, fl := range req.Filters {
		if fl == nil || len(fl.Values) == 0 {
			return nil, missing("Filters.Values")
		}
		switch str(fl.Name) {
		case "location-id":
			f.locations = append(f.locations, strs(fl.Values)...)
		case "private-ip-address":
			f.ips = append(f.ips, strs(fl.Values)...)
		case "tag":
			f.tags = append(f.tags, strs(fl.Values)...)
		default:
			return nil, errorf(codeInvalidFilter, "The filter %s is not supported.", str(fl.Name))
		}
	}
	e.mu.RLock()
	defer e.mu.RUnlock()
	lb, apiErr := e.lbForRead(c, str(req.LoadBalancerId))
	if apiErr != nil {
		return nil, apiErr
	}
	resp := &clb.DescribeTargetsResponseParams{Listeners: []*clb.ListenerBackend{}, RequestId: &c.requestID}
	for _, l := range lb.Listeners {
		if (len(req.ListenerIds) > 0 && !containsPtr(req.ListenerIds, l.ID)) ||
			(proto != "" && proto != l.Protocol) || (req.Port != nil && *req.Port != l.Port) {
			continue
		}
		out := &clb.ListenerBackend{ListenerId: ptr(l.ID), Protocol: ptr(l.Protocol), Port: ptr(l.Port), EndPort: ptr(l.EndPort)}
		if isL7(l.Protocol) {
			out.Rules = []*clb.RuleTargets{}
			for _, r := range l.Rules {
				if f.locations != nil && !slices.Contains(f.locations, r.ID) {
					continue
				}
				rt := &clb.RuleTargets{LocationId: ptr(r.ID), Domain: ptr(r.Domain), Url: ptr(r.URL), Targets: backends(r.Targets, f)}
				if f.active() && len(rt.Targets) == 0 && (f.ips != nil || f.tags != nil) {
					continue
				}
				out.Rules = append(out.Rules, rt)
			}
			if f.active() && len(out.Rules) == 0 {
				continue
			}
		} else {
			if f.locations != nil {
				continue // location-id selects L7 rules only
			}
			out.Targets = backends(l.Targets, f)
			if f.active() && len(out.Targets) == 0 {
				continue
			}
		}
		resp.Listeners = append(resp.Listeners, out)
	}
	return resp, nil
}

func backends(ts []*targetState, f targetFilter) []*clb.Backend {
	out := []*clb.Backend{}
	for _, t := range ts {
		if f.keep(t) {
			out = append(out, t.toSDK())
		}
	}
	return out
}

func (t *targetState) toSDK() *clb.Backend {
	return &clb.Backend{
		Type:               ptr(t.Type),
		InstanceId:         ptr(t.InstanceID),
		Port:               ptr(t.Port),
		Weight:             ptr(t.Weight),
		PrivateIpAddresses: []*string{ptr(t.IP)},
		InstanceName:       ptr(t.InstanceID),
		RegisteredTime:     ptr(formatTime(t.RegisteredTime)),
		EniId:              ptr(""),
		Tag:                ptr(t.Tag),
		Zone:               ptr(""),
	}
}

func (e *Emulator) describeTargetHealth(c *call) (any, *apiError) {
	var req clb.DescribeTargetHealthRequestParams
	if err := decode(c, &req); err != nil {
		return nil, err
	}
	if len(req.LoadBalancerIds) == 0 {
		return nil, missing("LoadBalancerIds")
	}
	if len(req.LoadBalancerIds) > maxTargetHealthLBs {
		return nil, errorf(codeLength, "LoadBalancerIds should have at most %d members.", maxTargetHealthLBs)
	}
	var probes []probe
	resp, err := e.targetHealthAnswer(c, &req, &probes)
	if err != nil {
		return nil, err
	}
	// Probes run without the lock: they wait on sockets.
	runProbes(probes)
	return resp, nil
}

// targetHealthAnswer builds the answer of DescribeTargetHealth, adding to
// probes the targets ProbeTargets checks for real.
func (e *Emulator) targetHealthAnswer(c *call, req *clb.DescribeTargetHealthRequestParams, probes *[]probe) (*clb.DescribeTargetHealthResponseParams, *apiError) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	resp := &clb.DescribeTargetHealthResponseParams{LoadBalancers: []*clb.LoadBalancerHealth{}, RequestId: &c.requestID}
	for _, id := range slices.Compact(strs(req.LoadBalancerIds)) {
		lb, err := e.lbForRead(c, id)
		if err != nil {
			return nil, err
		}
		lh := &clb.LoadBalancerHealth{LoadBalancerId: ptr(lb.ID), LoadBalancerName: ptr(lb.Name), Listeners: []*clb.ListenerHealth{}}
		for _, l := range lb.Listeners {
			if len(req.ListenerIds) > 0 && !containsPtr(req.ListenerIds, l.ID) {
				continue
			}
			out := &clb.ListenerHealth{ListenerId: ptr(l.ID), ListenerName: ptr(l.Name), Protocol: ptr(l.Protocol),
				Port: ptr(l.Port), Rules: []*clb.RuleHealth{}}
			keep := func(loc string) bool { return len(req.LocationIds) == 0 || containsPtr(req.LocationIds, loc) }
			if isL7(l.Protocol) {
				for _, r := range l.Rules {
					if keep(r.ID) {
						out.Rules = append(out.Rules, &clb.RuleHealth{LocationId: ptr(r.ID), Domain: ptr(r.Domain),
							Url: ptr(r.URL), Targets: e.targetHealth(r.Targets, r.HealthCheck, probes)})
					}
				}
			} else if keep(l.HealthLocationID) {
				// L4 listeners report through a single rule without domain or url.
				out.Rules = append(out.Rules, &clb.RuleHealth{LocationId: ptr(l.HealthLocationID),
					Targets: e.targetHealth(l.Targets, l.HealthCheck, probes)})
			}
			lh.Listeners = append(lh.Listeners, out)
		}
		resp.LoadBalancers = append(resp.LoadBalancers, lh)
	}
	return resp, nil
}

func (e *Emulator) targetHealth(ts []*targetState, hc *clb.HealthCheck, probes *[]probe) []*clb.TargetHealth {
	out := []*clb.TargetHealth{}
	for _, t := range ts {
		healthy, detail := true, "Alive"
		check := false
		switch {
		case hc != nil && i64(hc.HealthSwitch, 1) == 0:
			detail = "Close"
		case hasKey(e.st.health, healthKey{t.IP, t.Port}):
			healthy, detail = false, "Dead"
		default:
			check = e.cfg.ProbeTargets
		}
		// Both spellings of the detail share one value, which a probe sets.
		d := ptr(detail)
		th := &clb.TargetHealth{
			IP: ptr(t.IP), Port: ptr(t.Port), HealthStatus: ptr(healthy), TargetId: ptr(t.InstanceID),
			HealthStatusDetail: d, HealthStatusDetial: d, Weight: ptr(uint64(t.Weight)),
		}
		if addr, ok := probeAddr(e.cfg.socketIP(t.IP), t, hc); check && ok {
			*probes = append(*probes, probe{addr: addr, out: th})
		}
		out = append(out, th)
	}
	return out
}

// probeTimeout bounds one probe; loopback answers or refuses at once.
const probeTimeout = time.Second

// A probe is one target ProbeTargets connects to, and its answer entry.
type probe struct {
	addr string
	out  *clb.TargetHealth
}

// probeAddr returns where to probe t, whose sockets use address sock: a
// loopback one (a VPC address mapped by VPCLoopbackCIDR counts), for a TCP
// or HTTP check, on the check port when one is set.
func probeAddr(sock string, t *targetState, hc *clb.HealthCheck) (string, bool) {
	ip, err := netip.ParseAddr(sock)
	if err != nil || !ip.IsLoopback() {
		return "", false
	}
	if hc != nil {
		if ct := str(hc.CheckType); ct != "" && ct != "TCP" && ct != "HTTP" {
			return "", false
		}
	}
	port := t.Port
	if hc != nil && hc.CheckPort != nil && *hc.CheckPort > 0 {
		port = *hc.CheckPort
	}
	return net.JoinHostPort(ip.String(), strconv.FormatInt(port, 10)), true
}

// runProbes connects to every probe's target at once and marks those that
// refuse or time out Dead.
func runProbes(ps []probe) {
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := net.DialTimeout("tcp", p.addr, probeTimeout)
			if err != nil {
				*p.out.HealthStatus, *p.out.HealthStatusDetail = false, "Dead"
				return
			}
			_ = conn.Close()
		}()
	}
	wg.Wait()
}

func hasKey[K comparable, V any](m map[K]V, k K) bool {
	_, ok := m[k]
	return ok
}

// SetTargetHealth makes DescribeTargetHealth report the backend ip:port as
// healthy or not (every backend is healthy until told otherwise).
func (e *Emulator) SetTargetHealth(ip string, port int, healthy bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	k := healthKey{ip, int64(port)}
	if healthy {
		delete(e.st.health, k)
		return
	}
	e.st.health[k] = false
}
