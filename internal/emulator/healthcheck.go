package emulator

import (
	"reflect"

	clb "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
)

// defaultHealthCheck is what a listener or rule reports when the caller gave
// no health check: enabled, 2 s timeout, 5 s interval, 3/3 thresholds.
func defaultHealthCheck(protocol string, l7 bool) *clb.HealthCheck {
	h := &clb.HealthCheck{
		HealthSwitch: ptr(int64(1)),
		TimeOut:      ptr(int64(2)),
		IntervalTime: ptr(int64(5)),
		HealthNum:    ptr(int64(3)),
		UnHealthNum:  ptr(int64(3)),
		SourceIpType: ptr(int64(0)),
	}
	switch {
	case l7:
		h.CheckType = ptr("HTTP")
	case protocol == "UDP":
		h.CheckType = ptr("PING")
	default:
		h.CheckType = ptr("TCP")
	}
	if str(h.CheckType) == "HTTP" {
		fillHTTPCheck(h)
	}
	return h
}

func fillHTTPCheck(h *clb.HealthCheck) {
	if h.HttpCode == nil {
		h.HttpCode = ptr(int64(31))
	}
	if h.HttpCheckPath == nil {
		h.HttpCheckPath = ptr("/")
	}
	if h.HttpCheckMethod == nil {
		h.HttpCheckMethod = ptr("HEAD")
	}
	if h.HttpCheckDomain == nil {
		h.HttpCheckDomain = ptr("")
	}
}

// mergeHealthCheck returns base overridden by every field set in in.
func mergeHealthCheck(base, in *clb.HealthCheck) *clb.HealthCheck {
	out := cloneHealthCheck(base)
	if in == nil {
		return out
	}
	dst, src := reflect.ValueOf(out).Elem(), reflect.ValueOf(in).Elem()
	for i := 0; i < src.NumField(); i++ {
		if f := src.Field(i); !f.IsNil() {
			v := reflect.New(f.Type().Elem())
			v.Elem().Set(f.Elem())
			dst.Field(i).Set(v)
		}
	}
	if str(out.CheckType) == "HTTP" {
		fillHTTPCheck(out)
	}
	return out
}

// checkHealthCheck validates a merged health check for protocol (a
// listener protocol, or HTTP/HTTPS for a rule).
func checkHealthCheck(h *clb.HealthCheck, protocol string, l7 bool) *apiError {
	inRange := func(p *int64, name string, lo, hi int64) *apiError {
		if p != nil && (*p < lo || *p > hi) {
			return errorf(codeRange, "HealthCheck.%s should be between %d and %d.", name, lo, hi)
		}
		return nil
	}
	for _, chk := range []*apiError{
		inRange(h.HealthSwitch, "HealthSwitch", 0, 1),
		inRange(h.TimeOut, "TimeOut", 2, 60),
		inRange(h.IntervalTime, "IntervalTime", 2, 300),
		inRange(h.HealthNum, "HealthNum", 2, 10),
		inRange(h.UnHealthNum, "UnHealthNum", 2, 10),
		inRange(h.HttpCode, "HttpCode", 1, 31),
		inRange(h.SourceIpType, "SourceIpType", 0, 1),
	} {
		if chk != nil {
			return chk
		}
	}
	if h.CheckPort != nil && *h.CheckPort != -1 && (*h.CheckPort < 1 || *h.CheckPort > 65535) {
		return errorf(codeRange, "HealthCheck.CheckPort should be -1 or between 1 and 65535.")
	}
	if h.TimeOut != nil && h.IntervalTime != nil && *h.TimeOut >= *h.IntervalTime {
		return errorf(codeInvalidValue, "HealthCheck.TimeOut should be less than HealthCheck.IntervalTime.")
	}
	var allowed []string
	switch {
	case l7 && protocol == "HTTPS":
		allowed = []string{"HTTP", "HTTPS", "GRPC"}
	case l7:
		allowed = []string{"HTTP", "GRPC"}
	case protocol == "UDP":
		allowed = []string{"PING", "CUSTOM"}
	case protocol == "TCP":
		allowed = []string{"TCP", "HTTP", "CUSTOM"}
	default: // TCP_SSL, QUIC
		allowed = []string{"TCP", "HTTP"}
	}
	if ct := str(h.CheckType); !contains(allowed, ct) {
		return errorf(codeInvalidValue, "HealthCheck.CheckType %s is not supported for %s; use one of %v.", ct, protocol, allowed)
	}
	if m := str(h.HttpCheckMethod); h.HttpCheckMethod != nil && m != "HEAD" && m != "GET" {
		return errorf(codeInvalidValue, "HealthCheck.HttpCheckMethod should be HEAD or GET.")
	}
	if ct := str(h.ContextType); h.ContextType != nil && ct != "HEX" && ct != "TEXT" {
		return errorf(codeInvalidValue, "HealthCheck.ContextType should be HEX or TEXT.")
	}
	return nil
}

func contains(list []string, v string) bool {
	for _, s := range list {
		if s == v {
			return true
		}
	}
	return false
}
