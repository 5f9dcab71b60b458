package podaddress

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/podaddress/allocation"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
)

// A Pod that tke-extend-network-controller bound, seen with no PodAddress
// yet, keeps the addresses of its clb-port-mapping-result that are its
// own beyond doubt (allocation.Adoptable): the exact slot, tke-extend's
// listener, and its target, recorded as registered because the pool saw
// it there alone; nothing is sent for them. Ports that cannot be kept get
// a new address, as any Pod's, and the Pod a Warning saying why. A Node
// of the HostPort scheme is served as a Pod (nodes.go) and keeps its
// segments the same way: the result tke-extend wrote on the Node is the
// claim, the Node's InternalIP and line port the target it must name, and
// the Events go to the Node. docs/migrate-tke-extend.md is the runbook.
const (
	reasonTKEKept    event.Reason = "TKEExtendAddressKept"
	reasonTKENotKept event.Reason = "TKEExtendAddressNotKept"
	// reasonTKEDryRun: a pool in dry run; the Event says what would be
	// done, and nothing is written.
	reasonTKEDryRun event.Reason = "TKEExtendSwitchDryRun"

	// waitForPoolStatus is how soon a Pod looks again while a pool has
	// not listed its load balancers (and tke-extend's listeners) yet.
	waitForPoolStatus = 2 * time.Second
	// dryRunAgain is how often a Pod of a pool in dry run is looked at
	// again: the report is renewed, and the Pod is served once the dry
	// run ends.
	dryRunAgain = 10 * time.Second
	// poolGrace is how long after the provider starts a Pod with a
	// tke-extend result waits for a pool that does not exist yet: the
	// PortPool of a CLBPortPool is made in the first moments.
	poolGrace = 2 * time.Minute
)

// kept is what keepTKE decided for the wants of one Pod.
type kept struct {
	// bindings[i] is the binding kept for ws[i], nil when not kept.
	bindings []*v1alpha1.PortBinding
	// why[i] says why ws[i] is not kept ("" when kept or not claimed).
	why []string
	// dryRun: a pool of the Pod is in dry run; nothing may be written.
	dryRun bool
}

// tkeClaims returns the tke-extend result of a Pod asking in tke-extend's
// syntax, or nil.
func tkeClaims(pa *v1alpha1.PodAddress, pod *corev1.Pod) ([]podannotation.TKEPortMapping, error) {
	if pa.Spec.Source != "annotation/"+podannotation.SyntaxTKEExtend {
		return nil, nil
	}
	entries, ok, err := podannotation.TKEResult(pod.GetAnnotations())
	if !ok || err != nil {
		return nil, err
	}
	return entries, nil
}

// keepTKE decides, for a new PodAddress whose Pod is ready, which wants
// keep the address tke-extend gave them, and reserves those slots in rsv;
// with no rsv (a dry run) it only decides. wait > 0: a pool has not
// listed its load balancers yet.
func (r *Reconciler) keepTKE(ctx context.Context, pa *v1alpha1.PodAddress, pod *corev1.Pod, p *plan, rsv *allocation.Reservation) (k kept, wait time.Duration, err error) {
	k = kept{bindings: make([]*v1alpha1.PortBinding, len(p.ws)), why: make([]string, len(p.ws)), dryRun: rsv == nil}
	claims, cerr := tkeClaims(pa, pod)
	if cerr != nil {
		for i := range k.why {
			k.why[i] = cerr.Error()
		}
		return k, 0, nil
	}
	if claims == nil {
		if k.dryRun { // the report lists the Pods that would get new addresses too
			for i := range k.why {
				k.why[i] = "no " + podannotation.TKEAnnotationMappingResult + " with status Ready"
			}
		}
		return k, 0, nil
	}
	for i, w := range p.ws {
		_, pp, gerr := r.alloc.pools.Get(ctx, w.Pool)
		switch {
		case kerrors.IsNotFound(errors.Cause(gerr)) && r.clock().Sub(r.alloc.since) < poolGrace:
			return k, waitForPoolStatus, nil
		case kerrors.IsNotFound(errors.Cause(gerr)):
			k.why[i] = gerr.Error()
			continue
		case gerr != nil:
			return k, 0, gerr
		}
		d := p.ds[i]
		a, aerr := allocation.Adoptable(pp, w.Port, claims, fmt.Sprintf("%s:%d", d.ip, d.port))
		switch {
		case errors.Is(aerr, allocation.ErrAdoptWait):
			return k, waitForPoolStatus, nil
		case aerr != nil:
			k.why[i] = aerr.Error()
			continue
		case k.dryRun:
			// Nothing is reserved in a dry run: the slot is named only.
			b := v1alpha1.PortBinding{LoadBalancerID: a.Slot.LB, Port: a.Slot.Port, ListenerIDs: a.ListenerIDs}
			k.bindings[i] = &b
			continue
		}
		b, berr := rsv.Adopt(ctx, w.Port, a)
		if errors.Is(berr, allocation.ErrNotAdopted) {
			k.why[i] = berr.Error()
			continue
		}
		if berr != nil {
			return k, 0, berr
		}
		// Registered by tke-extend, and seen there alone by the pool.
		b.TargetIP, b.TargetPort, b.InstanceID = d.ip, d.port, d.instance
		b.Address = address(b)
		k.bindings[i] = &b
	}
	return k, 0, nil
}

// dryRunInvalid tells a Pod whose request is invalid and names a pool in
// a dry run (read from its lines, podannotation.NamedPools) what would be
// written, and reports whether it did: then nothing else is written.
func (r *Reconciler) dryRunInvalid(ctx context.Context, pod *corev1.Pod, invalid error) (bool, error) {
	dry, err := r.inDryRun(ctx, podannotation.NamedPools(pod))
	if dry {
		r.out.record.Event(r.about(pod), event.Normal(reasonTKEDryRun, "dry run of the switch from tke-extend, nothing written: would report the request invalid: "+invalid.Error()))
	}
	return dry, err
}

// dryRun reports whether pp is in a dry run of the switch from tke-extend:
// its CLBPortPool asked for one (docs/migrate-tke-extend.md).
func dryRun(pp *clbv1alpha1.PortPool) bool {
	return pp.GetAnnotations()[clbv1alpha1.AnnotationTKESwitch] == clbv1alpha1.TKESwitchDryRun
}

// tellKept records on the Pod what keepTKE decided: a Warning for each
// port not kept; in a dry run, one Event with the whole plan.
func (r *Reconciler) tellKept(pod *corev1.Pod, ws []want, k kept) {
	var keep, not []string
	for i, w := range ws {
		name := fmt.Sprintf("%d/%s in %s", w.ContainerPort, w.Protocol, w.Pool)
		switch {
		case k.bindings[i] != nil:
			b := k.bindings[i]
			keep = append(keep, fmt.Sprintf("%s keeps port %d on %s (listeners %v)", name, b.Port, b.LoadBalancerID, b.ListenerIDs))
		case k.why[i] != "":
			not = append(not, fmt.Sprintf("%s: %s", name, k.why[i]))
		}
	}
	if len(keep) == 0 && len(not) == 0 {
		return
	}
	if k.dryRun {
		msg := "dry run of the switch from tke-extend, nothing written: "
		if len(keep) > 0 {
			msg += "would keep: " + strings.Join(keep, "; ")
		}
		if len(not) > 0 {
			if len(keep) > 0 {
				msg += ". "
			}
			msg += "would give a new address (not kept): " + strings.Join(not, "; ")
		}
		r.out.record.Event(r.about(pod), event.Normal(reasonTKEDryRun, msg))
		return
	}
	if len(keep) > 0 {
		r.podEvent(pod, event.Normal(reasonTKEKept, "kept from tke-extend: "+strings.Join(keep, "; ")))
	}
	if len(not) > 0 {
		r.podEvent(pod, event.Warning(reasonTKENotKept, errors.New("given a new address: "+strings.Join(not, "; "))))
	}
	r.out.log.Info("Switched a Pod from tke-extend", "pod", pod.GetNamespace()+"/"+pod.GetName(), "kept", len(keep), "notKept", len(not))
}
