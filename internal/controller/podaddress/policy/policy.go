// Package policy serves PodAddressPolicies: which policy serves a Pod that
// asks for nothing itself, and the controller that writes each policy's
// status (how many Pods it serves, how many are bound, and why the others
// are not).
package policy

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/podaddress/pods"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
)

const (
	controllerName = "podaddresspolicy"

	// indexSource indexes PodAddresses by spec.source, so a policy finds
	// the PodAddresses it asked for without reading the namespace's others.
	indexSource = "spec.source"
)

// Setup adds the controller that writes PodAddressPolicy
// status: how many Pods the policy serves, how many are Bound, and a Ready
// condition that says why the others are not. It is woken by the policy,
// by the Pods of its namespace and by the PodAddresses it asked for; it
// never polls.
func Setup(mgr ctrl.Manager, o controller.Options, rps *pods.Remote) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &v1alpha1.PodAddress{}, indexSource, func(obj client.Object) []string {
		pa, ok := obj.(*v1alpha1.PodAddress)
		if !ok || pa.Spec.Source == "" {
			return nil
		}
		return []string{pa.Spec.Source}
	}); err != nil {
		return err
	}
	r := &policyStatus{kube: mgr.GetClient(), last: &lastWrites{at: map[types.NamespacedName]time.Time{}}, remotePods: rps}
	c, err := ctrl.NewControllerManagedBy(mgr).
		Named(controllerName).
		WithOptions(o.ForControllerRuntime()).
		// Our own status writes do not change the generation.
		For(&v1alpha1.PodAddressPolicy{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&v1alpha1.PodAddress{}, handler.EnqueueRequestsFromMapFunc(policyOfPodAddress)).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(r.policiesOfPod), builder.WithPredicates(predicate.Funcs{
			UpdateFunc: func(e ctrlevent.UpdateEvent) bool { return pods.Changed(e.ObjectOld, e.ObjectNew) },
		})).
		// Not behind the global reconcile limiter the managed resources
		// share: a burst of Pods would bind at --max-reconcile-rate per
		// second. Cloud calls are rate limited in the client instead.
		Build(errors.WithSilentRequeueOnConflict(r))
	if err != nil {
		return err
	}
	// Only a RemotePod's spec (its Pod's labels, its deletion) changes what
	// a policy counts; its status is ours.
	return rps.Watch(func() error {
		return c.Watch(source.Kind(mgr.GetCache(), &v1alpha1.RemotePod{},
			handler.TypedEnqueueRequestsFromMapFunc(r.policiesOfRemotePod), predicate.TypedGenerationChangedPredicate[*v1alpha1.RemotePod]{}))
	})
}

// policiesOfRemotePod maps a RemotePod to the policies that select the
// Pod it stands for.
func (r *policyStatus) policiesOfRemotePod(ctx context.Context, rp *v1alpha1.RemotePod) []reconcile.Request {
	return r.policiesOfPod(ctx, pods.Of(rp))
}

// Serving returns the policy of pols that serves pod: the first by
// name whose selector matches its labels. An empty selector matches none.
func Serving(pols []v1alpha1.PodAddressPolicy, pod *corev1.Pod) *v1alpha1.PodAddressPolicy {
	var best *v1alpha1.PodAddressPolicy
	for i := range pols {
		pol := &pols[i]
		sel, err := metav1.LabelSelectorAsSelector(&pol.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(pod.GetLabels())) {
			continue
		}
		if best == nil || pol.GetName() < best.GetName() {
			best = pol
		}
	}
	return best
}

// policyOfPodAddress maps a PodAddress to the policy that asked for it.
// On an update both the old and the new object are mapped, so a
// PodAddress that moves from one policy to another wakes both.
func policyOfPodAddress(_ context.Context, o client.Object) []reconcile.Request {
	pa, ok := o.(*v1alpha1.PodAddress)
	if !ok {
		return nil
	}
	name, ok := strings.CutPrefix(pa.Spec.Source, v1alpha1.PolicySource(""))
	if !ok || name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: pa.GetNamespace(), Name: name}}}
}

type policyStatus struct {
	kube       client.Client
	last       *lastWrites
	remotePods *pods.Remote
}

// policiesOfPod maps a Pod to the policies of its namespace that select
// it. Mapped for the old and the new Pod of an update, so a policy a Pod
// stops matching counts it out.
func (r *policyStatus) policiesOfPod(ctx context.Context, o client.Object) []reconcile.Request {
	pod, ok := o.(*corev1.Pod)
	if !ok {
		return nil
	}
	l := &v1alpha1.PodAddressPolicyList{}
	if err := r.kube.List(ctx, l, client.InNamespace(pod.GetNamespace())); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for _, pol := range l.Items {
		sel, err := metav1.LabelSelectorAsSelector(&pol.Spec.Selector)
		if err == nil && !sel.Empty() && sel.Matches(labels.Set(pod.GetLabels())) {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&pol)})
		}
	}
	return reqs
}

// Reconcile counts a policy's Pods and writes its status when it changed.
func (r *policyStatus) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	pol := &v1alpha1.PodAddressPolicy{}
	if err := r.kube.Get(ctx, req.NamespacedName, pol); err != nil || pol.GetDeletionTimestamp() != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	pols := &v1alpha1.PodAddressPolicyList{}
	if err := r.kube.List(ctx, pols, client.InNamespace(pol.GetNamespace())); err != nil {
		return reconcile.Result{}, errors.Wrap(err, "cannot list PodAddressPolicies")
	}
	var matched []corev1.Pod
	if sel, err := metav1.LabelSelectorAsSelector(&pol.Spec.Selector); err == nil && !sel.Empty() {
		l := &corev1.PodList{}
		if err := r.kube.List(ctx, l, client.InNamespace(pol.GetNamespace()), client.MatchingLabelsSelector{Selector: sel}); err != nil {
			return reconcile.Result{}, errors.Wrap(err, "cannot list Pods")
		}
		matched = l.Items
		remote, err := r.remotePods.Matching(ctx, r.kube, pol.GetNamespace(), sel)
		if err != nil {
			return reconcile.Result{}, err
		}
		matched = append(matched, remote...)
	}
	pas := &v1alpha1.PodAddressList{}
	if err := r.kube.List(ctx, pas, client.InNamespace(pol.GetNamespace()), client.MatchingFields{indexSource: v1alpha1.PolicySource(pol.GetName())}); err != nil {
		return reconcile.Result{}, errors.Wrap(err, "cannot list PodAddresses")
	}
	byName := make(map[string]*v1alpha1.PodAddress, len(pas.Items))
	for i := range pas.Items {
		byName[pas.Items[i].GetName()] = &pas.Items[i]
	}

	var t tally
	for i := range matched {
		pod := &matched[i]
		if pod.GetDeletionTimestamp() != nil {
			continue
		}
		if _, asked, err := podannotation.Parse(pod); asked || err != nil {
			continue // the Pod's own annotations win over policies
		}
		if s := Serving(pols.Items, pod); s == nil || s.GetName() != pol.GetName() {
			continue
		}
		t.add(pod, byName[pod.GetName()])
	}

	want := pol.Status.DeepCopy()
	want.MatchedPods, want.BoundPods = t.matched, t.bound
	ready := t.ready().WithObservedGeneration(pol.GetGeneration())
	// Pods that cannot bind as things stand need a person: Synced=False,
	// Degraded for Argo CD's built-in check.
	synced := v1alpha1.SyncedCondition(ready.Reason == v1alpha1.ReasonBindFailed, ready.Message).WithObservedGeneration(pol.GetGeneration())
	want.SetConditions(ready, synced)
	if want.MatchedPods == pol.Status.MatchedPods && want.BoundPods == pol.Status.BoundPods &&
		want.GetCondition(xpv2.TypeReady).Equal(pol.Status.GetCondition(xpv2.TypeReady)) &&
		want.GetCondition(xpv2.TypeSynced).Equal(pol.Status.GetCondition(xpv2.TypeSynced)) {
		return reconcile.Result{}, nil
	}
	// At most one write per policy per policyWriteInterval: a burst of
	// Pods changes the counts with every Pod, and one write a second
	// says as much as one per Pod. The requeue writes what the counts are
	// then.
	key := client.ObjectKeyFromObject(pol)
	if left := r.last.wait(key, time.Now()); left > 0 {
		return reconcile.Result{RequeueAfter: left}, nil
	}
	pol.Status = *want
	if err := r.kube.Status().Update(ctx, pol); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	r.last.wrote(key, time.Now())
	return reconcile.Result{}, nil
}

// policyWriteInterval spaces the status writes of one policy.
const policyWriteInterval = time.Second

// lastWrites remembers when each policy's status was last written.
type lastWrites struct {
	mu sync.Mutex
	at map[types.NamespacedName]time.Time
}

// wait returns how long a write to key must wait.
func (l *lastWrites) wait(key types.NamespacedName, now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	at, ok := l.at[key]
	if !ok {
		return 0
	}
	if left := policyWriteInterval - now.Sub(at); left > 0 {
		return left
	}
	delete(l.at, key) // long ago: no need to remember it
	return 0
}

func (l *lastWrites) wrote(key types.NamespacedName, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.at[key] = now
}

// waiting is how an unbound Pod that has no PodAddress of its own yet is
// counted.
const waiting = "without a PodAddress yet"

// A tally counts a policy's Pods by where they are in binding.
type tally struct {
	matched, bound int64
	// notBound counts unbound Pods by PodAddress state (or waiting);
	// example keeps the first message of each.
	notBound map[string]int
	example  map[string]string
}

func (t *tally) add(pod *corev1.Pod, pa *v1alpha1.PodAddress) {
	t.matched++
	state, msg := waiting, ""
	if pa != nil && pa.Spec.PodUID == string(pod.GetUID()) && pa.Status.State != "" {
		state, msg = pa.Status.State, pa.Status.Message
	}
	if v1alpha1.Serving(state) {
		t.bound++
		return
	}
	if t.notBound == nil {
		t.notBound, t.example = map[string]int{}, map[string]string{}
	}
	t.notBound[state]++
	if _, ok := t.example[state]; !ok && msg != "" {
		t.example[state] = fmt.Sprintf("%s: %s", pod.GetName(), msg)
	}
}

// ready is the policy's Ready condition: True when every matched Pod is
// Bound; otherwise False, saying how many are not and why, with reason
// BindFailed when some cannot bind as things stand and Binding when the
// rest is under way.
func (t *tally) ready() xpv2.Condition {
	c := xpv2.Condition{Type: xpv2.TypeReady, Status: corev1.ConditionTrue, Reason: v1alpha1.ReasonAllBound, LastTransitionTime: metav1.Now()}
	if t.bound == t.matched {
		c.Message = fmt.Sprintf("%d of %d Pods bound", t.bound, t.matched)
		return c
	}
	c.Status, c.Reason = corev1.ConditionFalse, v1alpha1.ReasonBinding
	parts := make([]string, 0, len(t.notBound))
	for _, s := range slices.Sorted(maps.Keys(t.notBound)) {
		if v1alpha1.WaitsOnSomeone(s) {
			c.Reason = v1alpha1.ReasonBindFailed
		}
		p := fmt.Sprintf("%d %s", t.notBound[s], s)
		if ex := t.example[s]; ex != "" {
			p += " (" + ex + ")"
		}
		parts = append(parts, p)
	}
	c.Message = fmt.Sprintf("%d of %d Pods not bound: %s", t.matched-t.bound, t.matched, strings.Join(parts, "; "))
	return c
}

// Match returns the policy of the Pod's namespace that serves it (see
// Serving), or nil.
func Match(ctx context.Context, kube client.Reader, pod *corev1.Pod) (*v1alpha1.PodAddressPolicy, error) {
	l := &v1alpha1.PodAddressPolicyList{}
	if err := kube.List(ctx, l, client.InNamespace(pod.GetNamespace())); err != nil {
		return nil, errors.Wrap(err, "cannot list PodAddressPolicies")
	}
	return Serving(l.Items, pod), nil
}
