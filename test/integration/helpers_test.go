package integration

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator/emulatortest"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// mrWait bounds how long a managed resource may take to settle; emulator
// tasks take 50 ms and not-Ready resources are polled every 2 s.
const mrWait = 2 * time.Minute

// sdk is a Tencent Cloud SDK client of the test emulator, for changing the
// cloud behind the provider's back (with a key of its own).
func sdk(t *testing.T) *clbsdk.Client {
	t.Helper()
	return emulatortest.ConsoleClient(t, cloud.Endpoint(), emulator.DefaultRegion)
}

// waitFor polls the object until cond returns nil.
func waitFor(t testing.TB, obj client.Object, cond func() error) {
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
func waitGone(t testing.TB, obj client.Object) {
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
func eventually(t testing.TB, what string, fn func() error) {
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

// applyExampleReady applies an example file (a path under examples/) and
// waits until every managed resource in it (every object with a
// spec.forProvider) is Ready and Synced. It returns the objects as
// applied and, per managed resource, its external name once Ready.
func applyExampleReady(t *testing.T, rel string) ([]*unstructured.Unstructured, []string) {
	t.Helper()
	ctx := context.Background()
	objs, err := testenv.Apply(ctx, kube, filepath.Join(testenv.RepoRoot(), "examples", rel))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range objs {
		if _, managed, _ := unstructured.NestedMap(o.Object, "spec", "forProvider"); !managed {
			continue
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(o.GroupVersionKind())
		u.SetNamespace(o.GetNamespace())
		u.SetName(o.GetName())
		waitFor(t, u, func() error {
			for _, typ := range []string{"Ready", "Synced"} {
				if s, msg := unstructuredCondition(u, typ); s != "True" {
					return errors.Errorf("%s=%q (%s)", typ, s, msg)
				}
			}
			return nil
		})
		names = append(names, meta.GetExternalName(u))
	}
	return objs, names
}

// unstructuredCondition returns the status and message of a condition.
func unstructuredCondition(u *unstructured.Unstructured, typ string) (status, message string) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if ok && m["type"] == typ {
			s, _ := m["status"].(string)
			msg, _ := m["message"].(string)
			return s, msg
		}
	}
	return "", ""
}

// deleteExample deletes the objects of an example, waits until they are
// gone, and checks that the emulated cloud holds none of the given
// external names (each name's "/"-separated parts are checked: a TargetSet
// is named listenerId/ruleId).
func deleteExample(t *testing.T, objs []*unstructured.Unstructured, externalNames []string) {
	t.Helper()
	ctx := context.Background()
	for _, o := range objs {
		if err := kube.Delete(ctx, o); err != nil && !kerrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
	for _, o := range objs {
		waitGone(t, o)
	}
	eventually(t, "the example's cloud resources are gone", func() error {
		raw, err := json.Marshal(cloud.Inventory())
		if err != nil {
			return err
		}
		for _, n := range externalNames {
			for _, id := range strings.Split(n, "/") {
				if id != "" && strings.Contains(string(raw), `"`+id+`"`) {
					return errors.Errorf("%s is still in the cloud", id)
				}
			}
		}
		return nil
	})
}
