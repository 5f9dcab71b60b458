package emulator_test

import "testing"

func TestSmoke(t *testing.T) {
	_, _, c := env(t, instant())
	lb := createLB(t, c, "smoke")
	ids := createListeners(t, c, lb, "TCP", 8000, 8001)
	if l := describeListener(t, c, lb, ids[0]); l == nil || *l.Port != 8000 {
		t.Fatalf("listener: %+v", l)
	}
}
