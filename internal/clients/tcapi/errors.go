package tcapi

import (
	"context"
	"errors"
	"net"
	"strings"
	"time"

	sdkerrors "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common/errors"
)

// Class is what a caller should do about an error. Every error a service
// client returns is classified once, by its API code, so that controllers
// never look at message text.
type Class int

// Classes of errors, from the caller's point of view.
const (
	// Unknown errors fit no other class; treat them as failures worth a
	// normal backoff.
	Unknown Class = iota
	// NotFound means the object does not exist.
	NotFound
	// Busy means the object has a task in progress; retry soon.
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

// Codes every service shares, spelled as the API and the SDK spell them.
const (
	CodeRequestLimit = "RequestLimitExceeded"
	CodeNetworkError = "ClientError.NetworkError"
)

// CodeClassifier maps an API error code to its Class; each service client
// has one, since codes such as "ResourceNotFound" mean different things.
type CodeClassifier func(code string) Class

// CommonClass classifies the code families every Tencent Cloud API shares.
// Service classifiers handle their own codes first and fall back to it.
func CommonClass(code string) Class {
	family, _, _ := strings.Cut(code, ".")
	switch {
	case code == "":
		return Unknown
	case family == CodeRequestLimit:
		return Throttled
	case family == "LimitExceeded", family == "ResourceInsufficient", family == "ResourcesSoldOut":
		return Quota
	case family == "AuthFailure", family == "UnauthorizedOperation", family == "OperationDenied",
		code == "ClientError.CredentialError":
		return Auth
	case family == "InvalidParameter", family == "InvalidParameterValue", family == "InvalidParameterCombination",
		family == "MissingParameter", family == "UnknownParameter", family == "UnsupportedOperation",
		family == "UnsupportedRegion", family == "InvalidAction", family == "RequestSizeLimitExceeded":
		return Invalid
	case family == "InternalError", family == "ServiceUnavailable", family == "ResourceUnavailable",
		code == CodeNetworkError, code == "ClientError.HttpStatusCodeError", code == "ClientError.IOError",
		code == "ClientError.ParseJsonError", code == "ClientError.CircuitBreakerError":
		return Transient
	}
	return Unknown
}

// Error is the error every method of a service client returns. Its text is
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

	class Class
	cause error
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

// Wrap turns whatever a call returned into an *Error for op, classified by
// cls. It returns nil for nil and leaves an *Error as it is.
func Wrap(op string, err error, cls CodeClassifier) error {
	if err == nil {
		return nil
	}
	var own *Error
	if errors.As(err, &own) {
		return own
	}
	e := &Error{Op: op, cause: err, class: classify(err, cls)}
	var sdk *sdkerrors.TencentCloudSDKError
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		e.Message = err.Error()
	case errors.As(err, &sdk):
		e.Code = sdk.GetCode()
		e.Message = sdk.GetMessage()
		if e.Code == CodeNetworkError {
			// The SDK puts the transport error text here, which carries
			// ephemeral ports; keep the message stable instead.
			e.Message = "no answer from the API (connection failure or timeout)"
		}
	default:
		e.Message = err.Error()
	}
	return e
}

// LocalErr is an error raised by a client without asking the API.
func LocalErr(op string, class Class, msg string) *Error {
	return &Error{Op: op, Message: msg, class: class}
}

func classify(err error, cls CodeClassifier) Class {
	var sdk *sdkerrors.TencentCloudSDKError
	var netErr net.Error
	switch {
	case errors.As(err, &sdk):
		return cls(sdk.GetCode())
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr):
		return Transient
	}
	return Unknown
}

// Classify returns the class of err: an *Error keeps the class it was
// given, anything else is classified by cls; nil is Unknown.
func Classify(err error, cls CodeClassifier) Class {
	if err == nil {
		return Unknown
	}
	var own *Error
	if errors.As(err, &own) {
		return own.class
	}
	return classify(err, cls)
}

// Code returns the API error code carried by err, or "" when there is none.
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

// Retry hints per class: a task usually ends within a second or two, a
// rate limit refills within a few seconds.
const (
	busyRetryAfter      = time.Second
	throttledRetryAfter = 3 * time.Second
)

// RetryAfter suggests how long a caller should wait before trying again
// after an error of class c: about a second for Busy, a few seconds for
// Throttled, and 0 for the rest (the caller's normal backoff applies).
func RetryAfter(c Class) time.Duration {
	switch c {
	case Busy:
		return busyRetryAfter
	case Throttled:
		return throttledRetryAfter
	default:
		return 0
	}
}
