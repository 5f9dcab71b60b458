package benchpeer

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// BindingGVK is the peer's per-Pod object. The peer creates one per Pod,
// named after it and owned by it, and leaves its removal to the
// Kubernetes garbage collector; its finalizer then deregisters the Pod.
func BindingGVK() schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: "networking.cloud.tencent.com", Version: "v1alpha1", Kind: "CLBPodBinding"}
}

// CollectGarbage plays the part of kube-controller-manager's garbage
// collector that the peer relies on and the local control plane lacks:
// when a Pod of ns is gone, it deletes the CLBPodBinding the Pod owned.
// It runs until ctx ends; a dropped watch is resumed after a sweep.
func CollectGarbage(ctx context.Context, kube client.WithWatch, ns string) {
	for ctx.Err() == nil {
		sweep(ctx, kube, ns)
		w, err := kube.Watch(ctx, &corev1.PodList{}, client.InNamespace(ns))
		if err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			continue
		}
		for ev := range w.ResultChan() {
			if p, ok := ev.Object.(*corev1.Pod); ok && ev.Type == watch.Deleted {
				deleteBinding(ctx, kube, ns, p.Name)
			}
		}
		w.Stop()
	}
}

// sweep deletes the bindings whose Pod is gone (deletions a dropped watch
// missed).
func sweep(ctx context.Context, kube client.Client, ns string) {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(BindingGVK().GroupVersion().WithKind(BindingGVK().Kind + "List"))
	if err := kube.List(ctx, l, client.InNamespace(ns)); err != nil {
		return
	}
	for i := range l.Items {
		err := kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: l.Items[i].GetName()}, &corev1.Pod{})
		if kerrors.IsNotFound(err) {
			deleteBinding(ctx, kube, ns, l.Items[i].GetName())
		}
	}
}

func deleteBinding(ctx context.Context, kube client.Client, ns, name string) {
	b := &unstructured.Unstructured{}
	b.SetGroupVersionKind(BindingGVK())
	b.SetNamespace(ns)
	b.SetName(name)
	_ = kube.Delete(ctx, b, client.PropagationPolicy("Background"))
}
