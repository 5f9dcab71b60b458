package emulator

import (
	"maps"
	"path"
	"slices"
	"strings"
)

// SetPolicy restricts secretID to the listed actions, like a CAM policy.
// Entries may be bare action names ("CreateListener"), CAM names
// ("clb:CreateListener", "name/clb:CreateListener") or patterns
// ("clb:Describe*", "*"). A nil list removes the restriction; an empty,
// non-nil list denies everything. Denied calls answer UnauthorizedOperation.
func (e *Emulator) SetPolicy(secretID string, actions []string) {
	for {
		old := e.policies.Load()
		next := map[string][]string{}
		if old != nil {
			next = maps.Clone(*old)
		}
		if actions == nil {
			delete(next, secretID)
		} else {
			next[secretID] = append([]string{}, actions...)
		}
		if e.policies.CompareAndSwap(old, &next) {
			return
		}
	}
}

// Policies returns the allow-lists set by SetPolicy, by SecretId.
func (e *Emulator) Policies() map[string][]string {
	out := map[string][]string{}
	if p := e.policies.Load(); p != nil {
		for k, v := range *p {
			out[k] = slices.Clone(v)
		}
	}
	return out
}

func (e *Emulator) allowed(secretID, action string) bool {
	p := e.policies.Load()
	if p == nil {
		return true
	}
	list, restricted := (*p)[secretID]
	if !restricted {
		return true
	}
	for _, pattern := range list {
		if i := strings.LastIndex(pattern, "clb:"); i >= 0 {
			pattern = pattern[i+len("clb:"):]
		}
		if ok, _ := path.Match(pattern, action); ok {
			return true
		}
	}
	return false
}
