// Package config reconciles ProviderConfigs and ClusterProviderConfigs: it
// counts their users so a config in use cannot be deleted, and checks that
// their credentials Secret is usable so a mistake shows on the config itself.
package config

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/ratelimiter"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/providerconfig"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	clusterv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/cluster/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients"
)

const (
	reasonCredentials event.Reason = "InvalidCredentials"

	// recheckInvalid is how soon a config with unusable credentials is looked
	// at again even without a Secret event (e.g. RBAC hid the Secret).
	recheckInvalid = time.Minute
)

// Setup adds the controllers of both provider config kinds.
func Setup(mgr ctrl.Manager, o controller.Options) error {
	kinds := []struct {
		kinds   resource.ProviderConfigKinds
		obj     func() resource.ProviderConfig
		secrets handler.MapFunc
	}{
		{
			kinds: resource.ProviderConfigKinds{
				Config:    v1alpha1.ProviderConfigGroupVersionKind,
				Usage:     v1alpha1.ProviderConfigUsageGroupVersionKind,
				UsageList: v1alpha1.ProviderConfigUsageListGroupVersionKind,
			},
			obj:     func() resource.ProviderConfig { return &v1alpha1.ProviderConfig{} },
			secrets: providerConfigsOfSecret(mgr.GetClient()),
		},
		{
			kinds: resource.ProviderConfigKinds{
				Config:    clusterv1alpha1.ClusterProviderConfigGroupVersionKind,
				Usage:     v1alpha1.ProviderConfigUsageGroupVersionKind,
				UsageList: v1alpha1.ProviderConfigUsageListGroupVersionKind,
			},
			obj:     func() resource.ProviderConfig { return &clusterv1alpha1.ClusterProviderConfig{} },
			secrets: clusterProviderConfigsOfSecret(mgr.GetClient()),
		},
	}
	for _, k := range kinds {
		name := providerconfig.ControllerName(k.kinds.Config.GroupKind().String())
		rec := event.NewAPIRecorder(mgr.GetEventRecorderFor(name))
		r := &Reconciler{
			kube:   mgr.GetClient(),
			newObj: k.obj,
			usage: providerconfig.NewReconciler(mgr, k.kinds,
				providerconfig.WithLogger(o.Logger.WithValues("controller", name)),
				providerconfig.WithRecorder(rec)),
			record: rec,
		}
		err := ctrl.NewControllerManagedBy(mgr).
			Named(name).
			WithOptions(o.ForControllerRuntime()).
			For(k.obj()).
			Watches(&v1alpha1.ProviderConfigUsage{}, &resource.EnqueueRequestForProviderConfig{Kind: k.kinds.Config.Kind}).
			Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(k.secrets)).
			Complete(errors.WithSilentRequeueOnConflict(ratelimiter.NewReconciler(name, r, o.GlobalRateLimiter)))
		if err != nil {
			return err
		}
	}
	return nil
}

// A Reconciler runs crossplane-runtime's usage accounting, then reports
// whether the config's credentials can be read as its Ready condition.
type Reconciler struct {
	kube   client.Client
	newObj func() resource.ProviderConfig
	usage  reconcile.Reconciler
	record event.Recorder
}

// Reconcile a provider config.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	res, err := r.usage.Reconcile(ctx, req)
	if err != nil {
		return res, err
	}
	pc := r.newObj()
	if err := r.kube.Get(ctx, req.NamespacedName, pc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if meta.WasDeleted(pc) {
		// Being deleted (waiting for its users) is not Ready.
		if pc.GetCondition(xpv2.TypeReady).Equal(xpv2.Deleting()) {
			return res, nil
		}
		pc.SetConditions(xpv2.Deleting())
		return res, client.IgnoreNotFound(r.kube.Status().Update(ctx, pc))
	}

	cond := xpv2.Available()
	_, verr := clients.ResolveObject(ctx, r.kube, pc)
	if p, ok := pc.(*v1alpha1.ProviderConfig); ok && verr == nil {
		// The managed resources that use it are refused the same way.
		verr = clients.AllowedEndpoint(ctx, r.kube, p)
	}
	if verr != nil {
		cond = xpv2.Unavailable().WithMessage(verr.Error())
		res.RequeueAfter = recheckInvalid
	}
	// Unreadable credentials need a person: Synced=False with the same
	// message, Degraded for Argo CD's built-in check.
	synced := xpv2.ReconcileSuccess()
	if verr != nil {
		synced = xpv2.ReconcileError(verr)
	}
	if pc.GetCondition(xpv2.TypeReady).Equal(cond) && pc.GetCondition(xpv2.TypeSynced).Equal(synced) {
		return res, nil
	}
	if verr != nil && !pc.GetCondition(xpv2.TypeReady).Equal(cond) {
		r.record.Event(pc, event.Warning(reasonCredentials, verr))
	}
	pc.SetConditions(cond, synced)
	return res, client.IgnoreNotFound(r.kube.Status().Update(ctx, pc))
}

// providerConfigsOfSecret maps a Secret to the ProviderConfigs of its
// namespace that read it.
func providerConfigsOfSecret(kube client.Reader) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		l := &v1alpha1.ProviderConfigList{}
		if err := kube.List(ctx, l, client.InNamespace(o.GetNamespace())); err != nil {
			return nil
		}
		var reqs []reconcile.Request
		for _, pc := range l.Items {
			if pc.Spec.Credentials.SecretRef.Name == o.GetName() {
				reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&pc)})
			}
		}
		return reqs
	}
}

// clusterProviderConfigsOfSecret maps a Secret to the ClusterProviderConfigs
// that read it.
func clusterProviderConfigsOfSecret(kube client.Reader) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		l := &clusterv1alpha1.ClusterProviderConfigList{}
		if err := kube.List(ctx, l); err != nil {
			return nil
		}
		var reqs []reconcile.Request
		for _, pc := range l.Items {
			ref := pc.Spec.Credentials.SecretRef
			if ref.Name == o.GetName() && ref.Namespace == o.GetNamespace() {
				reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&pc)})
			}
		}
		return reqs
	}
}
