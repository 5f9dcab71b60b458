package podaddress

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
)

// TestDecide is the lifecycle of one name: every step and what chooses
// it, with no I/O.
func TestDecide(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ports := &ask{spec: v1alpha1.PodAddressSpec{Ports: []v1alpha1.PortRequest{{Port: intstr.FromInt32(80), Protocol: "TCP"}}}}
	eipAsk := &ask{spec: v1alpha1.PodAddressSpec{EIP: &v1alpha1.EIPRequest{}}}
	livePod := func() *corev1.Pod {
		p := &corev1.Pod{}
		p.SetUID(types.UID("pod-1"))
		return p
	}
	deletingPod := func() *corev1.Pod {
		p := livePod()
		p.SetDeletionTimestamp(&metav1.Time{Time: at})
		return p
	}
	// record is a PodAddress recorded for livePod asking a.
	record := func(a *ask, change ...func(*v1alpha1.PodAddress)) *v1alpha1.PodAddress {
		pa := &v1alpha1.PodAddress{Spec: a.spec}
		pa.Spec.PodUID = "pod-1"
		for _, c := range change {
			c(pa)
		}
		return pa
	}
	deleting := func(pa *v1alpha1.PodAddress) { pa.SetDeletionTimestamp(&metav1.Time{Time: at}) }
	// admitted is a PodAddress the webhook made before its Pod, held
	// until the given time.
	admitted := func(until time.Time) func(*v1alpha1.PodAddress) {
		return func(pa *v1alpha1.PodAddress) {
			pa.Spec.PodUID = ""
			pa.SetAnnotations(map[string]string{AnnotationAdmittedUntil: until.Format(time.RFC3339)})
		}
	}
	otherPort := &ask{spec: v1alpha1.PodAddressSpec{Ports: []v1alpha1.PortRequest{{Port: intstr.FromInt32(81), Protocol: "TCP"}}}}

	cases := map[string]struct {
		f        facts
		want     step
		wantWait time.Duration
	}{
		"NothingAskedNothingHeld":   {f: facts{pod: livePod()}, want: stepNone},
		"NoPodNoRecord":             {f: facts{}, want: stepNone},
		"DeletingPodWithoutRecord":  {f: facts{pod: deletingPod(), want: nil}, want: stepNone},
		"AskedFirstTime":            {f: facts{pod: livePod(), want: ports}, want: stepCreate},
		"Bound":                     {f: facts{pod: livePod(), want: ports, pa: record(ports)}, want: stepBind},
		"BoundEIP":                  {f: facts{pod: livePod(), want: eipAsk, pa: record(eipAsk)}, want: stepBindEIP},
		"RemotePodAsksEIP":          {f: facts{pod: livePod(), want: eipAsk, pa: record(eipAsk), remote: true}, want: stepRefuseRemoteEIP},
		"RemotePodPorts":            {f: facts{pod: livePod(), want: ports, pa: record(ports), remote: true}, want: stepBind},
		"RecordBeingDeleted":        {f: facts{pod: livePod(), want: ports, pa: record(ports, deleting)}, want: stepFinalize},
		"PodGone":                   {f: facts{pa: record(ports)}, want: stepPodGone},
		"PodGoneWhileRecordDeleted": {f: facts{pa: record(ports, deleting)}, want: stepFinalize},
		"PodDeleting":               {f: facts{pod: deletingPod(), pa: record(ports)}, want: stepPodGone},
		"PodNoLongerAsks":           {f: facts{pod: livePod(), pa: record(ports)}, want: stepRemove},
		"RequestChanged":            {f: facts{pod: livePod(), want: otherPort, pa: record(ports)}, want: stepTakeOver},
		"AnotherPodOfTheName":       {f: facts{pod: livePod(), want: ports, pa: record(ports, func(pa *v1alpha1.PodAddress) { pa.Spec.PodUID = "pod-0" })}, want: stepTakeOver},
		"AdmittedPodNotCreatedYet":  {f: facts{pa: record(ports, admitted(at.Add(30*time.Second))), now: at}, want: stepAwaitPod, wantWait: 30 * time.Second},
		"AdmittedGraceOver":         {f: facts{pa: record(ports, admitted(at.Add(-time.Second))), now: at}, want: stepRemove},
		"AdmittedUnreadableGrace": {f: facts{pa: record(ports, func(pa *v1alpha1.PodAddress) {
			pa.Spec.PodUID = ""
			pa.SetAnnotations(map[string]string{AnnotationAdmittedUntil: "soon"})
		}), now: at}, want: stepRemove},
		"AdmittedPodDeletingIsGone":     {f: facts{pod: deletingPod(), pa: record(ports, admitted(at.Add(time.Minute))), now: at}, want: stepPodGone},
		"AdmittedPodCreated":            {f: facts{pod: livePod(), want: ports, pa: record(ports, admitted(at.Add(time.Minute))), now: at}, want: stepTakeOver},
		"OutOfBoundsNothingHeld":        {f: facts{pod: livePod(), want: ports, remote: true, outOfBounds: true}, want: stepNone},
		"OutOfBoundsReleases":           {f: facts{pod: livePod(), want: ports, pa: record(ports), remote: true, outOfBounds: true}, want: stepRemove},
		"OutOfBoundsWhileRecordDeleted": {f: facts{pod: livePod(), want: ports, pa: record(ports, deleting), remote: true, outOfBounds: true}, want: stepFinalize},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, wait := decide(tc.f)
			if got != tc.want || wait != tc.wantWait {
				t.Errorf("decide() = %v, %v; want %v, %v", got, wait, tc.want, tc.wantWait)
			}
		})
	}
}
