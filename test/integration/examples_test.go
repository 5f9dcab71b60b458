package integration

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	clusterv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/cluster/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator/emulatortest"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// TestProviderConfigExamples applies examples/providerconfig as a user would
// and checks that both configs come up Ready.
func TestProviderConfigExamples(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(testenv.RepoRoot(), "examples", "providerconfig")
	// TestMain applied the Secret and the ClusterProviderConfig.
	if _, err := testenv.Apply(ctx, kube, filepath.Join(dir, "providerconfig.yaml"), testenv.WithEndpoint(cloud.Endpoint())); err != nil {
		t.Fatal(err)
	}
	readyCondition(t, &clusterv1alpha1.ClusterProviderConfig{}, corev1.ConditionTrue, client.ObjectKey{Name: "default"})
	readyCondition(t, &v1alpha1.ProviderConfig{}, corev1.ConditionTrue, client.ObjectKey{Namespace: "team-a", Name: "team-a"})
}

// TestLoadBalancerAndListenerExamples applies examples/clb/loadbalancer.yaml
// and listener.yaml, checks the connection details they ask for, and
// deletes them without leaving anything in the cloud.
func TestLoadBalancerAndListenerExamples(t *testing.T) {
	lbObjs, lbNames := applyExampleReady(t, "clb/loadbalancer.yaml")
	lObjs, lNames := applyExampleReady(t, "clb/listener.yaml")

	secret := &corev1.Secret{}
	eventually(t, "connection secret of the listener", func() error {
		if err := kube.Get(context.Background(), client.ObjectKey{Namespace: "examples", Name: "game-tcp-7000-conn"}, secret); err != nil {
			return err
		}
		if string(secret.Data["port"]) != "7000" || len(secret.Data["vip"]) == 0 || !strings.HasSuffix(string(secret.Data["address"]), ":7000") {
			return errors.Errorf("connection details %v", secret.Data)
		}
		return nil
	})
	if err := kube.Get(context.Background(), client.ObjectKey{Namespace: "examples", Name: "game-lb-conn"}, secret); err != nil || len(secret.Data["vip"]) == 0 {
		t.Errorf("load balancer connection secret: %v %v", secret.Data, err)
	}
	deleteExample(t, lObjs, lNames)
	deleteExample(t, lbObjs, lbNames)
}

// TestAddressExamples applies examples/vpc/address.yaml, with an ENI
// holding the private IP it binds to, and checks the connection secret and
// the binding; deleting releases both addresses.
func TestAddressExamples(t *testing.T) {
	eni := emulatortest.AddENI(t, cloud, "", "10.0.1.23")
	objs, names := applyExampleReady(t, "vpc/address.yaml")
	eventually(t, "connection secret of game-eip", func() error {
		secret := &corev1.Secret{}
		if err := kube.Get(context.Background(), client.ObjectKey{Namespace: "examples", Name: "game-eip-conn"}, secret); err != nil {
			return err
		}
		if len(secret.Data["publicIp"]) == 0 {
			return errors.Errorf("connection details %v", secret.Data)
		}
		return nil
	})
	eventually(t, "relay-eip bound to "+eni, func() error {
		for _, a := range cloud.Inventory().EIPs {
			if a.Name == "relay-eip" && a.ENIID == eni && a.PrivateIP == "10.0.1.23" {
				return nil
			}
		}
		return errors.New("not bound yet")
	})
	deleteExample(t, objs, names)
}
