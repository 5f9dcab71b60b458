package clb

import (
	"strings"
	"time"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/tcapi"
)

// Class is what a caller should do about an error (see tcapi.Class).
type Class = tcapi.Class

// Classes of errors, from the caller's point of view.
const (
	Unknown   = tcapi.Unknown
	NotFound  = tcapi.NotFound
	Busy      = tcapi.Busy
	Throttled = tcapi.Throttled
	Quota     = tcapi.Quota
	Invalid   = tcapi.Invalid
	Auth      = tcapi.Auth
	Transient = tcapi.Transient
)

// Error is the error every method of this package returns.
type Error = tcapi.Error

// Codes this package reacts to, spelled as the API spells them.
const (
	codeResourceInOperating = "FailedOperation.ResourceInOperating"
	codeNetworkError        = tcapi.CodeNetworkError
)

// classifyCode maps a CLB API or SDK error code to its Class.
func classifyCode(code string) Class {
	family, _, _ := strings.Cut(code, ".")
	switch {
	// The not-found codes sit under InvalidParameter, so they come first.
	case code == "InvalidParameter.LBIdNotFound", code == "InvalidParameter.ListenerIdNotFound",
		code == "InvalidParameter.LocationNotFound", family == "ResourceNotFound",
		code == "InvalidParameterValue.ResourceIdInvalid": // the Tag API's
		return NotFound
	case code == codeResourceInOperating, code == "FailedOperation.InvalidLBStatus",
		code == "FailedOperation.ResourceTagProcessing": // the Tag API's
		return Busy
	case code == "FailedOperation.RateLimitExceeded":
		return Throttled
	case code == "FailedOperation.TargetNumCheckRisk", code == "FailedOperation.TrafficCheckRisk",
		code == "FailedOperation.FrequencyCheckRisk", code == "FailedOperation.EipTrafficCheckRisk":
		return Invalid
	}
	return tcapi.CommonClass(code)
}

// wrapErr turns whatever a call returned into an *Error for op.
func wrapErr(op string, err error) error { return tcapi.Wrap(op, err, classifyCode) }

// localErr is an error raised by this package without asking the API.
func localErr(op string, class Class, msg string) *Error { return tcapi.LocalErr(op, class, msg) }

// Classify returns the class of err; nil is Unknown.
func Classify(err error) Class { return tcapi.Classify(err, classifyCode) }

// Code returns the API error code carried by err, or "" when there is none.
// Use it for the few decisions that need a specific code (for example
// InvalidParameter.PortCheckFailed meaning "a listener already uses this
// port"); use Classify for everything else.
func Code(err error) string { return tcapi.Code(err) }

// IsNotFound reports whether err means the object does not exist.
func IsNotFound(err error) bool { return err != nil && Classify(err) == NotFound }

// IsBusy reports whether err means the load balancer has a task in progress.
func IsBusy(err error) bool { return err != nil && Classify(err) == Busy }

// IsQuota reports whether err is an exhausted quota.
func IsQuota(err error) bool { return err != nil && Classify(err) == Quota }

// IsInvalid reports whether err is a user error in the request.
func IsInvalid(err error) bool { return err != nil && Classify(err) == Invalid }

// NotYet reports whether err means "not yet" rather than a failure: the
// load balancer is busy with a task, or the API's rate limit held even
// after the client's retries. Callers come back after the wait it
// returns, without a Warning event or an error condition: both clear up
// by themselves within seconds.
func NotYet(err error) (time.Duration, bool) {
	if err == nil {
		return 0, false
	}
	switch c := Classify(err); c {
	case Busy, Throttled:
		return tcapi.RetryAfter(c), true
	}
	return 0, false
}
