package targetset

import (
	"context"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
)

// TypeResolved is the condition that tells what spec.forProvider.source
// resolved to, and which endpoints it had to leave out and why.
const TypeResolved xpv2.ConditionType = "Resolved"

// Reasons of TypeResolved.
const (
	reasonResolved   xpv2.ConditionReason = "Resolved"
	reasonSkipped    xpv2.ConditionReason = "EndpointsSkipped"
	reasonUnresolved xpv2.ConditionReason = "Unresolved"
)

// maxSkipMessages bounds how many skipped endpoints the condition names.
const maxSkipMessages = 5

// resolver turns a TargetSource into targets, reading the manager's cache.
// Cache reads block until their informer has synced, so an empty answer is
// the cluster's state, never a cache that has not listed yet.
type resolver struct {
	kube  client.Reader
	nodes *nodeUsers
}

// resolution is what a source resolved to.
type resolution struct {
	targets []v1alpha1.Target
	// skipped says, per endpoint left out for a reason the user can fix,
	// why (a node without an instance id, a container without hostPort).
	skipped []string
	// nodes are the Nodes the resolution read or looked for.
	nodes []string
}

// forget drops what s remembers of cr, which is being deleted.
func (s *resolver) forget(cr *v1alpha1.TargetSet) {
	if s != nil {
		s.nodes.set(types.NamespacedName{Namespace: cr.GetNamespace(), Name: cr.GetName()}, nil)
	}
}

func (r *resolution) skip(format string, args ...any) {
	r.skipped = append(r.skipped, fmt.Sprintf(format, args...))
}

// condition reports the resolution on TypeResolved.
func (r resolution) condition() xpv2.Condition {
	c := xpv2.Condition{Type: TypeResolved, Status: "True", Reason: reasonResolved, LastTransitionTime: metav1.Now(),
		Message: fmt.Sprintf("%d targets", len(r.targets))}
	if len(r.skipped) == 0 {
		return c
	}
	c.Status, c.Reason = "False", reasonSkipped
	shown := r.skipped[:min(len(r.skipped), maxSkipMessages)]
	c.Message = fmt.Sprintf("%d targets; %d left out: %s", len(r.targets), len(r.skipped), strings.Join(shown, "; "))
	if len(r.skipped) > maxSkipMessages {
		c.Message += fmt.Sprintf("; and %d more", len(r.skipped)-maxSkipMessages)
	}
	return c
}

func unresolved(err error) xpv2.Condition {
	return xpv2.Condition{Type: TypeResolved, Status: "False", Reason: reasonUnresolved, Message: err.Error(), LastTransitionTime: metav1.Now()}
}

// desired returns the targets cr wants: spec.forProvider.targets, then what
// its source resolves to. A target listed twice keeps its first weight.
func (s *resolver) desired(ctx context.Context, cr *v1alpha1.TargetSet) ([]v1alpha1.Target, error) {
	if err := s.othersPods(ctx, cr); err != nil {
		return nil, err
	}
	src := cr.Spec.ForProvider.Source
	if src == nil {
		return cr.Spec.ForProvider.Targets, nil
	}
	res, err := s.resolve(ctx, cr.GetNamespace(), src)
	s.nodes.set(types.NamespacedName{Namespace: cr.GetNamespace(), Name: cr.GetName()}, res.nodes)
	if err != nil {
		cr.SetConditions(unresolved(err))
		return nil, err
	}
	cr.SetConditions(res.condition())
	out := make([]v1alpha1.Target, 0, len(cr.Spec.ForProvider.Targets)+len(res.targets))
	seen := map[key]bool{}
	for _, t := range append(append(out, cr.Spec.ForProvider.Targets...), res.targets...) {
		if k := specKey(t); !seen[k] {
			seen[k] = true
			out = append(out, t)
		}
	}
	return out, nil
}

// resolve resolves every Service and Pod of src. A Service or a port of it
// that does not exist is an error, not an empty set: the targets stay as
// they are until it is fixed, rather than all going at once.
func (s *resolver) resolve(ctx context.Context, ns string, src *v1alpha1.TargetSource) (resolution, error) {
	var res resolution
	for _, b := range src.Services {
		if err := s.service(ctx, &res, ns, b, src.IncludeNotReady); err != nil {
			return res, err
		}
	}
	for _, b := range src.Pods {
		if err := s.pod(ctx, &res, ns, b, src.IncludeNotReady); err != nil {
			return res, err
		}
	}
	return res, nil
}

func orDefault(ns, dflt string) string {
	if ns == "" {
		return dflt
	}
	return ns
}

func weightOr(w *int64) int64 {
	if w == nil {
		return defaultWeight
	}
	return *w
}

// servicePort finds the port of svc that p names, by number or by name.
func servicePort(svc *corev1.Service, p intstr.IntOrString) (corev1.ServicePort, bool) {
	for _, sp := range svc.Spec.Ports {
		if (p.Type == intstr.Int && sp.Port == p.IntVal) || (p.Type == intstr.String && sp.Name == p.StrVal) {
			return sp, true
		}
	}
	return corev1.ServicePort{}, false
}

// included reports whether an endpoint counts: Ready (an unknown readiness
// counts as ready, as the API says), or with includeNotReady anything not
// terminating. A terminating Pod is never Ready, so it leaves the load
// balancer before it stops.
func included(c discoveryv1.EndpointConditions, includeNotReady bool) bool {
	if c.Ready == nil || *c.Ready {
		return true
	}
	return includeNotReady && (c.Terminating == nil || !*c.Terminating)
}

func (s *resolver) service(ctx context.Context, res *resolution, own string, b v1alpha1.ServiceBackend, includeNotReady bool) error {
	ns := orDefault(b.Namespace, own)
	svc := &corev1.Service{}
	if err := s.kube.Get(ctx, types.NamespacedName{Namespace: ns, Name: b.Name}, svc); err != nil {
		if kerrors.IsNotFound(err) {
			return errors.Errorf("Service %s/%s does not exist", ns, b.Name)
		}
		return errors.Wrapf(err, "cannot get Service %s/%s", ns, b.Name)
	}
	if !consents(res, "Service", svc, own) {
		return nil
	}
	sp, ok := servicePort(svc, b.Port)
	if !ok {
		return errors.Errorf("Service %s/%s has no port %s", ns, b.Name, b.Port.String())
	}
	backend := b.Backend
	if backend == "" {
		backend = v1alpha1.BackendNodePort
	}
	if backend == v1alpha1.BackendNodePort && sp.NodePort == 0 {
		return errors.Errorf("Service %s/%s port %s has no NodePort (type %s); use backend PodIP or HostPort", ns, b.Name, b.Port.String(), svc.Spec.Type)
	}
	list := &discoveryv1.EndpointSliceList{}
	if err := s.kube.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{discoveryv1.LabelServiceName: b.Name}); err != nil {
		return errors.Wrapf(err, "cannot list the EndpointSlices of Service %s/%s", ns, b.Name)
	}
	nodes := map[string]bool{} // NodePort: one target per node
	for _, sl := range list.Items {
		if sl.AddressType == discoveryv1.AddressTypeFQDN {
			continue
		}
		port, ok := slicePort(sl, sp)
		if !ok {
			continue
		}
		for _, ep := range sl.Endpoints {
			if !included(ep.Conditions, includeNotReady) || len(ep.Addresses) == 0 {
				continue
			}
			switch backend {
			case v1alpha1.BackendNodePort:
				node := clb.Deref(ep.NodeName)
				if node == "" || nodes[node] {
					continue
				}
				nodes[node] = true
				if ins, ok := s.instance(ctx, res, node); ok {
					res.targets = append(res.targets, v1alpha1.Target{InstanceID: ins, Port: int64(sp.NodePort), Weight: clb.Ptr(weightOr(b.Weight))})
				}
			case v1alpha1.BackendPodIP:
				w, err := s.endpointWeight(ctx, ep, b)
				if err != nil {
					return err
				}
				res.targets = append(res.targets, v1alpha1.Target{IP: ep.Addresses[0], Port: int64(port), Weight: clb.Ptr(w)})
			case v1alpha1.BackendHostPort:
				pod, err := s.endpointPod(ctx, ep)
				if err != nil {
					return err
				}
				if pod == nil {
					res.skip("endpoint %s of Service %s/%s is not a Pod; HostPort needs its containers", ep.Addresses[0], ns, b.Name)
					continue
				}
				if t, ok := s.hostPortTarget(ctx, res, pod, port, subsetWeight(pod, b)); ok {
					res.targets = append(res.targets, t)
				}
			}
		}
	}
	return nil
}

// othersPods refuses a target of spec.forProvider.targets that is the IP
// of a Pod of another namespace that does not let TargetSets of cr's
// namespace follow it: named by IP, it would be registered where the same
// Pod named by name is refused. A hostNetwork Pod's IP is its node's, not
// its own, and a Pod that has ended gives its IP back.
func (s *resolver) othersPods(ctx context.Context, cr *v1alpha1.TargetSet) error {
	if s == nil {
		return nil // unit tests of the cloud side: no cluster to read
	}
	own := cr.GetNamespace()
	for i, t := range cr.Spec.ForProvider.Targets {
		if t.IP == "" {
			continue
		}
		pods := &corev1.PodList{}
		if err := s.kube.List(ctx, pods, client.MatchingFields{indexPodIP: t.IP}); err != nil {
			return errors.Wrapf(err, "cannot find the Pods of IP %s", t.IP)
		}
		for j := range pods.Items {
			p := &pods.Items[j]
			if p.Spec.HostNetwork || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
				continue
			}
			var res resolution
			if !consents(&res, "Pod", p, own) {
				return errors.Errorf("spec.forProvider.targets[%d]: %s is the IP of Pod %s/%s, which does not let TargetSets of namespace %s register it: its owner can annotate it %s: %s (or All)",
					i, t.IP, p.GetNamespace(), p.GetName(), own, v1alpha1.AnnotationTargetConsumers, own)
			}
		}
	}
	return nil
}

// consents reports whether obj (a Service or a Pod) lets TargetSets of
// namespace own follow it (v1alpha1.AnnotationTargetConsumers). One that
// does not gives no target, so taking the consent back deregisters its
// targets; the Resolved condition says why.
func consents(res *resolution, kind string, obj client.Object, own string) bool {
	if obj.GetNamespace() == own {
		return true
	}
	c, err := v1alpha1.TargetConsumers(obj)
	if err != nil {
		res.skip("%s %s/%s: %v", kind, obj.GetNamespace(), obj.GetName(), err)
		return false
	}
	if !c.Allows(obj.GetNamespace(), v1alpha1.NamedNamespace(own)) {
		res.skip("%s %s/%s does not let TargetSets of namespace %s follow it: its owner can annotate it %s: %s (or All)",
			kind, obj.GetNamespace(), obj.GetName(), own, v1alpha1.AnnotationTargetConsumers, own)
		return false
	}
	return true
}

// slicePort is the port number of sp's endpoints in sl: EndpointSlice
// ports carry the Service port's name with the target port resolved.
func slicePort(sl discoveryv1.EndpointSlice, sp corev1.ServicePort) (int32, bool) {
	for _, p := range sl.Ports {
		if clb.Deref(p.Name) == sp.Name && p.Port != nil {
			return *p.Port, true
		}
	}
	return 0, false
}

// endpointPod returns the Pod behind ep, or nil when ep names none or the
// Pod is already gone.
func (s *resolver) endpointPod(ctx context.Context, ep discoveryv1.Endpoint) (*corev1.Pod, error) {
	ref := ep.TargetRef
	if ref == nil || ref.Kind != "Pod" {
		return nil, nil
	}
	pod := &corev1.Pod{}
	err := s.kube.Get(ctx, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, pod)
	if kerrors.IsNotFound(err) {
		return nil, nil
	}
	return pod, errors.Wrapf(err, "cannot get Pod %s/%s", ref.Namespace, ref.Name)
}

// endpointWeight is the weight of ep's Pod; its labels are read only when
// the Service has subsets.
func (s *resolver) endpointWeight(ctx context.Context, ep discoveryv1.Endpoint, b v1alpha1.ServiceBackend) (int64, error) {
	if len(b.Subsets) == 0 {
		return weightOr(b.Weight), nil
	}
	pod, err := s.endpointPod(ctx, ep)
	if err != nil || pod == nil {
		return weightOr(b.Weight), err
	}
	return subsetWeight(pod, b), nil
}

// subsetWeight is the weight of the first subset whose labels pod carries,
// else the Service's.
func subsetWeight(pod *corev1.Pod, b v1alpha1.ServiceBackend) int64 {
	for _, sub := range b.Subsets {
		match := true
		for k, v := range sub.LabelSelector {
			if got, ok := pod.Labels[k]; !ok || got != v {
				match = false
				break
			}
		}
		if match {
			return sub.Weight
		}
	}
	return weightOr(b.Weight)
}

// instance returns the CVM instance of a Node, from its providerID.
func (s *resolver) instance(ctx context.Context, res *resolution, name string) (string, bool) {
	res.nodes = append(res.nodes, name)
	node := &corev1.Node{}
	if err := s.kube.Get(ctx, types.NamespacedName{Name: name}, node); err != nil {
		res.skip("Node %s: %v", name, err)
		return "", false
	}
	id, ok := instanceID(node.Spec.ProviderID)
	if !ok {
		res.skip("Node %s has no CVM instance in its providerID %q", name, node.Spec.ProviderID)
	}
	return id, ok
}

// instanceID is the CVM instance of a TKE providerID
// (qcloud:///<zone>/ins-…), or a bare instance id.
func instanceID(providerID string) (string, bool) {
	id := providerID[strings.LastIndex(providerID, "/")+1:]
	return id, strings.HasPrefix(id, "ins-") && len(id) > len("ins-")
}

// hostPortTarget is pod's node with the hostPort its container declares
// for containerPort.
func (s *resolver) hostPortTarget(ctx context.Context, res *resolution, pod *corev1.Pod, containerPort int32, weight int64) (v1alpha1.Target, bool) {
	var hostPort int32
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.ContainerPort == containerPort && p.HostPort != 0 {
				hostPort = p.HostPort
			}
		}
	}
	if hostPort == 0 {
		res.skip("Pod %s/%s declares no hostPort for container port %d", pod.Namespace, pod.Name, containerPort)
		return v1alpha1.Target{}, false
	}
	if pod.Spec.NodeName == "" {
		return v1alpha1.Target{}, false // not scheduled: not an endpoint yet
	}
	ins, ok := s.instance(ctx, res, pod.Spec.NodeName)
	return v1alpha1.Target{InstanceID: ins, Port: int64(hostPort), Weight: clb.Ptr(weight)}, ok
}

// podReady reports whether the Pod's Ready condition is True.
func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// pod resolves one named Pod. A Pod that is gone, terminating, not Ready
// (unless includeNotReady) or without an IP has no target: it is the
// StatefulSet Pod between two lives.
func (s *resolver) pod(ctx context.Context, res *resolution, own string, b v1alpha1.PodBackend, includeNotReady bool) error {
	ns := orDefault(b.Namespace, own)
	pod := &corev1.Pod{}
	if err := s.kube.Get(ctx, types.NamespacedName{Namespace: ns, Name: b.Name}, pod); err != nil {
		if kerrors.IsNotFound(err) {
			return nil
		}
		return errors.Wrapf(err, "cannot get Pod %s/%s", ns, b.Name)
	}
	if !consents(res, "Pod", pod, own) {
		return nil
	}
	if pod.DeletionTimestamp != nil || (!includeNotReady && !podReady(pod)) {
		return nil
	}
	w := weightOr(b.Weight)
	if b.Backend == v1alpha1.BackendHostPort {
		if t, ok := s.hostPortTarget(ctx, res, pod, int32(b.Port), w); ok { //nolint:gosec // the CRD bounds port to 1-65535
			res.targets = append(res.targets, t)
		}
		return nil
	}
	if pod.Status.PodIP == "" {
		return nil
	}
	res.targets = append(res.targets, v1alpha1.Target{IP: pod.Status.PodIP, Port: b.Port, Weight: clb.Ptr(w)})
	return nil
}

// nodeUsers remembers which TargetSets read which Nodes at their last
// resolution, so a Node event wakes exactly those. TargetSets do not name
// Nodes, so no field index can answer this.
type nodeUsers struct {
	mu    sync.Mutex
	users map[string]map[types.NamespacedName]bool // by Node name
	of    map[types.NamespacedName][]string        // by TargetSet
}

func newNodeUsers() *nodeUsers {
	return &nodeUsers{users: map[string]map[types.NamespacedName]bool{}, of: map[types.NamespacedName][]string{}}
}

// set records the Nodes ts read; nil forgets ts.
func (n *nodeUsers) set(ts types.NamespacedName, nodes []string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, node := range n.of[ts] {
		delete(n.users[node], ts)
		if len(n.users[node]) == 0 {
			delete(n.users, node)
		}
	}
	delete(n.of, ts)
	if len(nodes) == 0 {
		return
	}
	n.of[ts] = nodes
	for _, node := range nodes {
		if n.users[node] == nil {
			n.users[node] = map[types.NamespacedName]bool{}
		}
		n.users[node][ts] = true
	}
}

// get returns the TargetSets that read node.
func (n *nodeUsers) get(node string) []types.NamespacedName {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]types.NamespacedName, 0, len(n.users[node]))
	for ts := range n.users[node] {
		out = append(out, ts)
	}
	return out
}
