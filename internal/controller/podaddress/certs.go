package podaddress

import (
	"context"
	"errors"
	"fmt"
	"time"

	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/event"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/podaddress/certgrant"
)

// A Pod's own certificate (tke-extend's certSecret): planFor decides it
// before anything is allocated or sent, the binding records it, and the
// PortPool puts it on the slot's listeners while the binding holds the
// slot (its own certificate back after). The PodAddress controller sends
// no certificate itself.

const (
	reasonCertNotGranted event.Reason = "CertificateNotGranted"
	// certRecheck: a Secret or a grant may appear; neither is watched.
	certRecheck = time.Minute
)

// decideCerts sets the certificate of every want with a certSecret, or
// returns why one may not have it.
func (r *Reconciler) decideCerts(ctx context.Context, pa *v1alpha1.PodAddress, ws []want) (*certgrant.Refusal, error) {
	for i := range ws {
		w := &ws[i]
		if w.certSecret == "" {
			continue
		}
		_, pp, err := r.alloc.pools.Get(ctx, w.Pool)
		if kerrors.IsNotFound(err) {
			continue // nothing is allocated in it: bind says so
		}
		if err != nil {
			return nil, err
		}
		pr := v1alpha1.PortRequest{Port: intstr.FromInt32(w.ContainerPort), Protocol: w.Protocol, CertSecret: w.certSecret}
		id, err := certgrant.Decide(ctx, r.alloc.secrets, pa.GetNamespace(), pr, pp)
		var no *certgrant.Refusal
		if errors.As(err, &no) {
			return no, nil
		}
		if err != nil {
			return nil, err
		}
		w.certID = id
	}
	return nil, nil
}

// setCerts records on each binding the certificate its want was given,
// and reports whether any changed.
func setCerts(pa *v1alpha1.PodAddress, ws []want) bool {
	changed := false
	for i := range pa.Status.Bindings {
		b := &pa.Status.Bindings[i]
		for _, w := range ws {
			if w.Of(*b) && b.CertID != w.certID {
				b.CertID, changed = w.certID, true
			}
		}
	}
	return changed
}

// certRefused records why a port may not have its certificate, and tells
// the Pod; nothing was sent to the cloud. Bindings that carried a
// certificate let it go (their pool puts its own back): a grant taken
// away takes the certificate with it.
func (r *Reconciler) certRefused(ctx context.Context, pa *v1alpha1.PodAddress, pod *corev1.Pod, a *ask, no *certgrant.Refusal) (reconcile.Result, error) {
	cleared := false
	for i := range pa.Status.Bindings {
		if pa.Status.Bindings[i].CertID != "" {
			pa.Status.Bindings[i].CertID, cleared = "", true
		}
	}
	if cleared {
		if err := r.writeStatus(ctx, pa); err != nil {
			return reconcile.Result{}, err
		}
	}
	if no.State == v1alpha1.StateInvalid {
		res, err := r.invalid(ctx, pa, pod, a, errors.New(no.Message))
		if err == nil {
			res.RequeueAfter = certRecheck
		}
		return res, err
	}
	if pa.Status.State != no.State || pa.Status.Message != no.Message {
		r.podEvent(pod, event.Warning(reasonCertNotGranted, errors.New(no.Message)))
	}
	res, err := r.setState(ctx, pa, no.State, no.Message, reconcile.Result{RequeueAfter: certRecheck})
	return res, errors.Join(err, r.tellPod(ctx, pod, a, pa, no.State, no.Message))
}

// certsInPlace holds back the registration of a TCP_SSL or QUIC binding
// until its listener serves the certificate it should: the Pod's own, or
// the pool's. A slot another Pod let go may still carry that Pod's
// certificate until the pool puts its own back, and a new Pod's until
// the pool puts it there: no target is registered behind the wrong one.
func (r *Reconciler) certsInPlace(ctx context.Context, pa *v1alpha1.PodAddress) outcome {
	for _, b := range pa.Status.Bindings {
		if b.Address != "" || (b.Protocol != v1alpha1.ProtocolTCPSSL && b.Protocol != v1alpha1.ProtocolQUIC) {
			continue
		}
		want := b.CertID
		if want == "" {
			_, pp, err := r.alloc.pools.Get(ctx, b.Pool)
			if err != nil {
				return endWith(reconcile.Result{}, err)
			}
			if l := pp.Spec.ForProvider.Listener; l != nil && l.Certificate != nil {
				want = l.Certificate.CertID
			}
		}
		if want == "" {
			continue // no certificate was ever put there: the pool has none, so no Pod's is allowed
		}
		c, err := r.cloud.binder.ClientFor(ctx, b.Pool, b.Region)
		if err != nil {
			return endWith(reconcile.Result{}, err)
		}
		id := b.ListenerIDs[b.Protocol]
		l, err := c.DescribeListener(ctx, b.LoadBalancerID, id)
		if err != nil {
			return endWith(reconcile.Result{}, err)
		}
		if got := certOfListener(l); got != want {
			msg := fmt.Sprintf("waiting for PortPool %s to put certificate %s on listener %s (it has %q) before registering the Pod", b.Pool, want, id, got)
			res, err := r.setState(ctx, pa, v1alpha1.StateAllocated, msg, reconcile.Result{RequeueAfter: certWait})
			return endWith(res, err)
		}
	}
	return goOn()
}

// certWait: the pool's reconcile that moves the certificate is started
// by the binding's change; this is only the next look.
const certWait = 2 * time.Second

func certOfListener(l *clbsdk.Listener) string {
	if l == nil || l.Certificate == nil || l.Certificate.CertId == nil {
		return ""
	}
	return *l.Certificate.CertId
}
