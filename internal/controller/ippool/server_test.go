package ippool

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
)

// TestServeBeforeAllocator: until the NetPool controller starts, calls get
// the envelope with "retry", never a 500; routing errors come first.
func TestServeBeforeAllocator(t *testing.T) {
	s := NewServer("", logging.NewNopLogger())
	cases := map[string]struct {
		method, path string
		status, code int
	}{
		"allocate":     {http.MethodPost, AllocatorPath, 503, CodeUnavailable},
		"release host": {http.MethodDelete, HostPath + "10.0.0.1", 503, CodeUnavailable},
		"wrong method": {http.MethodGet, AllocatorPath, 405, CodeMethodNotAllowed},
		"unknown path": {http.MethodPost, "/", 404, CodeNotFound},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := httptest.NewRecorder()
			r := httptest.NewRequest(tc.method, tc.path, nil)
			r.Header.Set("X-Request-Id", "rid")
			s.ServeHTTP(w, r)
			e := Envelope{}
			if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil {
				t.Fatal(err)
			}
			if w.Code != tc.status || e.Code != tc.code || e.Result || e.RequestID != "rid" || e.Message == "" {
				t.Errorf("got %d %+v, want %d code %d", w.Code, e, tc.status, tc.code)
			}
		})
	}
}

// TestFreed: a fixed IP is Reserved for its Pod or claim until keep has
// passed (forever without keep); any other IP is Available and forgets
// its container.
func TestFreed(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	held := v1alpha1.NetIPStatus{Status: v1alpha1.NetIPActive, Host: "h", ContainerID: "c", PodName: "p", PodNamespace: "n", PodPrimaryKey: "n/p"}
	if got := freed(held, now); got != (v1alpha1.NetIPStatus{Status: v1alpha1.NetIPAvailable, UpdateTime: stamp(now)}) {
		t.Errorf("dynamic: %+v", got)
	}
	fixed := held
	fixed.Fixed, fixed.KeepDuration = true, "3s"
	got := freed(fixed, now)
	if got.Status != v1alpha1.NetIPReserved || got.ContainerID != "" || got.Host != "" || got.PodPrimaryKey != "n/p" || got.FixedIPExpiredTime != stamp(now.Add(3*time.Second)) {
		t.Errorf("fixed for 3s: %+v", got)
	}
	fixed.KeepDuration, fixed.IPClaimKey = "", "n/claim"
	if got := freed(fixed, now); got.Status != v1alpha1.NetIPReserved || got.FixedIPExpiredTime != "" || got.IPClaimKey != "n/claim" {
		t.Errorf("fixed forever: %+v", got)
	}
}
