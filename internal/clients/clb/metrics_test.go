package clb

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
)

// find returns the sample of family name whose labels include want.
func find(t *testing.T, reg *prometheus.Registry, name string, want map[string]string) *dto.Metric {
	t.Helper()
	fams, err := reg.Gather()
	must(t, err)
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	metrics:
		for _, m := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if have[k] != v {
					continue metrics
				}
			}
			return m
		}
	}
	return nil
}

func counterValue(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	if m := find(t, reg, name, labels); m != nil {
		return m.GetCounter().GetValue()
	}
	return 0
}

func histogramCount(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) uint64 {
	t.Helper()
	if m := find(t, reg, name, labels); m != nil {
		return m.GetHistogram().GetSampleCount()
	}
	return 0
}

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	e, c := start(t, emulator.Config{}, Options{Registerer: reg})
	ctx := testCtx(t)
	lb := createLB(t, c, "metrics")
	ls := createListeners(t, c, lb, "TCP", 80)

	_, _, err := c.CreateListener(ctx, listenerRequest(lb, "TCP", 80))
	if !IsInvalid(err) {
		t.Fatalf("port conflict: %v", err)
	}
	_, err = c.RegisterTargets(ctx, lb, []Target{{ListenerID: ls[0], EniIP: "10.0.0.1", Port: 80}})
	must(t, err)

	if v := counterValue(t, reg, "tencentcloud_api_calls_total", map[string]string{"action": "CreateListener", "code": "OK"}); v != 1 {
		t.Errorf("CreateListener OK = %v, want 1", v)
	}
	if v := counterValue(t, reg, "tencentcloud_api_calls_total", map[string]string{"action": "CreateListener", "code": "InvalidParameter.PortCheckFailed"}); v != 1 {
		t.Errorf("CreateListener PortCheckFailed = %v, want 1", v)
	}
	if n := histogramCount(t, reg, "tencentcloud_api_call_duration_seconds", map[string]string{"action": "CreateLoadBalancer"}); n != 1 {
		t.Errorf("CreateLoadBalancer durations = %d, want 1", n)
	}
	if n := histogramCount(t, reg, "tencentcloud_api_batch_size", map[string]string{"action": "BatchRegisterTargets"}); n != 1 {
		t.Errorf("BatchRegisterTargets batch sizes = %d, want 1", n)
	}

	// The cloud answering busy (a task of somebody else) is counted too.
	must(t, e.SetFaults(emulator.Faults{BusyStorm: &emulator.BusyStorm{}}))
	_, err = c.DeleteListener(ctx, lb, ls[0])
	if !IsBusy(err) || Code(err) != codeResourceInOperating {
		t.Fatalf("busy storm: %v", err)
	}
	if v := counterValue(t, reg, "tencentcloud_api_busy_total", map[string]string{"action": "DeleteListener"}); v != 1 {
		t.Errorf("busy_total{DeleteListener} = %v, want 1", v)
	}
}
