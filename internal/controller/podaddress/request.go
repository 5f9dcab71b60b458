package podaddress

import (
	"context"
	"fmt"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/podaddress/policy"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
)

const (
	reasonInvalidRequest event.Reason = "InvalidAddressRequest"
	reasonBound          event.Reason = "AddressBound"
	reasonNoPort         event.Reason = "NoPortAvailable"
	reasonMoved          event.Reason = "AddressMoved"
	reasonIsolated       event.Reason = "AddressIsolated"
)

// An ask is what a Pod asks for, from its annotations or a policy.
type ask struct {
	spec          v1alpha1.PodAddressSpec
	syntax        string
	readinessGate bool
}

// request returns what pod asks for, or nil when it asks for nothing.
// Annotations win over policies: they are the Pod's own words.
func (r *Reconciler) request(ctx context.Context, pod *corev1.Pod) (*ask, error) {
	req, asked, err := podannotation.Parse(pod)
	if err != nil {
		return nil, err
	}
	var a *ask
	if asked {
		a = &ask{
			spec: v1alpha1.PodAddressSpec{
				Ports:        portsOf(req),
				EIP:          req.EIP,
				Strategy:     req.Strategy,
				KeepDuration: req.KeepDuration,
				Retain:       req.Retain,
				Backend:      req.Backend,
				Source:       "annotation/" + req.Syntax,
			},
			syntax:        req.Syntax,
			readinessGate: req.ReadinessGate,
		}
	} else if r.nodes.of(pod) != nil {
		return nil, nil // a Node asks by its annotations only
	} else {
		pol, err := policy.Match(ctx, r.kube, pod)
		if err != nil || pol == nil {
			return nil, err
		}
		a = &ask{
			spec: v1alpha1.PodAddressSpec{
				Ports:        pol.Spec.Ports,
				EIP:          pol.Spec.EIP,
				Strategy:     pol.Spec.Strategy,
				KeepDuration: pol.Spec.KeepDuration,
				Backend:      pol.Spec.Backend,
				Source:       v1alpha1.PolicySource(pol.GetName()),
			},
			syntax: podannotation.SyntaxNative,
		}
	}
	// Isolation is the Pod's own switch, whatever serves its request; it
	// is read only from Pods that ask, so a stray value on another Pod is
	// nobody's error.
	a.spec.Isolated, err = podannotation.Isolated(pod)
	if err != nil {
		return nil, err
	}
	return a, nil
}

// sameRequest reports whether a PodAddress already asks for what the Pod
// asks for now.
func sameRequest(have, want v1alpha1.PodAddressSpec) bool {
	have.PodUID = ""
	return reflect.DeepEqual(have, want)
}

// reportInvalid tells the Pod, and only it, that its request is malformed:
// a warning event and the address condition.
func (r *Reconciler) reportInvalid(ctx context.Context, pod *corev1.Pod, err error) {
	c := corev1.PodCondition{Type: conditionAddressReady, Status: corev1.ConditionFalse, Reason: string(reasonInvalidRequest), Message: err.Error()}
	if cur := podCondition(pod, conditionAddressReady); cur != nil && cur.Reason == c.Reason && cur.Message == c.Message {
		return // said already
	}
	r.podEvent(pod, event.Warning(reasonInvalidRequest, err))
	if r.nodes.of(pod) != nil {
		return // a Node has no condition of ours
	}
	orig := pod.DeepCopy()
	setPodCondition(pod, c)
	if x := r.remote.of(pod); x != nil {
		if perr := r.tellRemote(ctx, x, orig, pod, c, true); perr != nil {
			r.out.log.Debug("cannot set the address condition of a RemotePod", "remotePod", client.ObjectKeyFromObject(pod), "error", perr)
		}
		return
	}
	if perr := client.IgnoreNotFound(r.kube.Status().Patch(ctx, pod, client.StrategicMergeFrom(orig))); perr != nil {
		r.out.log.Debug("cannot set the address condition of a Pod", "pod", client.ObjectKeyFromObject(pod), "error", perr)
	}
}

// podsOfPolicy maps a policy to the Pods of its namespace it selects, and
// to the existing PodAddresses it may have stopped selecting.
func (r *Reconciler) podsOfPolicy(ctx context.Context, o client.Object) []reconcile.Request {
	pol, ok := o.(*v1alpha1.PodAddressPolicy)
	if !ok {
		return nil
	}
	var reqs []reconcile.Request
	if sel, err := metav1.LabelSelectorAsSelector(&pol.Spec.Selector); err == nil && !sel.Empty() {
		pods := &corev1.PodList{}
		if err := r.kube.List(ctx, pods, client.InNamespace(pol.GetNamespace()), client.MatchingLabelsSelector{Selector: sel}); err == nil {
			for _, p := range pods.Items {
				reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&p)})
			}
		}
		remote, _ := r.remote.served.Matching(ctx, r.kube, pol.GetNamespace(), sel)
		for _, p := range remote {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&p)})
		}
	}
	pas := &v1alpha1.PodAddressList{}
	if err := r.kube.List(ctx, pas, client.InNamespace(pol.GetNamespace())); err == nil {
		for _, pa := range pas.Items {
			if pa.Spec.Source == v1alpha1.PolicySource(pol.GetName()) {
				reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&pa)})
			}
		}
	}
	return reqs
}

// portsOf is the ports of an annotation request, each with its backend
// where it is not the Pod's: a bcs "<port>/hostport" line makes that port,
// and only it, use its node and hostPort.
func portsOf(req *podannotation.Request) []v1alpha1.PortRequest {
	if len(req.Ports) == 0 {
		return nil // an EIP request; as the API server returns it
	}
	ports := make([]v1alpha1.PortRequest, len(req.Ports))
	for i, pr := range req.Ports {
		if b := req.BackendFor(i); b != req.Backend {
			pr.Backend = b
		}
		ports[i] = pr
	}
	return ports
}

// portRequests are the ports a PodAddress binds: its own, or, for a Pod
// that fell back from an EIP, one port of the fallback pool per container
// port the Pod declares (with its protocol).
func portRequests(pa *v1alpha1.PodAddress, pod *corev1.Pod) ([]v1alpha1.PortRequest, error) {
	e := pa.Status.EIP
	if pa.Spec.EIP == nil || e == nil || e.State != v1alpha1.EIPFallback {
		return pa.Spec.Ports, nil
	}
	fb := pa.Spec.EIP.FallbackPool
	if fb == nil {
		return nil, errors.New("the Pod fell back from an EIP to ports, but its request names no fallbackPool any more")
	}
	var out []v1alpha1.PortRequest
	seen := map[string]bool{}
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			proto := string(p.Protocol)
			if proto == "" {
				proto = v1alpha1.ProtocolTCP
			}
			if proto != v1alpha1.ProtocolTCP && proto != v1alpha1.ProtocolUDP {
				continue // SCTP: no load balancer forwards it
			}
			k := fmt.Sprintf("%d/%s", p.ContainerPort, proto)
			if seen[k] {
				continue
			}
			seen[k] = true
			out = append(out, v1alpha1.PortRequest{Port: intstr.FromInt32(p.ContainerPort), Protocol: proto, Pools: []v1alpha1.PoolRef{*fb}})
		}
	}
	if len(out) == 0 {
		return nil, errors.Errorf("no EIP (%s), and the Pod declares no TCP or UDP container port to give a port of fallback pool %s", e.Reason, fb.Key(pa.GetNamespace()))
	}
	return out, nil
}
