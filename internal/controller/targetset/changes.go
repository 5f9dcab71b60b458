package targetset

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
)

const (
	// defaultWeight is the weight of a target that sets none, as the API
	// and the CRD default it.
	defaultWeight = 10
	// maxWeightChanges is how many weights one BatchModifyTargetWeight may
	// change on one listener or rule.
	maxWeightChanges = clb.MaxWeightRuleTargets
	// maxDiffItems bounds how many changes the readable diff lists.
	maxDiffItems = 10
)

// identity names the listener, or the rule of a listener, whose targets a
// TargetSet holds. It is also the external name: lbl-… or lbl-…/loc-….
type identity struct {
	listener, rule string
}

func (id identity) String() string {
	if id.rule == "" {
		return id.listener
	}
	return id.listener + "/" + id.rule
}

func parseExternalName(name string) (identity, error) {
	listener, rule, hasRule := strings.Cut(name, "/")
	if listener == "" || (hasRule && (rule == "" || strings.Contains(rule, "/"))) {
		return identity{}, errors.Errorf("external name %q is neither a listener id (lbl-…) nor listenerId/ruleId (lbl-…/loc-…)", name)
	}
	return identity{listener: listener, rule: rule}, nil
}

// key identifies a target within its listener or rule, whatever its weight:
// an ENI IP and port, or a CVM instance and port.
type key struct {
	IP         string
	InstanceID string
	Port       int64
}

func (k key) String() string {
	if k.InstanceID != "" {
		return fmt.Sprintf("%s:%d", k.InstanceID, k.Port)
	}
	return fmt.Sprintf("%s:%d", k.IP, k.Port)
}

func compareKeys(a, b key) int {
	return cmp.Or(cmp.Compare(a.InstanceID, b.InstanceID), cmp.Compare(a.IP, b.IP), cmp.Compare(a.Port, b.Port))
}

func specKey(t v1alpha1.Target) key {
	if t.InstanceID != "" {
		return key{InstanceID: t.InstanceID, Port: t.Port}
	}
	return key{IP: clb.NormalizeIP(t.IP), Port: t.Port}
}

func specWeight(t v1alpha1.Target) int64 {
	if t.Weight == nil {
		return defaultWeight
	}
	return *t.Weight
}

func observedKey(o v1alpha1.TargetObservation) key {
	if o.InstanceID != "" {
		return key{InstanceID: o.InstanceID, Port: o.Port}
	}
	return key{IP: clb.NormalizeIP(o.IP), Port: o.Port}
}

// observe converts the cloud's targets, ordered by key.
func observe(bs []*clbsdk.Backend) []v1alpha1.TargetObservation {
	out := clb.ObserveTargets(bs)
	slices.SortFunc(out, func(a, b v1alpha1.TargetObservation) int { return compareKeys(observedKey(a), observedKey(b)) })
	return out
}

// change is one target to register (Weight), deregister (Was) or re-weight
// (Was to Weight).
type change struct {
	Key    key
	Weight int64
	Was    int64
}

// changes is what turns the cloud's targets into the spec's.
type changes struct {
	Register   []change
	Deregister []change
	Reweight   []change
}

func (c changes) empty() bool {
	return len(c.Register) == 0 && len(c.Deregister) == 0 && len(c.Reweight) == 0
}

// String renders the changes as a readable diff, listing at most a few.
func (c changes) String() string {
	var items []string
	for _, ch := range c.Register {
		items = append(items, fmt.Sprintf("register %s (weight %d)", ch.Key, ch.Weight))
	}
	for _, ch := range c.Deregister {
		items = append(items, fmt.Sprintf("deregister %s", ch.Key))
	}
	for _, ch := range c.Reweight {
		items = append(items, fmt.Sprintf("weight of %s: want %d, got %d", ch.Key, ch.Weight, ch.Was))
	}
	if len(items) > maxDiffItems {
		items = append(items[:maxDiffItems], fmt.Sprintf("and %d more", len(items)-maxDiffItems))
	}
	return strings.Join(items, "; ")
}

// plan compares the spec's targets with the cloud's: same keys and same
// weights (unset means 10) is up to date.
func plan(spec []v1alpha1.Target, cloud []v1alpha1.TargetObservation) changes {
	want := make(map[key]int64, len(spec))
	for _, t := range spec {
		want[specKey(t)] = specWeight(t)
	}
	got := make(map[key]int64, len(cloud))
	for _, o := range cloud {
		got[observedKey(o)] = o.Weight
	}
	var c changes
	for k, w := range want {
		was, bound := got[k]
		switch {
		case !bound:
			c.Register = append(c.Register, change{Key: k, Weight: w})
		case was != w:
			c.Reweight = append(c.Reweight, change{Key: k, Weight: w, Was: was})
		}
	}
	for k, was := range got {
		if _, keep := want[k]; !keep {
			c.Deregister = append(c.Deregister, change{Key: k, Was: was})
		}
	}
	byKey := func(a, b change) int { return compareKeys(a.Key, b.Key) }
	slices.SortFunc(c.Register, byKey)
	slices.SortFunc(c.Deregister, byKey)
	slices.SortFunc(c.Reweight, byKey)
	return c
}

// targets converts changes into the client's targets of id; withWeight
// sends each change's Weight.
func targets(id identity, chs []change, withWeight bool) []clb.Target {
	out := make([]clb.Target, len(chs))
	for i, ch := range chs {
		out[i] = clb.Target{ListenerID: id.listener, LocationID: id.rule, EniIP: ch.Key.IP, InstanceID: ch.Key.InstanceID, Port: ch.Key.Port}
		if withWeight {
			out[i].Weight = clb.Ptr(ch.Weight)
		}
	}
	return out
}
