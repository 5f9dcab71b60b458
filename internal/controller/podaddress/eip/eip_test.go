package eip

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
)

func TestEIPRetryBackoff(t *testing.T) {
	var b Retry
	k := types.NamespacedName{Namespace: "ns", Name: "a"}
	now := time.Unix(1000, 0)
	var got []time.Duration
	for range 11 {
		d := b.Next(k, now)
		got = append(got, d)
		if left, ok := b.Pending(k, now.Add(d/2)); !ok || left != d-d/2 {
			t.Errorf("halfway through %s: pending %s, %t; want %s", d, left, ok, d-d/2)
		}
		now = now.Add(d)
		if _, ok := b.Pending(k, now); ok {
			t.Errorf("pending after the whole %s", d)
		}
	}
	want := []time.Duration{1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300}
	for i := range want {
		want[i] *= time.Second
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("-want +got:\n%s", d)
	}
	b.Reset(k)
	if _, ok := b.Pending(k, now.Add(-time.Second)); ok {
		t.Error("pending after reset")
	}
	if d := b.Next(k, now); d != time.Second {
		t.Errorf("after reset: %s", d)
	}
}
