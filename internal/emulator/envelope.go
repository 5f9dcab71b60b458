package emulator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
)

// Error codes the emulator answers with, spelled exactly as the real API.
const (
	codeOK = "OK" // counter key for successful calls, never sent

	codeAuthInvalidAuthorization = "AuthFailure.InvalidAuthorization"
	codeAuthSignatureFailure     = "AuthFailure.SignatureFailure"
	codeAuthSignatureExpire      = "AuthFailure.SignatureExpire"
	codeAuthSecretIDNotFound     = "AuthFailure.SecretIdNotFound"
	codeAuthTokenFailure         = "AuthFailure.TokenFailure"

	codeInvalidAction       = "InvalidAction"
	codeNoSuchVersion       = "NoSuchVersion"
	codeUnsupportedProtocol = "UnsupportedProtocol"
	codeRequestSizeLimit    = "RequestSizeLimitExceeded"
	codeRequestLimit        = "RequestLimitExceeded"
	codeUnauthorized        = "UnauthorizedOperation"
	codeInternalError       = "InternalError"
	codeMissingParameter    = "MissingParameter"
	codeUnknownParameter    = "UnknownParameter"
	codeUnsupportedOp       = "UnsupportedOperation"

	codeFailedOperation       = "FailedOperation"
	codeResourceInOperating   = "FailedOperation.ResourceInOperating"
	codeTargetNumCheckRisk    = "FailedOperation.TargetNumCheckRisk"
	codeFrequencyCheckRisk    = "FailedOperation.FrequencyCheckRisk"
	codeInvalidParameter      = "InvalidParameter"
	codeFormatError           = "InvalidParameter.FormatError"
	codeLBIDNotFound          = "InvalidParameter.LBIdNotFound"
	codeListenerIDNotFound    = "InvalidParameter.ListenerIdNotFound"
	codeLocationNotFound      = "InvalidParameter.LocationNotFound"
	codePortCheckFailed       = "InvalidParameter.PortCheckFailed"
	codeProtocolCheckFailed   = "InvalidParameter.ProtocolCheckFailed"
	codeRegionNotFound        = "InvalidParameter.RegionNotFound"
	codeClientTokenLimit      = "InvalidParameter.ClientTokenLimitExceeded"
	codeInvalidValue          = "InvalidParameterValue"
	codeDuplicate             = "InvalidParameterValue.Duplicate"
	codeInvalidFilter         = "InvalidParameterValue.InvalidFilter"
	codeLength                = "InvalidParameterValue.Length"
	codeRange                 = "InvalidParameterValue.Range"
	codeLimitExceeded         = "LimitExceeded"
	codeResourceInsufficient  = "ResourceInsufficient"
	codeInvalidParamCombining = "InvalidParameterCombination"
)

// apiError is an error the API reports inside the envelope. Handlers return
// it; the envelope writer renders it with HTTP 200, as the real API does.
type apiError struct {
	Code    string
	Message string
}

func (e *apiError) Error() string { return e.Code + ": " + e.Message }

func errorf(code, format string, args ...any) *apiError {
	return &apiError{Code: code, Message: fmt.Sprintf(format, args...)}
}

func missing(name string) *apiError {
	return errorf(codeMissingParameter, "The request is missing a required parameter `%s`.", name)
}

func busyError(lbID string) *apiError {
	return errorf(codeResourceInOperating,
		"Loadbalancer(%s) is not in normal desState, maybe some tasks are being processed, please try later.", lbID)
}

func lbNotFound(lbID string) *apiError {
	return errorf(codeLBIDNotFound, "LoadBalancer not exist: %s", lbID)
}

// errorBody and envelope mirror the JSON the SDK parses.
type errorBody struct {
	Error     errorDetail `json:"Error"`
	RequestID string      `json:"RequestId"`
}

type errorDetail struct {
	Code    string `json:"Code"`
	Message string `json:"Message"`
}

type envelope struct {
	Response any `json:"Response"`
}

// writeJSON renders the envelope. Encoding into a pooled buffer first lets
// the response carry a Content-Length, which keeps connections reusable.
func (e *Emulator) writeJSON(w http.ResponseWriter, payload any) {
	buf := e.bufs.Get().(*bytes.Buffer)
	buf.Reset()
	defer e.bufs.Put(buf)
	if err := json.NewEncoder(buf).Encode(envelope{Response: payload}); err != nil {
		// Only unencodable values end up here (a bug); still answer with an envelope.
		buf.Reset()
		fmt.Fprintf(buf, `{"Response":{"Error":{"Code":%q,"Message":%q},"RequestId":""}}`, codeInternalError, err.Error())
	}
	h := w.Header()
	h["Content-Type"] = []string{"application/json"}
	h["Content-Length"] = []string{strconv.Itoa(buf.Len())}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(buf.Bytes())
}

func (e *Emulator) writeError(w http.ResponseWriter, requestID string, err *apiError) {
	e.writeJSON(w, errorBody{Error: errorDetail{Code: err.Code, Message: err.Message}, RequestID: requestID})
}
