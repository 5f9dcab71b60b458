package podaddress

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/portalloc"
)

func TestInstanceID(t *testing.T) {
	cases := map[string]struct {
		reason     string
		providerID string
		want       string
		err        bool
	}{
		"TKE":        {"TKE nodes name the instance last.", "qcloud:///800002/ins-abcdefgh", "ins-abcdefgh", false},
		"WithZone":   {"A zone in the path is fine.", "tencentcloud:///ap-guangzhou-3/ins-12345678", "ins-12345678", false},
		"NotCVM":     {"Another cloud's node cannot be a CVM target.", "aws:///us-east-1a/i-0abc", "", true},
		"NoProvider": {"A node without a providerID cannot either.", "", "", true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := instanceID(tc.providerID)
			if (err != nil) != tc.err || got != tc.want {
				t.Errorf("%s\ninstanceID(%q) = %q, %v; want %q, error %v", tc.reason, tc.providerID, got, err, tc.want, tc.err)
			}
		})
	}
}

func TestAddress(t *testing.T) {
	cases := map[string]struct {
		b    v1alpha1.PortBinding
		want string
	}{
		"Port":    {v1alpha1.PortBinding{VIPs: []string{"1.1.1.1"}, Port: 8000}, "1.1.1.1:8000"},
		"Segment": {v1alpha1.PortBinding{VIPs: []string{"1.1.1.1"}, Port: 8000, EndPort: 8009}, "1.1.1.1:8000-8009"},
		"NoVIP":   {v1alpha1.PortBinding{Port: 8000}, ""},
	}
	for name, tc := range cases {
		if got := address(tc.b); got != tc.want {
			t.Errorf("%s: address = %q, want %q", name, got, tc.want)
		}
	}
}

func TestUsageMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	r := newRecorder(reg)
	p := portalloc.NewPool(portalloc.PolicyInOrder)
	p.SetLB("lb-a", []int32{1, 2, 3})
	if _, err := p.Allocate("o1"); err != nil {
		t.Fatal(err)
	}
	r.usage("ns/pool", p.Stats().LBs)
	if got := testutil.ToFloat64(r.slots.WithLabelValues("ns/pool", "lb-a", "allocated")); got != 1 {
		t.Errorf("allocated = %v, want 1", got)
	}
	if got := testutil.ToFloat64(r.slots.WithLabelValues("ns/pool", "lb-a", "free")); got != 2 {
		t.Errorf("free = %v, want 2", got)
	}
}
