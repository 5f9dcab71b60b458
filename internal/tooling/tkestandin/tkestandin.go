// Package tkestandin binds Pods as tke-extend-network-controller v2.5
// does, so that tests can show a cluster switching from it: test/podaddress
// with the emulator and game servers on loopback, test/e2e with real Pods
// on the real node. What it does is read from tke-extend's source
// (pkg/clb/listener.go, pkg/clb/batch-target.go,
// internal/controller/clbbinding.go, internal/clbbinding/clbnodebinding.go,
// internal/controller/pod_controller.go), not copied.
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
// "address") and clb-port-mapping-status Ready, by a merge patch. It binds
// Nodes of the HostPort scheme the same way (segment listeners, the node's
// IP), and tells their hostport Pods (BindNode, TellHostPorts).
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
	e, err := s.listen(ctx, pool, "UDP", containerPort, port, 0, p.Status.PodIP)
	if err != nil {
		return e, err
	}
	return e, s.Annotate(ctx, p, []podannotation.TKEPortMapping{e})
}

// BindNode binds Node n of the HostPort scheme (its line "nodePort
// TCPUDP pool") as tke-extend's CLBNodeBinding does: for each of TCP and
// UDP a listener of the segment port..end, the node's first InternalIP
// (tke-extend's choice) and nodePort registered; then the Node's
// clb-port-mapping-result, in tke-extend's order (TCP before UDP), whose
// endPort is nodePort plus the segment's length less one.
func (s *StandIn) BindNode(ctx context.Context, n *corev1.Node, pool string, nodePort, port, end int32) ([]podannotation.TKEPortMapping, error) {
	ip := ""
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			ip = a.Address
			break
		}
	}
	if ip == "" {
		return nil, fmt.Errorf("node %s has no InternalIP", n.Name)
	}
	var out []podannotation.TKEPortMapping
	for _, proto := range []string{"TCP", "UDP"} {
		e, err := s.listen(ctx, pool, proto, nodePort, port, end, ip)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, s.Annotate(ctx, n, out)
}

// TellHostPorts writes on Pod p, running on a Node bound with node (its
// result), the clb-hostport-mapping-result tke-extend's Pod controller
// writes: per hostPort of p's containers and per entry of its protocol
// whose segment covers it, the public port as far into the segment as
// the hostPort is past the line's port. It returns the value written.
func (s *StandIn) TellHostPorts(ctx context.Context, p *corev1.Pod, node []podannotation.TKEPortMapping) (string, error) {
	out := []podannotation.TKEHostPortMapping{}
	for _, c := range p.Spec.Containers {
		for _, cp := range c.Ports {
			for _, e := range node {
				last := e.Port + max(e.LoadbalancerEndPort-e.LoadbalancerPort, 0)
				if cp.HostPort == 0 || string(cp.Protocol) != e.Protocol || cp.HostPort < e.Port || cp.HostPort > last {
					continue
				}
				lbPort := e.LoadbalancerPort + cp.HostPort - e.Port
				host := e.Hostname
				if host == "" && len(e.IPs) > 0 {
					host = e.IPs[0]
				}
				out = append(out, podannotation.TKEHostPortMapping{
					ContainerPort: cp.ContainerPort, HostPort: cp.HostPort, Protocol: e.Protocol, Pool: e.Pool, Region: e.Region,
					LoadbalancerID: e.LoadbalancerID, LoadbalancerPort: lbPort, ListenerID: e.ListenerID,
					Address: fmt.Sprintf("%s:%d", host, lbPort), Hostname: e.Hostname, IPs: e.IPs,
				})
			}
		}
	}
	v, err := json.Marshal(out)
	if err != nil {
		return "", err
	}
	return string(v), s.patch(ctx, p, podannotation.TKEAnnotationHostPortMappingResult, podannotation.TKEAnnotationHostPortMappingStatus, string(v))
}

// listen makes tke-extend's listener of proto on port (a segment to end
// when end > 0), registers ip:targetPort on it, and returns the result's
// entry for targetPort.
func (s *StandIn) listen(ctx context.Context, pool, proto string, targetPort, port, end int32, ip string) (podannotation.TKEPortMapping, error) {
	lbID := clb.Deref(s.lb.LoadBalancerId)
	req := clbsdk.NewCreateListenerRequest()
	req.LoadBalancerId, req.Protocol = &lbID, clb.Ptr(proto)
	req.Ports, req.ListenerNames = []*int64{clb.Ptr(int64(port))}, []*string{clb.Ptr(clbv1alpha1.TKEListenerName)}
	if end > 0 {
		req.EndPort = clb.Ptr(uint64(end)) //nolint:gosec // G115: test ports.
	}
	req.HealthCheck = &clbsdk.HealthCheck{HealthSwitch: clb.Ptr(int64(0)), SourceIpType: clb.Ptr(int64(1))}
	var ids []string
	var task string
	if err := testenv.Eventually(ctx, s.wait, func() error {
		var err error
		ids, task, err = s.c.CreateListener(ctx, req)
		return err
	}); err != nil {
		return podannotation.TKEPortMapping{}, fmt.Errorf("tke-extend's %s listener on port %d: %w", proto, port, err)
	}
	if err := testenv.Eventually(ctx, s.wait, func() error { return s.done(ctx, task) }); err != nil {
		return podannotation.TKEPortMapping{}, fmt.Errorf("the task of the listener on port %d: %w", port, err)
	}
	if err := testenv.Eventually(ctx, s.wait, func() error {
		_, err := s.c.RegisterTargets(ctx, lbID, []clb.Target{{ListenerID: ids[0], EniIP: ip, Port: int64(targetPort)}})
		return err
	}); err != nil {
		return podannotation.TKEPortMapping{}, fmt.Errorf("register %s: %w", ip, err)
	}
	e := podannotation.TKEPortMapping{
		Port: targetPort, Protocol: proto, Pool: pool, Region: s.region,
		LoadbalancerID: lbID, LoadbalancerPort: port, ListenerID: ids[0],
		AddressIPVersion: clb.Deref(s.lb.AddressIPVersion),
	}
	if end > 0 {
		e.LoadbalancerEndPort, e.EndPort = end, targetPort+end-port
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
	return e, nil
}

// Annotate writes a result and the status Ready on o (a Pod, or a
// Node), as tke-extend's patchResult does (or a tenant forging one).
func (s *StandIn) Annotate(ctx context.Context, o client.Object, result []podannotation.TKEPortMapping) error {
	v, err := json.Marshal(result)
	if err != nil {
		return err
	}
	return s.patch(ctx, o, podannotation.TKEAnnotationMappingResult, podannotation.TKEAnnotationMappingStatus, string(v))
}

// patch writes value at result and "Ready" at status on o, by a merge
// patch.
func (s *StandIn) patch(ctx context.Context, o client.Object, result, status, value string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		result: value, status: "Ready",
	}}})
	if err != nil {
		return err
	}
	return s.kube.Patch(ctx, o, client.RawPatch(types.MergePatchType, patch))
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
