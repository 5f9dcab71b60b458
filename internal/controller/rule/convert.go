package rule

import (
	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
)

// Listener protocols that carry rules.
const (
	protocolHTTP  = "HTTP"
	protocolHTTPS = "HTTPS"
)

func isL7(protocol string) bool { return protocol == protocolHTTP || protocol == protocolHTTPS }

func createRequest(lbID, listenerID string, p v1alpha1.RuleParameters) *clbsdk.CreateRuleRequest {
	req := clbsdk.NewCreateRuleRequest()
	req.LoadBalancerId = clb.Ptr(lbID)
	req.ListenerId = clb.Ptr(listenerID)
	req.Rules = []*clbsdk.RuleInput{{
		Domain:            clb.Ptr(p.Domain),
		Url:               clb.Ptr(p.URL),
		Scheduler:         p.Scheduler,
		SessionExpireTime: p.SessionExpireTime,
		HealthCheck:       clb.HealthCheckToSDK(p.HealthCheck),
		ForwardType:       p.ForwardType,
	}}
	return req
}

// modifyRequest sends every mutable field the spec sets; the domain of a
// rule cannot change.
func modifyRequest(lbID, listenerID, id string, p v1alpha1.RuleParameters) *clbsdk.ModifyRuleRequest {
	req := clbsdk.NewModifyRuleRequest()
	req.LoadBalancerId = clb.Ptr(lbID)
	req.ListenerId = clb.Ptr(listenerID)
	req.LocationId = clb.Ptr(id)
	req.Url = clb.Ptr(p.URL)
	req.Scheduler = p.Scheduler
	req.SessionExpireTime = p.SessionExpireTime
	req.HealthCheck = clb.HealthCheckToSDK(p.HealthCheck)
	req.ForwardType = p.ForwardType
	return req
}

func deleteRequest(lbID, listenerID, id string) *clbsdk.DeleteRuleRequest {
	req := clbsdk.NewDeleteRuleRequest()
	req.LoadBalancerId = clb.Ptr(lbID)
	req.ListenerId = clb.Ptr(listenerID)
	req.LocationIds = []*string{clb.Ptr(id)}
	return req
}

// findRule returns the rule with location id among the listener's rules.
func findRule(l *clbsdk.Listener, id string) *clbsdk.RuleOutput {
	for _, r := range l.Rules {
		if r != nil && clb.Deref(r.LocationId) == id {
			return r
		}
	}
	return nil
}

// findRuleByMatch returns the listener's rule for domain and url; a
// listener holds at most one.
func findRuleByMatch(l *clbsdk.Listener, domain, url string) *clbsdk.RuleOutput {
	for _, r := range l.Rules {
		if r != nil && ruleDomain(r) == domain && clb.Deref(r.Url) == url {
			return r
		}
	}
	return nil
}

// ruleDomain is the rule's domain; rules with several domains report the
// first in Domain as well.
func ruleDomain(r *clbsdk.RuleOutput) string {
	if d := clb.Deref(r.Domain); d != "" {
		return d
	}
	if len(r.Domains) > 0 {
		return clb.Deref(r.Domains[0])
	}
	return ""
}

func observe(task v1alpha1.TaskStatus, lbID string, l *clbsdk.Listener, r *clbsdk.RuleOutput) v1alpha1.RuleObservation {
	return v1alpha1.RuleObservation{
		ID:             clb.Deref(r.LocationId),
		LoadBalancerID: lbID,
		ListenerID:     clb.Deref(l.ListenerId),
		Protocol:       clb.Deref(l.Protocol),
		Task:           task,
	}
}

// lateInitialize fills unset fields from the cloud; it never overwrites.
func lateInitialize(p *v1alpha1.RuleParameters, r *clbsdk.RuleOutput) bool {
	changed := false
	if p.Scheduler == nil && clb.Deref(r.Scheduler) != "" {
		p.Scheduler = clb.Ptr(*r.Scheduler)
		changed = true
	}
	if p.SessionExpireTime == nil && r.SessionExpireTime != nil {
		p.SessionExpireTime = clb.Ptr(*r.SessionExpireTime)
		changed = true
	}
	if p.ForwardType == nil && clb.Deref(r.ForwardType) != "" {
		p.ForwardType = clb.Ptr(*r.ForwardType)
		changed = true
	}
	if clb.LateInitHealthCheck(&p.HealthCheck, r.HealthCheck) {
		changed = true
	}
	return changed
}

// diff compares the mutable fields. The domain is immutable: the API
// server refuses a change and Observe reports a rule whose domain differs.
func diff(p v1alpha1.RuleParameters, r *clbsdk.RuleOutput) string {
	d := clb.Diff{}
	clb.Compare(&d, "url", &p.URL, r.Url)
	clb.Compare(&d, "scheduler", p.Scheduler, r.Scheduler)
	clb.Compare(&d, "sessionExpireTime", p.SessionExpireTime, r.SessionExpireTime)
	clb.DiffHealthCheck(&d, p.HealthCheck, r.HealthCheck)
	clb.Compare(&d, "forwardType", p.ForwardType, r.ForwardType)
	return d.String()
}
