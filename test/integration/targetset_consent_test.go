package integration

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
)

// TestTargetSetOtherNamespaceConsent: a TargetSet that follows a Service
// and names a Pod of another namespace gets no target from them until
// their owner annotates them with its namespace; another value takes the
// targets out again.
func TestTargetSetOtherNamespaceConsent(t *testing.T) {
	tenant, web := namespace(t), namespace(t)
	lbID := fixtureLB(t)
	lisID := fixtureListener(t, lbID, "TCP", 38090)
	newService(t, web, "lobby", "", 28090, 8090)
	w := &workload{ns: web, svc: "lobby", targetPort: 8090}
	w.addPod(t, "lobby-1", "10.9.9.1", "n1", 0, true)
	w.addPod(t, "lobby-2", "10.9.9.2", "n1", 0, true)

	ts := serviceTargetSet(tenant, "borrow", lbID, lisID, v1alpha1.TargetSource{
		Services: []v1alpha1.ServiceBackend{{Name: "lobby", Namespace: web, Port: intstr.FromInt32(28090), Backend: v1alpha1.BackendPodIP}},
		Pods:     []v1alpha1.PodBackend{{Name: "lobby-1", Namespace: web, Port: 9000}},
	})
	createTS(t, ts)
	refused := func(why ...string) {
		t.Helper()
		waitResolved(t, ts, func(c xpv2.Condition) error {
			if c.Status != "False" {
				return errors.Errorf("Resolved %s: %q, want False", c.Status, c.Message)
			}
			for _, s := range why {
				if !strings.Contains(c.Message, s) {
					return errors.Errorf("Resolved: %q does not say %q", c.Message, s)
				}
			}
			return nil
		})
	}
	refused("Service "+web+"/lobby does not let TargetSets of namespace "+tenant+" follow it", "Pod "+web+"/lobby-1 does not let",
		v1alpha1.AnnotationTargetConsumers)
	waitCloudTargets(t, lbID, lisID, map[string]int{})

	annotate := func(o client.Object, v string) {
		t.Helper()
		eventually(t, "annotate "+o.GetName(), func() error {
			if err := kube.Get(context.Background(), client.ObjectKeyFromObject(o), o); err != nil {
				return err
			}
			a := o.GetAnnotations()
			if a == nil {
				a = map[string]string{}
			}
			a[v1alpha1.AnnotationTargetConsumers] = v
			o.SetAnnotations(a)
			return kube.Update(context.Background(), o)
		})
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: web, Name: "lobby"}}
	annotate(svc, "ops, "+tenant)
	waitCloudTargets(t, lbID, lisID, map[string]int{"10.9.9.1:8090": 10, "10.9.9.2:8090": 10})
	refused("Pod " + web + "/lobby-1 does not let")
	annotate(w.pods[0], "All")
	waitCloudTargets(t, lbID, lisID, map[string]int{"10.9.9.1:8090": 10, "10.9.9.2:8090": 10, "10.9.9.1:9000": 10})

	// The owner takes the Service's consent back, and writes a malformed
	// one on the Pod: their targets go.
	annotate(svc, "ops")
	annotate(w.pods[0], "ops,")
	refused("Service "+web+"/lobby does not let", "is not a namespace name")
	waitCloudTargets(t, lbID, lisID, map[string]int{})
	deleteTS(t, ts, lbID, lisID)
}
