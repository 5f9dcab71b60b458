package podaddress

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// runStatefulSet creates the Pods of a StatefulSet from its template, as
// the StatefulSet controller would (there is none here), with IPs set.
func runStatefulSet(t *testing.T, name string, ipPrefix string) []*corev1.Pod {
	t.Helper()
	sts := &appsv1.StatefulSet{}
	if err := kube.Get(context.Background(), client.ObjectKey{Namespace: "examples", Name: name}, sts); err != nil {
		t.Fatal(err)
	}
	var pods []*corev1.Pod
	for i := range int(*sts.Spec.Replicas) {
		p := &corev1.Pod{ObjectMeta: *sts.Spec.Template.ObjectMeta.DeepCopy(), Spec: *sts.Spec.Template.Spec.DeepCopy()}
		p.SetNamespace("examples")
		p.SetName(fmt.Sprintf("%s-%d", name, i))
		if err := kube.Create(context.Background(), p); err != nil {
			t.Fatal(err)
		}
		setIP(t, p, fmt.Sprintf("%s.%d", ipPrefix, i+1))
		pods = append(pods, p)
	}
	return pods
}

// TestExamples applies the port pool example and the per-Pod address
// examples, runs their Pods and checks that each gets what its example
// says.
func TestExamples(t *testing.T) {
	startProvider(t)
	ctx := context.Background()
	root := testenv.RepoRoot()
	if _, err := testenv.Apply(ctx, kube, filepath.Join(root, "examples", "clb", "portpool.yaml")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"rooms-tcp", "rooms-udp-segments"} {
		pp := &clbv1alpha1.PortPool{}
		pp.SetNamespace("examples")
		pp.SetName(name)
		waitReady(t, pp)
	}
	for _, f := range []string{"statefulset-annotations.yaml", "statefulset-bcs.yaml", "podaddresspolicy.yaml"} {
		if _, err := testenv.Apply(ctx, kube, filepath.Join(root, "examples", "network", f)); err != nil {
			t.Fatal(err)
		}
	}

	// Ordinal: battle-N gets 30000 + N.
	for i, p := range runStatefulSet(t, "battle", "10.20.0") {
		b := bound(t, "examples", p.Name).Status.Bindings[0]
		if b.Port != int32(30000+i) || b.ContainerPort != 7777 {
			t.Errorf("%s: port %d for container port %d, want 30000+%d for 7777", p.Name, b.Port, b.ContainerPort, i)
		}
		eventually(t, p.Name+" readiness gate", func() error {
			if err := kube.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
				return err
			}
			if c := podCond(p); c == nil || c.Status != corev1.ConditionTrue {
				return errors.Errorf("condition %+v", c)
			}
			return nil
		})
	}
	// bcs syntax: told in the bcs annotations.
	for _, p := range runStatefulSet(t, "relay", "10.21.0") {
		bound(t, "examples", p.Name)
		eventually(t, p.Name+" bcs status", func() error {
			if err := kube.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
				return err
			}
			if p.Annotations[bcsStatus] != "Ready" || p.Annotations[bcsResult] == "" {
				return errors.Errorf("annotations %v", p.Annotations)
			}
			return nil
		})
	}
	// Policy: a UDP segment of 10 ports from the pool's own load balancer.
	voice := pod(t, "examples", "voice-0", "10.22.0.1", nil, corev1.ContainerPort{Name: "voice", ContainerPort: 5000, Protocol: corev1.ProtocolUDP})
	voice.SetLabels(map[string]string{"app": "voice"})
	eventually(t, "label the voice Pod", func() error {
		p := &corev1.Pod{}
		if err := kube.Get(ctx, client.ObjectKeyFromObject(voice), p); err != nil {
			return err
		}
		p.SetLabels(map[string]string{"app": "voice"})
		return kube.Update(ctx, p)
	})
	b := bound(t, "examples", "voice-0").Status.Bindings[0]
	if b.Protocol != "UDP" || b.EndPort != b.Port+9 || b.Pool != "examples/rooms-udp-segments" {
		t.Errorf("voice binding %+v, want a UDP segment of 10 ports from rooms-udp-segments", b)
	}
	// The address range is also in the annotation the policy names, and the
	// policy counts the Pod as bound.
	podAnnotation(t, voice, "game.example.com/voice-address", fmt.Sprintf("%s:%d-%d", b.VIPs[0], b.Port, b.EndPort))
	pol := &v1alpha1.PodAddressPolicy{}
	pol.SetNamespace("examples")
	pol.SetName("voice")
	policyStatus(t, pol, 1, 1, corev1.ConditionTrue)
}
