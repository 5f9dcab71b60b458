package agent

import (
	"maps"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
)

// TestLinkWithdrawsPastGrace: the Pods are withdrawn only once the last
// heartbeat that got through is older than the grace period, once, and
// told again at the next heartbeat that gets through; each change asks for
// a resync of every Pod.
func TestLinkWithdrawsPastGrace(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	l := newLink(t0)
	if _, g, _ := l.down(t0); g != 10*time.Minute {
		t.Errorf("grace before the WorkloadCluster is read %s, want the provider's default 10m", g)
	}
	l.heartbeat(t0, 30*time.Second)
	resynced := func() bool {
		select {
		case <-l.resync:
			return true
		default:
			return false
		}
	}
	if resynced() {
		t.Error("a heartbeat of a connected agent asked for a resync")
	}
	for _, at := range []time.Duration{0, 29 * time.Second, 30 * time.Second} {
		if l.check(t0.Add(at)) || resynced() {
			t.Errorf("withdrawn %s after the last heartbeat, within the 30s grace", at)
		}
		if _, _, down := l.down(t0.Add(at)); down {
			t.Errorf("down %s after the last heartbeat", at)
		}
	}
	if !l.check(t0.Add(31*time.Second)) || !resynced() {
		t.Fatal("not withdrawn (with a resync) 31s after the last heartbeat")
	}
	if since, grace, down := l.down(t0.Add(31 * time.Second)); !down || !since.Equal(t0) || grace != 30*time.Second {
		t.Errorf("down %t since %s grace %s, want true since %s grace 30s", down, since, grace, t0)
	}
	if l.check(t0.Add(time.Minute)) || resynced() {
		t.Error("withdrawn twice in one cut")
	}
	// The link is back: a heartbeat without a grace read keeps the last.
	back := t0.Add(2 * time.Minute)
	l.heartbeat(back, 0)
	if !resynced() {
		t.Error("no resync when the link came back")
	}
	if since, grace, down := l.down(back.Add(time.Second)); down || !since.Equal(back) || grace != 30*time.Second {
		t.Errorf("after the return: down %t since %s grace %s", down, since, grace)
	}
}

// TestWithdrawal: what is written on a Pod whose addresses were released
// while the hub was unreachable, in both syntaxes, and nothing twice.
func TestWithdrawal(t *testing.T) {
	since := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	const grace = 30 * time.Second
	pod := &corev1.Pod{}
	pod.Annotations = map[string]string{
		podannotation.AnnotationPorts:          "7777 pool",
		podannotation.AnnotationStatus:         podannotation.StatusReady,
		podannotation.AnnotationAddresses:      `[{"address":"1.2.3.4:47000"}]`,
		podannotation.BCSAnnotationStatus:      podannotation.StatusReady,
		podannotation.BCSAnnotationBindings:    `[]`,
		podannotation.AnnotationNamedAddresses: "game.example/address",
		"game.example/address":                 "1.2.3.4:47000",
		"unrelated":                            "x",
	}
	pod.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: podannotation.BCSConditionPortBindingReady}}
	pod.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodReady, Status: corev1.ConditionTrue},
		{Type: podannotation.ConditionAddressReady, Status: corev1.ConditionTrue, Reason: "Bound"},
	}

	set, conds := withdrawal(pod, since, grace)
	want := map[string]any{
		podannotation.AnnotationStatus:         podannotation.StatusNotReady,
		podannotation.BCSAnnotationStatus:      podannotation.StatusNotReady,
		podannotation.AnnotationAddresses:      nil,
		podannotation.BCSAnnotationBindings:    nil,
		podannotation.AnnotationNamedAddresses: nil,
		"game.example/address":                 nil,
		podannotation.AnnotationHubUnreachable: "2025-01-01T12:00:00Z",
	}
	if !maps.Equal(set, want) {
		t.Errorf("annotations %v, want %v", set, want)
	}
	got := map[corev1.PodConditionType]corev1.PodCondition{}
	for _, c := range conds {
		got[c.Type] = c
	}
	for _, ct := range []corev1.PodConditionType{podannotation.ConditionAddressReady, podannotation.BCSConditionPortBindingReady} {
		c, ok := got[ct]
		if !ok || c.Status != corev1.ConditionFalse || c.Reason != podannotation.ReasonHubUnreachable || c.Message == "" {
			t.Errorf("condition %s %+v, want False/%s with a message", ct, c, podannotation.ReasonHubUnreachable)
		}
	}
	if len(conds) != 2 {
		t.Errorf("%d conditions, want the two address conditions only (not the kubelet's)", len(conds))
	}

	// Applied, nothing more is written.
	for k, v := range set {
		if v == nil {
			delete(pod.Annotations, k)
		} else {
			pod.Annotations[k] = v.(string) //nolint:forcetypeassert // set or nil
		}
	}
	for _, c := range conds {
		if cur := condition(pod, c.Type); cur != nil {
			*cur = c
		} else {
			pod.Status.Conditions = append(pod.Status.Conditions, c)
		}
	}
	if !withdrawn(pod) {
		t.Error("the withdrawn Pod carries no mark")
	}
	if set, conds := withdrawal(pod, since, grace); set != nil || conds != nil {
		t.Errorf("withdrawn again: %v %v", set, conds)
	}

	// A tke-extend Pod: its results gone, and with them its status,
	// which tke-extend only ever writes Ready.
	tke := &corev1.Pod{}
	tke.Annotations = map[string]string{
		podannotation.TKEAnnotationEnableMapping:         "true",
		podannotation.TKEAnnotationMappingStatus:         podannotation.StatusReady,
		podannotation.TKEAnnotationMappingResult:         `[{"port":80}]`,
		podannotation.TKEAnnotationHostPortMappingStatus: podannotation.StatusReady,
		podannotation.TKEAnnotationHostPortMappingResult: `[{"containerPort":80}]`,
	}
	set, _ = withdrawal(tke, since, grace)
	wantTKE := map[string]any{
		podannotation.TKEAnnotationMappingStatus:         nil,
		podannotation.TKEAnnotationMappingResult:         nil,
		podannotation.TKEAnnotationHostPortMappingStatus: nil,
		podannotation.TKEAnnotationHostPortMappingResult: nil,
		podannotation.AnnotationHubUnreachable:           "2025-01-01T12:00:00Z",
	}
	if !maps.Equal(set, wantTKE) {
		t.Errorf("tke-extend Pod: annotations %v, want %v", set, wantTKE)
	}

	// A Pod told nothing gets nothing, even with a readiness gate.
	quiet := &corev1.Pod{}
	quiet.Annotations = map[string]string{podannotation.AnnotationPorts: "7777 pool"}
	quiet.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: podannotation.ConditionAddressReady}}
	if set, conds := withdrawal(quiet, since, grace); set != nil || conds != nil {
		t.Errorf("a Pod told nothing: %v %v", set, conds)
	}
}
