package emulator

import (
	"fmt"
	"slices"
	"strings"

	clb "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
)

const (
	maxCreatePorts          = 50 // "Length of .Ports should be less than 50"
	maxDescribeListenerIDs  = 100
	maxDeleteListenerIDs    = 20
	defaultIdleTimeoutTCP   = 900
	defaultIdleTimeoutUDP   = 300
	maxSessionExpireL4      = 3600
	minSessionExpire        = 30
	maxIdleConnectTimeout   = 900
	minIdleConnectTimeout   = 10
	portMin, portMax        = 1, 65535
	protocolFamilyUDP       = "UDP"
	protocolFamilyTCP       = "TCP"
	schedulerWRR            = "WRR"
	schedulerLeastConn      = "LEAST_CONN"
	schedulerIPHash         = "IP_HASH"
	defaultTargetTypeNode   = "NODE"
	defaultSessionNormal    = "NORMAL"
	sessionQuicCID          = "QUIC_CID"
	sslModeUnidirectional   = "UNIDIRECTIONAL"
	sslModeMutual           = "MUTUAL"
	errPortsTooLong         = "Length of .Ports should be less than 50"
	errSchedulerL4          = "Scheduler should be WRR or LEAST_CONN"
	errOnlyHTTPListenerRule = "This interface only support HTTP/HTTPS listener."
)

func validProtocol(p string) bool {
	switch p {
	case "TCP", "UDP", "HTTP", "HTTPS", "TCP_SSL", "QUIC":
		return true
	}
	return false
}

func isL7(p string) bool { return p == "HTTP" || p == "HTTPS" }

// protocolFamily is the transport a protocol occupies: listeners of the
// same family cannot share a port, TCP and UDP can.
func protocolFamily(p string) string {
	if p == "UDP" || p == "QUIC" {
		return protocolFamilyUDP
	}
	return protocolFamilyTCP
}

func lastPort(start, end int64) int64 {
	if end == 0 {
		return start
	}
	return end
}

// portConflict returns the listener of lb whose ports overlap [start, end]
// in the same protocol family, port ranges included.
func (lb *lbState) portConflict(protocol string, start, end int64) *listenerState {
	fam := protocolFamily(protocol)
	for _, l := range lb.Listeners {
		if protocolFamily(l.Protocol) == fam && start <= lastPort(l.Port, l.EndPort) && l.Port <= lastPort(start, end) {
			return l
		}
	}
	return nil
}

func (e *Emulator) createListener(c *call) (any, *apiError) {
	var req clb.CreateListenerRequestParams
	if err := decode(c, &req); err != nil {
		return nil, err
	}
	proto := str(req.Protocol)
	if len(req.Ports) == 0 {
		return nil, missing("Ports")
	}
	if proto == "" {
		return nil, missing("Protocol")
	}
	if !validProtocol(proto) {
		return nil, errorf(codeInvalidValue, "Protocol should be one of TCP, UDP, HTTP, HTTPS, TCP_SSL and QUIC, got %s.", proto)
	}
	if len(req.Ports) >= maxCreatePorts {
		return nil, errorf(codeLength, errPortsTooLong)
	}
	if req.ListenerNames != nil && len(req.ListenerNames) != len(req.Ports) {
		return nil, errorf(codeLength, "ListenerNames should have as many members as Ports.")
	}
	ports := make([]int64, len(req.Ports))
	for i, p := range req.Ports {
		if p == nil || *p < portMin || *p > portMax {
			return nil, errorf(codeRange, "Ports should be between 1 and 65535.")
		}
		if slices.Contains(ports[:i], *p) {
			return nil, errorf(codeDuplicate, "Port %d is duplicated in Ports.", *p)
		}
		ports[i] = *p
	}
	names := make([]string, len(ports))
	for i, n := range req.ListenerNames {
		if names[i] = str(n); !nameOK(names[i]) {
			return nil, errorf(codeLength, "ListenerNames should have 1 to 80 characters each.")
		}
	}
	var endPort int64
	if req.EndPort != nil && *req.EndPort != 0 {
		if len(ports) != 1 {
			return nil, errorf(codeInvalidValue, "Ports should hold exactly one start port when EndPort is set.")
		}
		if proto != "TCP" && proto != "UDP" {
			return nil, errorf(codeProtocolCheckFailed, "Port range listeners support TCP and UDP only.")
		}
		if *req.EndPort <= uint64(ports[0]) || *req.EndPort > portMax {
			return nil, errorf(codeRange, "EndPort should be greater than the start port and at most 65535.")
		}
		endPort = int64(*req.EndPort)
	}
	if len(req.FullEndPorts) > 0 {
		return nil, errorf(codeUnsupportedOp, "FullEndPorts listeners are not emulated.")
	}
	tmpl, apiErr := listenerTemplate(proto, &req)
	if apiErr != nil {
		return nil, apiErr
	}

	e.mu.Lock()
	defer e.mu.Unlock()
	lb, apiErr := e.lbForWrite(c, str(req.LoadBalancerId))
	if apiErr != nil {
		return nil, apiErr
	}
	for _, p := range ports {
		if l := lb.portConflict(proto, p, endPort); l != nil {
			return nil, errorf(codePortCheckFailed, "Port %d of protocol %s conflicts with listener %s (%s %s).",
				p, proto, l.ID, l.Protocol, portText(l.Port, l.EndPort))
		}
	}
	if len(lb.Listeners)+len(ports) > e.cfg.ListenerQuota {
		return nil, errorf(codeLimitExceeded, "The number of listeners of %s would exceed the quota %d (%d in use).",
			lb.ID, e.cfg.ListenerQuota, len(lb.Listeners))
	}
	if tmpl.Certificate != nil && tmpl.Certificate.CertId == nil {
		tmpl.Certificate.CertId = ptr(e.st.newID(""))
	}
	e.beginTask(c, taskModify, lb)
	ids := make([]string, len(ports))
	for i, p := range ports {
		l := tmpl.clone()
		l.ID, l.Name, l.Port, l.EndPort, l.CreateTime = e.st.newID("lbl-"), names[i], p, endPort, c.now
		if !isL7(proto) {
			l.HealthLocationID = e.st.newID("loc-")
		}
		lb.Listeners = append(lb.Listeners, l)
		ids[i] = l.ID
	}
	return &clb.CreateListenerResponseParams{ListenerIds: strPtrs(ids), RequestId: &c.requestID}, nil
}

func portText(port, end int64) string {
	if end == 0 {
		return fmt.Sprint(port)
	}
	return fmt.Sprintf("%d-%d", port, end)
}

// listenerTemplate validates the protocol-dependent settings of a
// CreateListener request and returns a listener holding them.
func listenerTemplate(proto string, req *clb.CreateListenerRequestParams) (*listenerState, *apiError) {
	l7 := isL7(proto)
	l := &listenerState{
		Protocol: proto, TargetType: defaultTargetTypeNode, SessionType: defaultSessionNormal,
		MaxConn: i64(req.MaxConn, -1), MaxCps: i64(req.MaxCps, -1),
		DeregisterTargetRst: boolean(req.DeregisterTargetRst), SnatEnable: boolean(req.SnatEnable),
		ProxyProtocol: boolean(req.ProxyProtocol), DataCompressMode: str(req.DataCompressMode),
	}
	if l7 {
		if req.HealthCheck != nil {
			return nil, errorf(codeInvalidValue, "HealthCheck applies to TCP/UDP/TCP_SSL/QUIC listeners; set it on the rules of an %s listener.", proto)
		}
	} else {
		l.HealthCheck = mergeHealthCheck(defaultHealthCheck(proto, false), req.HealthCheck)
		if err := checkHealthCheck(l.HealthCheck, proto, false); err != nil {
			return nil, err
		}
		l.Scheduler = schedulerWRR
		if s := str(req.Scheduler); s != "" {
			if s != schedulerWRR && s != schedulerLeastConn {
				return nil, errorf(codeInvalidValue, errSchedulerL4)
			}
			l.Scheduler = s
		}
	}
	if v := i64(req.SessionExpireTime, 0); v != 0 {
		if proto != "TCP" && proto != "UDP" {
			return nil, errorf(codeInvalidValue, "SessionExpireTime applies to TCP and UDP listeners only.")
		}
		if v < minSessionExpire || v > maxSessionExpireL4 {
			return nil, errorf(codeRange, "SessionExpireTime should be 0 or between 30 and 3600.")
		}
		l.SessionExpireTime = v
	}
	if v := i64(req.SniSwitch, 0); v != 0 {
		if proto != "HTTPS" || v != 1 {
			return nil, errorf(codeInvalidValue, "SniSwitch applies to HTTPS listeners and should be 0 or 1.")
		}
		l.SniSwitch = 1
	}
	if v := str(req.TargetType); v != "" {
		if v != defaultTargetTypeNode && v != "TARGETGROUP" {
			return nil, errorf(codeInvalidValue, "TargetType should be NODE or TARGETGROUP.")
		}
		l.TargetType = v
	}
	if v := str(req.SessionType); v != "" {
		if v != defaultSessionNormal && v != sessionQuicCID {
			return nil, errorf(codeInvalidValue, "SessionType should be NORMAL or QUIC_CID.")
		}
		if v == sessionQuicCID && proto != "UDP" {
			return nil, errorf(codeInvalidValue, "SessionType QUIC_CID requires the UDP protocol.")
		}
		l.SessionType = v
	}
	if v := i64(req.KeepaliveEnable, 0); v != 0 {
		if !l7 || v != 1 {
			return nil, errorf(codeInvalidValue, "KeepaliveEnable applies to HTTP/HTTPS listeners and should be 0 or 1.")
		}
		l.KeepaliveEnable = 1
	}
	switch proto {
	case "TCP":
		l.IdleConnectTimeout = defaultIdleTimeoutTCP
	case "UDP":
		l.IdleConnectTimeout = defaultIdleTimeoutUDP
	}
	if v := req.IdleConnectTimeout; v != nil {
		if proto != "TCP" && proto != "UDP" {
			return nil, errorf(codeInvalidValue, "IdleConnectTimeout applies to TCP and UDP listeners only.")
		}
		if *v < minIdleConnectTimeout || *v > maxIdleConnectTimeout {
			return nil, errorf(codeRange, "IdleConnectTimeout should be between 10 and 900.")
		}
		l.IdleConnectTimeout = *v
	}
	// TCP_SSL and HTTPS without SNI must have a certificate. QUIC, the other
	// protocol the CLB terminates TLS for, may have one (ModifyListener and
	// ProxyProtocol name it with TCP_SSL); nothing says it must.
	needsCert := proto == "TCP_SSL" || (proto == "HTTPS" && l.SniSwitch == 0)
	takesCert := needsCert || proto == "QUIC"
	switch {
	case req.Certificate == nil && req.MultiCertInfo == nil:
		if needsCert {
			return nil, missing("Certificate")
		}
	case !takesCert:
		return nil, errorf(codeInvalidValue, "Certificate applies to TCP_SSL and QUIC listeners and HTTPS listeners without SNI.")
	default:
		cert, err := certificate(req.Certificate, req.MultiCertInfo)
		if err != nil {
			return nil, err
		}
		l.Certificate = cert
	}
	return l, nil
}

// certificate converts certificate input into what Describe* reports.
// Uploaded certificates (no CertId) get an id assigned by the caller.
func certificate(ci *clb.CertificateInput, mi *clb.MultiCertInfo) (*clb.CertificateOutput, *apiError) {
	if ci != nil && mi != nil {
		return nil, errorf(codeInvalidParameter, "Certificate and MultiCertInfo cannot be specified at the same time.")
	}
	out := &clb.CertificateOutput{}
	var mode string
	if ci != nil {
		mode = str(ci.SSLMode)
		if str(ci.CertId) != "" {
			out.CertId = ptr(*ci.CertId)
		} else if str(ci.CertContent) == "" || str(ci.CertKey) == "" || str(ci.CertName) == "" {
			return nil, missing("Certificate.CertId")
		}
		if mode == sslModeMutual {
			if str(ci.CertCaId) != "" {
				out.CertCaId = ptr(*ci.CertCaId)
			} else if str(ci.CertCaContent) == "" || str(ci.CertCaName) == "" {
				return nil, missing("Certificate.CertCaId")
			}
		}
		if v := str(ci.SSLVerifyClient); v != "" {
			out.SSLVerifyClient = ptr(v)
		}
	} else {
		mode = str(mi.SSLMode)
		if len(mi.CertList) == 0 {
			return nil, missing("MultiCertInfo.CertList")
		}
		for i, c := range mi.CertList {
			if c == nil || str(c.CertId) == "" {
				return nil, missing("MultiCertInfo.CertList.CertId")
			}
			if i == 0 {
				out.CertId = ptr(*c.CertId)
			} else {
				out.ExtCertIds = append(out.ExtCertIds, ptr(*c.CertId))
			}
		}
	}
	switch mode {
	case "":
		mode = sslModeUnidirectional
	case sslModeUnidirectional, sslModeMutual:
	default:
		return nil, errorf(codeInvalidValue, "SSLMode should be UNIDIRECTIONAL or MUTUAL.")
	}
	out.SSLMode = ptr(mode)
	if mode == sslModeMutual && out.SSLVerifyClient == nil {
		out.SSLVerifyClient = ptr("ON")
	}
	return out, nil
}

func (e *Emulator) describeListeners(c *call) (any, *apiError) {
	var req clb.DescribeListenersRequestParams
	if err := decode(c, &req); err != nil {
		return nil, err
	}
	if len(req.ListenerIds) > maxDescribeListenerIDs {
		return nil, errorf(codeLength, "ListenerIds should have at most %d members.", maxDescribeListenerIDs)
	}
	proto := str(req.Protocol)
	if proto != "" && !validProtocol(proto) {
		return nil, errorf(codeInvalidValue, "Protocol should be one of TCP, UDP, HTTP, HTTPS, TCP_SSL and QUIC, got %s.", proto)
	}
	if p := req.Port; p != nil && (*p < portMin || *p > portMax) {
		return nil, errorf(codeRange, "Port should be between 1 and 65535.")
	}
	e.mu.RLock()
	defer e.mu.RUnlock()
	lb, apiErr := e.lbForRead(c, str(req.LoadBalancerId))
	if apiErr != nil {
		return nil, apiErr
	}
	resp := &clb.DescribeListenersResponseParams{Listeners: []*clb.Listener{}, RequestId: &c.requestID}
	for _, l := range lb.Listeners {
		if (len(req.ListenerIds) == 0 || containsPtr(req.ListenerIds, l.ID)) &&
			(proto == "" || proto == l.Protocol) && (req.Port == nil || *req.Port == l.Port) {
			resp.Listeners = append(resp.Listeners, l.toSDK())
		}
	}
	resp.TotalCount = ptr(uint64(len(resp.Listeners)))
	return resp, nil
}

func containsPtr(list []*string, v string) bool {
	for _, p := range list {
		if p != nil && *p == v {
			return true
		}
	}
	return false
}

// toSDK renders the listener the way DescribeListeners does.
func (l *listenerState) toSDK() *clb.Listener {
	out := &clb.Listener{
		ListenerId:          ptr(l.ID),
		Protocol:            ptr(l.Protocol),
		Port:                ptr(l.Port),
		Certificate:         cloneCertificate(l.Certificate),
		SniSwitch:           ptr(l.SniSwitch),
		ListenerName:        ptr(l.Name),
		CreateTime:          ptr(formatTime(l.CreateTime)),
		EndPort:             ptr(l.EndPort),
		TargetType:          ptr(l.TargetType),
		SessionType:         ptr(l.SessionType),
		Toa:                 ptr(false),
		DeregisterTargetRst: ptr(l.DeregisterTargetRst),
		MaxConn:             ptr(l.MaxConn),
		MaxCps:              ptr(l.MaxCps),
		RescheduleInterval:  ptr(uint64(0)),
		RescheduleStartTime: ptr(int64(0)),
		DataCompressMode:    ptr(l.DataCompressMode),
	}
	if isL7(l.Protocol) {
		out.KeepaliveEnable = ptr(l.KeepaliveEnable)
		out.Rules = make([]*clb.RuleOutput, len(l.Rules))
		for i, r := range l.Rules {
			out.Rules[i] = r.toSDK(l)
		}
	} else {
		out.HealthCheck = cloneHealthCheck(l.HealthCheck)
		out.Scheduler = ptr(l.Scheduler)
		out.SessionExpireTime = ptr(l.SessionExpireTime)
		out.IdleConnectTimeout = ptr(l.IdleConnectTimeout)
	}
	var flags []string
	if l.SnatEnable {
		flags = append(flags, "SnatEnable")
	}
	if l.ProxyProtocol {
		flags = append(flags, "ProxyProtocol")
	}
	out.AttrFlags = strPtrs(flags)
	return out
}

func (e *Emulator) modifyListener(c *call) (any, *apiError) {
	var req clb.ModifyListenerRequestParams
	if err := decode(c, &req); err != nil {
		return nil, err
	}
	if str(req.ListenerId) == "" {
		return nil, missing("ListenerId")
	}
	if req.ListenerName != nil && !nameOK(*req.ListenerName) {
		return nil, errorf(codeLength, "ListenerName should have 1 to 80 characters.")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	lb, apiErr := e.lbForWrite(c, str(req.LoadBalancerId))
	if apiErr != nil {
		return nil, apiErr
	}
	cur := lb.listener(*req.ListenerId)
	if cur == nil {
		return nil, listenerNotFound(*req.ListenerId)
	}
	next, apiErr := modifiedListener(cur, &req)
	if apiErr != nil {
		return nil, apiErr
	}
	if next.Certificate != nil && next.Certificate.CertId == nil {
		next.Certificate.CertId = ptr(e.st.newID(""))
	}
	e.beginTask(c, taskModify, lb)
	*lb.listener(cur.ID) = *next
	return &clb.ModifyListenerResponseParams{RequestId: &c.requestID}, nil
}

func listenerNotFound(id string) *apiError {
	return errorf(codeListenerIDNotFound, "Listener %s not exists.", id)
}

// modifiedListener applies a ModifyListener request to a copy of cur.
// Port and protocol cannot change: there are no such request fields.
func modifiedListener(cur *listenerState, req *clb.ModifyListenerRequestParams) (*listenerState, *apiError) {
	l := cur.clone()
	proto, l4 := l.Protocol, !isL7(l.Protocol)
	if req.ListenerName != nil {
		l.Name = *req.ListenerName
	}
	if req.HealthCheck != nil {
		if !l4 {
			return nil, errorf(codeInvalidValue, "HealthCheck applies to TCP/UDP/TCP_SSL/QUIC listeners; modify the rules of an %s listener.", proto)
		}
		l.HealthCheck = mergeHealthCheck(l.HealthCheck, req.HealthCheck)
		if err := checkHealthCheck(l.HealthCheck, proto, false); err != nil {
			return nil, err
		}
	}
	if v := str(req.Scheduler); v != "" {
		if !l4 {
			return nil, errorf(codeInvalidValue, "Scheduler of an %s listener is set on its rules.", proto)
		}
		if v != schedulerWRR && v != schedulerLeastConn && v != schedulerIPHash {
			return nil, errorf(codeInvalidValue, "Scheduler should be WRR, LEAST_CONN or IP_HASH.")
		}
		l.Scheduler = v
	}
	if v := req.SessionExpireTime; v != nil {
		if proto != "TCP" && proto != "UDP" {
			return nil, errorf(codeInvalidValue, "SessionExpireTime applies to TCP and UDP listeners only.")
		}
		if *v != 0 && (*v < minSessionExpire || *v > maxSessionExpireL4) {
			return nil, errorf(codeRange, "SessionExpireTime should be 0 or between 30 and 3600.")
		}
		l.SessionExpireTime = *v
	}
	if v := req.SniSwitch; v != nil {
		switch {
		case proto != "HTTPS":
			return nil, errorf(codeInvalidValue, "SniSwitch applies to HTTPS listeners only.")
		case *v == 0 && l.SniSwitch == 1:
			return nil, errorf(codeInvalidValue, "SNI cannot be turned off once it is on.")
		case *v != 0 && *v != 1:
			return nil, errorf(codeInvalidValue, "SniSwitch should be 0 or 1.")
		}
		l.SniSwitch = *v
	}
	if req.Certificate != nil || req.MultiCertInfo != nil {
		if proto != "HTTPS" && proto != "TCP_SSL" && proto != "QUIC" {
			return nil, errorf(codeInvalidValue, "Certificate applies to HTTPS, TCP_SSL and QUIC listeners.")
		}
		cert, err := certificate(req.Certificate, req.MultiCertInfo)
		if err != nil {
			return nil, err
		}
		l.Certificate = cert
	}
	if v := str(req.TargetType); v != "" {
		if v != defaultTargetTypeNode && v != "TARGETGROUP" {
			return nil, errorf(codeInvalidValue, "TargetType should be NODE or TARGETGROUP.")
		}
		l.TargetType = v
	}
	if v := req.KeepaliveEnable; v != nil {
		if l4 || (*v != 0 && *v != 1) {
			return nil, errorf(codeInvalidValue, "KeepaliveEnable applies to HTTP/HTTPS listeners and should be 0 or 1.")
		}
		l.KeepaliveEnable = *v
	}
	if v := str(req.SessionType); v != "" {
		if v != defaultSessionNormal && v != sessionQuicCID || (v == sessionQuicCID && proto != "UDP") {
			return nil, errorf(codeInvalidValue, "SessionType should be NORMAL, or QUIC_CID on a UDP listener.")
		}
		l.SessionType = v
	}
	if v := req.IdleConnectTimeout; v != nil {
		if proto != "TCP" && proto != "UDP" {
			return nil, errorf(codeInvalidValue, "IdleConnectTimeout applies to TCP and UDP listeners only.")
		}
		if *v < minIdleConnectTimeout || *v > maxIdleConnectTimeout {
			return nil, errorf(codeRange, "IdleConnectTimeout should be between 10 and 900.")
		}
		l.IdleConnectTimeout = *v
	}
	if req.DeregisterTargetRst != nil {
		l.DeregisterTargetRst = *req.DeregisterTargetRst
	}
	if req.MaxConn != nil {
		l.MaxConn = *req.MaxConn
	}
	if req.MaxCps != nil {
		l.MaxCps = *req.MaxCps
	}
	if req.SnatEnable != nil {
		l.SnatEnable = *req.SnatEnable
	}
	if req.ProxyProtocol != nil {
		l.ProxyProtocol = *req.ProxyProtocol
	}
	if req.DataCompressMode != nil {
		l.DataCompressMode = *req.DataCompressMode
	}
	return l, nil
}

func (e *Emulator) deleteListener(c *call) (any, *apiError) {
	var req clb.DeleteListenerRequestParams
	if err := decode(c, &req); err != nil {
		return nil, err
	}
	id := str(req.ListenerId)
	if id == "" {
		return nil, missing("ListenerId")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	lb, apiErr := e.lbForWrite(c, str(req.LoadBalancerId))
	if apiErr != nil {
		return nil, apiErr
	}
	if lb.listener(id) == nil {
		return nil, listenerNotFound(id)
	}
	e.beginTask(c, taskModify, lb)
	lb.Listeners = slices.DeleteFunc(lb.Listeners, func(l *listenerState) bool { return l.ID == id })
	return &clb.DeleteListenerResponseParams{RequestId: &c.requestID}, nil
}

func (e *Emulator) deleteLoadBalancerListeners(c *call) (any, *apiError) {
	var req clb.DeleteLoadBalancerListenersRequestParams
	if err := decode(c, &req); err != nil {
		return nil, err
	}
	if len(req.ListenerIds) > maxDeleteListenerIDs {
		return nil, errorf(codeLength, "ListenerIds should have at most %d members.", maxDeleteListenerIDs)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	lb, apiErr := e.lbForWrite(c, str(req.LoadBalancerId))
	if apiErr != nil {
		return nil, apiErr
	}
	ids := strs(req.ListenerIds)
	var unknown []string
	for _, id := range ids {
		if lb.listener(id) == nil && !slices.Contains(unknown, id) {
			unknown = append(unknown, id)
		}
	}
	if len(unknown) > 0 {
		// The whole call fails and names the missing ids; callers parse this text.
		return nil, errorf(codeInvalidParameter, "some ListenerId %s not found", strings.Join(unknown, ","))
	}
	e.beginTask(c, taskModify, lb)
	if len(ids) == 0 {
		lb.Listeners = nil // an empty list deletes every listener
	} else {
		lb.Listeners = slices.DeleteFunc(lb.Listeners, func(l *listenerState) bool { return slices.Contains(ids, l.ID) })
	}
	return &clb.DeleteLoadBalancerListenersResponseParams{RequestId: &c.requestID}, nil
}
