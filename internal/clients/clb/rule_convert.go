package clb

import (
	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
)

// Listener protocols that carry rules.
const (
	protocolHTTP  = "HTTP"
	protocolHTTPS = "HTTPS"
)

// IsL7 reports whether listeners of protocol carry rules.
func IsL7(protocol string) bool { return protocol == protocolHTTP || protocol == protocolHTTPS }

// CreateRuleRequest creates the rule p asks for on a listener.
func CreateRuleRequest(lbID, listenerID string, p v1alpha1.RuleParameters) *clbsdk.CreateRuleRequest {
	req := clbsdk.NewCreateRuleRequest()
	req.LoadBalancerId = Ptr(lbID)
	req.ListenerId = Ptr(listenerID)
	req.Rules = []*clbsdk.RuleInput{{
		Domain:            Ptr(p.Domain),
		Url:               Ptr(p.URL),
		Scheduler:         p.Scheduler,
		SessionExpireTime: p.SessionExpireTime,
		HealthCheck:       HealthCheckToSDK(p.HealthCheck),
		ForwardType:       p.ForwardType,
	}}
	return req
}

// ModifyRuleRequest sends every mutable field the spec sets; the domain of a
// rule cannot change.
func ModifyRuleRequest(lbID, listenerID, id string, p v1alpha1.RuleParameters) *clbsdk.ModifyRuleRequest {
	req := clbsdk.NewModifyRuleRequest()
	req.LoadBalancerId = Ptr(lbID)
	req.ListenerId = Ptr(listenerID)
	req.LocationId = Ptr(id)
	req.Url = Ptr(p.URL)
	req.Scheduler = p.Scheduler
	req.SessionExpireTime = p.SessionExpireTime
	req.HealthCheck = HealthCheckToSDK(p.HealthCheck)
	req.ForwardType = p.ForwardType
	return req
}

// DeleteRuleRequest deletes rule id.
func DeleteRuleRequest(lbID, listenerID, id string) *clbsdk.DeleteRuleRequest {
	req := clbsdk.NewDeleteRuleRequest()
	req.LoadBalancerId = Ptr(lbID)
	req.ListenerId = Ptr(listenerID)
	req.LocationIds = []*string{Ptr(id)}
	return req
}

// FindRule returns the rule with location id among the listener's rules.
func FindRule(l *clbsdk.Listener, id string) *clbsdk.RuleOutput {
	for _, r := range l.Rules {
		if r != nil && Deref(r.LocationId) == id {
			return r
		}
	}
	return nil
}

// FindRuleByMatch returns the listener's rule for domain and url; a
// listener holds at most one.
func FindRuleByMatch(l *clbsdk.Listener, domain, url string) *clbsdk.RuleOutput {
	for _, r := range l.Rules {
		if r != nil && RuleDomain(r) == domain && Deref(r.Url) == url {
			return r
		}
	}
	return nil
}

// RuleDomain is the rule's domain; rules with several domains report the
// first in Domain as well.
func RuleDomain(r *clbsdk.RuleOutput) string {
	if d := Deref(r.Domain); d != "" {
		return d
	}
	if len(r.Domains) > 0 {
		return Deref(r.Domains[0])
	}
	return ""
}

// ObserveRule is the observation of rule r of listener l.
func ObserveRule(task v1alpha1.TaskStatus, lbID string, l *clbsdk.Listener, r *clbsdk.RuleOutput) v1alpha1.RuleObservation {
	return v1alpha1.RuleObservation{
		ID:             Deref(r.LocationId),
		LoadBalancerID: lbID,
		ListenerID:     Deref(l.ListenerId),
		Protocol:       Deref(l.Protocol),
		Task:           task,
	}
}

// LateInitRule fills unset fields from the cloud; it never overwrites.
func LateInitRule(p *v1alpha1.RuleParameters, r *clbsdk.RuleOutput) bool {
	return anyOf(
		lateInitString(&p.Scheduler, r.Scheduler),
		lateInitValue(&p.SessionExpireTime, r.SessionExpireTime),
		lateInitString(&p.ForwardType, r.ForwardType),
		LateInitHealthCheck(&p.HealthCheck, r.HealthCheck))
}

// DiffRule compares the mutable fields. The domain is immutable: the API
// server refuses a change and Observe reports a rule whose domain differs.
func DiffRule(p v1alpha1.RuleParameters, r *clbsdk.RuleOutput) string {
	d := Diff{}
	Compare(&d, "url", &p.URL, r.Url)
	Compare(&d, "scheduler", p.Scheduler, r.Scheduler)
	Compare(&d, "sessionExpireTime", p.SessionExpireTime, r.SessionExpireTime)
	DiffHealthCheck(&d, p.HealthCheck, r.HealthCheck)
	Compare(&d, "forwardType", p.ForwardType, r.ForwardType)
	return d.String()
}
