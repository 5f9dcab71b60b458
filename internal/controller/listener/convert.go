package listener

import (
	"fmt"

	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
)

// name is the listener's name in the cloud: spec, or metadata.name.
func name(cr *v1alpha1.Listener) string {
	if cr.Spec.ForProvider.Name != nil {
		return *cr.Spec.ForProvider.Name
	}
	return cr.GetName()
}

func createRequest(cr *v1alpha1.Listener) *clbsdk.CreateListenerRequest {
	p := cr.Spec.ForProvider
	req := clbsdk.NewCreateListenerRequest()
	req.LoadBalancerId = p.LoadBalancerID
	req.Ports = []*int64{clb.Ptr(p.Port)}
	req.Protocol = clb.Ptr(p.Protocol)
	req.ListenerNames = []*string{clb.Ptr(name(cr))}
	if p.EndPort != nil {
		req.EndPort = clb.Ptr(uint64(*p.EndPort)) //nolint:gosec // G115: validated to 2-65535.
	}
	req.HealthCheck = clb.HealthCheckToSDK(p.HealthCheck)
	req.Scheduler = p.Scheduler
	req.SessionExpireTime = p.SessionExpireTime
	req.Certificate = certificate(p.Certificate)
	return req
}

func certificate(c *v1alpha1.Certificate) *clbsdk.CertificateInput {
	if c == nil {
		return nil
	}
	mode := clb.Deref(c.SSLMode)
	if mode == "" {
		mode = "UNIDIRECTIONAL"
	}
	return &clbsdk.CertificateInput{SSLMode: clb.Ptr(mode), CertId: clb.Ptr(c.CertID), CertCaId: c.CertCaID}
}

func modifyRequest(lbID, id string, cr *v1alpha1.Listener) *clbsdk.ModifyListenerRequest {
	p := cr.Spec.ForProvider
	req := clbsdk.NewModifyListenerRequest()
	req.LoadBalancerId = clb.Ptr(lbID)
	req.ListenerId = clb.Ptr(id)
	req.ListenerName = clb.Ptr(name(cr))
	req.HealthCheck = clb.HealthCheckToSDK(p.HealthCheck)
	req.Scheduler = p.Scheduler
	req.SessionExpireTime = p.SessionExpireTime
	req.Certificate = certificate(p.Certificate)
	return req
}

func observe(task v1alpha1.TaskStatus, lbID string, l *clbsdk.Listener, lb *clbsdk.LoadBalancer) v1alpha1.ListenerObservation {
	o := v1alpha1.ListenerObservation{
		ID:             clb.Deref(l.ListenerId),
		LoadBalancerID: lbID,
		CreateTime:     clb.Deref(l.CreateTime),
		Task:           task,
	}
	if lb == nil {
		return o
	}
	ports := fmt.Sprint(clb.Deref(l.Port))
	if end := clb.Deref(l.EndPort); end > 0 {
		ports = fmt.Sprintf("%d-%d", clb.Deref(l.Port), end)
	}
	for _, v := range lb.LoadBalancerVips {
		o.VIPs = append(o.VIPs, clb.Deref(v))
		o.Addresses = append(o.Addresses, clb.Deref(v)+":"+ports)
	}
	return o
}

// lateInitialize fills unset fields from the cloud; it never overwrites.
func lateInitialize(p *v1alpha1.ListenerParameters, l *clbsdk.Listener) bool {
	changed := false
	if p.Name == nil && clb.Deref(l.ListenerName) != "" {
		p.Name = clb.Ptr(*l.ListenerName)
		changed = true
	}
	if p.Protocol == "HTTP" || p.Protocol == "HTTPS" {
		// Layer-7 listeners keep these settings on their rules.
		return changed
	}
	if p.Scheduler == nil && clb.Deref(l.Scheduler) != "" {
		p.Scheduler = clb.Ptr(*l.Scheduler)
		changed = true
	}
	if p.SessionExpireTime == nil && l.SessionExpireTime != nil {
		p.SessionExpireTime = clb.Ptr(*l.SessionExpireTime)
		changed = true
	}
	if clb.LateInitHealthCheck(&p.HealthCheck, l.HealthCheck) {
		changed = true
	}
	return changed
}

// diff compares the mutable fields; port, protocol and endPort are
// immutable and enforced by the API server.
func diff(p v1alpha1.ListenerParameters, l *clbsdk.Listener) string {
	d := clb.Diff{}
	clb.Compare(&d, "name", p.Name, l.ListenerName)
	clb.Compare(&d, "scheduler", p.Scheduler, l.Scheduler)
	clb.Compare(&d, "sessionExpireTime", p.SessionExpireTime, l.SessionExpireTime)
	clb.DiffHealthCheck(&d, p.HealthCheck, l.HealthCheck)
	if c := p.Certificate; c != nil {
		got := l.Certificate
		if got == nil {
			got = &clbsdk.CertificateOutput{}
		}
		clb.Compare(&d, "certificate.certId", &c.CertID, got.CertId)
		clb.Compare(&d, "certificate.certCaId", c.CertCaID, got.CertCaId)
		clb.Compare(&d, "certificate.sslMode", c.SSLMode, got.SSLMode)
	}
	return d.String()
}
