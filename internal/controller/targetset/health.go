package targetset

import (
	"context"
	"strings"

	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
)

// Health verdicts of TargetObservation.Health.
const (
	healthHealthy   = "Healthy"
	healthUnhealthy = "Unhealthy"
	healthUnknown   = "Unknown"
)

// healthAPI reads the load balancer's health check verdicts. The client
// coalesces the TargetSets of one load balancer into one call.
type healthAPI interface {
	DescribeListenerHealth(ctx context.Context, lbID, listenerID string) (*clbsdk.ListenerHealth, error)
}

// withHealth returns seen with each target's health verdict. Health is
// status only: when it cannot be read, the verdicts last shown are kept
// rather than failing the reconcile of the targets themselves.
func (e *external) withHealth(ctx context.Context, cr *v1alpha1.TargetSet, id identity, seen []v1alpha1.TargetObservation) []v1alpha1.TargetObservation {
	out := make([]v1alpha1.TargetObservation, len(seen))
	copy(out, seen)
	if e.health == nil || len(out) == 0 {
		return out
	}
	verdicts := map[key]string{}
	h, err := e.health.DescribeListenerHealth(ctx, lbID(cr), id.listener)
	if err != nil {
		for _, o := range cr.Status.AtProvider.Targets {
			verdicts[observedKey(o)] = o.Health
		}
	} else {
		verdicts = ruleHealth(h, id)
	}
	for i := range out {
		if v, ok := verdicts[observedKey(out[i])]; ok {
			out[i].Health = v
		} else if err == nil {
			// Registered after the health answer was taken.
			out[i].Health = healthUnknown
		}
	}
	return out
}

// ruleHealth returns the verdicts of the rule's targets, or of every
// target of an L4 listener (it reports through one rule).
func ruleHealth(h *clbsdk.ListenerHealth, id identity) map[key]string {
	out := map[key]string{}
	for _, r := range h.Rules {
		if r == nil || (id.rule != "" && clb.Deref(r.LocationId) != id.rule) {
			continue
		}
		for _, t := range r.Targets {
			if t == nil {
				continue
			}
			o := v1alpha1.TargetObservation{IP: clb.NormalizeIP(clb.Deref(t.IP)), Port: clb.Deref(t.Port)}
			// TargetId names a CVM instance for CVM targets only.
			if ins := clb.Deref(t.TargetId); strings.HasPrefix(ins, "ins-") {
				o.InstanceID = ins
			}
			out[observedKey(o)] = verdict(t)
		}
	}
	return out
}

// verdict maps the API's detail (Alive, Dead, Unknown, Close) to Health;
// without a detail the boolean decides.
func verdict(t *clbsdk.TargetHealth) string {
	switch clb.Deref(t.HealthStatusDetail) {
	case "Alive":
		return healthHealthy
	case "Dead":
		return healthUnhealthy
	case "Unknown", "Close":
		return healthUnknown
	}
	if t.HealthStatus == nil {
		return healthUnknown
	}
	if *t.HealthStatus {
		return healthHealthy
	}
	return healthUnhealthy
}
