// Package validation applies bad objects of every kind the provider serves
// to a real kube-apiserver with the provider's CRDs (internal/tooling/testenv) and
// checks that each is refused with a message a user understands. No
// controller runs: what is tested is the CRD schema and its CEL rules.
package validation

import (
	"context"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv/suite"
)

// ns holds the namespaced objects of the tests.
const ns = "validation"

var kube client.Client

func TestMain(m *testing.M) {
	os.Exit(suite.Main(m, func(s *suite.Suite) { kube = s.Kube }, suite.Setup(func(ctx context.Context, s *suite.Suite) error {
		return s.Kube.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	})))
}
