package clb

// Conversions between the provider's API types and the CLB SDK types that
// more than one kind shares (health checks, certificates, pointers), and
// drift rendered as a readable diff. Each kind's own conversions are in
// its <kind>_convert.go.

import (
	"fmt"
	"slices"
	"strings"

	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
)

// Deref returns *p, or the zero value for nil.
func Deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// Ptr returns a pointer to v.
func Ptr[T any](v T) *T { return &v }

// A Diff collects differences between desired and observed fields.
type Diff []string

// Add records that field should be want but is got.
func (d *Diff) Add(field string, want, got any) {
	*d = append(*d, fmt.Sprintf("%s: want %v, got %v", field, want, got))
}

// Compare records a difference when want is set and differs from got.
func Compare[T comparable](d *Diff, field string, want *T, got *T) {
	if want != nil && *want != Deref(got) {
		d.Add(field, *want, Deref(got))
	}
}

// String joins the differences; empty means up to date.
func (d Diff) String() string { return strings.Join(d, "; ") }

// HealthCheckToSDK converts a health check for a create or modify request.
func HealthCheckToSDK(h *v1alpha1.HealthCheck) *clbsdk.HealthCheck {
	if h == nil {
		return nil
	}
	out := &clbsdk.HealthCheck{
		TimeOut:         h.TimeoutSeconds,
		IntervalTime:    h.IntervalSeconds,
		HealthNum:       h.HealthyThreshold,
		UnHealthNum:     h.UnhealthyThreshold,
		CheckType:       h.CheckType,
		CheckPort:       h.CheckPort,
		HttpCheckPath:   h.HTTPCheckPath,
		HttpCheckDomain: h.HTTPCheckDomain,
		HttpCheckMethod: h.HTTPCheckMethod,
		HttpCode:        h.HTTPCode,
	}
	if h.Enabled != nil {
		out.HealthSwitch = Ptr(int64(0))
		if *h.Enabled {
			out.HealthSwitch = Ptr(int64(1))
		}
	}
	return out
}

// DiffHealthCheck records the fields of want that differ from got.
func DiffHealthCheck(d *Diff, want *v1alpha1.HealthCheck, got *clbsdk.HealthCheck) {
	if want == nil {
		return
	}
	if got == nil {
		got = &clbsdk.HealthCheck{}
	}
	if want.Enabled != nil && *want.Enabled != (Deref(got.HealthSwitch) == 1) {
		d.Add("healthCheck.enabled", *want.Enabled, Deref(got.HealthSwitch) == 1)
	}
	Compare(d, "healthCheck.timeoutSeconds", want.TimeoutSeconds, got.TimeOut)
	Compare(d, "healthCheck.intervalSeconds", want.IntervalSeconds, got.IntervalTime)
	Compare(d, "healthCheck.healthyThreshold", want.HealthyThreshold, got.HealthNum)
	Compare(d, "healthCheck.unhealthyThreshold", want.UnhealthyThreshold, got.UnHealthNum)
	Compare(d, "healthCheck.checkType", want.CheckType, got.CheckType)
	Compare(d, "healthCheck.checkPort", want.CheckPort, got.CheckPort)
	Compare(d, "healthCheck.httpCheckPath", want.HTTPCheckPath, got.HttpCheckPath)
	Compare(d, "healthCheck.httpCheckDomain", want.HTTPCheckDomain, got.HttpCheckDomain)
	Compare(d, "healthCheck.httpCheckMethod", want.HTTPCheckMethod, got.HttpCheckMethod)
	Compare(d, "healthCheck.httpCode", want.HTTPCode, got.HttpCode)
}

// Certificate converts a certificate for a create or modify request; the
// SSL mode defaults to one-way.
func Certificate(c *v1alpha1.Certificate) *clbsdk.CertificateInput {
	if c == nil {
		return nil
	}
	mode := Deref(c.SSLMode)
	if mode == "" {
		mode = "UNIDIRECTIONAL"
	}
	return &clbsdk.CertificateInput{SSLMode: Ptr(mode), CertId: Ptr(c.CertID), CertCaId: c.CertCaID}
}

// DiffCertificate records the fields of want that differ from got.
func DiffCertificate(d *Diff, want *v1alpha1.Certificate, got *clbsdk.CertificateOutput) {
	if want == nil {
		return
	}
	if got == nil {
		got = &clbsdk.CertificateOutput{}
	}
	Compare(d, "certificate.certId", &want.CertID, got.CertId)
	Compare(d, "certificate.certCaId", want.CertCaID, got.CertCaId)
	Compare(d, "certificate.sslMode", want.SSLMode, got.SSLMode)
}

// lateInitString fills an unset *dst from a string the cloud sets (not
// empty) and reports whether it did.
func lateInitString(dst **string, got *string) bool {
	if *dst != nil || Deref(got) == "" {
		return false
	}
	*dst = Ptr(*got)
	return true
}

// lateInitValue fills an unset *dst from any value the cloud reports, zero
// included, and reports whether it did.
func lateInitValue[T any](dst **T, got *T) bool {
	if *dst != nil || got == nil {
		return false
	}
	*dst = Ptr(*got)
	return true
}

// anyOf reports whether any of changed is true; every late initialization
// passed to it has run, as arguments are evaluated before the call.
func anyOf(changed ...bool) bool { return slices.Contains(changed, true) }

// LateInitHealthCheck fills an unset health check from the cloud.
func LateInitHealthCheck(dst **v1alpha1.HealthCheck, got *clbsdk.HealthCheck) bool {
	if *dst != nil || got == nil || got.HealthSwitch == nil {
		return false
	}
	h := &v1alpha1.HealthCheck{Enabled: Ptr(Deref(got.HealthSwitch) == 1)}
	if *h.Enabled {
		h.TimeoutSeconds = got.TimeOut
		h.IntervalSeconds = got.IntervalTime
		h.HealthyThreshold = got.HealthNum
		h.UnhealthyThreshold = got.UnHealthNum
	}
	*dst = h
	return true
}
