package integration

import (
	"context"
	"fmt"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// healthOf returns the TargetSet's status health verdicts by ip:port.
func healthOf(ts *v1alpha1.TargetSet) map[string]string {
	out := map[string]string{}
	for _, o := range ts.Status.AtProvider.Targets {
		out[fmt.Sprintf("%s:%d", o.IP, o.Port)] = o.Health
	}
	return out
}

func waitHealth(t *testing.T, ts *v1alpha1.TargetSet, want map[string]string) {
	t.Helper()
	waitFor(t, ts, func() error {
		if got := healthOf(ts); fmt.Sprint(got) != fmt.Sprint(want) {
			return errors.Errorf("health %v, want %v", got, want)
		}
		return nil
	})
}

// TestTargetSetHealth shows the load balancer's health check verdict per
// target: a local TCP server is Healthy, a closed port Unhealthy, and the
// verdict follows the server going away. An unchanged verdict writes
// nothing.
func TestTargetSetHealth(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	lbID := fixtureLB(t)
	lisID := fixtureListener(t, lbID, "TCP", 9100)
	srv := testenv.StartEcho(t, "up", "127.0.0.1:0")
	up := int64(srv.Port())
	// A port nothing listens on: a server's that stopped.
	closed := testenv.StartEcho(t, "down", "127.0.0.1:0")
	closed.Stop()
	down := int64(closed.Port())

	ts := newTargetSet(ns, "health", lbID, lisID, []v1alpha1.Target{eniTarget("127.0.0.1", up), eniTarget("127.0.0.1", down)})
	if err := kube.Create(ctx, ts); err != nil {
		t.Fatal(err)
	}
	waitReady(t, ts)
	upKey, downKey := fmt.Sprintf("127.0.0.1:%d", up), fmt.Sprintf("127.0.0.1:%d", down)
	waitHealth(t, ts, map[string]string{upKey: "Healthy", downKey: "Unhealthy"})

	// Two more health reads of this load balancer (one per poll) leave the
	// object as it was: no status churn.
	rv := ts.GetResourceVersion()
	calls := callsOf("DescribeTargetHealth")
	eventually(t, "two more health reads", func() error {
		if n := callsOf("DescribeTargetHealth"); n < calls+2 {
			return errors.Errorf("%d health reads since", n-calls)
		}
		return nil
	})
	if err := kube.Get(ctx, client.ObjectKeyFromObject(ts), ts); err != nil {
		t.Fatal(err)
	}
	if ts.GetResourceVersion() != rv {
		t.Errorf("the TargetSet was written while its health did not change: resourceVersion %s, then %s", rv, ts.GetResourceVersion())
	}

	srv.Stop()
	waitHealth(t, ts, map[string]string{upKey: "Unhealthy", downKey: "Unhealthy"})

	if err := kube.Delete(ctx, ts); err != nil {
		t.Fatal(err)
	}
	waitGone(t, ts)
}
