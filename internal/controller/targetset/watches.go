package targetset

import (
	"context"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/mr"
)

// Field indexes, each keyed "namespace/name".
const (
	// indexServices indexes TargetSets by the Services their source names.
	indexServices = "targetset.source.services"
	// indexPods indexes TargetSets by the Pods their source names.
	indexPods = "targetset.source.pods"
	// indexSlicePods indexes EndpointSlices by the Pods of their endpoints,
	// so a Pod's label change finds the Services it serves.
	indexSlicePods = "endpointslice.pods"
	// indexPodIP indexes Pods by their IP, so a target named by IP finds
	// the Pod it is.
	indexPodIP = "pod.status.podIP"
)

func nsName(ns, name string) string { return ns + "/" + name }

// setupIndexes registers the field indexes the watches read.
func setupIndexes(mgr ctrl.Manager) error {
	idx := mgr.GetFieldIndexer()
	ctx := context.Background()
	if err := idx.IndexField(ctx, &v1alpha1.TargetSet{}, indexServices, func(o client.Object) []string {
		src := o.(*v1alpha1.TargetSet).Spec.ForProvider.Source //nolint:forcetypeassert // the indexer's own kind
		if src == nil {
			return nil
		}
		out := make([]string, 0, len(src.Services))
		for _, s := range src.Services {
			out = append(out, nsName(orDefault(s.Namespace, o.GetNamespace()), s.Name))
		}
		return out
	}); err != nil {
		return err
	}
	if err := idx.IndexField(ctx, &v1alpha1.TargetSet{}, indexPods, func(o client.Object) []string {
		src := o.(*v1alpha1.TargetSet).Spec.ForProvider.Source //nolint:forcetypeassert // the indexer's own kind
		if src == nil {
			return nil
		}
		out := make([]string, 0, len(src.Pods))
		for _, p := range src.Pods {
			out = append(out, nsName(orDefault(p.Namespace, o.GetNamespace()), p.Name))
		}
		return out
	}); err != nil {
		return err
	}
	if err := idx.IndexField(ctx, &corev1.Pod{}, indexPodIP, func(o client.Object) []string {
		if ip := o.(*corev1.Pod).Status.PodIP; ip != "" { //nolint:forcetypeassert // the indexer's own kind
			return []string{ip}
		}
		return nil
	}); err != nil {
		return err
	}
	return idx.IndexField(ctx, &discoveryv1.EndpointSlice{}, indexSlicePods, func(o client.Object) []string {
		var out []string
		for _, ep := range o.(*discoveryv1.EndpointSlice).Endpoints { //nolint:forcetypeassert // the indexer's own kind
			if r := ep.TargetRef; r != nil && r.Kind == "Pod" {
				out = append(out, nsName(r.Namespace, r.Name))
			}
		}
		return out
	})
}

// watches wake exactly the TargetSets that read the changed object.
type watches struct {
	kube  client.Reader
	nodes *nodeUsers
}

// targetSets returns the TargetSets whose index holds key.
func (w watches) targetSets(ctx context.Context, index, key string) []reconcile.Request {
	l := &v1alpha1.TargetSetList{}
	if err := w.kube.List(ctx, l, client.MatchingFields{index: key}); err != nil {
		return nil
	}
	out := make([]reconcile.Request, len(l.Items))
	for i := range l.Items {
		out[i] = reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&l.Items[i])}
	}
	return out
}

func (w watches) ofService(ctx context.Context, o client.Object) []reconcile.Request {
	return w.targetSets(ctx, indexServices, nsName(o.GetNamespace(), o.GetName()))
}

func (w watches) ofSlice(ctx context.Context, o client.Object) []reconcile.Request {
	svc := o.GetLabels()[discoveryv1.LabelServiceName]
	if svc == "" {
		return nil
	}
	return w.targetSets(ctx, indexServices, nsName(o.GetNamespace(), svc))
}

// ofPod wakes the TargetSets that name the Pod, and those of the Services
// whose EndpointSlices hold it (its labels pick a subset's weight).
func (w watches) ofPod(ctx context.Context, o client.Object) []reconcile.Request {
	key := nsName(o.GetNamespace(), o.GetName())
	reqs := map[reconcile.Request]bool{}
	for _, r := range w.targetSets(ctx, indexPods, key) {
		reqs[r] = true
	}
	sl := &discoveryv1.EndpointSliceList{}
	if err := w.kube.List(ctx, sl, client.InNamespace(o.GetNamespace()), client.MatchingFields{indexSlicePods: key}); err == nil {
		for i := range sl.Items {
			for _, r := range w.ofSlice(ctx, &sl.Items[i]) {
				reqs[r] = true
			}
		}
	}
	return slices.Collect(maps.Keys(reqs))
}

func (w watches) ofNode(_ context.Context, o client.Object) []reconcile.Request {
	tss := w.nodes.get(o.GetName())
	out := make([]reconcile.Request, len(tss))
	for i, ts := range tss {
		out[i] = reconcile.Request{NamespacedName: ts}
	}
	return out
}

// list returns the watches of the Kubernetes objects sources read. Node
// and Pod updates are frequent (status); only the fields resolution reads
// wake a TargetSet.
func (w watches) list() []mr.Watch {
	return []mr.Watch{
		{Object: &corev1.Service{}, Handler: handler.EnqueueRequestsFromMapFunc(w.ofService)},
		{Object: &discoveryv1.EndpointSlice{}, Handler: handler.EnqueueRequestsFromMapFunc(w.ofSlice)},
		{Object: &corev1.Pod{}, Handler: handler.EnqueueRequestsFromMapFunc(w.ofPod), Predicates: []predicate.Predicate{predicate.Funcs{
			UpdateFunc: func(e event.UpdateEvent) bool { return podChanged(e.ObjectOld, e.ObjectNew) },
		}}},
		{Object: &corev1.Node{}, Handler: handler.EnqueueRequestsFromMapFunc(w.ofNode), Predicates: []predicate.Predicate{predicate.Funcs{
			UpdateFunc: func(e event.UpdateEvent) bool {
				return e.ObjectOld.(*corev1.Node).Spec.ProviderID != e.ObjectNew.(*corev1.Node).Spec.ProviderID //nolint:forcetypeassert // a Node watch
			},
		}}},
	}
}

// podChanged reports a change of what resolution reads of a Pod: labels,
// its consent to other namespaces, IP, node, readiness, deletion.
func podChanged(oldObj, newObj client.Object) bool {
	a, b := oldObj.(*corev1.Pod), newObj.(*corev1.Pod) //nolint:forcetypeassert // a Pod watch
	return !maps.Equal(a.Labels, b.Labels) || a.Annotations[v1alpha1.AnnotationTargetConsumers] != b.Annotations[v1alpha1.AnnotationTargetConsumers] || a.Status.PodIP != b.Status.PodIP || a.Spec.NodeName != b.Spec.NodeName ||
		podReady(a) != podReady(b) || (a.DeletionTimestamp == nil) != (b.DeletionTimestamp == nil)
}
