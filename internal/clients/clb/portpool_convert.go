package clb

import (
	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
)

// A PortPool's listeners: each takes the pool's listener settings.

// withCertificate reports whether protocol takes the pool's certificate,
// in CreateListener as in ModifyListener: TCP_SSL must have one, QUIC may.
func withCertificate(protocol string) bool { return protocol == "TCP_SSL" || protocol == "QUIC" }

// poolSettings are the fields of a create or modify request that the
// pool's settings give; nil for those it leaves to the cloud.
func poolSettings(protocol string, s *v1alpha1.PoolListenerSettings) (*clbsdk.HealthCheck, *string, *int64, *clbsdk.CertificateInput) {
	if s == nil {
		return nil, nil, nil, nil
	}
	var cert *clbsdk.CertificateInput
	if withCertificate(protocol) {
		cert = Certificate(s.Certificate)
	}
	return HealthCheckToSDK(s.HealthCheck), s.Scheduler, s.SessionExpireTime, cert
}

// CreatePoolListenersRequest creates a pool's listeners of one protocol on
// ports, named names; endPort, when set, closes the range of the one
// port of a segment.
func CreatePoolListenersRequest(lbID, protocol string, ports []int64, names []string, endPort int64, settings *v1alpha1.PoolListenerSettings) *clbsdk.CreateListenerRequest {
	req := clbsdk.NewCreateListenerRequest()
	req.LoadBalancerId = Ptr(lbID)
	req.Protocol = Ptr(protocol)
	for i, p := range ports {
		req.Ports = append(req.Ports, Ptr(p))
		req.ListenerNames = append(req.ListenerNames, Ptr(names[i]))
	}
	if endPort > 0 {
		req.EndPort = Ptr(uint64(endPort)) //nolint:gosec // G115: ports are 1-65535.
	}
	req.HealthCheck, req.Scheduler, req.SessionExpireTime, req.Certificate = poolSettings(protocol, settings)
	return req
}

// ModifyPoolListenerRequest sets every listener setting the pool gives.
func ModifyPoolListenerRequest(lbID, id, protocol string, settings *v1alpha1.PoolListenerSettings) *clbsdk.ModifyListenerRequest {
	req := clbsdk.NewModifyListenerRequest()
	req.LoadBalancerId = Ptr(lbID)
	req.ListenerId = Ptr(id)
	req.HealthCheck, req.Scheduler, req.SessionExpireTime, req.Certificate = poolSettings(protocol, settings)
	return req
}

// DiffPoolListener compares the settings a pool gives with its listener l;
// unset settings are the cloud's business.
func DiffPoolListener(settings *v1alpha1.PoolListenerSettings, protocol string, l *clbsdk.Listener) string {
	if settings == nil {
		return ""
	}
	d := Diff{}
	Compare(&d, "scheduler", settings.Scheduler, l.Scheduler)
	Compare(&d, "sessionExpireTime", settings.SessionExpireTime, l.SessionExpireTime)
	DiffHealthCheck(&d, settings.HealthCheck, l.HealthCheck)
	if withCertificate(protocol) {
		DiffCertificate(&d, settings.Certificate, l.Certificate)
	}
	return d.String()
}
