package emulator

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

const (
	tc3Algorithm   = "TC3-HMAC-SHA256"
	tc3Terminator  = "tc3_request"
	serviceName    = "clb"
	vpcServiceName = "vpc"
)

// signingKeys caches the derived TC3 signing key per secret, UTC date and
// scope service: deriving it costs three HMACs and every request of a day
// shares it.
type signingKeys struct {
	mu   sync.Mutex
	keys map[signingKeyID][]byte
}

type signingKeyID struct {
	secretKey string
	date      string
	service   string
}

func (s *signingKeys) get(secretKey, date, service string) []byte {
	id := signingKeyID{secretKey, date, service}
	s.mu.Lock()
	defer s.mu.Unlock()
	if k, ok := s.keys[id]; ok {
		return k
	}
	if len(s.keys) > 1024 { // a long-running emulator sees one date per day per key
		clear(s.keys)
	}
	k := deriveSigningKey(secretKey, date, service)
	s.keys[id] = k
	return k
}

func hmacSHA256(key []byte, msg string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}

func deriveSigningKey(secretKey, date, service string) []byte {
	k := hmacSHA256([]byte("TC3"+secretKey), date)
	k = hmacSHA256(k, service)
	return hmacSHA256(k, tc3Terminator)
}

// hostService is the credential scope service a client derives from the
// endpoint it sends to: the Host header up to its first dot. The cloud serves
// clb at clb.tencentcloudapi.com and clb.<region>.tencentcloudapi.com, where
// this is "clb". The Node.js SDK (and Python SDK releases that split their
// endpoint the same way) sign with it whatever the host, so at
// 127.0.0.1:9443 they sign "127", and at localhost:9443 (no dot)
// "localhost:9443", port included.
func hostService(host string) string {
	label, _, _ := strings.Cut(host, ".")
	return label
}

// scopeServiceOK tells whether a credential scope's service is one the
// cloud would accept for a request to host: the called service itself (the
// Go SDK and current Python SDKs name their service) or the host's own
// service.
func scopeServiceOK(service, host, called string) bool {
	return service == called || (service != "" && service == hostService(host))
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// authorization is the parsed Authorization header.
type authorization struct {
	secretID      string
	date          string
	service       string
	terminator    string
	signedHeaders []string
	signature     string
}

func parseAuthorization(h string) (authorization, bool) {
	var a authorization
	rest, ok := strings.CutPrefix(h, tc3Algorithm+" ")
	if !ok {
		return a, false
	}
	for _, part := range strings.Split(rest, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return a, false
		}
		switch k {
		case "Credential":
			f := strings.Split(v, "/")
			if len(f) != 4 {
				return a, false
			}
			a.secretID, a.date, a.service, a.terminator = f[0], f[1], f[2], f[3]
		case "SignedHeaders":
			a.signedHeaders = strings.Split(v, ";")
		case "Signature":
			a.signature = v
		}
	}
	return a, a.secretID != "" && a.signature != "" && len(a.signedHeaders) > 0
}

// authenticate verifies a TC3-HMAC-SHA256 request and returns its SecretId.
// Identical replays are accepted on purpose: the SDK resends the very same
// signed request when it retries.
func (e *Emulator) authenticate(r *http.Request, body []byte, now time.Time, called string) (string, *apiError) {
	a, ok := parseAuthorization(r.Header.Get("Authorization"))
	if !ok {
		return "", errorf(codeAuthInvalidAuthorization,
			"The Authorization header is missing or is not a valid %s authorization.", tc3Algorithm)
	}
	tsHeader := r.Header.Get("X-TC-Timestamp")
	ts, err := strconv.ParseInt(tsHeader, 10, 64)
	if err != nil {
		return a.secretID, errorf(codeAuthSignatureFailure, "X-TC-Timestamp %q is not a unix timestamp.", tsHeader)
	}
	if d := now.Sub(time.Unix(ts, 0)); d > signatureValidityWindow || d < -signatureValidityWindow {
		return a.secretID, errorf(codeAuthSignatureExpire,
			"Signature expired, Timestamp is %d, server time is %d; the difference must be within 300 seconds.",
			ts, now.Unix())
	}
	cred, ok := e.creds[a.secretID]
	if !ok {
		return a.secretID, errorf(codeAuthSecretIDNotFound, "The SecretId is not found, please ensure that your SecretId is correct.")
	}
	date := time.Unix(ts, 0).UTC().Format("2006-01-02")
	if a.date != date || !scopeServiceOK(a.service, r.Host, called) || a.terminator != tc3Terminator {
		return a.secretID, errorf(codeAuthSignatureFailure,
			"The credential scope %s/%s/%s does not match the request (expected %s/%s/%s, or service %q derived from host %q).",
			a.date, a.service, a.terminator, date, called, tc3Terminator, hostService(r.Host), r.Host)
	}
	if r.Header.Get("X-TC-Token") != cred.Token {
		return a.secretID, errorf(codeAuthTokenFailure, "The token is invalid or does not belong to the SecretId.")
	}
	if !e.signatureMatches(r, body, a, tsHeader, cred.SecretKey, r.Host) &&
		!e.signatureMatches(r, body, a, tsHeader, cred.SecretKey, hostWithoutPort(r.Host)) {
		return a.secretID, errorf(codeAuthSignatureFailure,
			"The provided credentials could not be validated. Please check your signature is correct.")
	}
	return a.secretID, nil
}

// hostWithoutPort drops a trailing ":port" from a Host header ("[::1]:80"
// gives "[::1]"). The Node.js SDK signs the host name alone while it sends
// the port in the Host header; the cloud, on port 443, never sees a port.
func hostWithoutPort(host string) string {
	if i := strings.LastIndexByte(host, ':'); i > strings.LastIndexByte(host, ']') {
		return host[:i]
	}
	return host
}

func (e *Emulator) signatureMatches(r *http.Request, body []byte, a authorization, ts, secretKey, host string) bool {
	expected, ok := e.signature(r, body, a, ts, secretKey, host)
	return ok && hmac.Equal([]byte(expected), []byte(strings.ToLower(a.signature)))
}

// signature recomputes the TC3 signature of r over the exact body received,
// with host as the signed host header.
func (e *Emulator) signature(r *http.Request, body []byte, a authorization, ts, secretKey, host string) (string, bool) {
	if !sort.StringsAreSorted(a.signedHeaders) {
		return "", false
	}
	var sb strings.Builder
	sb.Grow(256)
	sb.WriteString(r.Method)
	sb.WriteString("\n/\n")
	if r.Method == http.MethodGet {
		sb.WriteString(r.URL.RawQuery)
	}
	sb.WriteByte('\n')
	hasHost := false
	for _, name := range a.signedHeaders {
		var v string
		switch name {
		case "host":
			v, hasHost = host, true
		case "content-type":
			v = r.Header.Get("Content-Type")
		default:
			v = r.Header.Get(name)
		}
		sb.WriteString(name)
		sb.WriteByte(':')
		sb.WriteString(strings.ToLower(strings.TrimSpace(v)))
		sb.WriteByte('\n')
	}
	if !hasHost {
		return "", false // the host must be signed, or a request could be replayed elsewhere
	}
	sb.WriteByte('\n')
	sb.WriteString(strings.Join(a.signedHeaders, ";"))
	sb.WriteByte('\n')
	if r.Header.Get("X-TC-Content-SHA256") == "UNSIGNED-PAYLOAD" {
		sb.WriteString(sha256Hex([]byte("UNSIGNED-PAYLOAD")))
	} else {
		sb.WriteString(sha256Hex(body))
	}
	canonical := sb.String()

	// The scope's service was checked by authenticate; it is part of what was signed.
	toSign := tc3Algorithm + "\n" + ts + "\n" + a.date + "/" + a.service + "/" + tc3Terminator + "\n" +
		sha256Hex([]byte(canonical))
	key := e.signing.get(secretKey, a.date, a.service)
	return hex.EncodeToString(hmacSHA256(key, toSign)), true
}
