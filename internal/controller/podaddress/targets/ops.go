package targets

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
)

// Of lists the targets of a binding, in the order of the
// listeners' protocols, so that the same binding always gives the same
// list (and so the same operation).
func Of(b v1alpha1.PortBinding) []clb.Target {
	var ts []clb.Target
	for _, proto := range slices.Sorted(maps.Keys(b.ListenerIDs)) {
		t := clb.Target{ListenerID: b.ListenerIDs[proto], Port: int64(b.TargetPort)}
		if b.InstanceID != "" {
			t.InstanceID = b.InstanceID
		} else {
			t.EniIP = b.TargetIP
		}
		ts = append(ts, t)
	}
	return ts
}

// opsFor groups bindings' targets into one operation per pool, region
// and load balancer. Operations and their targets are sorted: an
// operation must compare by what it does alone, or an unchanged
// registration would look new and be sent again while the first is in
// flight.
func opsFor(bs []v1alpha1.PortBinding, register bool) []Op {
	type key struct{ pool, region, lb string }
	byKey := map[key]*Op{}
	var order []key
	for _, b := range bs {
		k := key{pool: b.Pool, region: b.Region, lb: b.LoadBalancerID}
		o, ok := byKey[k]
		if !ok {
			o = &Op{register: register, pool: b.Pool, region: b.Region, lb: b.LoadBalancerID}
			byKey[k] = o
			order = append(order, k)
		}
		o.targets = append(o.targets, Of(b)...)
	}
	slices.SortFunc(order, func(a, b key) int {
		return cmp.Or(cmp.Compare(a.lb, b.lb), cmp.Compare(a.region, b.region), cmp.Compare(a.pool, b.pool))
	})
	out := make([]Op, 0, len(order))
	for _, k := range order {
		o := byKey[k]
		slices.SortFunc(o.targets, Compare)
		o.targets = slices.CompactFunc(o.targets, func(a, b clb.Target) bool { return Compare(a, b) == 0 })
		out = append(out, *o)
	}
	return out
}

// Compare orders targets; 0 is the same target.
func Compare(a, b clb.Target) int {
	return cmp.Or(
		cmp.Compare(a.ListenerID, b.ListenerID), cmp.Compare(a.LocationID, b.LocationID),
		cmp.Compare(a.EniIP, b.EniIP), cmp.Compare(a.InstanceID, b.InstanceID), cmp.Compare(a.Port, b.Port))
}

// Register registers every target of bs.
func Register(bs []v1alpha1.PortBinding) []Op { return opsFor(bs, true) }

// Deregister removes every target recorded in bs: those confirmed and
// those whose registration was sent (or may have been) but not answered.
func Deregister(bs []v1alpha1.PortBinding) []Op {
	var recorded []v1alpha1.PortBinding
	for _, b := range bs {
		if Recorded(b) {
			recorded = append(recorded, b)
		}
	}
	return opsFor(recorded, false)
}

// Recorded reports whether a target is recorded for b: it may be
// registered.
func Recorded(b v1alpha1.PortBinding) bool { return b.TargetIP != "" || b.InstanceID != "" }

// Clear forgets b's target: nothing is registered for it.
func Clear(b *v1alpha1.PortBinding) {
	b.TargetIP, b.TargetPort, b.InstanceID, b.Address = "", 0, "", ""
}

// Missing are the registrations of the targets among want that bs
// still record; those no longer recorded are not the binding's any more.
func Missing(bs []v1alpha1.PortBinding, want []clb.Target) []Op {
	var recorded []v1alpha1.PortBinding
	for _, b := range bs {
		if Recorded(b) {
			recorded = append(recorded, b)
		}
	}
	var out []Op
	for _, o := range Register(recorded) {
		o.targets = slices.DeleteFunc(o.targets, func(t clb.Target) bool {
			return !slices.ContainsFunc(want, func(w clb.Target) bool { return Compare(t, w) == 0 })
		})
		if len(o.targets) > 0 {
			out = append(out, o)
		}
	}
	return out
}

// Matches reports whether be is the binding of t (on its listener):
// the same port and the same instance, or the same private IP.
func Matches(t clb.Target, be *clbsdk.Backend) bool {
	if be == nil || be.Port == nil || *be.Port != t.Port {
		return false
	}
	if t.InstanceID != "" {
		return be.InstanceId != nil && *be.InstanceId == t.InstanceID
	}
	for _, ip := range be.PrivateIpAddresses {
		if ip != nil && *ip == t.EniIP {
			return true
		}
	}
	return false
}

// FindBackend returns the backend of bes that is t.
func FindBackend(bes []*clbsdk.Backend, t clb.Target) *clbsdk.Backend {
	for _, be := range bes {
		if Matches(t, be) {
			return be
		}
	}
	return nil
}

// String names t as its Events say it: the instance or IP, and the port.
func String(t clb.Target) string {
	return fmt.Sprintf("%s:%d", cmp.Or(t.InstanceID, t.EniIP), t.Port)
}
