package emulator

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"
)

// FuzzParseAuthorization: whatever the Authorization header, parsing does
// not panic; one it accepts has a SecretId, a signature and signed
// headers, and written back in the SDK's form parses to the same fields.
func FuzzParseAuthorization(f *testing.F) {
	for _, h := range []string{
		"TC3-HMAC-SHA256 Credential=AKID/2026-01-01/clb/tc3_request, SignedHeaders=content-type;host, Signature=abc",
		"TC3-HMAC-SHA256 Credential=AKID/2026-01-01/127/tc3_request, SignedHeaders=host, Signature=abc",
		"TC3-HMAC-SHA256 Credential=AKID/2026-01-01/clb, SignedHeaders=host, Signature=abc",
		"TC3-HMAC-SHA256 Credential=/d/s/t, SignedHeaders=, Signature=",
		"TC3-HMAC-SHA256 Signature=abc,,",
		"HMAC-SHA1 Credential=AKID",
		"TC3-HMAC-SHA256 ",
		"",
	} {
		f.Add(h)
	}
	f.Fuzz(func(t *testing.T, h string) {
		a, ok := parseAuthorization(h)
		if !ok {
			return
		}
		if a.secretID == "" || a.signature == "" || len(a.signedHeaders) == 0 || !strings.HasPrefix(h, tc3Algorithm+" ") {
			t.Fatalf("parseAuthorization(%q) accepted %+v", h, a)
		}
		// Fields holding a separator cannot be written back unambiguously.
		if strings.ContainsAny(a.secretID+a.date+a.service+a.terminator+a.signature+strings.Join(a.signedHeaders, ""), ",/=; \t\n\r\v\f\u0085\u00a0") {
			return
		}
		back := fmt.Sprintf("%s Credential=%s/%s/%s/%s, SignedHeaders=%s, Signature=%s",
			tc3Algorithm, a.secretID, a.date, a.service, a.terminator, strings.Join(a.signedHeaders, ";"), a.signature)
		b, ok := parseAuthorization(back)
		if !ok || b.secretID != a.secretID || b.date != a.date || b.service != a.service || b.terminator != a.terminator ||
			b.signature != a.signature || !slices.Equal(b.signedHeaders, a.signedHeaders) {
			t.Fatalf("parseAuthorization(%q) = %+v; written back as %q it parses to %+v, %v", h, a, back, b, ok)
		}
	})
}

// FuzzParseIPv4: exactly the IPv4 addresses parse, and formatIPv4 prints
// the canonical form back.
func FuzzParseIPv4(f *testing.F) {
	for _, s := range []string{"10.0.0.1", "255.255.255.255", "0.0.0.0", "::1", "::ffff:10.0.0.1", "10.0.0.256", "010.0.0.1", "", "1.2.3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := parseIPv4(s)
		a, perr := netip.ParseAddr(s)
		if (err == nil) != (perr == nil && a.Is4()) {
			t.Fatalf("parseIPv4(%q) = %d, %v; netip says %v, %v", s, v, err, a, perr)
		}
		if err == nil && formatIPv4(v) != a.String() {
			t.Fatalf("parseIPv4(%q) = %d, printed %q, want %q", s, v, formatIPv4(v), a)
		}
	})
}

// FuzzLatencyParse: the admin latency setting takes exactly what
// time.ParseDuration takes, and names the bad field when it refuses.
func FuzzLatencyParse(f *testing.F) {
	for _, s := range []string{"", "0", "50ms", "1h2m3.5s", "-1s", "1", "ms", "1d", "9999999999h"} {
		f.Add(s, "CreateListener", s)
	}
	f.Fuzz(func(t *testing.T, fixed, action, per string) {
		l := LatencyJSON{Fixed: fixed, PerAction: map[string]string{action: per}}
		gotFixed, gotPer, err := l.parse()
		wantFixed, ferr := time.ParseDuration(fixed)
		if fixed == "" {
			wantFixed, ferr = 0, nil
		}
		wantPer, perr := time.ParseDuration(per)
		switch {
		case ferr != nil:
			if err == nil || !strings.Contains(err.Error(), "Fixed") {
				t.Fatalf("Fixed %q: got %v, want an error naming Fixed", fixed, err)
			}
		case perr != nil:
			if err == nil || !strings.Contains(err.Error(), "PerAction") {
				t.Fatalf("PerAction %q: got %v, want an error naming PerAction", per, err)
			}
		case err != nil || gotFixed != wantFixed || gotPer[action] != wantPer:
			t.Fatalf("parse(%q, %q) = %v, %v, %v; want %v, %v", fixed, per, gotFixed, gotPer, err, wantFixed, wantPer)
		}
	})
}
