package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
)

// defaultGrace is the provider's default disconnect grace period, used
// until the agent has read its WorkloadCluster.
const defaultGrace = v1alpha1.DefaultDisconnectGracePeriod * time.Second

// A link is what the agent knows of its connection to the management
// cluster: when its last heartbeat got through and how long the provider
// keeps the cluster's addresses without one. Past that grace period the
// provider has released them, so the agent withdraws what it told its Pods;
// the next heartbeat that gets through has them told again.
type link struct {
	mu        sync.Mutex
	renewed   time.Time     // the renewTime of the last heartbeat that got through
	grace     time.Duration // the WorkloadCluster's disconnectGracePeriod
	withdrawn bool
	// wake tells Start that renewed or grace changed.
	wake chan struct{}
	// resync asks the mirror to reconcile every Pod: on withdrawal and on
	// return.
	resync chan ctrlevent.GenericEvent
}

func newLink(now time.Time) *link {
	return &link{renewed: now, grace: defaultGrace, wake: make(chan struct{}, 1), resync: make(chan ctrlevent.GenericEvent, 1)}
}

// pastGrace is the withdraw decision: the last heartbeat that got through
// is older than the grace period, so the provider has released (or is
// releasing) the cluster's addresses.
func pastGrace(renewed time.Time, grace time.Duration, now time.Time) bool {
	return now.Sub(renewed) > grace
}

// heartbeat records a renewal that got through at t, with the grace period
// read then (0: unchanged). Pods withdrawn until now are told again.
func (l *link) heartbeat(t time.Time, grace time.Duration) {
	l.mu.Lock()
	l.renewed = t
	if grace > 0 {
		l.grace = grace
	}
	back := l.withdrawn
	l.withdrawn = false
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default: // one pending wake is as good as several
	}
	if back {
		l.resyncAll()
	}
}

// down reports, at now, whether the Pods' addresses are withdrawn, since
// when the management cluster has had no heartbeat, and the grace period.
func (l *link) down(now time.Time) (since time.Time, grace time.Duration, withdrawn bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.renewed, l.grace, l.withdrawn || pastGrace(l.renewed, l.grace, now)
}

// check withdraws at now if the grace period has passed, and reports
// whether it just did.
func (l *link) check(now time.Time) bool {
	l.mu.Lock()
	withdraw := !l.withdrawn && pastGrace(l.renewed, l.grace, now)
	l.withdrawn = l.withdrawn || withdraw
	l.mu.Unlock()
	if withdraw {
		l.resyncAll()
	}
	return withdraw
}

// resyncAll has the mirror reconcile every Pod; one pending request is as
// good as several.
func (l *link) resyncAll() {
	select {
	case l.resync <- ctrlevent.GenericEvent{Object: &corev1.Pod{}}:
	default:
	}
}

// Start withdraws the Pods' addresses the moment the grace period after
// the last heartbeat that got through ends, rather than at the next
// (failing) heartbeat.
func (l *link) Start(ctx context.Context) error {
	for {
		l.mu.Lock()
		wait := time.Until(l.renewed.Add(l.grace)) + time.Millisecond
		if l.withdrawn {
			wait = time.Hour // until a heartbeat gets through
		}
		l.mu.Unlock()
		t := time.NewTimer(max(wait, 0))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-l.wake:
			t.Stop()
			continue
		case <-t.C:
		}
		l.check(time.Now())
	}
}

// NeedLeaderElection is false: the agent runs alone, without election.
func (l *link) NeedLeaderElection() bool { return false }

// addressConditions are the Pod conditions the provider sets.
func addressConditions() []corev1.PodConditionType {
	return []corev1.PodConditionType{podannotation.ConditionAddressReady, podannotation.BCSConditionPortBindingReady}
}

// statusAnnotations are the status annotations the provider writes: ours,
// bcs's and tke-extend's.
func statusAnnotations() []string {
	return []string{podannotation.AnnotationStatus, podannotation.BCSAnnotationStatus,
		podannotation.TKEAnnotationMappingStatus, podannotation.TKEAnnotationHostPortMappingStatus}
}

// told reports whether pod carries something the provider told it: a
// status annotation (ours or bcs's) or an address condition.
func told(pod *corev1.Pod) bool {
	for _, k := range statusAnnotations() {
		if _, ok := pod.Annotations[k]; ok {
			return true
		}
	}
	for _, t := range addressConditions() {
		if condition(pod, t) != nil {
			return true
		}
	}
	return false
}

// withdrawal is what to write on pod once its addresses are released while
// the management cluster is unreachable since since: its status annotations
// NotReady, as the provider says of a Pod that is not served (tke-extend's,
// which never say anything but Ready, removed); its address annotations
// removed, since the ports may already be another Pod's; the
// address conditions it carries or waits for False; and the mark of the
// withdrawal. Nothing for a Pod that was told nothing or already says it.
func withdrawal(pod *corev1.Pod, since time.Time, grace time.Duration) (set map[string]any, conds []corev1.PodCondition) {
	if !told(pod) {
		return nil, nil
	}
	set = map[string]any{}
	for _, k := range []string{podannotation.AnnotationStatus, podannotation.BCSAnnotationStatus} {
		if v, ok := pod.Annotations[k]; ok && v != podannotation.StatusNotReady {
			set[k] = podannotation.StatusNotReady
		}
	}
	// tke-extend's status is only ever Ready: it goes with its result.
	remove := []string{podannotation.AnnotationAddresses, podannotation.BCSAnnotationBindings,
		podannotation.TKEAnnotationMappingResult, podannotation.TKEAnnotationHostPortMappingResult, podannotation.AnnotationNamedAddresses,
		podannotation.TKEAnnotationMappingStatus, podannotation.TKEAnnotationHostPortMappingStatus}
	if named, ok := pod.Annotations[podannotation.AnnotationNamedAddresses]; ok {
		remove = append(remove, strings.Split(named, ",")...)
	}
	for _, k := range remove {
		if _, ok := pod.Annotations[k]; ok && k != "" {
			set[k] = nil // a merge patch's null removes the key
		}
	}
	mark := since.UTC().Format(time.RFC3339)
	if pod.Annotations[podannotation.AnnotationHubUnreachable] != mark {
		set[podannotation.AnnotationHubUnreachable] = mark
	}
	if len(set) == 0 {
		set = nil
	}

	gates := podannotation.ReadinessGates(pod)
	for _, t := range addressConditions() {
		if condition(pod, t) != nil && !slices.Contains(gates, t) {
			gates = append(gates, t)
		}
	}
	msg := fmt.Sprintf("No heartbeat has reached the management cluster since %s, longer than the disconnect grace period (%s): "+
		"the provider has released the Pod's addresses. The Pod is told again once the agent reaches it.", mark, grace)
	for _, t := range gates {
		if c := condition(pod, t); c != nil && c.Status == corev1.ConditionFalse && c.Reason == podannotation.ReasonHubUnreachable && c.Message == msg {
			continue
		}
		conds = append(conds, corev1.PodCondition{Type: t, Status: corev1.ConditionFalse, Reason: podannotation.ReasonHubUnreachable,
			Message: msg, LastTransitionTime: metav1.Now()})
	}
	return set, conds
}

// withdrawn reports whether pod carries the mark of a withdrawal: it is
// told again only from a RemotePod read from the management cluster itself,
// not from a cache that may still hold what was there before the cut.
func withdrawn(pod *corev1.Pod) bool {
	_, ok := pod.Annotations[podannotation.AnnotationHubUnreachable]
	return ok
}

// withdraw writes the withdrawal on the Pod key, with a Warning Event the
// first time. The conditions go first: readiness is what routes traffic.
func (m *mirror) withdraw(ctx context.Context, key types.NamespacedName, since time.Time, grace time.Duration) error {
	pod := &corev1.Pod{}
	if err := m.local.Get(ctx, key, pod); err != nil {
		if kerrors.IsNotFound(err) {
			m.forget(key)
			return nil
		}
		return err
	}
	set, conds := withdrawal(pod, since, grace)
	if set == nil && conds == nil {
		return nil
	}
	if !withdrawn(pod) {
		// Named after the Pod and the last heartbeat: recorded once per
		// cut, even by a restarted agent.
		w := &v1alpha1.RemoteEvent{Reason: podannotation.ReasonHubUnreachable, Time: metav1.NewTime(since),
			Message: fmt.Sprintf("No heartbeat has reached the management cluster since %s, longer than the disconnect grace period (%s): "+
				"the Pod's addresses are released and withdrawn from it.", since.UTC().Format(time.RFC3339), grace)}
		if err := m.event(ctx, pod, w, fmt.Sprintf("%s.hub-unreachable.%x", pod.Name, since.UnixNano())); err != nil {
			return err
		}
	}
	if len(conds) > 0 {
		patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": conds}})
		if err != nil {
			return err
		}
		if err := m.local.Status().Patch(ctx, pod, client.RawPatch(types.StrategicMergePatchType, patch)); err != nil {
			return fmt.Errorf("cannot withdraw the Pod's address conditions: %w", err)
		}
	}
	if set != nil {
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": set}})
		if err != nil {
			return err
		}
		if err := m.local.Patch(ctx, pod, client.RawPatch(types.MergePatchType, patch)); err != nil {
			return fmt.Errorf("cannot withdraw the Pod's address annotations: %w", err)
		}
	}
	m.log.Info("Withdrew the Pod's addresses: the management cluster is unreachable", "pod", key, "since", since)
	return nil
}
