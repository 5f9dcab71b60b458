package emulator_test

import (
	"testing"
	"time"

	clb "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator/emulatortest"
)

// BenchmarkDescribeListenersSigned measures signed DescribeListeners calls
// per second through the real SDK over loopback HTTP keep-alive, with
// parallel clients. Client and emulator share the machine, so the figure
// includes the SDK's own signing and parsing cost.
func BenchmarkDescribeListenersSigned(b *testing.B) {
	e, endpoint, err := emulator.Start(emulator.Config{}) // no rate limit, no latency, instant tasks
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = e.Close() }()
	setup := emulatortest.DefaultClient(b, endpoint)
	create := clb.NewCreateLoadBalancerRequest()
	create.LoadBalancerType = common.StringPtr("OPEN")
	cresp, err := setup.CreateLoadBalancer(create)
	if err != nil {
		b.Fatal(err)
	}
	lb := *cresp.Response.LoadBalancerIds[0]
	lr := clb.NewCreateListenerRequest()
	lr.LoadBalancerId, lr.Protocol, lr.Ports = &lb, common.StringPtr("TCP"), common.Int64Ptrs([]int64{8000, 8001, 8002, 8003})
	if _, err := setup.CreateListener(lr); err != nil {
		b.Fatal(err)
	}

	transport := emulatortest.Transport()
	b.SetParallelism(4)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		c := emulatortest.DefaultClient(b, endpoint)
		c.WithHttpTransport(transport)
		for pb.Next() {
			req := clb.NewDescribeListenersRequest()
			req.LoadBalancerId = &lb
			resp, err := c.DescribeListeners(req)
			if err != nil {
				b.Error(err)
				return
			}
			if len(resp.Response.Listeners) != 4 {
				b.Errorf("%d listeners", len(resp.Response.Listeners))
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
}
