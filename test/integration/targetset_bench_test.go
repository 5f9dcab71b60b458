package integration

import (
	"context"
	"fmt"
	"maps"
	"testing"

	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator/emulatortest"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// Rollover sizes: the Service's endpoints, how many are replaced at once,
// and how many endpoints one EndpointSlice holds (the EndpointSlice
// controller's default).
const (
	rolloverEndpoints = 500
	rolloverWave      = 50
	rolloverSlice     = 100
)

// BenchmarkServiceRollover rolls a Service of 500 Pods over on PodIP
// backends, 50 Pods at a time, each wave replacing 50 endpoints with new
// ones, and reports the CLB calls per endpoint change. The cloud is an
// emulator with realistic latency, behind a namespaced ProviderConfig,
// with the listener's target quota raised above 500.
func BenchmarkServiceRollover(b *testing.B) {
	cfg := emulator.RealisticConfig()
	cfg.TargetQuota = 2 * rolloverEndpoints
	emu, endpoint := emulatortest.Start(b, cfg)
	for range b.N {
		b.StopTimer()
		ns := namespace(b)
		if err := testenv.ApplyTeamProviderConfig(context.Background(), kube, ns, endpoint); err != nil {
			b.Fatal(err)
		}
		lbID, lisID := benchListener(b, endpoint)
		newService(b, ns, "web", "", 80, 8080)
		ips := make([]string, rolloverEndpoints)
		for i := range ips {
			ips[i] = fmt.Sprintf("10.20.%d.%d", i/250, i%250+1)
		}
		writeSlices(b, ns, "web", ips)
		ts := serviceTargetSet(ns, "web", lbID, lisID, v1alpha1.TargetSource{Services: []v1alpha1.ServiceBackend{{
			Name: "web", Port: intstr.FromInt32(80), Backend: v1alpha1.BackendPodIP}}})
		ts.Spec.ProviderConfigReference = &xpv2.ProviderConfigReference{Kind: "ProviderConfig", Name: "team-a"}
		createTS(b, ts)
		waitRollover(b, emu, lbID, lisID, ips)
		emu.ResetCounters()

		b.StartTimer()
		next := rolloverEndpoints
		for wave := 0; wave < rolloverEndpoints/rolloverWave; wave++ {
			for i := wave * rolloverWave; i < (wave+1)*rolloverWave; i++ {
				ips[i] = fmt.Sprintf("10.21.%d.%d", next/250, next%250+1)
				next++
			}
			writeSlices(b, ns, "web", ips)
			waitRollover(b, emu, lbID, lisID, ips)
		}
		b.StopTimer()

		changes := 2 * rolloverEndpoints // every endpoint removed and one added
		reg, dereg, weight := emu.CallCount("BatchRegisterTargets"), emu.CallCount("BatchDeregisterTargets"), emu.CallCount("BatchModifyTargetWeight")
		b.ReportMetric(float64(reg+dereg+weight)/float64(changes), "calls/endpoint-change")
		b.ReportMetric(float64(reg), "register-calls")
		b.ReportMetric(float64(dereg), "deregister-calls")
		b.ReportMetric(float64(weight), "weight-calls")
		b.ReportMetric(float64(emu.CallCount("DescribeTargets")), "describe-calls")
		if err := kube.Delete(context.Background(), ts); err != nil {
			b.Fatal(err)
		}
		waitGone(b, ts)
	}
}

// benchListener creates a load balancer and a TCP listener in the bench
// emulator.
func benchListener(b *testing.B, endpoint string) (string, string) {
	b.Helper()
	c := emulatortest.DefaultClient(b, endpoint)
	lb := clbsdk.NewCreateLoadBalancerRequest()
	lb.LoadBalancerType, lb.LoadBalancerName = clb.Ptr("OPEN"), clb.Ptr("rollover")
	resp, err := c.CreateLoadBalancer(lb)
	if err != nil {
		b.Fatal(err)
	}
	lbID := *resp.Response.LoadBalancerIds[0]
	var lisID string
	eventually(b, "create the bench listener", func() error {
		req := clbsdk.NewCreateListenerRequest()
		req.LoadBalancerId, req.Protocol, req.Ports = &lbID, clb.Ptr("TCP"), []*int64{clb.Ptr(int64(80))}
		resp, err := c.CreateListener(req)
		if err != nil {
			return err
		}
		lisID = *resp.Response.ListenerIds[0]
		return nil
	})
	return lbID, lisID
}

// writeSlices writes the EndpointSlices of a Service whose ready Pods
// have ips, rolloverSlice endpoints per slice, as the EndpointSlice
// controller would.
func writeSlices(b *testing.B, ns, svc string, ips []string) {
	b.Helper()
	ctx := context.Background()
	for s := 0; s*rolloverSlice < len(ips); s++ {
		want := &discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s-%d", svc, s), Labels: map[string]string{
				discoveryv1.LabelServiceName: svc, discoveryv1.LabelManagedBy: "integration-test"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: clb.Ptr(""), Port: clb.Ptr(int32(8080)), Protocol: clb.Ptr(corev1.ProtocolTCP)}},
		}
		for _, ip := range ips[s*rolloverSlice : min(len(ips), (s+1)*rolloverSlice)] {
			want.Endpoints = append(want.Endpoints, discoveryv1.Endpoint{Addresses: []string{ip},
				Conditions: discoveryv1.EndpointConditions{Ready: clb.Ptr(true)}, NodeName: clb.Ptr("n1")})
		}
		got := &discoveryv1.EndpointSlice{}
		err := kube.Get(ctx, client.ObjectKeyFromObject(want), got)
		switch {
		case kerrors.IsNotFound(err):
			err = kube.Create(ctx, want)
		case err == nil:
			got.Endpoints = want.Endpoints
			err = kube.Update(ctx, got)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}

// waitRollover waits until the listener's targets are exactly ips on 8080.
func waitRollover(b *testing.B, emu *emulator.Emulator, lbID, lisID string, ips []string) {
	b.Helper()
	want := map[string]int{}
	for _, ip := range ips {
		want[ip+":8080"] = 10
	}
	eventually(b, "the listener's targets follow the Service", func() error {
		lb, _ := emu.Inventory().LoadBalancer(lbID)
		for _, l := range lb.Listeners {
			if l.ID == lisID {
				if got := targetMap(l.Targets); !maps.Equal(got, want) {
					return errors.Errorf("%d targets, want %d", len(got), len(want))
				}
				return nil
			}
		}
		return errors.New("no listener")
	})
}
