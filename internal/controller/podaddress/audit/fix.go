package audit

import (
	"context"
	"fmt"
	"slices"

	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"

	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/function-sdk-go/errors"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/podaddress/targets"
)

// reweigh resets the weight of bound targets, in calls within the API's
// limits per load balancer.
func (a *Auditor) reweigh(ctx context.Context, g *lbAudit, es []expected) {
	slices.SortFunc(es, func(x, y expected) int { return targets.Compare(x.t, y.t) })
	for _, chunk := range weightChunks(es) {
		ts := make([]clb.Target, len(chunk))
		for i, e := range chunk {
			ts[i] = e.t
			ts[i].Weight = ptrTo(int64(boundWeight))
		}
		if _, err := g.c.ModifyTargetWeight(ctx, g.lb, ts); err != nil {
			a.log.Info("Target audit cannot reset target weights", "loadBalancer", g.lb, "error", err)
			continue // the next round tries again
		}
		a.repairs.metrics.drift.WithLabelValues(driftWeight).Add(float64(len(chunk)))
		for _, e := range chunk {
			a.record.Event(e.pa, event.Normal(ReasonTargetRepaired,
				fmt.Sprintf("reset the weight of target %s on listener %s to %d: it was changed behind the provider's back", targets.String(e.t), e.t.ListenerID, boundWeight)))
		}
	}
}

// weightChunks splits es (sorted by listener) into BatchModifyTargetWeight
// calls: at most 500 targets, 100 listeners and 50 targets per listener.
func weightChunks(es []expected) [][]expected {
	const maxTotal, maxListeners, maxPerListener = clb.MaxWeightTargets, clb.MaxWeightRules, clb.MaxWeightRuleTargets
	var out [][]expected
	var cur []expected
	listeners, perListener := 0, 0
	for i, e := range es {
		newListener := i == 0 || es[i-1].t.ListenerID != e.t.ListenerID
		if len(cur) == maxTotal || (newListener && listeners == maxListeners) || (!newListener && perListener == maxPerListener) {
			out, cur, listeners, perListener = append(out, cur), nil, 0, 0
			newListener = true
		}
		if newListener {
			listeners++
			perListener = 0
		}
		perListener++
		cur = append(cur, e)
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// removeForeign deregisters the suspects that an uncached read of every
// PodAddress confirms nobody recorded. A target is recorded before its
// registration is sent, and the read comes after the describe that saw it,
// so a target of ours in flight is always in the read.
func (a *Auditor) removeForeign(ctx context.Context, ss []suspect, pools map[string]*clbv1alpha1.PortPool) error {
	pas := &v1alpha1.PodAddressList{}
	if err := a.api.List(ctx, pas); err != nil {
		return errors.Wrap(err, "cannot confirm foreign targets")
	}
	recorded := recordedTargets(pas.Items)
	byLB := map[*lbAudit][]suspect{}
	for _, s := range ss {
		ours := slices.ContainsFunc(recorded[s.t.ListenerID], func(t clb.Target) bool { return targets.Compare(t, s.t) == 0 })
		if !ours {
			byLB[s.g] = append(byLB[s.g], s)
		}
	}
	var errs []error
	for g, ss := range byLB {
		ts := make([]clb.Target, len(ss))
		for i, s := range ss {
			ts[i] = s.t
		}
		if _, err := g.c.DeregisterTargets(ctx, g.lb, ts); err != nil {
			errs = append(errs, errors.Wrapf(err, "cannot deregister foreign targets from load balancer %s", g.lb))
			continue
		}
		a.repairs.metrics.drift.WithLabelValues(driftForeign).Add(float64(len(ss)))
		for _, s := range ss {
			delete(a.suspects, s.key())
			if pp := pools[s.pool]; pp != nil {
				a.record.Event(pp, event.Warning(reasonForeignTargetRemoved, errors.Errorf(
					"deregistered target %s from listener %s of load balancer %s: no PodAddress recorded it", targets.String(s.t), s.t.ListenerID, g.lb)))
			}
		}
	}
	return errors.Join(errs...)
}

// recordedTargets indexes by listener every target the PodAddresses
// recorded, whatever their state: none of them is foreign.
func recordedTargets(pas []v1alpha1.PodAddress) map[string][]clb.Target {
	out := map[string][]clb.Target{}
	for _, pa := range pas {
		for _, b := range pa.RecordedBindings() {
			if !targets.Recorded(b) {
				continue
			}
			for _, t := range targets.Of(b) {
				out[t.ListenerID] = append(out[t.ListenerID], t)
			}
		}
	}
	return out
}

func findTarget(ts []clb.Target, be *clbsdk.Backend) bool {
	return slices.ContainsFunc(ts, func(t clb.Target) bool { return targets.Matches(t, be) })
}

// backendTarget is the target to deregister be with: by instance for a
// CVM bound by instance, by IP otherwise.
func backendTarget(listenerID string, be *clbsdk.Backend) (clb.Target, bool) {
	if be == nil || be.Port == nil {
		return clb.Target{}, false
	}
	t := clb.Target{ListenerID: listenerID, Port: *be.Port}
	if be.Type != nil && *be.Type == "CVM" && be.InstanceId != nil && *be.InstanceId != "" {
		t.InstanceID = *be.InstanceId
		return t, true
	}
	for _, ip := range be.PrivateIpAddresses {
		if ip != nil && *ip != "" {
			t.EniIP = *ip
			return t, true
		}
	}
	return clb.Target{}, false
}

func ptrTo[T any](v T) *T { return &v }
