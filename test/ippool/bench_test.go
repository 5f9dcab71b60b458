package ippool

import (
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/ippool"
)

// BenchmarkAllocatorHTTP measures the allocator API as CNI plugins use it:
// 1000 containers on 10 hosts, 32 calls in flight, allocate then release,
// against the local kube-apiserver. It reports allocations per second and
// the p99 latency of an allocate call.
func BenchmarkAllocatorHTTP(b *testing.B) {
	const containers, inFlight = 1000, 32
	base := startProvider(b, time.Hour)
	hosts := hostsOf(42, 10)
	newPool(b, "bench", 42, containers, hosts...)
	reqs := make([]ippool.Request, containers)
	for i := range reqs {
		reqs[i] = ippool.Request{Host: hosts[i%10], ContainerID: fmt.Sprintf("b%04d", i)}
	}
	// run makes every call of method, inFlight at a time, and returns each
	// call's latency.
	run := func(method string) ([]time.Duration, time.Duration) {
		lat := make([]time.Duration, containers)
		var next atomic.Int64
		var wg sync.WaitGroup
		start := time.Now()
		for range inFlight {
			wg.Go(func() {
				for i := int(next.Add(1)) - 1; i < containers; i = int(next.Add(1)) - 1 {
					t0 := time.Now()
					_, e, err := call(base, method, ippool.AllocatorPath, reqs[i])
					lat[i] = time.Since(t0)
					if err != nil || e.Code != ippool.CodeOK {
						b.Errorf("%s %s: %+v %v", method, reqs[i].ContainerID, e, err)
					}
				}
			})
		}
		wg.Wait()
		return lat, time.Since(start)
	}
	var all []time.Duration
	var took time.Duration
	b.ResetTimer()
	for b.Loop() {
		lat, d := run(http.MethodPost)
		all, took = append(all, lat...), took+d
		b.StopTimer()
		run(http.MethodDelete)
		b.StartTimer()
	}
	slices.Sort(all)
	rate := float64(len(all)) / took.Seconds()
	p99 := all[len(all)*99/100]
	b.ReportMetric(rate, "allocs/s")
	b.ReportMetric(float64(p99.Microseconds())/1000, "p99-ms")
	b.Logf("%d allocations from %d hosts, %d in flight: %.0f allocations/s, p50 %s, p99 %s", len(all), len(hosts), inFlight, rate, all[len(all)/2], p99)
}
