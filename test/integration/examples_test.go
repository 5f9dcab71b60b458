package integration

import (
	"context"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/cluster/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/testenv"
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
