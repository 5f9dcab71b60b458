package integration

import (
	"context"
	"testing"
	"time"

	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator/emulatortest"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/testenv"
)

// mrWait bounds how long a managed resource may take to settle; emulator
// tasks take 50 ms and not-Ready resources are polled every 2 s.
const mrWait = 60 * time.Second

// sdk is a Tencent Cloud SDK client of the test emulator, for changing the
// cloud behind the provider's back.
func sdk(t *testing.T) *clbsdk.Client {
	t.Helper()
	return emulatortest.DefaultClient(t, cloud.Endpoint())
}

// waitFor polls the object until cond returns nil.
func waitFor(t *testing.T, obj client.Object, cond func() error) {
	t.Helper()
	ctx := context.Background()
	err := testenv.Eventually(ctx, mrWait, func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		return cond()
	})
	if err != nil {
		t.Fatalf("%s %s: %v", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), err)
	}
}

// waitReady waits until a managed resource is Ready and Synced.
func waitReady(t *testing.T, mg resource.Managed) {
	t.Helper()
	waitFor(t, mg, func() error {
		r, s := mg.GetCondition(xpv2.TypeReady), mg.GetCondition(xpv2.TypeSynced)
		if r.Status != "True" || s.Status != "True" {
			return errors.Errorf("Ready=%s (%s) Synced=%s (%s)", r.Status, r.Message, s.Status, s.Message)
		}
		return nil
	})
}

// waitGone waits until the object no longer exists.
func waitGone(t *testing.T, obj client.Object) {
	t.Helper()
	ctx := context.Background()
	err := testenv.Eventually(ctx, mrWait, func() error {
		err := kube.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		if kerrors.IsNotFound(err) {
			return nil
		}
		return errors.Errorf("still exists (get error: %v)", err)
	})
	if err != nil {
		t.Fatalf("%s: %v", obj.GetName(), err)
	}
}

// eventually fails the test if fn does not succeed within mrWait.
func eventually(t *testing.T, what string, fn func() error) {
	t.Helper()
	if err := testenv.Eventually(context.Background(), mrWait, fn); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// writeCalls counts the calls of the emulator that change the cloud.
func writeCalls() int {
	n := 0
	for action, codes := range cloud.Calls() {
		if len(action) > 8 && action[:8] == "Describe" {
			continue
		}
		for _, c := range codes {
			n += c
		}
	}
	return n
}

// inventoryLB returns the emulator's load balancer id, if it exists.
func inventoryLB(id string) (emulator.InventoryLoadBalancer, bool) {
	return cloud.Inventory().LoadBalancer(id)
}
