package podaddress

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// runDeploymentPod creates one Pod from a Deployment's template, as its
// ReplicaSet would (there is no controller-manager here), with its IP set.
func runDeploymentPod(t *testing.T, ns, name, podName, ip string) *corev1.Pod {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := kube.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
		t.Fatal(err)
	}
	p := &corev1.Pod{ObjectMeta: *d.Spec.Template.ObjectMeta.DeepCopy(), Spec: *d.Spec.Template.Spec.DeepCopy()}
	p.SetNamespace(ns)
	p.SetName(podName)
	if err := kube.Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	setIP(t, p, ip)
	return p
}

// TestBCSPortPoolExamples applies the two port-pool examples of
// bcs-ingress-controller's guide as moved over (examples/network/bcs-*):
// their Deployments' Pods, with bcs's annotations unchanged, are bound
// from the pool's range and told in bcs's annotations, in bcs's shape.
func TestBCSPortPoolExamples(t *testing.T) {
	startProvider(t)
	ctx := context.Background()
	for _, ex := range []struct {
		file, ns, pool, deployment string
		start, end                 int32
		protocols                  []string
	}{
		{"bcs-portpool-quickstart.yaml", "ingress-test", "pool1", "nginx-portpool", 31000, 31010, []string{"TCP", "UDP"}},
		{"bcs-portpool-downward-api.yaml", "test", "test-pool1", "nginx", 31000, 31100, []string{"TCP"}},
	} {
		t.Run(ex.file, func(t *testing.T) {
			if _, err := testenv.Apply(ctx, kube, filepath.Join(testenv.RepoRoot(), "examples", "network", ex.file)); err != nil {
				t.Fatal(err)
			}
			pp := &clbv1alpha1.PortPool{}
			pp.SetNamespace(ex.ns)
			pp.SetName(ex.pool)
			waitReady(t, pp)
			if err := kube.Get(ctx, client.ObjectKeyFromObject(pp), pp); err != nil {
				t.Fatal(err)
			}
			lbs := pp.Status.AtProvider.LoadBalancers
			if len(lbs) != 1 {
				t.Fatalf("pool load balancers %+v, want one", lbs)
			}
			for _, proto := range ex.protocols {
				if lbs[0].ListenerID(clbv1alpha1.ListenerKey{Protocol: proto, Port: ex.start}) == "" {
					t.Errorf("no %s listener on %d: %v", proto, ex.start, lbs[0].Listeners)
				}
			}

			p := runDeploymentPod(t, ex.ns, ex.deployment, ex.deployment+"-7d9f8c-abcde", "10.45.0.1")
			b := bound(t, ex.ns, p.Name).Status.Bindings[0]
			if b.Port < ex.start || b.Port > ex.end || b.ContainerPort != 80 || b.Protocol != "TCP" {
				t.Errorf("binding %+v, want TCP 80 on a port of %d-%d", b, ex.start, ex.end)
			}
			if got := cloudTargets(b.LoadBalancerID, b.ListenerIDs["TCP"]); !slices.Equal(got, []string{"10.45.0.1:80"}) {
				t.Errorf("targets %v", got)
			}
			var told []podannotation.BCSBinding
			eventually(t, "the Pod told in bcs's annotations", func() error {
				if err := kube.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
					return err
				}
				if p.Annotations[bcsStatus] != "Ready" {
					return errors.Errorf("status %q", p.Annotations[bcsStatus])
				}
				return json.Unmarshal([]byte(p.Annotations[bcsResult]), &told)
			})
			if len(told) != 1 {
				t.Fatalf("bcs bindings %+v, want one", told)
			}
			e := told[0]
			if e.PoolName != ex.pool || e.PoolNamespace != ex.ns || e.Protocol != "TCP" || e.StartPort != b.Port || e.EndPort != 0 || e.RsStartPort != 80 {
				t.Errorf("bcs binding %+v does not match %+v", e, b)
			}
			if len(e.PoolItemLoadBalancers) != 1 || e.PoolItemLoadBalancers[0].LoadBalancerID != b.LoadBalancerID ||
				!slices.Equal(e.PoolItemLoadBalancers[0].IPs, b.VIPs) || !slices.Equal(e.LoadBalancerIDs, []string{b.LoadBalancerID}) {
				t.Errorf("bcs load balancers %+v, want %s %v", e, b.LoadBalancerID, b.VIPs)
			}
		})
	}
}

// TestBCSMultiISPSamePort is how a bcs pool item listing load balancers of
// several ISPs moves over: one PortPool per load balancer, the Pod's bcs
// lines naming each, and the Ordinal strategy so that a StatefulSet Pod
// has the same port on every one of them.
func TestBCSMultiISPSamePort(t *testing.T) {
	startProvider(t)
	ns := namespace(t)
	cmcc, cucc := lb(t, ns, "lb-cmcc", "CMCC"), lb(t, ns, "lb-cucc", "CUCC")
	pool(t, ns, "cmcc", []string{"lb-cmcc"}, 35100, 35109)
	pool(t, ns, "cucc", []string{"lb-cucc"}, 35100, 35109)
	for i, name := range []string{"relay-3", "relay-7"} {
		pod(t, ns, name, "10.45.1."+string(rune('1'+i)), map[string]string{
			bcsEnabled: "true", bcsPorts: "cmcc TCP 7777;cucc TCP 7777", strategy: "Ordinal",
		})
		pa := bound(t, ns, name)
		want := int32(35103 + 4*i)
		byISP := map[string]int32{}
		for _, b := range pa.Status.Bindings {
			byISP[b.ISP] = b.Port
			if b.ISP == "CMCC" && b.LoadBalancerID != lbID(cmcc) || b.ISP == "CUCC" && b.LoadBalancerID != lbID(cucc) {
				t.Errorf("%s: %s binding on %s", name, b.ISP, b.LoadBalancerID)
			}
		}
		if len(pa.Status.Bindings) != 2 || byISP["CMCC"] != want || byISP["CUCC"] != want {
			t.Errorf("%s: ports by ISP %v, want %d on both", name, byISP, want)
		}
	}
}
