package podaddress

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
)

// TestRequestIsolated: every isolation switch, ours or another system's,
// becomes spec.isolated of the PodAddress, whichever syntax asked.
func TestRequestIsolated(t *testing.T) {
	native := map[string]string{podannotation.AnnotationPorts: "7777 pool"}
	bcs := map[string]string{podannotation.BCSAnnotationEnabled: "true", podannotation.BCSAnnotationPorts: "pool TCP 7777"}
	cases := map[string]struct {
		reason string
		asks   map[string]string
		toggle map[string]string
		want   bool
		err    bool
	}{
		"InService":     {"No switch: in service.", native, nil, false, false},
		"Ours":          {"Our annotation isolates.", native, map[string]string{podannotation.AnnotationIsolated: "true"}, true, false},
		"OursBack":      {"Our annotation set back is in service.", native, map[string]string{podannotation.AnnotationIsolated: "false"}, false, false},
		"OursInvalid":   {"A malformed value of ours is the Pod's error.", native, map[string]string{podannotation.AnnotationIsolated: "maybe"}, false, true},
		"TKEExtend":     {"tke-extend's enable-clb-port-mapping false isolates.", native, map[string]string{podannotation.TKEAnnotationEnableMapping: "false"}, true, false},
		"TKEExtendOn":   {"tke-extend's enable-clb-port-mapping true does not.", native, map[string]string{podannotation.TKEAnnotationEnableMapping: "true"}, false, false},
		"OKG":           {"OKG's network-disabled label true isolates.", native, map[string]string{podannotation.OKGLabelNetworkDisabled: "true"}, true, false},
		"OKGOff":        {"OKG's network-disabled label false does not.", native, map[string]string{podannotation.OKGLabelNetworkDisabled: "false"}, false, false},
		"BCSSyntaxOKG":  {"A bcs-syntax Pod is isolated the same way.", bcs, map[string]string{podannotation.OKGLabelNetworkDisabled: "true"}, true, false},
		"OursOverrides": {"Ours wins over another system's.", bcs, map[string]string{podannotation.AnnotationIsolated: "false", podannotation.TKEAnnotationEnableMapping: "false"}, false, false},
	}
	r := &Reconciler{}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			a := map[string]string{}
			for k, v := range tc.asks {
				a[k] = v
			}
			for k, v := range tc.toggle {
				a[k] = v
			}
			// OKG's switch is a label; everything else an annotation.
			labels := map[string]string{}
			if v, ok := a[podannotation.OKGLabelNetworkDisabled]; ok {
				labels[podannotation.OKGLabelNetworkDisabled] = v
				delete(a, podannotation.OKGLabelNetworkDisabled)
			}
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "game", Name: "room-0", Annotations: a, Labels: labels}}
			got, err := r.request(context.Background(), pod)
			if (err != nil) != tc.err {
				t.Fatalf("%s\nrequest(): error %v, want error %v", tc.reason, err, tc.err)
			}
			if err == nil && got.spec.Isolated != tc.want {
				t.Errorf("%s\nrequest().spec.Isolated = %v, want %v", tc.reason, got.spec.Isolated, tc.want)
			}
		})
	}
}
