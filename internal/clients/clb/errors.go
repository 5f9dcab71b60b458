package clb

import (
	"context"
	"errors"
	"net"
	"strings"
	"time"

	sdkerrors "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common/errors"
)

// Class is what a caller should do about an error. Every error this package
// returns is classified once, by its API code, so that controllers never
// look at message text.
type Class int

// Classes of errors, from the caller's point of view.
const (
	// Unknown errors fit no other class; treat them as failures worth a
	// normal backoff.
	Unknown Class = iota
	// NotFound means the load balancer, listener or rule does not exist.
	NotFound
	// Busy means the load balancer has a task in progress; retry soon.
	Busy
	// Throttled means the API rate limit was hit even after our retries.
	Throttled
	// Quota means an account or resource quota is exhausted.
	Quota
	// Invalid means the request itself is wrong; retrying will not help
	// until the spec changes.
	Invalid
	// Auth means the credentials are wrong or lack a permission.
	Auth
	// Transient means a network failure or a server-side error.
	Transient
)

// String names the class, for logs and metrics.
func (c Class) String() string {
	switch c {
	case NotFound:
		return "NotFound"
	case Busy:
		return "Busy"
	case Throttled:
		return "Throttled"
	case Quota:
		return "Quota"
	case Invalid:
		return "Invalid"
	case Auth:
		return "Auth"
	case Transient:
		return "Transient"
	default:
		return "Unknown"
	}
}

// Codes this package reacts to, spelled as the API spells them.
const (
	codeResourceInOperating = "FailedOperation.ResourceInOperating"
	codeRequestLimit        = "RequestLimitExceeded"
	codeNetworkError        = "ClientError.NetworkError"
)

// classifyCode maps an API or SDK error code to its Class.
func classifyCode(code string) Class {
	family, _, _ := strings.Cut(code, ".")
	switch {
	case code == "":
		return Unknown
	// The not-found codes sit under InvalidParameter, so they come first.
	case code == "InvalidParameter.LBIdNotFound", code == "InvalidParameter.ListenerIdNotFound",
		code == "InvalidParameter.LocationNotFound", family == "ResourceNotFound":
		return NotFound
	case code == codeResourceInOperating, code == "FailedOperation.InvalidLBStatus":
		return Busy
	case family == codeRequestLimit, code == "FailedOperation.RateLimitExceeded":
		return Throttled
	case family == "LimitExceeded", family == "ResourceInsufficient", family == "ResourcesSoldOut":
		return Quota
	case family == "AuthFailure", family == "UnauthorizedOperation", family == "OperationDenied",
		code == "ClientError.CredentialError":
		return Auth
	case family == "InvalidParameter", family == "InvalidParameterValue", family == "InvalidParameterCombination",
		family == "MissingParameter", family == "UnknownParameter", family == "UnsupportedOperation",
		family == "UnsupportedRegion", family == "InvalidAction", family == "RequestSizeLimitExceeded",
		code == "FailedOperation.TargetNumCheckRisk", code == "FailedOperation.TrafficCheckRisk",
		code == "FailedOperation.FrequencyCheckRisk", code == "FailedOperation.EipTrafficCheckRisk":
		return Invalid
	case family == "InternalError", family == "ServiceUnavailable", family == "ResourceUnavailable",
		code == codeNetworkError, code == "ClientError.HttpStatusCodeError", code == "ClientError.IOError",
		code == "ClientError.ParseJsonError", code == "ClientError.CircuitBreakerError":
		return Transient
	}
	return Unknown
}

// Error is the error every method of this package returns. Its text is
// stable across retries: it names the operation, the API code and the API
// message, but never the RequestId, so a condition built from it does not
// change on every reconcile.
type Error struct {
	// Op is what was attempted, e.g. "create listener".
	Op string
	// Code is the API error code; empty for errors raised locally.
	Code string
	// Message is the API message, or a description of a local error.
	Message string

	class     Class
	requestID string
	cause     error
}

// Error formats the error as "cannot <op>: <code>: <message>".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("cannot ")
	b.WriteString(e.Op)
	if e.Code != "" {
		b.WriteString(": ")
		b.WriteString(e.Code)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	return b.String()
}

// Unwrap returns the underlying error (an SDK error, a context error or
// nothing for local errors).
func (e *Error) Unwrap() error { return e.cause }

// Class returns the class of the error.
func (e *Error) Class() Class { return e.class }

// RequestID returns the RequestId of the API answer, for logs and support
// tickets; it is deliberately not part of Error().
func (e *Error) RequestID() string { return e.requestID }

// wrapErr turns whatever a call returned into an *Error for op. It returns
// nil for nil and leaves an *Error of this package as it is.
func wrapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	var own *Error
	if errors.As(err, &own) {
		return own
	}
	e := &Error{Op: op, cause: err, class: classify(err)}
	var sdk *sdkerrors.TencentCloudSDKError
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		e.Message = err.Error()
	case errors.As(err, &sdk):
		e.Code, e.requestID = sdk.GetCode(), sdk.GetRequestId()
		e.Message = sdk.GetMessage()
		if e.Code == codeNetworkError {
			// The SDK puts the transport error text here, which carries
			// ephemeral ports; keep the message stable instead.
			e.Message = "no answer from the API (connection failure or timeout)"
		}
	default:
		e.Message = err.Error()
	}
	return e
}

// localErr is an error raised by this package without asking the API.
func localErr(op string, class Class, msg string) *Error {
	return &Error{Op: op, Message: msg, class: class}
}

// classify is Classify without the *Error shortcut.
func classify(err error) Class {
	var sdk *sdkerrors.TencentCloudSDKError
	var netErr net.Error
	switch {
	case errors.As(err, &sdk):
		return classifyCode(sdk.GetCode())
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr):
		return Transient
	}
	return Unknown
}

// Classify returns the class of err; nil is Unknown.
func Classify(err error) Class {
	if err == nil {
		return Unknown
	}
	var own *Error
	if errors.As(err, &own) {
		return own.class
	}
	return classify(err)
}

// Code returns the API error code carried by err, or "" when there is none.
// Use it for the few decisions that need a specific code (for example
// InvalidParameter.PortCheckFailed meaning "a listener already uses this
// port"); use Classify for everything else.
func Code(err error) string {
	var own *Error
	if errors.As(err, &own) && own.Code != "" {
		return own.Code
	}
	var sdk *sdkerrors.TencentCloudSDKError
	if errors.As(err, &sdk) {
		return sdk.GetCode()
	}
	return ""
}

// IsNotFound reports whether err means the object does not exist.
func IsNotFound(err error) bool { return err != nil && Classify(err) == NotFound }

// IsBusy reports whether err means the load balancer has a task in progress.
func IsBusy(err error) bool { return err != nil && Classify(err) == Busy }

// IsThrottled reports whether err is a rate limit that our retries could
// not absorb.
func IsThrottled(err error) bool { return err != nil && Classify(err) == Throttled }

// IsQuota reports whether err is an exhausted quota.
func IsQuota(err error) bool { return err != nil && Classify(err) == Quota }

// IsInvalid reports whether err is a user error in the request.
func IsInvalid(err error) bool { return err != nil && Classify(err) == Invalid }

// IsAuth reports whether err is a credential or permission problem.
func IsAuth(err error) bool { return err != nil && Classify(err) == Auth }

// IsTransient reports whether err is a network or server-side failure.
func IsTransient(err error) bool { return err != nil && Classify(err) == Transient }

// Retry hints per class: a task on a load balancer usually ends within a
// second or two, a rate limit refills within a few seconds.
const (
	busyRetryAfter      = time.Second
	throttledRetryAfter = 3 * time.Second
	transientRetryAfter = 3 * time.Second
)

// RetryAfter suggests how long a caller should wait before trying again:
// about a second for Busy, a few seconds for Throttled and Transient, and 0
// for errors that waiting does not fix (the caller's normal backoff applies).
func RetryAfter(err error) time.Duration {
	if err == nil {
		return 0
	}
	switch Classify(err) {
	case Busy:
		return busyRetryAfter
	case Throttled:
		return throttledRetryAfter
	case Transient:
		return transientRetryAfter
	default:
		return 0
	}
}
