package vpc

import (
	"errors"
	"strings"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/tcapi"
)

// Error codes of the EIP actions this package reacts to.
const (
	codeQuota          = "AddressQuotaLimitExceeded"
	codeDailyLimit     = "AddressQuotaLimitExceeded.DailyAllocate"
	codeAddrNotFound   = "InvalidAddressId.NotFound"
	codeAddrNotPermit  = "InvalidAddressIdStatus.NotPermit"
	codeAddrNotFound2  = "InvalidParameterValue.AddressNotFound"
	codeResNotFound    = "ResourceNotFound"
	codeENINotFound    = "InvalidNetworkInterfaceId.NotFound"
	codeInstanceAbsent = "InvalidInstanceId.NotFound"
)

// classifyCode maps a VPC API or SDK error code to its Class.
func classifyCode(code string) tcapi.Class {
	family, _, _ := strings.Cut(code, ".")
	switch {
	// Some not-found codes sit under InvalidParameterValue, so they come first.
	case code == codeAddrNotFound, code == codeAddrNotFound2, code == codeENINotFound,
		code == codeInstanceAbsent, family == codeResNotFound:
		return tcapi.NotFound
	case family == codeQuota:
		return tcapi.Quota
	// The address is binding, unbinding or otherwise not in a state that
	// allows the action: the caller looks again later.
	case code == codeAddrNotPermit:
		return tcapi.Busy
	}
	return tcapi.CommonClass(code)
}

func wrapErr(op string, err error) error { return tcapi.Wrap(op, err, classifyCode) }

// Classify returns the class of err; nil is Unknown.
func Classify(err error) tcapi.Class { return tcapi.Classify(err, classifyCode) }

// Code returns the API error code carried by err, or "".
func Code(err error) string { return tcapi.Code(err) }

// IsNotFound reports whether err means the address, ENI or instance does
// not exist.
func IsNotFound(err error) bool { return err != nil && Classify(err) == tcapi.NotFound }

// IsQuotaExceeded reports whether the account's EIP quota is reached.
func IsQuotaExceeded(err error) bool {
	return err != nil && Classify(err) == tcapi.Quota && Code(err) != codeDailyLimit
}

// IsDailyLimit reports whether the account's daily EIP allocation limit is
// reached; it lifts the next day.
func IsDailyLimit(err error) bool { return err != nil && Code(err) == codeDailyLimit }

// IsBusy reports whether the address is in a state that refuses the action
// now (binding, unbinding, or bound when it must not be): look again later.
func IsBusy(err error) bool { return err != nil && Classify(err) == tcapi.Busy }

// IsThrottled reports whether err is a rate limit our retries could not
// absorb.
func IsThrottled(err error) bool { return err != nil && Classify(err) == tcapi.Throttled }

// IsInvalid reports whether the request itself is wrong (bad ISP, bandwidth
// out of range, malformed id).
func IsInvalid(err error) bool { return err != nil && Classify(err) == tcapi.Invalid }

// taskFailedError is what TaskDone returns for a task that FAILED.
type taskFailedError struct{ err *tcapi.Error }

func (e taskFailedError) Error() string { return e.err.Error() }
func (e taskFailedError) Unwrap() error { return e.err }

// TaskFailed is TaskDone's answer for task id, which FAILED; the fake
// region answers it too.
func TaskFailed(id string) error {
	return taskFailedError{tcapi.LocalErr("describe task result", tcapi.Unknown, "task "+id+" failed")}
}

// IsTaskFailed reports whether err is TaskDone's answer for a task that
// ended in failure (rather than a failure to ask).
func IsTaskFailed(err error) bool {
	var t taskFailedError
	return errors.As(err, &t)
}
