package mr

import (
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/feature"
	"github.com/crossplane/crossplane-runtime/v2/pkg/ratelimiter"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/v1alpha1"
)

// notReadyPoll is how often a resource that is not Ready yet (a load
// balancer still being created, a task still running) is looked at, so
// readiness shows up in seconds rather than after the full poll interval.
const notReadyPoll = 2 * time.Second

// Backoff of failed reconciles.
const (
	retryBase = 250 * time.Millisecond
	retryMax  = 30 * time.Second
)

// PollInterval is the poll hook of every kind: the poll interval, or
// notReadyPoll for a resource that is not Ready. A kind's own hook (in
// Kind.Options) replaces it and should start from it.
func PollInterval(mg resource.Managed, pollInterval time.Duration) time.Duration {
	if mg.GetCondition("Ready").Status != "True" && pollInterval > notReadyPoll {
		return notReadyPoll
	}
	return pollInterval
}

// Kind describes one managed resource kind for Setup.
type Kind[T resource.ModernManaged, C any] struct {
	GVK schema.GroupVersionKind
	// Object returns a new empty object of the kind.
	Object func() T
	// New builds the external client around the shared cloud client.
	New func(c C, kube client.Client) managed.TypedExternalClient[T]
	// Options are added after the standard ones.
	Options []managed.ReconcilerOption
	// Watches are other objects whose changes should reconcile this kind
	// now rather than at the next poll.
	Watches []Watch
}

// A Watch maps events of Object to requests of the kind.
type Watch struct {
	Object  client.Object
	Handler handler.EventHandler
	// Predicates filter the events before Handler sees them.
	Predicates []predicate.Predicate
}

// Setup adds a controller for one managed resource kind with the options
// every kind of this provider uses.
func Setup[T resource.ModernManaged, C any](mgr ctrl.Manager, o controller.Options, pool Pool[C], k Kind[T, C]) error {
	name := managed.ControllerName(k.GVK.GroupKind().String())
	ny := newNotYet()
	opts := []managed.ReconcilerOption{
		managed.WithTypedExternalConnector[T](&Connector[T, C]{
			Kube:  mgr.GetClient(),
			Usage: resource.NewProviderConfigUsageTracker(mgr.GetClient(), &v1alpha1.ProviderConfigUsage{}),
			Pool:  pool,
			New: func(c C, kube client.Client) managed.TypedExternalClient[T] {
				return notYetClient[T]{TypedExternalClient: k.New(c, kube), n: ny}
			},
		}),
		managed.WithLogger(o.Logger.WithValues("controller", name)),
		managed.WithRecorder(notYetRecorder{Recorder: event.NewAPIRecorder(mgr.GetEventRecorderFor(name)), n: ny}),
		managed.WithPollInterval(o.PollInterval),
		managed.WithPollIntervalHook(PollInterval),
		// No external name is invented: an empty one means "not created
		// yet", and Observe adopts a resource whose create was never saved
		// (by ClientToken/tag or by its unique port or domain), so the
		// creation-incomplete guard is not needed and would only block.
		managed.WithInitializers(),
		managed.WithDeterministicExternalName(true),
		// The runtime waits out a grace period after a create before it
		// believes a resource is gone, even while deleting it. Our Observe
		// tracks the create's task instead, so a resource deleted right
		// after creation need not wait 30 seconds.
		managed.WithCreationGracePeriod(0),
		managed.WithReferenceResolver(OwnNamespaceRefs{ReferenceResolver: managed.NewAPISimpleReferenceResolver(mgr.GetClient()), Kube: mgr.GetClient()}),
	}
	if o.Features != nil && o.Features.Enabled(feature.EnableBetaManagementPolicies) {
		opts = append(opts, managed.WithManagementPolicies())
	}
	if o.MetricOptions != nil {
		opts = append(opts, managed.WithMetricRecorder(o.MetricOptions.MRMetrics))
	}
	opts = append(opts, k.Options...)

	r := managed.NewReconciler(mgr, resource.ManagedKind(k.GVK), opts...)
	copts := o.ForControllerRuntime()
	// CLB answers "busy" while a load balancer's task runs, which is
	// normal when several resources of one load balancer are created
	// together and over within a second or two. Start retrying sooner
	// than the runtime's 1 s and cap at 30 s; failures still back off
	// exponentially, never at full rate.
	copts.RateLimiter = workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](retryBase, retryMax)
	b := ctrl.NewControllerManagedBy(mgr).
		Named(strings.ReplaceAll(name, "/", "-")).
		WithOptions(copts).
		For(k.Object(), builder.WithPredicates(resource.DesiredStateChanged()))
	for _, w := range k.Watches {
		b = b.Watches(w.Object, w.Handler, builder.WithPredicates(w.Predicates...))
	}
	return b.Complete(ratelimiter.NewReconciler(name, ny.reconciler(r), o.GlobalRateLimiter))
}
