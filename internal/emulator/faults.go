package emulator

import (
	"errors"
	"maps"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"time"
)

// Faults describes injected failures. The zero value injects nothing.
type Faults struct {
	// Rules answer matching calls with an error, a dropped connection or a
	// handler panic. The first rule that fires wins.
	Rules []FaultRule `json:"Rules,omitempty"`
	// BusyStorm makes writes to load balancers answer
	// FailedOperation.ResourceInOperating, as if tasks were running.
	BusyStorm *BusyStorm `json:"BusyStorm,omitempty"`
	// TaskFailureRate is the probability that an asynchronous task ends
	// with Status 1 (and its change rolled back). TaskFailureActions limits
	// it to some actions; TaskFailureMessage is the Message reported.
	TaskFailureRate    float64  `json:"TaskFailureRate,omitempty"`
	TaskFailureActions []string `json:"TaskFailureActions,omitempty"`
	TaskFailureMessage string   `json:"TaskFailureMessage,omitempty"`
	// Delays hold matching calls for a random time before they are
	// answered, on top of the configured latency; every rule that fires
	// adds its delay. A delayed call may still fail by a Rule.
	Delays []FaultDelay `json:"Delays,omitempty"`
	// TagFilterLagSeconds makes the tag filters of DescribeAddresses
	// (tag-key, tag-value, tag:<key>) miss EIPs allocated less than that
	// long ago, as an index of tags that lags behind the resources would:
	// a caller looking for what an earlier call allocated may not find it.
	TagFilterLagSeconds float64 `json:"TagFilterLagSeconds,omitempty"`
}

// FaultDelay delays some calls of one action by a random time within
// [MinSeconds, MaxSeconds], as a congested network or a slow API would.
type FaultDelay struct {
	// Action is the action to delay; "" or "*" matches every action.
	Action string `json:"Action,omitempty"`
	// Rate is the probability that a matching call is delayed; 0 means
	// always.
	Rate       float64 `json:"Rate,omitempty"`
	MinSeconds float64 `json:"MinSeconds,omitempty"`
	MaxSeconds float64 `json:"MaxSeconds,omitempty"`
}

// FaultRule injects one kind of failure into calls of one action.
type FaultRule struct {
	// Action is the action to disturb; "" or "*" matches every action.
	Action string `json:"Action,omitempty"`
	// Code and Message form the error answered; Code defaults to InternalError.
	Code    string `json:"Code,omitempty"`
	Message string `json:"Message,omitempty"`
	// Rate is the probability that a matching call fails, in (0, 1];
	// 0 means always.
	Rate float64 `json:"Rate,omitempty"`
	// Count, when positive, stops the rule after it fired that many times.
	Count int `json:"Count,omitempty"`
	// Drop closes the connection without an answer instead.
	Drop bool `json:"Drop,omitempty"`
	// Panic makes the handler panic instead, to exercise the recovery path.
	Panic bool `json:"Panic,omitempty"`
}

// BusyStorm makes load balancers refuse writes for a while.
type BusyStorm struct {
	// LoadBalancerIds limits the storm; empty means every load balancer.
	LoadBalancerIds []string `json:"LoadBalancerIds,omitempty"`
	// Rate is the probability that a write is refused; 0 means always.
	Rate float64 `json:"Rate,omitempty"`
	// Seconds is how long the storm lasts from SetFaults; 0 means until
	// the faults are replaced.
	Seconds float64 `json:"Seconds,omitempty"`
}

type faultAction int

const (
	faultNone faultAction = iota
	faultError
	faultDrop
	faultPanic
)

// faultSet is Faults prepared for the hot path.
type faultSet struct {
	spec      Faults
	rules     []*armedRule
	busyUntil time.Time // zero: no end
}

type armedRule struct {
	FaultRule
	fired atomic.Int64
}

func fires(rate float64) bool { return rate <= 0 || rate >= 1 || rand.Float64() < rate }

func (f *faultSet) match(action string) (faultAction, *apiError) {
	for _, r := range f.rules {
		if r.Action != "" && r.Action != "*" && r.Action != action {
			continue
		}
		if !fires(r.Rate) {
			continue
		}
		if r.Count > 0 && r.fired.Add(1) > int64(r.Count) {
			continue
		}
		switch {
		case r.Drop:
			return faultDrop, nil
		case r.Panic:
			return faultPanic, nil
		}
		code, msg := r.Code, r.Message
		if code == "" {
			code = codeInternalError
		}
		if msg == "" {
			msg = "Injected fault for " + action + "."
		}
		return faultError, &apiError{Code: code, Message: msg}
	}
	return faultNone, nil
}

// delay is the injected delay of one call of action; 0 for none.
func (f *faultSet) delay(action string) time.Duration {
	var d time.Duration
	for _, r := range f.spec.Delays {
		if r.Action != "" && r.Action != "*" && r.Action != action || !fires(r.Rate) {
			continue
		}
		s := r.MinSeconds + rand.Float64()*(r.MaxSeconds-r.MinSeconds)
		d += time.Duration(s * float64(time.Second))
	}
	return d
}

// tagLag is how long after its allocation an EIP is found by tag filters.
func (e *Emulator) tagLag() time.Duration {
	if f := e.faults.Load(); f != nil {
		return time.Duration(f.spec.TagFilterLagSeconds * float64(time.Second))
	}
	return 0
}

func (f *faultSet) busy(lbID string, now time.Time) bool {
	s := f.spec.BusyStorm
	if s == nil || (!f.busyUntil.IsZero() && now.After(f.busyUntil)) {
		return false
	}
	if len(s.LoadBalancerIds) > 0 && !slices.Contains(s.LoadBalancerIds, lbID) {
		return false
	}
	return fires(s.Rate)
}

func (f *faultSet) taskFails(action string) (bool, string) {
	s := f.spec
	if s.TaskFailureRate <= 0 || (len(s.TaskFailureActions) > 0 && !slices.Contains(s.TaskFailureActions, action)) {
		return false, ""
	}
	if s.TaskFailureRate < 1 && rand.Float64() >= s.TaskFailureRate {
		return false, ""
	}
	msg := s.TaskFailureMessage
	if msg == "" {
		msg = "The task of " + action + " failed (injected fault)."
	}
	return true, msg
}

// SetFaults replaces the injected faults; the zero Faults clears them.
func (e *Emulator) SetFaults(f Faults) error {
	valid := func(r float64) bool { return r >= 0 && r <= 1 }
	if !valid(f.TaskFailureRate) || (f.BusyStorm != nil && (!valid(f.BusyStorm.Rate) || f.BusyStorm.Seconds < 0)) || f.TagFilterLagSeconds < 0 {
		return errors.New("emulator: fault rates must be within [0, 1] and durations not negative")
	}
	for _, d := range f.Delays {
		if !valid(d.Rate) || d.MinSeconds < 0 || d.MaxSeconds < d.MinSeconds {
			return errors.New("emulator: fault delay rates must be within [0, 1] and 0 <= MinSeconds <= MaxSeconds")
		}
	}
	set := &faultSet{spec: cloneFaults(f)}
	for _, r := range f.Rules {
		if !valid(r.Rate) || r.Count < 0 {
			return errors.New("emulator: fault rule rates must be within [0, 1] and counts not negative")
		}
		set.rules = append(set.rules, &armedRule{FaultRule: r})
	}
	if s := f.BusyStorm; s != nil && s.Seconds > 0 {
		set.busyUntil = e.cfg.Clock().Add(time.Duration(s.Seconds * float64(time.Second)))
	}
	if len(set.rules) == 0 && f.BusyStorm == nil && f.TaskFailureRate == 0 && len(f.Delays) == 0 && f.TagFilterLagSeconds == 0 {
		e.faults.Store(nil)
		return nil
	}
	e.faults.Store(set)
	return nil
}

// Faults returns the faults currently injected.
func (e *Emulator) Faults() Faults {
	if f := e.faults.Load(); f != nil {
		return cloneFaults(f.spec)
	}
	return Faults{}
}

func cloneFaults(f Faults) Faults {
	f.Rules = slices.Clone(f.Rules)
	f.TaskFailureActions = slices.Clone(f.TaskFailureActions)
	f.Delays = slices.Clone(f.Delays)
	if f.BusyStorm != nil {
		s := *f.BusyStorm
		s.LoadBalancerIds = slices.Clone(s.LoadBalancerIds)
		f.BusyStorm = &s
	}
	return f
}

// FaultsInjected returns how many faults were injected since the
// counters were last reset, by kind: the error code answered (busy storms
// included), "ConnectionDropped", "Panic", "Delay" or "TaskFailed". Tests
// print it next to what they measured under those faults.
func (e *Emulator) FaultsInjected() map[string]int {
	e.injected.mu.Lock()
	defer e.injected.mu.Unlock()
	return maps.Clone(e.injected.counts[injectedKey])
}

// injectedKey is the one "action" of the injected-fault counters.
const injectedKey = "injected"

func (e *Emulator) countInjected(kind string) { e.injected.add("", injectedKey, kind) }

// latencySettings is the injected delay per call.
type latencySettings struct {
	fixed     time.Duration
	perAction map[string]time.Duration
}

func cloneDurations(m map[string]time.Duration) map[string]time.Duration { return maps.Clone(m) }

// SetLatency sets the delay added to every call and the extra delay per
// action; zero values remove them.
func (e *Emulator) SetLatency(fixed time.Duration, perAction map[string]time.Duration) {
	e.latency.Store(&latencySettings{fixed: fixed, perAction: cloneDurations(perAction)})
}

// Latency returns the delays set by Config or SetLatency.
func (e *Emulator) Latency() (time.Duration, map[string]time.Duration) {
	l := e.latency.Load()
	return l.fixed, cloneDurations(l.perAction)
}

// sleep waits for the configured latency of action, or until ctx ends; it
// reports whether the whole delay elapsed.
func (e *Emulator) sleep(ctx interface{ Done() <-chan struct{} }, action string) bool {
	l := e.latency.Load()
	return sleepCtx(ctx, l.fixed+l.perAction[action])
}

// sleepCtx waits for d, or until ctx ends; it reports whether the whole
// delay elapsed.
func sleepCtx(ctx interface{ Done() <-chan struct{} }, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
