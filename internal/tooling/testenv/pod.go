package testenv

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// NodeIP is the host IP RunPod reports for every Pod.
const NodeIP = "10.0.0.1"

// RunPod creates p and then plays the kubelet, which the local control
// plane lacks: it sets the Pod Running with ip as its Pod IP and NodeIP
// as its host IP. p is updated to what the API server holds.
func RunPod(ctx context.Context, kube client.Client, p *corev1.Pod, ip string, timeout time.Duration) error {
	if err := kube.Create(ctx, p); err != nil {
		return err
	}
	// Retried: a controller may update the new Pod in between.
	return Eventually(ctx, timeout, func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			return err
		}
		p.Status.Phase = corev1.PodRunning
		p.Status.PodIP = ip
		p.Status.PodIPs = []corev1.PodIP{{IP: ip}}
		p.Status.HostIP = NodeIP
		return kube.Status().Update(ctx, p)
	})
}
