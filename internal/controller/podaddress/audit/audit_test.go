package audit

import (
	"fmt"
	"testing"

	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/podaddress/targets"
)

// TestWeightChunks: weight resets stay within BatchModifyTargetWeight's
// limits (500 targets, 100 listeners, 50 targets per listener per call)
// and lose nothing.
func TestWeightChunks(t *testing.T) {
	cases := map[string]struct {
		listeners, perListener int
		wantCalls              int
	}{
		"One":           {1, 1, 1},
		"ManyListeners": {250, 1, 3}, // 100 listeners per call
		"BigListener":   {1, 120, 3}, // 50 per listener per call
		"Total":         {20, 40, 2}, // 800 targets: 500 per call (12.5 listeners), then 300
		"Mixed":         {150, 4, 2}, // 600 targets: 100 listeners (400), then 50 (200)
		"Exact":         {10, 50, 1}, // 500 targets, 10 listeners of 50
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var es []expected
			for l := range tc.listeners {
				for i := range tc.perListener {
					es = append(es, expected{t: clb.Target{ListenerID: fmt.Sprintf("lbl-%04d", l), EniIP: fmt.Sprintf("10.0.%d.%d", i/250, i%250), Port: 80}})
				}
			}
			got := weightChunks(es)
			n := 0
			for _, c := range got {
				n += len(c)
				per := map[string]int{}
				for _, e := range c {
					per[e.t.ListenerID]++
				}
				if len(c) > 500 || len(per) > 100 {
					t.Errorf("a call of %d targets on %d listeners", len(c), len(per))
				}
				for l, k := range per {
					if k > 50 {
						t.Errorf("a call with %d targets on listener %s", k, l)
					}
				}
			}
			if n != len(es) || len(got) != tc.wantCalls {
				t.Errorf("%d targets in %d calls; want %d in %d", n, len(got), len(es), tc.wantCalls)
			}
		})
	}
}

// TestBackendMatching: a recorded target is found by IP (ENI) or by
// instance (CVM), on its port only; a foreign backend is deregistered the
// way it was bound.
func TestBackendMatching(t *testing.T) {
	s := func(v string) *string { return &v }
	p := func(v int64) *int64 { return &v }
	eni := &clbsdk.Backend{Type: s("ENI"), InstanceId: s(""), Port: p(80), PrivateIpAddresses: []*string{s("10.0.0.1")}}
	cvm := &clbsdk.Backend{Type: s("CVM"), InstanceId: s("ins-1"), Port: p(80), PrivateIpAddresses: []*string{s("10.0.0.2")}}

	if !targets.Matches(clb.Target{EniIP: "10.0.0.1", Port: 80}, eni) {
		t.Error("an ENI target is not found by its IP")
	}
	if targets.Matches(clb.Target{EniIP: "10.0.0.1", Port: 81}, eni) {
		t.Error("a target matched another port")
	}
	if !targets.Matches(clb.Target{InstanceID: "ins-1", Port: 80}, cvm) || targets.Matches(clb.Target{InstanceID: "ins-2", Port: 80}, cvm) {
		t.Error("a CVM target is not told by its instance")
	}
	if targets.Matches(clb.Target{InstanceID: "ins-1", Port: 80}, eni) {
		t.Error("an instance target matched an ENI backend with no instance")
	}
	if got, ok := backendTarget("lbl-1", eni); !ok || got != (clb.Target{ListenerID: "lbl-1", EniIP: "10.0.0.1", Port: 80}) {
		t.Errorf("backendTarget(ENI) = %+v, %v", got, ok)
	}
	if got, ok := backendTarget("lbl-1", cvm); !ok || got != (clb.Target{ListenerID: "lbl-1", InstanceID: "ins-1", Port: 80}) {
		t.Errorf("backendTarget(CVM) = %+v, %v", got, ok)
	}
}
