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
	tc3Algorithm  = "TC3-HMAC-SHA256"
	tc3Terminator = "tc3_request"
	serviceName   = "clb"
)

// signingKeys caches the derived TC3 signing key per secret and UTC date:
// deriving it costs three HMACs and every request of a day shares it.
type signingKeys struct {
	mu   sync.Mutex
	keys map[signingKeyID][]byte
}

type signingKeyID struct {
	secretKey string
	date      string
}

func (s *signingKeys) get(secretKey, date string) []byte {
	id := signingKeyID{secretKey, date}
	s.mu.Lock()
	defer s.mu.Unlock()
	if k, ok := s.keys[id]; ok {
		return k
	}
	if len(s.keys) > 1024 { // a long-running emulator sees one date per day per key
		clear(s.keys)
	}
	k := deriveSigningKey(secretKey, date)
	s.keys[id] = k
	return k
}

func hmacSHA256(key []byte, msg string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}

func deriveSigningKey(secretKey, date string) []byte {
	k := hmacSHA256([]byte("TC3"+secretKey), date)
	k = hmacSHA256(k, serviceName)
	return hmacSHA256(k, tc3Terminator)
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
func (e *Emulator) authenticate(r *http.Request, body []byte, now time.Time) (string, *apiError) {
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
	if a.date != date || a.service != serviceName || a.terminator != tc3Terminator {
		return a.secretID, errorf(codeAuthSignatureFailure,
			"The credential scope %s/%s/%s does not match the request (expected %s/%s/%s).",
			a.date, a.service, a.terminator, date, serviceName, tc3Terminator)
	}
	if r.Header.Get("X-TC-Token") != cred.Token {
		return a.secretID, errorf(codeAuthTokenFailure, "The token is invalid or does not belong to the SecretId.")
	}
	expected, ok := e.signature(r, body, a, tsHeader, cred.SecretKey)
	if !ok || !hmac.Equal([]byte(expected), []byte(strings.ToLower(a.signature))) {
		return a.secretID, errorf(codeAuthSignatureFailure,
			"The provided credentials could not be validated. Please check your signature is correct.")
	}
	return a.secretID, nil
}

// signature recomputes the TC3 signature of r over the exact body received,
// with the Host exactly as sent (including the port).
func (e *Emulator) signature(r *http.Request, body []byte, a authorization, ts, secretKey string) (string, bool) {
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
			v, hasHost = r.Host, true
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

	toSign := tc3Algorithm + "\n" + ts + "\n" + a.date + "/" + serviceName + "/" + tc3Terminator + "\n" +
		sha256Hex([]byte(canonical))
	key := e.signing.get(secretKey, a.date)
	return hex.EncodeToString(hmacSHA256(key, toSign)), true
}
