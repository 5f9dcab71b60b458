package v1alpha1

import (
	"testing"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
)

func TestRecordedBindings(t *testing.T) {
	created := []PortBinding{{Pool: "ns/p", Protocol: "TCP", ContainerPort: 7777, LoadBalancerID: "lb-1", Port: 40001, TargetIP: "10.0.0.9", TargetPort: 7777}}
	written := []PortBinding{{Pool: "ns/p", Protocol: "TCP", ContainerPort: 7777, LoadBalancerID: "lb-1", Port: 40001, Address: "1.2.3.4:40001"}}
	cases := map[string]struct {
		status PodAddressStatus
		record bool
		want   []PortBinding
	}{
		"no record, no status":            {want: nil},
		"created with bindings":           {record: true, want: created},
		"status written with bindings":    {record: true, status: PodAddressStatus{State: StateBound, Bindings: written}, want: written},
		"status written without bindings": {record: true, status: PodAddressStatus{State: StateNoPortAvailable}, want: nil},
		"only a condition written":        {record: true, status: PodAddressStatus{ConditionedStatus: xpv2.ConditionedStatus{Conditions: []xpv2.Condition{{Type: xpv2.TypeReady}}}}, want: nil},
		"an EIP written":                  {record: true, status: PodAddressStatus{EIP: &EIPBinding{}}, want: nil},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			pa := &PodAddress{Status: c.status}
			if c.record {
				if err := SetCreatedBindings(pa, created); err != nil {
					t.Fatal(err)
				}
			}
			got := pa.RecordedBindings()
			if len(got) != len(c.want) || len(got) > 0 && got[0].TargetIP != c.want[0].TargetIP {
				t.Errorf("RecordedBindings() = %+v, want %+v", got, c.want)
			}
			pa.AdoptCreatedBindings()
			if len(pa.Status.Bindings) != len(c.want) {
				t.Errorf("after AdoptCreatedBindings the status holds %+v, want %+v", pa.Status.Bindings, c.want)
			}
		})
	}

	// An unreadable record gives nothing rather than a wrong binding.
	pa := &PodAddress{}
	pa.SetAnnotations(map[string]string{AnnotationCreatedBindings: "{"})
	if got := pa.RecordedBindings(); got != nil {
		t.Errorf("an unreadable record gave %+v", got)
	}
}

func TestPolicySource(t *testing.T) {
	if p, ok := ParsePolicySource(PolicySource("web")); !ok || p != "web" {
		t.Fatalf("ParsePolicySource round trip: %q %v", p, ok)
	}
	for _, other := range []string{"", "policy/", "annotation", "Policy/web", "web"} {
		if p, ok := ParsePolicySource(other); ok {
			t.Errorf("ParsePolicySource(%q) = %q, want none", other, p)
		}
	}
}
