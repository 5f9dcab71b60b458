package emulator

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// The admin API lives under /_emulator/ on the same listener as the cloud
// API. It is unauthenticated: the emulator is meant for loopback use.
//
//	GET  /_emulator/healthz                  liveness
//	GET  /_emulator/inventory                Inventory
//	GET  /_emulator/calls                    Calls; DELETE resets them
//	GET  /_emulator/routes                   data plane routes
//	GET  /_emulator/faults                   Faults; POST sets, DELETE clears
//	GET  /_emulator/latency                  LatencyJSON; POST sets
//	GET  /_emulator/ratelimit                RateLimitJSON; POST sets
//	GET  /_emulator/policy                   CAM policies by SecretId; POST PolicyJSON sets one
//	POST /_emulator/health                   TargetHealthJSON
//	GET  /_emulator/enis                     ENIs (InventoryENI); POST ENIJSON adds one (AddENI)
//	GET  /_emulator/eip-idle                 EIPIdle, the idle-time account of EIPs
//	POST /_emulator/save                     write the state file now
//	POST /_emulator/reset[?scope=counters]   Reset (or ResetCounters)

// LatencyJSON is the admin form of SetLatency; durations use
// time.ParseDuration syntax ("50ms").
type LatencyJSON struct {
	Fixed     string            `json:"Fixed"`
	PerAction map[string]string `json:"PerAction,omitempty"`
}

// RateLimitJSON is the admin form of SetRateLimit.
type RateLimitJSON struct {
	PerSecond float64            `json:"PerSecond"`
	PerAction map[string]float64 `json:"PerAction,omitempty"`
}

// PolicyJSON is the admin form of SetCAMPolicy (Policy, a CAM document)
// or else SetPolicy (Actions); with neither, the policy is removed.
type PolicyJSON struct {
	SecretID string          `json:"SecretId"`
	Policy   json.RawMessage `json:"Policy,omitempty"`
	Actions  []string        `json:"Actions"`
}

// TargetHealthJSON is the admin form of SetTargetHealth.
type TargetHealthJSON struct {
	IP      string `json:"Ip"`
	Port    int    `json:"Port"`
	Healthy bool   `json:"Healthy"`
}

func (e *Emulator) serveAdmin(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, adminPrefix), "/")
	reply := func(v any) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(v)
	}
	fail := func(status int, format string, args ...any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": fmt.Sprintf(format, args...)})
	}
	read := func(v any) bool {
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20))
		dec.DisallowUnknownFields()
		if err := dec.Decode(v); err != nil {
			fail(http.StatusBadRequest, "invalid JSON body: %v", err)
			return false
		}
		return true
	}
	method := func(allowed ...string) bool {
		for _, m := range allowed {
			if r.Method == m {
				return true
			}
		}
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		fail(http.StatusMethodNotAllowed, "%s is not allowed on %s", r.Method, r.URL.Path)
		return false
	}

	switch name {
	case "healthz":
		reply(map[string]any{"ok": true, "endpoint": e.Endpoint(), "region": e.cfg.Region})
	case "inventory":
		if method(http.MethodGet) {
			reply(e.Inventory())
		}
	case "routes":
		if method(http.MethodGet) {
			reply(e.Routes())
		}
	case "calls":
		if !method(http.MethodGet, http.MethodDelete) {
			return
		}
		if r.Method == http.MethodDelete {
			e.ResetCounters()
		}
		reply(e.Calls())
	case "faults":
		if !method(http.MethodGet, http.MethodPost, http.MethodDelete) {
			return
		}
		switch r.Method {
		case http.MethodPost:
			var f Faults
			if !read(&f) {
				return
			}
			if err := e.SetFaults(f); err != nil {
				fail(http.StatusBadRequest, "%v", err)
				return
			}
		case http.MethodDelete:
			_ = e.SetFaults(Faults{})
		}
		reply(e.Faults())
	case "latency":
		if !method(http.MethodGet, http.MethodPost) {
			return
		}
		if r.Method == http.MethodPost {
			var l LatencyJSON
			if !read(&l) {
				return
			}
			fixed, per, err := l.parse()
			if err != nil {
				fail(http.StatusBadRequest, "%v", err)
				return
			}
			e.SetLatency(fixed, per)
		}
		fixed, per := e.Latency()
		out := LatencyJSON{Fixed: fixed.String(), PerAction: map[string]string{}}
		for k, v := range per {
			out.PerAction[k] = v.String()
		}
		reply(out)
	case "ratelimit":
		if !method(http.MethodGet, http.MethodPost) {
			return
		}
		if r.Method == http.MethodPost {
			var rl RateLimitJSON
			if !read(&rl) {
				return
			}
			e.SetRateLimit(rl.PerSecond, rl.PerAction)
		}
		s := e.limiter.settings.Load()
		reply(RateLimitJSON{PerSecond: s.rate, PerAction: s.perAction})
	case "policy":
		if !method(http.MethodGet, http.MethodPost) {
			return
		}
		if r.Method == http.MethodPost {
			var p PolicyJSON
			if !read(&p) {
				return
			}
			if p.SecretID == "" {
				fail(http.StatusBadRequest, "SecretId is required")
				return
			}
			if len(p.Policy) > 0 && string(p.Policy) != "null" {
				pol, err := ParseCAMPolicy(p.Policy)
				if err != nil {
					fail(http.StatusBadRequest, "%v", err)
					return
				}
				e.SetCAMPolicy(p.SecretID, pol)
			} else {
				e.SetPolicy(p.SecretID, p.Actions)
			}
		}
		reply(e.Policies())
	case "health":
		if !method(http.MethodPost) {
			return
		}
		var h TargetHealthJSON
		if !read(&h) {
			return
		}
		e.SetTargetHealth(h.IP, h.Port, h.Healthy)
		reply(h)
	case "enis":
		if !method(http.MethodGet, http.MethodPost) {
			return
		}
		if r.Method == http.MethodPost {
			var n ENIJSON
			if !read(&n) {
				return
			}
			id, err := e.AddENI(n.Region, n.InstanceID, n.PrivateIPAddresses...)
			if err != nil {
				fail(http.StatusBadRequest, "%v", err)
				return
			}
			for _, x := range e.Inventory().ENIs {
				if x.ID == id {
					reply(x)
				}
			}
			return
		}
		reply(e.Inventory().ENIs)
	case "eip-idle":
		if method(http.MethodGet) {
			reply(e.EIPIdle())
		}
	case "save":
		if !method(http.MethodPost) {
			return
		}
		if err := e.Save(); err != nil {
			fail(http.StatusInternalServerError, "%v", err)
			return
		}
		reply(map[string]any{"saved": e.cfg.StateFile})
	case "reset":
		if !method(http.MethodPost) {
			return
		}
		switch scope := r.URL.Query().Get("scope"); scope {
		case "counters":
			e.ResetCounters()
		case "", "all":
			e.Reset()
		default:
			fail(http.StatusBadRequest, "unknown scope %q (want counters or all)", scope)
			return
		}
		reply(map[string]any{"reset": true})
	default:
		fail(http.StatusNotFound, "unknown admin endpoint %s", r.URL.Path)
	}
}

func (l LatencyJSON) parse() (time.Duration, map[string]time.Duration, error) {
	var fixed time.Duration
	var err error
	if l.Fixed != "" {
		if fixed, err = time.ParseDuration(l.Fixed); err != nil {
			return 0, nil, fmt.Errorf("latency Fixed: %w", err)
		}
	}
	per := map[string]time.Duration{}
	for k, v := range l.PerAction {
		d, err := time.ParseDuration(v)
		if err != nil {
			return 0, nil, fmt.Errorf("latency PerAction[%s]: %w", k, err)
		}
		per[k] = d
	}
	return fixed, per, nil
}
