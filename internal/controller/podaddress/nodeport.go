package podaddress

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// nodePortOfPod reports whether pod may have its port forwarded to
// nodePort on its node: the Pod runs there (the kubelet gave it its host
// IP), and a Service of its own namespace that selects it has that node
// port. Whoever writes a Pod or a policy could otherwise name any port of
// any node (22 included) through a Pod that never ran. A RemotePod's node
// and ports are what its WorkloadCluster lets its agent declare, checked
// elsewhere. ready is false while the Pod has no host IP yet.
func (r *Reconciler) nodePortOfPod(ctx context.Context, pod *corev1.Pod, nodePort int32) (ready bool, err error) {
	if r.remote.of(pod) != nil {
		return true, nil
	}
	if pod.Status.HostIP == "" {
		return false, nil
	}
	svcs := &corev1.ServiceList{}
	if err := r.kube.List(ctx, svcs, client.InNamespace(pod.GetNamespace())); err != nil {
		return false, errors.Wrapf(err, "cannot list the Services of namespace %s for the NodePort backend", pod.GetNamespace())
	}
	for _, s := range svcs.Items {
		if len(s.Spec.Selector) == 0 || !labels.SelectorFromSet(s.Spec.Selector).Matches(labels.Set(pod.GetLabels())) {
			continue
		}
		if slices.ContainsFunc(s.Spec.Ports, func(p corev1.ServicePort) bool { return p.NodePort == nodePort }) {
			return true, nil
		}
	}
	return false, errors.Errorf("the NodePort backend forwards only to a node port of a Service of the Pod's namespace that selects the Pod; no Service of namespace %s selecting %s has node port %d",
		pod.GetNamespace(), pod.GetName(), nodePort)
}
