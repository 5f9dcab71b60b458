// Package tkestandin binds Pods as tke-extend-network-controller v2.5
// does, so that tests can show a cluster switching from it: test/podaddress
// with the emulator and game servers on loopback, test/e2e with real Pods
// on the real node. What it does is read from tke-extend's source
// (pkg/clb/listener.go, pkg/clb/batch-target.go,
// internal/controller/clbbinding.go), not copied.
package tkestandin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// A StandIn binds Pods on one load balancer: per Pod port a listener of
// the port's protocol on the allocated public port, named TKE-LISTENER,
// health check off; the Pod's IP and container port registered by
// BatchRegisterTargets (no weight); then the Pod's clb-port-mapping-result
// (the binding, the load balancer's hostname or else its VIPs, and
// "address") and clb-port-mapping-status Ready, by a merge patch.
type StandIn struct {
	kube   client.Client
	c      *clb.Client
	lb     *clbsdk.LoadBalancer
	region string
	wait   time.Duration
}

// New works on load balancer lbID with the key of cfg (tests give it one
// apart from the provider's, when the cloud has one, so that its calls
// are counted apart); each cloud call is retried within wait.
func New(ctx context.Context, kube client.Client, cfg clients.Config, lbID string, wait time.Duration) (*StandIn, error) {
	c, err := clb.NewPool(clb.Options{}).Client(cfg)
	if err != nil {
		return nil, err
	}
	lb, err := c.DescribeLoadBalancer(ctx, lbID)
	if err != nil {
		return nil, err
	}
	return &StandIn{kube: kube, c: c, lb: lb, region: cfg.Region, wait: wait}, nil
}

// VIP is the load balancer's first VIP.
func (s *StandIn) VIP() string { return clb.Deref(s.lb.LoadBalancerVips[0]) }

// Bind makes Pod p's UDP port containerPort forward from public port port
// of pool, writes the result and returns its entry. p must have its IP.
func (s *StandIn) Bind(ctx context.Context, p *corev1.Pod, pool string, containerPort, port int32) (podannotation.TKEPortMapping, error) {
	if p.Status.PodIP == "" {
		return podannotation.TKEPortMapping{}, fmt.Errorf("pod %s has no IP yet", p.Name)
	}
	lbID := clb.Deref(s.lb.LoadBalancerId)
	req := clbsdk.NewCreateListenerRequest()
	req.LoadBalancerId, req.Protocol = &lbID, clb.Ptr("UDP")
	req.Ports, req.ListenerNames = []*int64{clb.Ptr(int64(port))}, []*string{clb.Ptr(clbv1alpha1.TKEListenerName)}
	req.HealthCheck = &clbsdk.HealthCheck{HealthSwitch: clb.Ptr(int64(0)), SourceIpType: clb.Ptr(int64(1))}
	var ids []string
	var task string
	if err := testenv.Eventually(ctx, s.wait, func() error {
		var err error
		ids, task, err = s.c.CreateListener(ctx, req)
		return err
	}); err != nil {
		return podannotation.TKEPortMapping{}, fmt.Errorf("tke-extend's listener on port %d: %w", port, err)
	}
	if err := testenv.Eventually(ctx, s.wait, func() error { return s.done(ctx, task) }); err != nil {
		return podannotation.TKEPortMapping{}, fmt.Errorf("the task of the listener on port %d: %w", port, err)
	}
	if err := testenv.Eventually(ctx, s.wait, func() error {
		_, err := s.c.RegisterTargets(ctx, lbID, []clb.Target{{ListenerID: ids[0], EniIP: p.Status.PodIP, Port: int64(containerPort)}})
		return err
	}); err != nil {
		return podannotation.TKEPortMapping{}, fmt.Errorf("register %s: %w", p.Status.PodIP, err)
	}
	e := podannotation.TKEPortMapping{
		Port: containerPort, Protocol: "UDP", Pool: pool, Region: s.region,
		LoadbalancerID: lbID, LoadbalancerPort: port, ListenerID: ids[0],
		AddressIPVersion: clb.Deref(s.lb.AddressIPVersion),
	}
	host := clb.Deref(s.lb.Domain)
	if host == "" {
		for _, v := range s.lb.LoadBalancerVips {
			e.IPs = append(e.IPs, clb.Deref(v))
		}
		host = e.IPs[0]
	} else {
		e.Hostname = host
	}
	e.Address = fmt.Sprintf("%s:%d", host, port)
	return e, s.Annotate(ctx, p, []podannotation.TKEPortMapping{e})
}

// Annotate writes a result and the status Ready on p, as tke-extend's
// patchResult does (or a tenant forging one).
func (s *StandIn) Annotate(ctx context.Context, p *corev1.Pod, result []podannotation.TKEPortMapping) error {
	v, err := json.Marshal(result)
	if err != nil {
		return err
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		podannotation.TKEAnnotationMappingResult: string(v), podannotation.TKEAnnotationMappingStatus: "Ready",
	}}})
	if err != nil {
		return err
	}
	return s.kube.Patch(ctx, p, client.RawPatch(types.MergePatchType, patch))
}

func (s *StandIn) done(ctx context.Context, task string) error {
	st, _, err := s.c.TaskStatus(ctx, task)
	if err == nil && st == clb.TaskRunning {
		err = errors.New("task running")
	}
	return err
}

// SwitchWrites are the cloud writes a dry run of the switch must not
// make (TagResources: the pool tags tke-extend's load balancers only
// once it switches).
func SwitchWrites() []string {
	return append([]string{"CreateLoadBalancer", "CreateListener", "ModifyListener", "RegisterTargets", "BatchRegisterTargets",
		"ModifyTargetWeight", "BatchModifyTargetWeight", "TagResources"}, Removals()...)
}

// Removals are the writes that would take an address from a Pod: a
// switch makes none for the Pods it keeps.
func Removals() []string {
	return []string{"DeleteListener", "DeleteLoadBalancerListeners", "DeregisterTargets", "BatchDeregisterTargets"}
}
