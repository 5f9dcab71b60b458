package clb

import (
	"fmt"
	"strings"

	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
)

// ListenerName is the listener's name in the cloud: spec, or metadata.name.
func ListenerName(cr *v1alpha1.Listener) string {
	if cr.Spec.ForProvider.Name != nil {
		return *cr.Spec.ForProvider.Name
	}
	return cr.GetName()
}

// CreateListenerRequest creates the listener cr asks for.
func CreateListenerRequest(cr *v1alpha1.Listener) *clbsdk.CreateListenerRequest {
	p := cr.Spec.ForProvider
	req := clbsdk.NewCreateListenerRequest()
	req.LoadBalancerId = p.LoadBalancerID
	req.Ports = []*int64{Ptr(p.Port)}
	req.Protocol = Ptr(p.Protocol)
	req.ListenerNames = []*string{Ptr(ListenerName(cr))}
	if p.EndPort != nil {
		req.EndPort = Ptr(uint64(*p.EndPort)) //nolint:gosec // G115: validated to 2-65535.
	}
	req.HealthCheck = HealthCheckToSDK(p.HealthCheck)
	req.Scheduler = p.Scheduler
	req.SessionExpireTime = p.SessionExpireTime
	req.Certificate = Certificate(p.Certificate)
	return req
}

// ModifyListenerRequest sets every mutable field of cr on listener id.
func ModifyListenerRequest(lbID, id string, cr *v1alpha1.Listener) *clbsdk.ModifyListenerRequest {
	p := cr.Spec.ForProvider
	req := clbsdk.NewModifyListenerRequest()
	req.LoadBalancerId = Ptr(lbID)
	req.ListenerId = Ptr(id)
	req.ListenerName = Ptr(ListenerName(cr))
	req.HealthCheck = HealthCheckToSDK(p.HealthCheck)
	req.Scheduler = p.Scheduler
	req.SessionExpireTime = p.SessionExpireTime
	req.Certificate = Certificate(p.Certificate)
	return req
}

// ObserveListener is the observation of listener l on load balancer lb
// (nil: its addresses are unknown).
func ObserveListener(task v1alpha1.TaskStatus, lbID string, l *clbsdk.Listener, lb *clbsdk.LoadBalancer) v1alpha1.ListenerObservation {
	o := v1alpha1.ListenerObservation{
		ID:             Deref(l.ListenerId),
		LoadBalancerID: lbID,
		CreateTime:     Deref(l.CreateTime),
		Task:           task,
	}
	if lb == nil {
		return o
	}
	ports := fmt.Sprint(Deref(l.Port))
	if end := Deref(l.EndPort); end > 0 {
		ports = fmt.Sprintf("%d-%d", Deref(l.Port), end)
	}
	for _, v := range LoadBalancerVIPs(lb) {
		host := v
		if strings.Contains(v, ":") {
			host = "[" + v + "]" // IPv6
		}
		o.VIPs = append(o.VIPs, v)
		o.Addresses = append(o.Addresses, host+":"+ports)
	}
	return o
}

// LateInitListener fills unset fields from the cloud; it never overwrites.
func LateInitListener(p *v1alpha1.ListenerParameters, l *clbsdk.Listener) bool {
	named := lateInitString(&p.Name, l.ListenerName)
	if p.Protocol == "HTTP" || p.Protocol == "HTTPS" {
		// Layer-7 listeners keep these settings on their rules.
		return named
	}
	return anyOf(named,
		lateInitString(&p.Scheduler, l.Scheduler),
		lateInitValue(&p.SessionExpireTime, l.SessionExpireTime),
		LateInitHealthCheck(&p.HealthCheck, l.HealthCheck))
}

// DiffListener compares the mutable fields; port, protocol and endPort are
// immutable and enforced by the API server.
func DiffListener(p v1alpha1.ListenerParameters, l *clbsdk.Listener) string {
	d := Diff{}
	Compare(&d, "name", p.Name, l.ListenerName)
	Compare(&d, "scheduler", p.Scheduler, l.Scheduler)
	Compare(&d, "sessionExpireTime", p.SessionExpireTime, l.SessionExpireTime)
	DiffHealthCheck(&d, p.HealthCheck, l.HealthCheck)
	DiffCertificate(&d, p.Certificate, l.Certificate)
	return d.String()
}
