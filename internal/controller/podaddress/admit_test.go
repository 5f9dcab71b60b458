package podaddress

import (
	"testing"
	"time"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
)

func TestAdmittedWait(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	pa := func(until, uid string) *v1alpha1.PodAddress {
		p := &v1alpha1.PodAddress{}
		if until != "" {
			p.SetAnnotations(map[string]string{AnnotationAdmittedUntil: until})
		}
		p.Spec.PodUID = uid
		return p
	}
	for name, c := range map[string]struct {
		pa       *v1alpha1.PodAddress
		left     time.Duration
		admitted bool
	}{
		"not made at admission":    {pa("", ""), 0, false},
		"taken over by its Pod":    {pa("2026-01-01T12:01:00Z", "uid-1"), 0, false},
		"waiting":                  {pa("2026-01-01T12:00:30Z", ""), 30 * time.Second, true},
		"grace over":               {pa("2026-01-01T11:59:00Z", ""), 0, true},
		"unreadable counts as due": {pa("soon", ""), 0, true},
	} {
		left, admitted := admittedWait(c.pa, now)
		if left != c.left || admitted != c.admitted {
			t.Errorf("%s: got %s %v, want %s %v", name, left, admitted, c.left, c.admitted)
		}
	}
}
