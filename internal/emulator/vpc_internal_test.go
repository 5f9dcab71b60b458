package emulator

import (
	"testing"
	"time"
)

// TestEIPDailyLimitRollsOverAtUTCMidnight drives the handler directly: the
// SDK signs with the real time, so the wire cannot carry a clock a day
// ahead.
func TestEIPDailyLimitRollsOverAtUTCMidnight(t *testing.T) {
	e, err := New(Config{EIPQuota: 10, EIPDailyAllocateLimit: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	alloc := func(now time.Time) *apiError {
		c := &call{service: serviceOf(vpcServiceName, ""), action: "AllocateAddresses", region: DefaultRegion, requestID: newRequestID(),
			body: []byte(`{"AddressCount":1}`), now: now}
		_, err := e.allocateAddresses(c)
		if c.task != nil {
			e.finishTask(c.task)
		}
		return err
	}
	// 23:59 in UTC is already the next day in Beijing: the day is counted in UTC.
	late := time.Date(2026, 3, 1, 23, 59, 0, 0, time.UTC)
	for i := range 2 {
		if err := alloc(late); err != nil {
			t.Fatalf("allocation %d: %v", i, err)
		}
	}
	if err := alloc(late.Add(59 * time.Second)); err == nil || err.Code != codeAddressDaily {
		t.Fatalf("third allocation of the day: %v, want %s", err, codeAddressDaily)
	}
	if err := alloc(late.Add(61 * time.Second)); err != nil {
		t.Fatalf("first allocation of the next UTC day: %v", err)
	}
}
