package emulator

import (
	"slices"
	"unicode/utf8"

	clb "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
)

const (
	maxURLLength       = 200
	maxDomainLength    = 80
	maxSessionExpireL7 = 86400
	forwardHTTP        = "HTTP"
)

// ruleFromInput validates one CreateRule member for listener l.
func ruleFromInput(l *listenerState, in *clb.RuleInput) (*ruleState, *apiError) {
	if in == nil || str(in.Url) == "" {
		return nil, missing("Rules.Url")
	}
	if utf8.RuneCountInString(*in.Url) > maxURLLength {
		return nil, errorf(codeLength, "Rules.Url should have at most %d characters.", maxURLLength)
	}
	domain := str(in.Domain)
	switch {
	case domain != "" && len(in.Domains) > 0:
		return nil, errorf(codeInvalidParameter, "Domain and Domains cannot be specified at the same time.")
	case len(in.Domains) > 0:
		domain = str(in.Domains[0])
	}
	if domain == "" {
		return nil, missing("Rules.Domain")
	}
	if len(domain) > maxDomainLength {
		return nil, errorf(codeLength, "Rules.Domain should have at most %d characters.", maxDomainLength)
	}
	r := &ruleState{
		Domain: domain, URL: *in.Url, Scheduler: schedulerWRR, ForwardType: forwardHTTP,
		TargetType: defaultTargetTypeNode, DefaultServer: boolean(in.DefaultServer), HTTP2: boolean(in.Http2),
		Quic: boolean(in.Quic), CookieName: str(in.CookieName), TrpcCallee: str(in.TrpcCallee), TrpcFunc: str(in.TrpcFunc),
	}
	if err := r.setScheduler(str(in.Scheduler)); err != nil {
		return nil, err
	}
	if err := r.setSessionExpire(in.SessionExpireTime); err != nil {
		return nil, err
	}
	if err := r.setForwardType(str(in.ForwardType)); err != nil {
		return nil, err
	}
	if v := str(in.TargetType); v != "" {
		if v != defaultTargetTypeNode && v != "TARGETGROUP" {
			return nil, errorf(codeInvalidValue, "TargetType should be NODE or TARGETGROUP.")
		}
		r.TargetType = v
	}
	r.HealthCheck = mergeHealthCheck(defaultHealthCheck(l.Protocol, true), in.HealthCheck)
	if err := checkHealthCheck(r.HealthCheck, l.Protocol, true); err != nil {
		return nil, err
	}
	if r.Quic && l.Protocol != "HTTPS" {
		return nil, errorf(codeInvalidValue, "Quic can only be enabled on HTTPS rules.")
	}
	if in.Certificate != nil || in.MultiCertInfo != nil {
		if l.Protocol != "HTTPS" || l.SniSwitch != 1 {
			return nil, errorf(codeInvalidValue, "A rule certificate needs an HTTPS listener with SNI on.")
		}
		cert, err := certificate(in.Certificate, in.MultiCertInfo)
		if err != nil {
			return nil, err
		}
		r.Certificate = cert
	} else if l.Protocol == "HTTPS" && l.SniSwitch == 1 {
		return nil, missing("Rules.Certificate")
	}
	return r, nil
}

func (r *ruleState) setScheduler(v string) *apiError {
	switch v {
	case "":
	case schedulerWRR, schedulerLeastConn, schedulerIPHash:
		r.Scheduler = v
	default:
		return errorf(codeInvalidValue, "Scheduler should be WRR, LEAST_CONN or IP_HASH.")
	}
	return nil
}

func (r *ruleState) setSessionExpire(v *int64) *apiError {
	if v == nil {
		return nil
	}
	if *v != 0 && (*v < minSessionExpire || *v > maxSessionExpireL7) {
		return errorf(codeRange, "SessionExpireTime should be 0 or between 30 and 86400.")
	}
	r.SessionExpireTime = *v
	return nil
}

func (r *ruleState) setForwardType(v string) *apiError {
	switch v {
	case "":
	case "HTTP", "HTTPS", "GRPC", "GRPCS", "TRPC":
		r.ForwardType = v
	default:
		return errorf(codeInvalidValue, "ForwardType should be HTTP, HTTPS, GRPC, GRPCS or TRPC.")
	}
	return nil
}

// l7Listener finds an HTTP/HTTPS listener for a rule operation.
func l7Listener(lb *lbState, id string) (*listenerState, *apiError) {
	if id == "" {
		return nil, missing("ListenerId")
	}
	l := lb.listener(id)
	if l == nil {
		return nil, listenerNotFound(id)
	}
	if !isL7(l.Protocol) {
		return nil, errorf(codeInvalidValue, errOnlyHTTPListenerRule)
	}
	return l, nil
}

func (e *Emulator) createRule(c *call) (any, *apiError) {
	var req clb.CreateRuleRequestParams
	if err := decode(c, &req); err != nil {
		return nil, err
	}
	if len(req.Rules) == 0 {
		return nil, missing("Rules")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	lb, apiErr := e.lbForWrite(c, str(req.LoadBalancerId))
	if apiErr != nil {
		return nil, apiErr
	}
	l, apiErr := l7Listener(lb, str(req.ListenerId))
	if apiErr != nil {
		return nil, apiErr
	}
	rules := make([]*ruleState, 0, len(req.Rules))
	for _, in := range req.Rules {
		r, err := ruleFromInput(l, in)
		if err != nil {
			return nil, err
		}
		if l.ruleByDomainURL(r.Domain, r.URL) != nil || slices.ContainsFunc(rules, func(o *ruleState) bool {
			return o.Domain == r.Domain && o.URL == r.URL
		}) {
			return nil, errorf(codeDuplicate, "A rule for domain %s and url %s already exists.", r.Domain, r.URL)
		}
		rules = append(rules, r)
	}
	if len(l.Rules)+len(rules) > e.cfg.RuleQuota {
		return nil, errorf(codeLimitExceeded, "The number of rules of %s would exceed the quota %d (%d in use).",
			l.ID, e.cfg.RuleQuota, len(l.Rules))
	}
	e.beginTask(c, taskModify, lb)
	l = lb.listener(l.ID)
	ids := make([]string, len(rules))
	for i, r := range rules {
		r.ID, r.CreateTime = e.st.newID("loc-"), c.now
		if r.Certificate != nil && r.Certificate.CertId == nil {
			r.Certificate.CertId = ptr(e.st.newID(""))
		}
		// The first domain of a listener serves requests for unknown hosts.
		if r.DefaultServer || !slices.ContainsFunc(l.Rules, func(o *ruleState) bool { return o.DefaultServer }) {
			for _, o := range l.Rules {
				o.DefaultServer = o.Domain == r.Domain
			}
			r.DefaultServer = true
		}
		l.Rules = append(l.Rules, r)
		ids[i] = r.ID
	}
	return &clb.CreateRuleResponseParams{LocationIds: strPtrs(ids), RequestId: &c.requestID}, nil
}

func (e *Emulator) modifyRule(c *call) (any, *apiError) {
	var req clb.ModifyRuleRequestParams
	if err := decode(c, &req); err != nil {
		return nil, err
	}
	locID := str(req.LocationId)
	if locID == "" {
		return nil, missing("LocationId")
	}
	if req.Url != nil && (*req.Url == "" || utf8.RuneCountInString(*req.Url) > maxURLLength) {
		return nil, errorf(codeLength, "Url should have 1 to %d characters.", maxURLLength)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	lb, apiErr := e.lbForWrite(c, str(req.LoadBalancerId))
	if apiErr != nil {
		return nil, apiErr
	}
	l, apiErr := l7Listener(lb, str(req.ListenerId))
	if apiErr != nil {
		return nil, apiErr
	}
	cur := l.rule(locID)
	if cur == nil {
		return nil, locationNotFound(locID)
	}
	next := *cur
	if req.Url != nil && *req.Url != cur.URL {
		if l.ruleByDomainURL(cur.Domain, *req.Url) != nil {
			return nil, errorf(codeDuplicate, "A rule for domain %s and url %s already exists.", cur.Domain, *req.Url)
		}
		next.URL = *req.Url
	}
	if req.HealthCheck != nil {
		next.HealthCheck = mergeHealthCheck(cur.HealthCheck, req.HealthCheck)
		if err := checkHealthCheck(next.HealthCheck, l.Protocol, true); err != nil {
			return nil, err
		}
	}
	if err := next.setScheduler(str(req.Scheduler)); err != nil {
		return nil, err
	}
	if err := next.setSessionExpire(req.SessionExpireTime); err != nil {
		return nil, err
	}
	if err := next.setForwardType(str(req.ForwardType)); err != nil {
		return nil, err
	}
	if req.TrpcCallee != nil {
		next.TrpcCallee = *req.TrpcCallee
	}
	if req.TrpcFunc != nil {
		next.TrpcFunc = *req.TrpcFunc
	}
	if req.CookieName != nil {
		next.CookieName = *req.CookieName
	}
	e.beginTask(c, taskModify, lb)
	*cur = next
	return &clb.ModifyRuleResponseParams{RequestId: &c.requestID}, nil
}

func locationNotFound(id string) *apiError {
	return errorf(codeLocationNotFound, "LocationId %s not found.", id)
}

func (e *Emulator) deleteRule(c *call) (any, *apiError) {
	var req clb.DeleteRuleRequestParams
	if err := decode(c, &req); err != nil {
		return nil, err
	}
	ids := strs(req.LocationIds)
	domain, url := str(req.Domain), str(req.Url)
	if len(ids) == 0 && (domain == "" || url == "") {
		return nil, missing("LocationIds")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	lb, apiErr := e.lbForWrite(c, str(req.LoadBalancerId))
	if apiErr != nil {
		return nil, apiErr
	}
	l, apiErr := l7Listener(lb, str(req.ListenerId))
	if apiErr != nil {
		return nil, apiErr
	}
	if len(ids) == 0 {
		r := l.ruleByDomainURL(domain, url)
		if r == nil {
			return nil, errorf(codeLocationNotFound, "No rule matches domain %s and url %s.", domain, url)
		}
		ids = []string{r.ID}
	}
	for _, id := range ids {
		if l.rule(id) == nil {
			return nil, locationNotFound(id)
		}
	}
	newDefault := str(req.NewDefaultServerDomain)
	if newDefault != "" && !slices.ContainsFunc(l.Rules, func(r *ruleState) bool {
		return r.Domain == newDefault && !slices.Contains(ids, r.ID)
	}) {
		return nil, errorf(codeInvalidValue, "NewDefaultServerDomain %s is not a domain of listener %s.", newDefault, l.ID)
	}
	e.beginTask(c, taskModify, lb)
	l = lb.listener(l.ID)
	l.Rules = slices.DeleteFunc(l.Rules, func(r *ruleState) bool { return slices.Contains(ids, r.ID) })
	if newDefault == "" && len(l.Rules) > 0 && !slices.ContainsFunc(l.Rules, func(r *ruleState) bool { return r.DefaultServer }) {
		newDefault = l.Rules[0].Domain
	}
	if newDefault != "" {
		for _, r := range l.Rules {
			r.DefaultServer = r.Domain == newDefault
		}
	}
	return &clb.DeleteRuleResponseParams{RequestId: &c.requestID}, nil
}

// toSDK renders a rule as DescribeListeners reports it inside Rules.
func (r *ruleState) toSDK(l *listenerState) *clb.RuleOutput {
	cert := r.Certificate
	if cert == nil && l.Protocol == "HTTPS" && l.SniSwitch == 0 {
		cert = l.Certificate
	}
	quic := "QUIC_INACTIVE"
	if r.Quic {
		quic = "QUIC_ACTIVE"
	}
	return &clb.RuleOutput{
		LocationId:        ptr(r.ID),
		Domain:            ptr(r.Domain),
		Url:               ptr(r.URL),
		SessionExpireTime: ptr(r.SessionExpireTime),
		HealthCheck:       cloneHealthCheck(r.HealthCheck),
		Certificate:       cloneCertificate(cert),
		Scheduler:         ptr(r.Scheduler),
		ListenerId:        ptr(l.ID),
		RewriteTarget:     &clb.RewriteTarget{},
		HttpGzip:          ptr(true),
		BeAutoCreated:     ptr(false),
		DefaultServer:     ptr(r.DefaultServer),
		Http2:             ptr(r.HTTP2),
		ForwardType:       ptr(r.ForwardType),
		CreateTime:        ptr(formatTime(r.CreateTime)),
		TargetType:        ptr(r.TargetType),
		WafDomainId:       ptr(""),
		TrpcCallee:        ptr(r.TrpcCallee),
		TrpcFunc:          ptr(r.TrpcFunc),
		QuicStatus:        ptr(quic),
		Domains:           []*string{ptr(r.Domain)},
		OAuth:             &clb.OAuth{OAuthEnable: ptr(false), OAuthFailureStatus: ptr("BYPASS")},
		CookieName:        ptr(r.CookieName),
	}
}
