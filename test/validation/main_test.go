// Package validation applies bad objects of every kind the provider serves
// to a real kube-apiserver with the provider's CRDs (internal/tooling/testenv) and
// checks that each is refused with a message a user understands. No
// controller runs: what is tested is the CRD schema and its CEL rules.
package validation

import (
	"context"
	"fmt"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// ns holds the namespaced objects of the tests.
const ns = "validation"

var kube client.Client

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	env, err := testenv.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	kube = env.Client
	if err := kube.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}
